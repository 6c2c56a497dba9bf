"""The ``memrules compact`` command, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memrules import from_openai
from memrules._cli import main

ROOT = Path(__file__).resolve().parent.parent
HISTORY = ROOT / "examples" / "agent_history.json"

SEED_MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "The vault is in Lisbon. Reply with: noted"},
    {"role": "assistant", "content": "noted"},
    {"role": "user", "content": "The key rotates on friday. Reply with: noted"},
    {"role": "assistant", "content": "noted"},
    {"role": "user", "content": "The owner is ops@example.com. Reply with: noted"},
    {"role": "assistant", "content": "noted"},
    {"role": "user", "content": "Where is the vault? Answer in one word."},
    {"role": "system", "content": "memrules context warning: 22% of the window is used."},
]
SEED_CONFIG = (
    "context_window_tokens: 256\nmax_messages: 6\n"
    "strategies:\n  - type: sliding_window\n    keep_messages: 4\n"
)


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memrules", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
        cwd=ROOT,
    )


def test_compact_prints_openai_messages_and_writes_the_report(tmp_path: Path) -> None:
    config = tmp_path / "seed.yaml"
    config.write_text(SEED_CONFIG)
    source = tmp_path / "in.json"
    source.write_text(json.dumps(SEED_MESSAGES))
    report = tmp_path / "report.json"
    done = run("compact", "--config", str(config), str(source), "--report", str(report))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out == [SEED_MESSAGES[i] for i in (0, 6, 7, 8)]
    data = json.loads(report.read_text())
    assert data["stop_reason"] == "under_budget"
    assert data["messages_before"] == 9
    assert data["messages_after"] == 4
    assert data["origin"] == [0, 6, 7, 8]
    assert data["actions"][0]["strategy"] == "sliding_window"
    assert data["actions"][0]["removed"] == [1, 2, 3, 4, 5]


def test_request_object_keeps_its_other_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ROOT / "configs" / "tiny_budget.yaml"
    assert main(["compact", "--config", str(config), str(HISTORY)]) == 0
    out = json.loads(capsys.readouterr().out)
    original = json.loads(HISTORY.read_text())
    assert out["model"] == original["model"]
    assert out["messages"][0] == original["messages"][0]
    assert out["messages"][-1] == original["messages"][-1]
    assert len(out["messages"]) < len(original["messages"])
    # Every tool result still has its call.
    calls = {c["id"] for m in out["messages"] for c in m.get("tool_calls") or []}
    results = {m["tool_call_id"] for m in out["messages"] if m["role"] == "tool"}
    assert results <= calls
    assert calls <= results


def test_stdin_and_anthropic_format(tmp_path: Path) -> None:
    config = tmp_path / "seed.yaml"
    config.write_text(SEED_CONFIG)
    request = {
        "model": "claude",
        "max_tokens": 100,
        "system": "You are terse.",
        "messages": list(SEED_MESSAGES[1:8]),
    }
    done = run(
        "compact", "--format", "anthropic", "--config", str(config), "-", stdin=json.dumps(request)
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["model"] == "claude"
    assert out["system"] == "You are terse."
    # 8 messages (system + 7) over a 6-message trigger: keep 4 = S + newest 3.
    assert out["messages"] == request["messages"][-3:]


def test_no_budget_change_means_output_equals_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "loose.yaml"
    config.write_text("max_messages: 100\n")
    source = tmp_path / "in.json"
    source.write_text(json.dumps(SEED_MESSAGES))
    assert main(["compact", "--config", str(config), str(source)]) == 0
    assert json.loads(capsys.readouterr().out) == SEED_MESSAGES


BAD_CONFIGS = {
    "malformed.yaml": ("strategies: [\n", "malformed.yaml:2: invalid YAML"),
    "unknown.yaml": (
        "strategies:\n  - type: sliding_windw\n",
        "strategies[0].type: unknown strategy type",
    ),
    "types.yaml": (
        "strategies:\n  - type: sliding_window\n    keep_messages: many\n",
        "types.yaml:3: strategies[0].keep_messages: expected a whole number",
    ),
    "both.yaml": (
        "max_tokens: 100\nmax_fraction: 0.5\n",
        "both.yaml:2: max_fraction: max_tokens=100",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_bad_config_is_one_line_and_exit_2(tmp_path: Path, name: str) -> None:
    text, expected = BAD_CONFIGS[name]
    config = tmp_path / name
    config.write_text(text)
    done = run("compact", "--config", str(config), str(HISTORY))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("memrules: error: ")
    assert expected in lines[0]


BAD_INPUTS = [
    ('[{"role": "user", "content": "hi"}', "invalid JSON"),
    ('{"model": "x"}', "'messages'"),
    ('[{"role": "wizard", "content": "hi"}]', "messages[0].role"),
    ('[{"role": "user", "content": 5}]', "messages[0].content"),
    ('[{"role": "tool", "content": "x"}]', "messages[0].tool_call_id"),
    (
        '[{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", '
        '"function": {"name": "f", "arguments": 3}}]}]',
        "messages[0].tool_calls[0].function.arguments",
    ),
    ('"just a string"', "messages"),
]


@pytest.mark.parametrize(("text", "expected"), BAD_INPUTS)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    source = tmp_path / "in.json"
    source.write_text(text)
    status = main(["compact", "--config", str(ROOT / "configs" / "default.yaml"), str(source)])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.out == ""
    line = captured.err.strip()
    assert "\n" not in line
    assert line.startswith("memrules: error: ")
    assert expected in line


def test_missing_input_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["compact", "--config", str(ROOT / "configs" / "default.yaml"), "/nonexistent.json"])
        == 2
    )
    assert "cannot read /nonexistent.json" in capsys.readouterr().err


def test_example_history_is_valid_openai() -> None:
    assert len(from_openai(json.loads(HISTORY.read_text())["messages"])) == 14


def test_a_reader_that_goes_away_gets_no_traceback(tmp_path: Path) -> None:
    # Far more output than a pipe buffers, so the writer meets the closed pipe.
    messages = [{"role": "user", "content": f"message {i} " + "x" * 200} for i in range(2000)]
    source = tmp_path / "big.json"
    source.write_text(json.dumps(messages))
    config = tmp_path / "loose.yaml"
    config.write_text("max_messages: 100000\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "memrules", "compact", "--config", str(config), str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.read(5)
    process.stdout.close()  # like `| head -c 5`
    assert process.wait(timeout=120) == 1
    assert process.stderr.read() == b""
