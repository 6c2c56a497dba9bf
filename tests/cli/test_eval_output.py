"""``memrules eval``'s outputs for analysis: per-question lines (where each
evidence message went and which strategy removed it), CSV, seeded bootstrap
intervals, paired comparisons, and the cache columns."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules import Pipeline, from_openai, load_config
from memrules._cli.eval import EvalSettings, run_eval
from memrules._cli.main import main
from memrules._cli.stats import bootstrap_ratio, mcnemar_exact
from memrules._counting.cache import OpenAIRule, Sent, measure
from tests.cli.test_eval import VAULT, WINDOW, write

EVERYTHING = (
    "strategies:\n  - type: sliding_window\n    keep_messages: 3\n"  # no trigger: nothing goes
)


def _configs(tmp_path: Path) -> tuple[Path, Path]:
    window = tmp_path / "window.yaml"
    window.write_text(WINDOW, encoding="utf-8")
    whole = tmp_path / "whole.yaml"
    whole.write_text(EVERYTHING, encoding="utf-8")
    return window, whole


def test_per_question_lines_say_where_each_evidence_message_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    window, whole = _configs(tmp_path)
    dataset = write(tmp_path / "d.jsonl", VAULT)
    out = tmp_path / "pq.jsonl"
    argv = ["eval", "--config", str(window), "--config", str(whole), str(dataset)]
    assert main([*argv, "--per-question", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(line["question"], line["config"]) for line in lines] == [
        ("q1", "window"), ("q1", "whole"), ("q2", "window"), ("q2", "whole"),
    ]  # fmt: skip
    q1_window, q1_whole = lines[0], lines[1]
    # The window keeps the system message, the last answer and the question:
    # the vault's message (m1) went, and sliding_window removed it.
    assert q1_window["outcome"] == "lost"
    assert q1_window["evidence"] == [
        {"id": "m1", "where": "gone", "by": "sliding_window",
         "steps": ["removed by sliding_window"], "recalled": None},
    ]  # fmt: skip
    assert q1_window["tokens_after"] < q1_window["tokens_before"]
    assert q1_whole["outcome"] == "kept"
    assert q1_whole["evidence"] == [
        {"id": "m1", "where": "context", "by": None, "steps": [], "recalled": None}
    ]
    assert q1_whole["tokens_after"] == q1_whole["tokens_before"]
    assert lines[2]["evidence"][0]["by"] == "sliding_window"  # m3, the key's colour


def test_the_csv_has_one_row_per_config_with_each_rate_and_its_interval(tmp_path: Path) -> None:
    window, whole = _configs(tmp_path)
    dataset = write(tmp_path / "d.jsonl", VAULT, {**VAULT, "id": "vault-2"})
    out = tmp_path / "t.csv"
    argv = ["eval", "--config", str(window), "--config", str(whole), str(dataset), "--json"]
    assert main([*argv, "--csv", str(out), "--bootstrap", "50"]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert [r["pipeline"] for r in rows] == ["window", "whole"]
    assert (rows[0]["facts"], rows[0]["facts_kept"]) == ("4", "0.0")
    assert (rows[1]["facts_kept"], rows[1]["facts_kept_low"], rows[1]["facts_kept_high"]) == (
        "1.0", "1.0", "1.0",
    )  # fmt: skip
    assert rows[0]["recall"] == rows[0]["recall_low"] == ""  # no store: no recall, no interval


def _dataset(tmp_path: Path, conversations: int) -> Path:
    """Conversations where the window keeps some facts and loses others:
    each asks about its first fact (lost) and its last (kept), at random."""
    rng = random.Random(7)
    lines = []
    for c in range(conversations):
        messages = [{"id": "s", "role": "system", "content": "Be brief."}]
        for i in range(4):
            messages += [
                {"id": f"u{i}", "role": "user", "content": f"Fact {i}: the code is {c}-{i}."},
                {"id": f"a{i}", "role": "assistant", "content": "Noted."},
            ]
        asked = rng.sample(range(4), rng.randint(1, 3))
        questions = [
            {"id": f"q{i}", "question": f"What is code {i}?", "answer": f"{c}-{i}",
             "evidence": [f"u{i}"]}
            for i in asked
        ]  # fmt: skip
        lines.append({"id": f"c{c}", "messages": messages, "questions": questions})
    return write(tmp_path / "many.jsonl", *lines)


def test_bootstrap_intervals_are_seeded_and_bracket_the_rate(tmp_path: Path) -> None:
    config = tmp_path / "window.yaml"
    config.write_text(
        "max_messages: 6\nstrategies:\n  - type: sliding_window\n    keep_messages: 5\n",
        encoding="utf-8",
    )
    dataset = _dataset(tmp_path, 12)
    settings = EvalSettings(configs=(config,), dataset=dataset, bootstrap=300, seed=3)
    (row,) = run_eval(settings).rows
    again = run_eval(settings).rows[0]
    other = run_eval(EvalSettings(configs=(config,), dataset=dataset, bootstrap=300, seed=4))
    low, high = row.interval("facts_kept") or (None, None)
    assert low is not None
    assert high is not None
    assert row.kept_share is not None
    assert 0 < row.kept_share < 1
    assert low < row.kept_share < high
    assert again.interval("facts_kept") == (low, high)  # the same seed, the same interval
    assert other.rows[0].interval("facts_kept") != (low, high)


def test_paired_comparison_counts_the_questions_only_one_config_kept(tmp_path: Path) -> None:
    window, whole = _configs(tmp_path)
    dataset = write(tmp_path / "d.jsonl", VAULT)
    run = run_eval(EvalSettings(configs=(window, whole), dataset=dataset, bootstrap=100))
    (kept,) = [c for c in run.comparisons if c.rate == "facts_kept"]
    assert (kept.a, kept.b, kept.questions) == ("window", "whole", 2)
    assert (kept.a_hits, kept.b_hits, kept.only_a, kept.only_b) == (0, 2, 0, 2)
    assert kept.difference == 1.0
    assert kept.p_value == 0.5  # two discordant questions, both one way: 2 * (1/2)**2
    assert kept.interval == (1.0, 1.0)


def test_cache_columns_are_what_measure_says_between_consecutive_requests(tmp_path: Path) -> None:
    """A long conversation asked three questions in turn, with nothing
    compacted: each request repeats the previous one and adds to it, so
    OpenAI's cache serves the shared prefix once it passes 1,024 tokens."""
    filler = " ".join(f"word{i}" for i in range(400))
    messages = [{"id": "s", "role": "system", "content": "Be brief. " + filler}]
    for i in range(6):
        messages += [
            {"id": f"u{i}", "role": "user", "content": f"Fact {i}: {filler}"},
            {"id": f"a{i}", "role": "assistant", "content": "Noted."},
        ]
    questions = [
        {"id": f"q{i}", "question": f"Fact {i}?", "evidence": [f"u{i}"], "after": f"a{i + 3}"}
        for i in range(3)
    ]
    dataset = write(tmp_path / "long.jsonl", {"id": "long", "messages": messages,
                                              "questions": questions})  # fmt: skip
    config = tmp_path / "none.yaml"
    config.write_text("strategies: []\n", encoding="utf-8")
    run = run_eval(EvalSettings(configs=(config,), dataset=dataset))
    (row,) = run.rows
    # The oracle: measure over the requests as sent (nothing was compacted).
    counter = Pipeline.from_config(load_config(config)).counter  # as the pipeline counts
    previous, cached, cost, sent = None, 0, 0.0, 0
    requests = run.requests[0]
    for i, figures in enumerate(requests):
        given = [*messages[: 2 * (i + 3) + 3], {"id": f"question:q{i}", "role": "user",
                                                 "content": f"Fact {i}?"}]  # fmt: skip
        request = tuple(
            m.evolve(id=g["id"])
            for m, g in zip(
                from_openai([{k: v for k, v in g.items() if k != "id"} for g in given]),
                given,
                strict=True,
            )
        )
        counts = counter.counts(request)
        now = Sent(messages=request, counts=counts,
                   overhead=figures.tokens_after - sum(counts))  # fmt: skip
        found = measure(previous, now, OpenAIRule())
        previous = now
        cached, cost, sent = cached + found.cached, cost + found.cost, sent + found.tokens
        assert figures.cached == found.cached
    assert (row.cached, row.sent) == (cached, sent)
    assert row.cost == pytest.approx(cost)
    assert row.cached > 0
    assert requests[0].cached == 0  # the first request has nothing before it
    assert row.cache_share is not None
    assert 0 < row.cache_share < 1


# --- the statistics, against independent computations ----------------------------------


def test_mcnemar_exact_matches_the_binomial_tail() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(5, 0) == mcnemar_exact(0, 5)
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(1, 9) == pytest.approx(2 * (1 + 10) / 1024)


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(1, 5)).map(lambda t: (min(t), t[1])),
        min_size=1,
        max_size=12,
    ),
    st.integers(0, 2**16),
)
def test_a_bootstrap_interval_lies_between_the_extreme_conversations(
    groups: list[tuple[int, int]], seed: int
) -> None:
    pairs = [(float(a), float(b)) for a, b in groups]
    found = bootstrap_ratio(pairs, resamples=40, seed=seed)
    assert found is not None
    low, high = found
    rates = [a / b for a, b in pairs]
    assert min(rates) - 1e-12 <= low <= high <= max(rates) + 1e-12
    assert bootstrap_ratio(pairs, resamples=40, seed=seed) == found


def test_a_question_category_is_read_as_a_string(tmp_path: Path) -> None:
    from memrules._cli.dataset import DatasetError, parse_conversation

    asked = [dict(q, category=c) for q, c in zip(VAULT["questions"], (2, "place"), strict=True)]  # type: ignore[call-overload]
    parsed = parse_conversation({**VAULT, "questions": asked}, "d.jsonl:1")
    assert [q.category for q in parsed.questions] == ["2", "place"]
    wrong = [dict(q, category=["x"]) for q in VAULT["questions"]]  # type: ignore[attr-defined]
    with pytest.raises(
        DatasetError, match=r"questions\[0\]\.category: expected a non-empty string"
    ):
        parse_conversation({**VAULT, "questions": wrong}, "d.jsonl:1")
