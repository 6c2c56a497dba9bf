"""The README's examples run as they are written."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memrules._cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    """The text of the README section with this ``## title``."""
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : None if end < 0 else end]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def test_the_library_example_runs_verbatim(tmp_path: Path) -> None:
    (code,) = blocks(section("As a library"), "python")
    assert "openai_messages = [" in code  # defined, not assumed
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_the_quick_start_writes_its_report_outside_the_checkout(tmp_path: Path) -> None:
    commands = [
        line
        for block in blocks(section("Quick start"), "sh")
        for line in block.splitlines()
        if line.startswith(".venv/bin/memrules compact")
    ]
    assert len(commands) == 1
    argv = shlex.split(os.path.expandvars(commands[0].replace("${TMPDIR:-/tmp}", str(tmp_path))))
    assert argv[0] == ".venv/bin/memrules"
    done = subprocess.run(
        [sys.executable, "-m", "memrules", *argv[1:]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["messages"]
    report = json.loads((tmp_path / "memrules-report.json").read_text(encoding="utf-8"))
    assert report["messages_after"] < report["messages_before"]


def test_the_request_hook_example_runs_verbatim(tmp_path: Path) -> None:
    (code,) = blocks(section("The request hook"), "python")
    script = tmp_path / "hook.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["6/256", "2/256", "6/256"]  # the observer's readings


def test_the_integrations_examples_are_python_that_compiles() -> None:
    codes = blocks(section("Integrations"), "python")
    assert len(codes) == 4
    for code in codes:
        # Top-level await is how the Agents SDK example reads in a notebook.
        compile(code, "<README>", "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT
    for module in ("langchain", "openai_agents", "pydantic_ai", "otel", "prometheus"):
        assert f"memrules.integrations.{module}" in section("Integrations")


def test_the_working_graph_example_runs_verbatim(tmp_path: Path) -> None:
    (code,) = blocks(section("Working graph"), "python")
    script = tmp_path / "graph_example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_the_working_graph_section_shows_what_the_demo_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    (turn,) = [b for b in blocks(section("Working graph"), "") if b.startswith("Turn 4:")]
    assert cli_main(["demo", "--graph"]) == 0
    assert turn in capsys.readouterr().out


def _retrieval_extras_missing() -> list[str]:
    import importlib.util

    from memrules.seams.embedders import local_embedder_missing

    missing = list(local_embedder_missing())
    if importlib.util.find_spec("qdrant_client") is None:
        missing.append("qdrant-client")
    return missing


@pytest.mark.skipif(
    bool(_retrieval_extras_missing()),
    reason="needs the local-embed and qdrant extras: pip install -e '.[local-embed,qdrant]'",
)
def test_the_retrieval_memory_example_runs_verbatim(tmp_path: Path) -> None:
    (code,) = blocks(section("Retrieval memory"), "python")
    script = tmp_path / "retrieval_example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["hit 1", "memrules memory:", "1"]  # as its comments say


def test_the_retrieval_memory_section_shows_the_shipped_config() -> None:
    """The YAML the section shows is a config that loads, and its estimator
    table holds the estimator's own figures."""
    from memrules import estimate_tokens, load_config

    (yaml_block,) = blocks(section("Retrieval memory"), "yaml")
    config = load_config(yaml_block)
    assert config.route_names == ("default", "code", "support")
    rows = [
        line.split("|")
        for line in section("Retrieval memory").splitlines()
        if line.startswith("| `")
    ]
    assert len(rows) == 6
    for row in rows:
        text, estimate = row[1].strip().strip("`"), int(row[3])
        assert estimate_tokens(text) == estimate, text
