"""The benchmark: its history generator, and that a tiny run prints its tables.

No timings are asserted here; the figures come from running the benchmark.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness import render
from benchmarks.harness.histories import History, agent_history, request_points
from benchmarks.harness.measure import sample_turns
from benchmarks.harness.targets import judge
from benchmarks.run import main
from memrules import from_openai
from memrules._cli.main import main as cli_main
from memrules._core.messages import Text, ToolCall, ToolResult
from memrules._counting.tokens import TiktokenCounter, load_encoding


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
    from benchmarks.harness._langchain import load_langchain, message_text

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
        "2b. One request of",
        "2c. The request hook",
        "3. Growing loops",
        "4. Quality",
        "5. Peak memory",
        "Targets",
    ):
        assert f"== {title}" in text
    assert "memrules (count_rule: openai)" in text
    assert "from_openai every turn" in text
    assert "rounds)" in text  # ratios are medians with their range
    assert "machine load" in text


@pytest.mark.slow  # a whole benchmark run: 40-60 s each on 2 cores
def test_quick_run_prints_the_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    _sections(out)
    if importlib.util.find_spec("langchain_core") is None:
        assert "not installed" in out
    else:
        assert "LC exact start_on=human" in out
        assert "LC approx" in out


@pytest.mark.slow  # a whole benchmark run: 40-60 s each on 2 cores
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
    assert figures["loop_langchain"]["lc_exact"] is None
    loops = figures["loops"]
    assert {(d["turns"], d["path"]) for d in loops} == {
        (t, p) for t in (40, 60) for p in ("list", "from_openai")
    }
    for d in loops:
        assert d["rounds"] == len(d["floor_all_s"]) == len(d["memrules_all_s"]) == 2
        assert d["ratio_min"] <= d["ratio_median"] <= d["ratio_max"]
    assert {r["section"] for r in figures["load"]} >= {"loops", "quality"}
    assert set(figures["targets"]) >= {"loop_list_40", "memory", "no_compaction", "hook_vs_json"}


@pytest.mark.slow  # a whole benchmark run: 40-60 s each on 2 cores
def test_skip_langchain_and_sampled_turns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--skip-langchain", "--sizes", "30", "--turns", "20", "30"]) == 0
    out = capsys.readouterr().out
    assert "LangChain skipped" in out
    assert "the same loop of 20 turns" in out
    assert "loop 30 turns" in out


@pytest.mark.slow  # a whole benchmark run: 40-60 s each on 2 cores
def test_lc_turns_are_extrapolated_and_labelled(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("langchain_core")
    assert main(["--quick", "--sizes", "30", "--turns", "40", "--lc-turns", "5"]) == 0
    out = capsys.readouterr().out
    assert "extrapolated from 5 of 40 turns" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["--sizes", "1"],
        ["--turns", "0"],
        ["--lc-turns", "1"],
        ["--seed", "x"],
        ["--rounds", "1"],
        ["--sizes", "99999999999999999999999"],
        ["--sizes", "40", "1000001"],
        ["--turns", "9" * 100_000],
        ["--lc-turns", "1e9"],
        ["--rounds", "1001"],
        ["--seed", "-1"],
        ["--seed", "9" * 30],
    ],
)
def test_bad_arguments_exit_with_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("benchmarks/run.py: error: argument")


def test_an_unwritable_json_path_fails_before_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--json", "/nonexistent/x.json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing ran
    assert captured.err == (
        "benchmarks/run.py: error: cannot write the figures /nonexistent/x.json:"
        " no directory /nonexistent\n"
    )


def test_sampled_turns_spread_evenly() -> None:
    assert sample_turns(10, None) == list(range(1, 11))
    assert sample_turns(10, 20) == list(range(1, 11))
    assert sample_turns(1000, 4) == [126, 376, 626, 876]


def _rounds(median: float, low: float, high: float) -> dict[str, Any]:
    return {"ratio_median": median, "ratio_min": low, "ratio_max": high, "rounds": 3}


FIGURES: dict[str, Any] = {
    "settings": {"quick": False},
    "environment": {"langchain_status": "not installed"},
    "counting": [
        {"messages": 100, "rule": "openai", **_rounds(1.05, 1.0, 1.2)},
        {"messages": 1000, "rule": "seed", **_rounds(1.4, 1.3, 1.5)},
    ],
    "no_compaction": {"messages": 10_000, "memrules_warm_s": 0.0004},
    "fresh": {
        "messages": 10_000,
        "variants": [
            {"name": "same tuple", "apply_s": 0.0005},
            {"name": "new messages", "apply_s": 0.004},
            {"name": "converted from JSON", "apply_s": 0.012},
        ],
    },
    "hook": {"messages": 10_000, **_rounds(0.3, 0.2, 1.2)},
    "loops": [
        {"turns": 1000, "path": "list", **_rounds(2.1, 1.9, 3.4)},
        {"turns": 10000, "path": "list", **_rounds(3.2, 2.9, 3.3)},
        {"turns": 1000, "path": "from_openai", **_rounds(4.0, 3.0, 6.0)},
    ],
    "loop_langchain": {"turns": 1000, "lc_exact": None, "lc_exact_human": None},
    "quality": [
        {
            "budget": 32_000,
            "config": "memrules",
            "over_budget": 0,
            "broken_pairs": 0,
            "budget_use_median": 0.97,
        },
        {
            "budget": 100_000,
            "config": "memrules",
            "over_budget": 2,
            "broken_pairs": 0,
            "budget_use_median": 0.89,
        },
        {"budget": 32_000, "config": "lc_exact", "broken_pairs": 9, "budget_use_median": 0.5},
    ],
    "memory": {"messages": 10_000, "ratio_cold": 0.3},
}


def test_targets_are_judged_from_the_figures_alone() -> None:
    verdicts = {t.key: t.met for t in judge(FIGURES)}
    assert verdicts == {
        "cold_counting_openai_100": True,
        "cold_counting_seed_1000": False,
        "no_compaction": True,
        "fresh_new_messages": True,
        "fresh_converted_from_JSON": False,
        "hook_vs_json": True,  # the median, whatever one round did
        "loop_list_1000": True,
        "loop_list_10000": False,
        "loop_from_openai_1000": True,
        "loop_vs_langchain": None,
        "over_budget_32000": True,
        "broken_pairs_32000": True,
        "budget_use_32000": True,
        "over_budget_100000": False,
        "broken_pairs_100000": True,
        "budget_use_100000": False,
        "memory": False,
    }


def test_targets_render_as_a_table() -> None:
    text = render.targets(FIGURES, judge(FIGURES))
    lines = text.splitlines()
    assert lines[0] == "== Targets: speed, budget use and peak memory"
    row = next(line for line in lines if line.startswith("cold counting (seed), 1,000 msgs"))
    assert row.split()[-1] == "MISSED"
    assert "not installed" in next(line for line in lines if "LC exact" in line)
    assert render.ms(0.0004) == "400 µs"
    assert render.ratio(1234.0) == "1,234×"


def test_alternating_rounds_take_turns_and_report_the_spread() -> None:
    from benchmarks.harness.measure import alternate

    calls: list[str] = []
    floor_times = iter([1.0, 2.0, 1.0])
    mem_times = iter([2.0, 3.0, 4.0])

    def floor() -> float:
        calls.append("floor")
        return next(floor_times)

    def mem() -> float:
        calls.append("memrules")
        return next(mem_times)

    found = alternate(floor, mem, 3)
    assert calls == ["floor", "memrules", "memrules", "floor", "floor", "memrules"]
    assert (found["ratio_median"], found["ratio_min"], found["ratio_max"]) == (2.0, 1.5, 4.0)
    assert (found["floor_s"], found["memrules_s"]) == (1.0, 3.0)


def test_the_library_and_its_command_do_not_import_the_bench_or_langchain() -> None:
    code = (
        "import sys, memrules\n"
        "memrules.load_pipeline('max_messages: 3').apply(())\n"
        "bench = sorted(m for m in sys.modules if m.startswith('benchmarks'))\n"
        "print(bench, 'langchain_core' in sys.modules, 'memrules._cli.main' in sys.modules)\n"
        "import memrules._cli.main\n"
        "memrules._cli.main.build_parser().parse_args(['check', 'x.yaml'])\n"
        "bench = sorted(m for m in sys.modules if m.startswith('benchmarks'))\n"
        "print(bench, 'langchain_core' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout == "[] False False\n[] False\n"


def test_the_installed_command_has_no_bench(capsys: pytest.CaptureFixture[str]) -> None:
    """The benchmark is a script of the source tree (``python benchmarks/run.py``)."""
    assert cli_main(["bench", "--quick"]) == 2
    assert "invalid choice: 'bench'" in capsys.readouterr().err


def test_bench_help_lists_the_harness_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: benchmarks/run.py [-h] [--quick]")
    for option in ("--sizes", "--seed", "--turns", "--rounds", "--lc-turns", "--json",
                   "--skip-langchain", "--no-progress"):  # fmt: skip
        assert option in out


def test_the_script_runs_the_harness_beside_it_from_any_directory() -> None:
    # From another directory, without the checkout on the path: the script
    # puts its own checkout first, so it measures the memrules beside it.
    root = Path(__file__).resolve().parents[2]
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['run.py', '--quick', '--skip-langchain', '--sizes', '20', '--turns',"
        f" '10', '--no-progress']\n"
        "try:\n"
        f"    runpy.run_path({str(root / 'benchmarks' / 'run.py')!r}, run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    import benchmarks.harness.command as c, memrules\n"
        "    print(exc.code, c.__file__, memrules.__file__)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path("/"), env=env, capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    assert done.stdout.startswith("memrules bench — Python")
    status, harness, package = done.stdout.splitlines()[-1].split()
    assert status == "0"
    assert harness == str(root / "benchmarks" / "harness" / "command.py")
    assert package == str(root / "memrules" / "__init__.py")
