"""``memrules compact`` says when its output is still over the budget, and
``--strict`` (or ``over_budget: raise``) makes that exit 1, writing nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memrules._cli.main import main

MESSAGES = [
    {"role": "system", "content": "rules " * 20},
    {"role": "user", "content": "first " * 5},
    {"role": "assistant", "content": "ok"},
    {"role": "user", "content": "hello " * 20},
]


def invoke(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    capsys.readouterr()
    status = main(list(args))
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), status, captured.out, captured.err)


def _files(tmp_path: Path, extra: str = "") -> tuple[str, str]:
    config = tmp_path / "tight.yaml"
    config.write_text(
        f"max_tokens: 10\n{extra}strategies:\n  - type: sliding_window\n    keep_messages: 2\n"
    )
    source = tmp_path / "in.json"
    source.write_text(json.dumps(MESSAGES))
    return str(config), str(source)


def test_over_budget_warns_in_one_line_and_strict_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, source = _files(tmp_path)
    done = invoke(capsys, "compact", "--config", config, source, "--no-progress")
    assert done.returncode == 0
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("memrules: warning: over budget after compaction")
    assert "against a budget of 10" in done.stderr
    # Only the survivors are left: the system prompt, the task and the question.
    assert [m["content"] for m in json.loads(done.stdout)] == [
        MESSAGES[i]["content"] for i in (0, 1, 3)
    ]

    report = tmp_path / "report.json"
    strict = invoke(
        capsys, "compact", "--config", config, source, "--strict", "--report", str(report)
    )
    assert strict.returncode == 1
    assert strict.stderr.startswith("memrules: error: over budget after compaction")
    assert "(--strict)" in strict.stderr
    assert strict.stdout == ""
    assert not report.exists()


def test_the_config_key_decides_without_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, source = _files(tmp_path, "over_budget: raise\n")
    done = invoke(capsys, "compact", "--config", config, source)
    assert done.returncode == 1
    assert "(over_budget: raise)" in done.stderr
    assert done.stdout == ""
    config, source = _files(tmp_path, "over_budget: send\n")
    quiet = invoke(capsys, "compact", "--config", config, source)
    assert (quiet.returncode, quiet.stderr) == (0, "")
    report = tmp_path / "report.json"
    invoke(capsys, "compact", "--config", config, source, "--report", str(report))
    assert json.loads(report.read_text())["over_budget"] is True
