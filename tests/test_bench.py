"""The benchmark: its history generator, and that a tiny run prints its tables.

No timings are asserted here; the figures come from running the benchmark.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memrules import from_openai
from memrules._bench import render
from memrules._bench.histories import History, agent_history, request_points
from memrules._bench.measure import sample_turns
from memrules._bench.targets import judge
from memrules._cli import main as cli_main
from memrules._messages import Text, ToolCall, ToolResult
from memrules._tokens import TiktokenCounter, load_encoding


def main(argv: list[str]) -> int:
    """``memrules bench ARGV``."""
    return cli_main(["bench", *argv])


def _is_cjk(text: str) -> bool:
    return any("\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff" for c in text)


@pytest.fixture(scope="module")
def history() -> History:
    return agent_history(600, seed=7)


def test_same_seed_same_history() -> None:
    a, b = agent_history(300, seed=3), agent_history(300, seed=3)
    assert a.messages == b.messages
    assert a.openai == b.openai
    assert agent_history(300, seed=4).messages != a.messages


@pytest.mark.parametrize("size", [2, 3, 7, 100, 1_000])
def test_exact_size_system_first_and_no_dangling_step(size: int) -> None:
    h = agent_history(size, seed=size)
    assert len(h.messages) == len(h.openai) == size
    assert h.messages[0].role == "system"
    assert h.openai[0]["role"] == "system"
    calls = {c for m in h.messages for c in m.call_ids}
    results = {r for m in h.messages for r in m.result_ids}
    assert calls == results  # every call answered, every result's call present


def test_too_small_is_an_error() -> None:
    with pytest.raises(ValueError, match="size=1"):
        agent_history(1)


def test_openai_form_reads_back_as_the_messages(history: History) -> None:
    assert from_openai(list(history.openai)) == history.messages


def test_messages_are_distinct_values(history: History) -> None:
    # Equal messages would hit the token cache and flatter cold counting.
    assert len(set(history.messages)) == len(history.messages)


def test_has_tool_pairs_parallel_calls_file_reads_and_cjk(history: History) -> None:
    msgs = history.messages
    assert sum(len(m.call_ids) for m in msgs) > 100
    assert any(len(m.call_ids) >= 2 for m in msgs)
    read_ids = {
        p.id for m in msgs for p in m.parts if isinstance(p, ToolCall) and p.name == "read_file"
    }
    sizes = [
        len(p.content.encode())
        for m in msgs
        for p in m.parts
        if isinstance(p, ToolResult) and p.call_id in read_ids and isinstance(p.content, str)
    ]
    assert len(sizes) > 50
    assert all(2048 <= s <= 8192 for s in sizes), (min(sizes), max(sizes))
    assert any(_is_cjk(m.countable_text) for m in msgs if m.role == "user")
    assert any(_is_cjk(m.countable_text) for m in msgs if m.role == "tool")
    assert any("```python" in p.text for m in msgs for p in m.parts if isinstance(p, Text))
    # long runs of tool steps: some turn holds at least 16 of them
    steps = longest = 0
    for m in msgs:
        if m.role == "user":
            steps = 0
        elif m.call_ids:
            steps += 1
            longest = max(longest, steps)
    assert longest >= 16


def test_about_half_a_million_tokens_per_thousand_messages() -> None:
    h = agent_history(1_000, seed=0)
    counter = TiktokenCounter(load_encoding("o200k_base"))
    total = sum(map(counter.count, h.messages))
    assert 400_000 <= total <= 600_000


def test_request_points_end_a_step(history: History) -> None:
    msgs = history.messages
    points = request_points(history)
    assert points
    for n in points:
        assert msgs[n - 1].role in ("user", "tool")
        calls = {c for m in msgs[:n] for c in m.call_ids}
        results = {r for m in msgs[:n] for r in m.result_ids}
        assert calls == results


def test_langchain_counter_sees_the_text_memrules_counts(history: History) -> None:
    pytest.importorskip("langchain_core")
    from memrules._bench._langchain import load_langchain, message_text

    lc = load_langchain(load_encoding("o200k_base"))
    assert lc is not None
    converted = lc.convert(history.openai)
    assert [message_text(m) for m in converted] == [
        f"{m.role} {m.countable_text}" for m in history.messages
    ]


def _sections(text: str) -> None:
    for title in (
        "Histories",
        "1. Counting",
        "2. One request",
        "3. Growing loop",
        "4. Quality",
        "5. Peak memory",
        "Targets",
    ):
        assert f"== {title}" in text
    assert "memrules trim_to_budget" in text
    assert "count-once floor" in text


def test_quick_run_prints_the_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    _sections(out)
    if importlib.util.find_spec("langchain_core") is None:
        assert "not installed" in out
    else:
        assert "LC exact start_on=human" in out
        assert "LC approx" in out


def test_quick_run_without_langchain(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("langchain_core", "langchain_core.messages", "langchain_core.messages.utils"):
        monkeypatch.setitem(sys.modules, name, None)
    target = tmp_path / "figures.json"
    assert main(["--quick", "--json", str(target)]) == 0
    out = capsys.readouterr().out
    _sections(out)
    assert "LangChain not installed" in out
    assert out.count("not installed") > 5
    figures = json.loads(target.read_text(encoding="utf-8"))
    assert figures["langchain"] == "not installed"
    assert figures["loop"]["lc_exact"] is None
    assert figures["loop"]["memrules_s"] > 0
    assert set(figures["targets"]) >= {"loop_vs_floor", "memory", "no_compaction"}


def test_skip_langchain_and_sampled_turns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--skip-langchain", "--sizes", "30", "--turns", "20"]) == 0
    out = capsys.readouterr().out
    assert "LangChain skipped" in out
    assert "20 turns" in out


def test_lc_turns_are_extrapolated_and_labelled(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("langchain_core")
    assert main(["--quick", "--sizes", "30", "--turns", "40", "--lc-turns", "5"]) == 0
    out = capsys.readouterr().out
    assert "extrapolated from 5 of 40 turns" in out


@pytest.mark.parametrize(
    "argv", [["--sizes", "1"], ["--turns", "0"], ["--lc-turns", "1"], ["--seed", "x"]]
)
def test_bad_arguments_exit_with_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("memrules bench: error: argument")


def test_an_unwritable_json_path_fails_before_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--json", "/nonexistent/x.json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing ran
    assert captured.err == (
        "memrules: error: cannot write the figures /nonexistent/x.json: no directory /nonexistent\n"
    )


def test_sampled_turns_spread_evenly() -> None:
    assert sample_turns(10, None) == list(range(1, 11))
    assert sample_turns(10, 20) == list(range(1, 11))
    assert sample_turns(1000, 4) == [126, 376, 626, 876]


FIGURES: dict[str, Any] = {
    "settings": {"quick": False},
    "environment": {"langchain_status": "not installed"},
    "counting": [{"messages": 100, "ratio": 1.1}, {"messages": 1000, "ratio": 1.4}],
    "no_compaction": {"messages": 10_000, "memrules_warm_s": 0.0004},
    "loop": {"lc_exact": None, "lc_exact_human": None, "memrules_vs_floor": 4.2},
    "quality": [
        {"budget": 32_000, "config": "memrules", "broken_pairs": 0, "budget_use_median": 0.97},
        {"budget": 32_000, "config": "lc_exact", "broken_pairs": 9, "budget_use_median": 0.5},
    ],
    "memory": {"messages": 10_000, "ratio_cold": 2.5},
}


def test_targets_are_judged_from_the_figures_alone() -> None:
    verdicts = {t.key: t.met for t in judge(FIGURES)}
    assert verdicts == {
        "cold_counting_100": True,
        "cold_counting_1000": False,
        "no_compaction": True,
        "loop_vs_langchain": None,
        "loop_vs_floor": True,
        "broken_pairs_32000": True,
        "budget_use_32000": True,
        "memory": False,
    }


def test_targets_render_as_a_table() -> None:
    text = render.targets(FIGURES, judge(FIGURES))
    lines = text.splitlines()
    assert lines[0] == "== Targets (issue 4)"
    row = next(line for line in lines if line.startswith("cold counting, 1,000 msgs"))
    assert row.split()[-1] == "MISSED"
    assert "not installed" in next(
        line for line in lines if line.startswith("loop: memrules vs LC")
    )
    assert render.ms(0.0004) == "400 µs"
    assert render.ratio(1234.0) == "1,234×"


def test_the_library_does_not_import_the_bench_or_langchain() -> None:
    code = (
        "import sys, memrules\n"
        "memrules.load_pipeline('max_messages: 3').apply(())\n"
        "bench = sorted(m for m in sys.modules if m.startswith('memrules._bench'))\n"
        "print(bench, 'langchain_core' in sys.modules, 'memrules._cli' in sys.modules)\n"
        "import memrules._cli\n"
        "print('langchain_core' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout == "[] False False\nFalse\n"
