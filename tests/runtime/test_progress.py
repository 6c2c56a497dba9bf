"""The progress line: drawn on a real terminal only, wiped before output."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memrules._cli import compact, streams
from memrules._cli import main as _cli
from memrules._runtime.progress import Progress, ProgressObserver, is_terminal

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """
max_tokens: 2000
strategies:
  - type: clear_tool_results
    keep_pairs: 2
  - type: sliding_window
    keep_messages: 10
"""


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _large(path: Path, turns: int = 300) -> Path:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i}"})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": "{}"},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "data " * 50})
    path.write_text(json.dumps(messages))
    return path


def test_nothing_is_drawn_off_a_terminal() -> None:
    stream = io.StringIO()
    with Progress(stream, delay=0, interval=0.001) as progress:
        assert not progress.enabled
        progress.update("working", 0.5)
        time.sleep(0.02)
    assert stream.getvalue() == ""
    assert not is_terminal(None)


def test_a_terminal_gets_a_redrawn_line_that_is_wiped_at_the_end() -> None:
    ticks = iter(range(1000))
    stream = FakeTerminal()
    progress = Progress(stream, delay=0, interval=0.001, clock=lambda: float(next(ticks)))
    progress.update("compact: pass 1/4", 0.25)
    deadline = time.monotonic() + 5
    while "\r\x1b[K" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.005)
    progress.close()
    out = stream.getvalue()
    assert "compact: pass 1/4 [######..................]  25%" in out
    assert out.endswith("\r\x1b[K")


def test_short_runs_draw_nothing() -> None:
    stream = FakeTerminal()
    with Progress(stream, delay=10) as progress:
        progress.update("quick", 0.5)
    assert stream.getvalue() == ""


def test_the_render_of_an_unknown_share_is_the_label_and_clock() -> None:
    progress = Progress(None, clock=iter([0.0, 75.0]).__next__)
    progress.label = "bench: loop (2/5)"
    assert progress.render() == "bench: loop (2/5) 1:15"


def test_the_observer_reports_pass_strategy_and_tokens() -> None:
    from memrules import load_pipeline

    stream = FakeTerminal()
    seen: list[str] = []
    progress = Progress(stream, delay=100)
    original = progress.update

    def update(label: str, fraction: float | None = None) -> None:
        seen.append(f"{label} {fraction}")
        original(label, fraction)

    progress.update = update  # type: ignore[method-assign]
    pipeline = load_pipeline(CONFIG, observers=[ProgressObserver(progress)])
    from memrules._core.messages import message

    pipeline.apply(tuple(message("user", "word " * 200) for _ in range(20)))
    progress.close()
    assert seen[0] == "apply: counting 20 messages None"
    assert seen[1].startswith("apply: pass 1/4 clear_tool_results (1/2) ")
    assert seen[1].endswith(" 0.0")
    assert seen[2].startswith("apply: pass 1/4 sliding_window (2/2) ")


def test_compact_on_a_real_terminal_shows_progress_and_clean_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """stderr is the slave side of a real pseudo-terminal."""
    master, slave = os.openpty()
    terminal = os.fdopen(slave, "w", buffering=1)
    drawn: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return
            if not chunk:
                return
            drawn.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG)
    history = _large(tmp_path / "h.json")
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(
        compact,
        "progress_line",
        lambda args: Progress(None if args.no_progress else sys.stderr, delay=0, interval=0.001),
    )
    assert terminal.isatty()
    status = _cli.main(["compact", "--config", str(config), str(history)])
    terminal.close()
    reader.join(timeout=5)
    os.close(master)
    assert status == 0
    shown = b"".join(drawn).decode()
    assert "apply: " in shown
    assert "\x1b[K" in shown
    out = json.loads(capsys.readouterr().out)  # stdout holds only the result
    assert len(out) < 3 * 300


def test_compact_into_a_pipe_shows_no_progress(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG)
    history = _large(tmp_path / "h.json", turns=100)
    done = subprocess.run(
        [sys.executable, "-m", "memrules", "compact", "--config", str(config), str(history)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert done.stderr == ""
    assert json.loads(done.stdout)


def test_no_progress_turns_it_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = _cli._parser().parse_args(["compact", "--no-progress", "--config", "c", "x"])
    monkeypatch.setattr(sys, "stderr", FakeTerminal())
    assert not streams.progress_line(args).enabled
    args = _cli._parser().parse_args(["compact", "--config", "c", "x"])
    assert streams.progress_line(args).enabled


def test_bench_reports_each_section(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.harness import command

    calls: list[str] = []

    class Tracker:
        def update(self, label: str, fraction: float | None = None) -> None:
            calls.append(label)

        def clear(self) -> None:
            calls.append("clear")

    monkeypatch.setattr(command.measure, "SECTIONS", (("one", lambda ctx: None),))
    monkeypatch.setattr(command.render, "SECTIONS", {"one": lambda figures: "table\n"})
    monkeypatch.setattr(command, "judge", lambda figures: [])
    monkeypatch.setattr(command.render, "targets", lambda figures, judged: "")
    settings = command.measure.Settings.quick_settings(langchain=False)
    command.run(settings, io.StringIO(), progress=Tracker())
    assert calls == ["bench: one (1/1)", "clear"]
