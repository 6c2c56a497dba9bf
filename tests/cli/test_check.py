"""``memrules check`` and ``memrules --version``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memrules._cli.main import main
from memrules._io.version import memrules_version

ROOT = Path(__file__).resolve().parents[2]


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"memrules {memrules_version()}\n"


def test_check_prints_the_resolved_pipeline_budget_and_seams(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = str(ROOT / "configs" / "default.yaml")
    assert main(["check", config]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{config}: ok\n  route default:\n")
    assert "budget: 102,400 tokens (max_fraction 0.8 of a 128,000-token window)" in out
    assert (
        "counter: the request's model (else the larger of cl100k_base and o200k_base), "
        "count rule openai" in out
    )
    assert "pipeline: 8 strategies" in out
    assert "      6. sliding_window(keep_messages=40)" in out  # defaults filled in
    assert "seams: none" in out


def test_check_shows_every_route_and_its_retrieval_seams(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("pymilvus", reason="routes.yaml's store needs the milvus extra")
    assert main(["check", str(ROOT / "configs" / "routes.yaml")]) == 0
    out = capsys.readouterr().out
    assert [line.strip() for line in out.splitlines() if "route " in line] == [
        "route default:",
        "route code:",
        "route support:",
    ]
    assert "retrieval store: store(backend='milvus'" in out


def test_check_reports_every_problem_of_every_file_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "max_mesages: 3\nstrategies:\n  - type: sliding_window\n    keep_messages: four\n",
        encoding="utf-8",
    )
    good = str(ROOT / "configs" / "tiny_budget.yaml")
    missing = tmp_path / "missing.yaml"
    assert main(["check", str(bad), good, str(missing)]) == 2
    captured = capsys.readouterr()
    assert f"{good}: ok" in captured.out  # checked although the first one failed
    errors = captured.err.splitlines()
    assert errors[0].startswith(f"memrules: error: {bad}:1: max_mesages: unknown key")
    assert "did you mean 'max_messages'" in errors[0]
    assert errors[1] == (
        f"memrules: error: {bad}:4: strategies[0].keep_messages: "
        "keep_messages='four' must be a whole number or null"
    )
    assert errors[2] == f"memrules: error: {missing}: no such file"
    assert len(errors) == 3


def test_check_refuses_imports_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "custom.yaml"
    config.write_text(
        'strategies:\n  - type: "tests.support.custom_strategies:keep_last"\n', encoding="utf-8"
    )
    assert main(["check", str(config)]) == 2
    assert f"{config}:2: strategies[0].type" in capsys.readouterr().err


def test_check_runs_as_a_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memrules", "check", "configs/seed_example.yaml"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "budget: more than 6 messages" in done.stdout
    assert (
        "counter: the request's model (else the larger of cl100k_base and o200k_base), "
        "count rule seed" in done.stdout
    )
