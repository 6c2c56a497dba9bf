"""``memrules eval``: figures checked against a case computed by hand, the
shipped dataset's table, JSON, the progress line, and --jobs that changes
nothing but the timings."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memrules import count_tokens, from_openai, replay_trace
from memrules._cli.eval import EvalSettings, evaluate, render_table
from memrules._cli.main import main
from memrules._runtime.progress import Progress
from memrules._trace.record import read_trace
from tests.support.chat_server import ChatServer
from tests.support.processes import memrules
from tests.support.seams import needs_memory_extras

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "benchmarks" / "eval" / "dataset.jsonl"

# Two conversations small enough to score by hand.
VAULT = {
    "id": "vault",
    "messages": [
        {"id": "m0", "role": "system", "content": "You are terse."},
        {"id": "m1", "role": "user", "content": "The vault is in Lisbon."},
        {"id": "m2", "role": "assistant", "content": "Noted."},
        {"id": "m3", "role": "user", "content": "The key is blue."},
        {"id": "m4", "role": "assistant", "content": "Noted again."},
    ],
    "questions": [
        {"id": "q1", "question": "Where is the vault?", "answer": "Lisbon", "evidence": ["m1"]},
        {"id": "q2", "question": "What colour is the key?", "answer": "blue",
         "evidence": ["m3"]},
    ],
}  # fmt: skip
ORPHAN = {
    "id": "orphan",
    "messages": [
        {"id": "o1", "role": "user", "content": "Run the tests."},
        {"id": "o2", "role": "tool", "tool_call_id": "gone", "content": "3 passed"},
        {"id": "o3", "role": "assistant", "content": "All green."},
    ],
}

# The task (the first user message) survives by default; here it is a fact
# (m1, the vault), so the cases below turn that off to score a fact the window
# removes; and user_first off keeps the last answer the window leaves after
# the system message.
WINDOW = (
    "max_messages: 4\nsurvivors: {task: false}\nuser_first: false\n"
    "strategies:\n  - type: sliding_window\n    keep_messages: 3\n"
)


def write(path: Path, *conversations: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in conversations), encoding="utf-8")
    return path


def tokens(*messages: dict[str, Any]) -> int:
    return count_tokens(from_openai([{k: v for k, v in m.items() if k != "id"} for m in messages]))


def question(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_the_figures_of_a_case_computed_by_hand(tmp_path: Path) -> None:
    config = tmp_path / "window.yaml"
    config.write_text(WINDOW, encoding="utf-8")
    dataset = write(tmp_path / "d.jsonl", VAULT, ORPHAN)
    (row,) = evaluate(EvalSettings(configs=(config,), dataset=dataset))
    m0, m1, m2, m3, m4 = VAULT["messages"]  # type: ignore[misc]
    q1, q2 = question("Where is the vault?"), question("What colour is the key?")
    # Each question is asked after all five messages: six messages, over the
    # limit of four, and the window keeps three, the survivors counted: the
    # system message, the last answer and the question. Neither fact is left
    # in the context (their messages went, and neither answer is in what stayed).
    before = tokens(m0, m1, m2, m3, m4, q1) + tokens(m0, m1, m2, m3, m4, q2)
    after = tokens(m0, m4, q1) + tokens(m0, m4, q2)
    # The conversation without questions is one request, under the limit,
    # sent as it came: with its tool result that answers no call.
    before += tokens(*ORPHAN["messages"])  # type: ignore[arg-type]
    after += tokens(*ORPHAN["messages"])  # type: ignore[arg-type]
    assert (row.name, row.requests, row.facts, row.kept) == ("window", 3, 2, 0)
    assert (row.tokens_before, row.tokens_after) == (before, after)
    assert row.ratio == before / after
    assert row.broken == 1  # the orphan result: inherited, and still provider-invalid
    assert row.recalled is None
    assert row.kept_or_recalled is None
    table = render_table([row], k=5)
    header, line = table.splitlines()
    assert header.split() == [
        "pipeline", "requests", "tokens", "before", "tokens", "after", "ratio", "broken",
        "pairs", "facts", "kept", "recall@5", "kept", "or", "recalled", "p50", "ms", "p95", "ms",
    ]  # fmt: skip
    cells = line.split()
    assert cells[:8] == [
        "window", "3", f"{before:,}", f"{after:,}", f"{before / after:.2f}x", "1", "0.0%", "—",
    ]  # fmt: skip


@needs_memory_extras
def test_facts_kept_by_evidence_or_by_answer_and_recalled_from_the_store(tmp_path: Path) -> None:
    """With a store: offload moves the first turn out; the vault's message is
    then recalled (lexical search, k=1) but gone from the context; the key's
    message stays in the context and was never stored."""
    dataset = write(tmp_path / "d.jsonl", VAULT)
    with ChatServer() as server:
        config = tmp_path / "memory.yaml"
        config.write_text(
            "max_messages: 4\nsurvivors: {task: false}\n"  # the first turn (a fact) can go
            "store: {backend: qdrant, path: ':memory:', search: lexical}\n"
            f"embedder: {{type: openai, base_url: '{server.url}', model: e, dimensions: 16}}\n"
            "strategies:\n  - type: offload\n    turns: 1\n",
            encoding="utf-8",
        )
        (row,) = evaluate(EvalSettings(configs=(config,), dataset=dataset, k=1))
    assert (row.requests, row.facts) == (2, 2)
    assert (row.kept, row.recalled, row.kept_or_recalled) == (1, 1, 2)
    assert (row.kept_share, row.recall_share, row.kept_or_recalled_share) == (0.5, 0.5, 1.0)
    assert row.broken == 0
    m0, _, _, m3, m4 = VAULT["messages"]  # type: ignore[misc]
    assert row.tokens_after == tokens(m0, m3, m4, question("Where is the vault?")) + tokens(
        m0, m3, m4, question("What colour is the key?")
    )


def test_a_summary_that_keeps_the_answer_keeps_the_fact(tmp_path: Path) -> None:
    dataset = write(tmp_path / "d.jsonl", VAULT)
    config = tmp_path / "summary.yaml"
    config.write_text(
        "max_messages: 4\nsummarizer: extractive\nstrategies:\n  - type: summarize\n    turns: 1\n",
        encoding="utf-8",
    )
    (row,) = evaluate(EvalSettings(configs=(config,), dataset=dataset))
    # The vault's turn is summarized: its message is gone, "Lisbon" is in the summary.
    assert (row.facts, row.kept) == (2, 2)


def _eval(*args: str, seed: str = "0") -> subprocess.CompletedProcess[str]:
    return memrules("eval", *args, seed=seed)


def test_the_shipped_dataset_with_three_configs_prints_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configs = ("configs/default.yaml", "configs/coding_agent.yaml",
               "benchmarks/eval/configs/summarize.yaml")  # fmt: skip
    argv = [a for c in configs for a in ("--config", str(ROOT / c))]
    status = main(["eval", *argv, "--max-tokens", "800", str(DATASET), "--no-progress"])
    out, err = capsys.readouterr()
    assert (status, err) == (0, "")
    header, *rows = out.splitlines()
    assert header.startswith("pipeline")
    assert [r.split()[0] for r in rows] == ["default", "coding_agent", "summarize"]
    for row in rows:
        cells = row.split()
        assert cells[1] == "28"  # requests: one per question
        assert cells[5] == "0"  # broken tool pairs
    status = main(["eval", *argv, "--max-tokens", "800", str(DATASET), "--json"])
    figures = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in figures["pipelines"]] == ["default", "coding_agent", "summarize"]
    first = figures["pipelines"][0]
    assert first["facts"] == 28
    assert first["tokens_before"] > first["tokens_after"] > 0
    assert first["recall_share"] is None
    assert figures["max_tokens"] == 800


@pytest.mark.slow
@needs_memory_extras
def test_jobs_change_nothing_but_timings_and_the_trace_replays(tmp_path: Path) -> None:
    subset = tmp_path / "subset.jsonl"
    lines = DATASET.read_text(encoding="utf-8").splitlines(keepends=True)
    subset.write_text("".join(lines[:1] + lines[-2:]), encoding="utf-8")  # a chat, two agents
    configs = ("configs/default.yaml", "benchmarks/eval/configs/summarize.yaml",
               "benchmarks/eval/configs/memory.yaml")  # fmt: skip
    argv = [a for c in configs for a in ("--config", c)]
    runs = {}
    for jobs, seed in (("1", "0"), ("4", "1")):
        trace = tmp_path / f"jobs{jobs}.jsonl"
        done = _eval(*argv, "--max-tokens", "600", "--json", "--jobs", jobs, "--trace", str(trace),
                     str(subset), seed=seed)  # fmt: skip
        assert done.returncode == 0, done.stderr
        figures = json.loads(done.stdout)
        for p in figures["pipelines"]:
            del p["p50_ms"], p["p95_ms"]
            p.pop("recall_p50_ms", None)  # timings too, for the configs with a store
            p.pop("recall_p95_ms", None)
        runs[jobs] = (figures, trace.read_bytes())
    assert runs["1"][0] == runs["4"][0]
    assert runs["1"][1] == runs["4"][1]
    memory = runs["1"][0]["pipelines"][2]
    assert memory["recall_share"] is not None
    assert memory["kept_or_recalled_share"] >= memory["facts_kept_share"]
    header, found = read_trace(tmp_path / "jobs4.jsonl")
    assert [p["name"] for p in header.pipelines] == ["default", "summarize", "memory"]
    assert {line.data["kind"] for line in found} == {"apply", "recall"}
    summary = replay_trace(tmp_path / "jobs4.jsonl")
    assert summary.identical
    assert summary.requests > 0


def test_the_progress_line_counts_conversations(tmp_path: Path) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    config = tmp_path / "window.yaml"
    config.write_text(WINDOW, encoding="utf-8")
    dataset = write(tmp_path / "d.jsonl", VAULT, ORPHAN)
    with Progress(Terminal(), delay=60.0) as progress:
        evaluate(EvalSettings(configs=(config,), dataset=dataset), progress)
        line = progress.render()
    assert line.startswith("eval: 2/2 conversations [########################] 100% ")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--jobs", "0"], "--jobs: '0' is not a whole number from 1 to 256"),
        (["--jobs", "9" * 23], f"--jobs: '{'9' * 23}' is not a whole number from 1 to 256"),
        (["-k", "0"], "-k: '0' is not a whole number from 1 to 100"),
        (["-k", "101"], "-k: '101' is not a whole number from 1 to 100"),
        (["--max-tokens", "0"], "--max-tokens: '0' is not a whole number from 1 to 1,000,000,000"),
        (["--bootstrap", "-1"], "--bootstrap: '-1' is not a whole number from 0 to 1,000,000"),
        (["--bootstrap", "1e9"], "--bootstrap: '1e9' is not a whole number from 0 to 1,000,000"),
        (["--seed", "9" * 100_000], f"--seed: '{'9' * 40}...' is not a whole number from 0 to"),
    ],
)
def test_bad_arguments_are_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    status = main(["eval", "--config", "configs/default.yaml", *args, str(DATASET)])
    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert err.startswith(f"memrules eval: error: argument {words}")
    assert err.count("\n") == 1


def test_a_bad_dataset_or_config_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path / "bad.jsonl", {**VAULT, "questions": [{"id": "q", "question": "?"}]})
    status = main(["eval", "--config", str(ROOT / "configs/default.yaml"), str(bad)])
    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert err == (
        f"memrules: error: {bad}:1: questions[0].evidence: expected a non-empty list of "
        "message ids\n"
    )
    status = main(["eval", "--config", str(tmp_path / "nope.yaml"), str(DATASET)])
    assert status == 2
    assert "config file not found" in capsys.readouterr().err
    status = main(["eval", "--config", "configs/default.yaml", str(tmp_path / "none.jsonl")])
    assert status == 2
    assert "cannot read the dataset" in capsys.readouterr().err
