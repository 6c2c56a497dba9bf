"""``memrules eval``'s output: the text table, the JSON figures
(``--json``), and the files for analysis: one JSON line per question
(``--per-question``) and the table as CSV (``--csv``).

A per-question line, one per question and config, in the dataset's order
and the configs' order within it:

    {"conversation": "chat-7", "question": "q1", "category": null,
     "config": "window", "outcome": "lost", "kept": false, "recalled": null,
     "evidence": [{"id": "m1", "where": "gone", "by": "sliding_window",
                   "steps": ["removed by sliding_window"], "recalled": null}],
     "tokens_before": 812, "tokens_after": 240,
     "cache": {"sent_tokens": 240, "cached_tokens": 0, "cost_units": 240.0}}

``outcome`` is ``kept`` (the answer is in the compacted context),
``recalled`` (not there, but recall found it) or ``lost``. With answer-level
scoring, ``answer`` holds the model's answer, the judge's verdict and the score.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from memrules._cli.eval_figures import (
    CACHE_RULE,
    RATES,
    EvalRun,
    EvalSettings,
    PipelineFigures,
    RequestFigures,
)
from memrules._cli.stats import LEVEL, Paired

__all__ = ["figures_json", "per_question_lines", "render_table", "table_csv"]


def _outcome(r: RequestFigures) -> str:
    if r.kept:
        return "kept"
    return "recalled" if r.recalled else "lost"


def _line(config: str, r: RequestFigures) -> dict[str, Any]:
    line: dict[str, Any] = {
        "conversation": r.conversation,
        "question": r.question_id,
        "category": r.category,
        "config": config,
        "outcome": _outcome(r),
        "kept": r.kept,
        "recalled": r.recalled,
        "evidence": [e.to_dict() for e in r.evidence],
        "tokens_before": r.tokens_before,
        "tokens_after": r.tokens_after,
        "cache": {"sent_tokens": r.sent, "cached_tokens": r.cached, "cost_units": round(r.cost, 3)},
    }
    if r.recall_seconds is not None:
        line["recall"] = {"messages": r.recall_count, "ms": round(r.recall_seconds * 1000, 3)}
    if r.scored is not None:
        line["answer"] = r.scored.to_dict()
    return line


def per_question_lines(run: EvalRun) -> Iterator[str]:
    """The ``--per-question`` file's lines (see the module docs), each with its newline."""
    asked = [[r for r in requests if r.question] for requests in run.requests]
    for i in range(len(asked[0]) if asked else 0):
        for row, requests in zip(run.rows, asked, strict=True):
            yield json.dumps(_line(row.name, requests[i]), ensure_ascii=False) + "\n"


def table_csv(run: EvalRun) -> str:
    """The table as CSV: one row per config, shares as fractions, each
    rate's interval as ``<rate>_low`` and ``<rate>_high`` columns (empty
    without ``--bootstrap``), and the cache columns."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    rates: list[tuple[str, Callable[[PipelineFigures], float | None]]] = [
        ("facts_kept", lambda r: r.kept_share),
        ("recall", lambda r: r.recall_share),
        ("kept_or_recalled", lambda r: r.kept_or_recalled_share),
        ("cache_share", lambda r: r.cache_share),
        ("answer_correct", lambda r: r.answer_share),
    ]
    assert [name for name, _ in rates] == list(RATES)
    header = ["pipeline", "config", "config_sha256", "requests", "tokens_before", "tokens_after"]
    header += ["compression_ratio", "broken_tool_pairs", "facts"]
    for name, _ in rates:
        header += [name, f"{name}_low", f"{name}_high"]
    header += ["sent_tokens", "cached_tokens", "cost_units", "cache_rule", "p50_ms", "p95_ms"]
    writer.writerow(header)
    for r in run.rows:
        cells: list[Any] = [r.name, r.config, r.config_sha256, r.requests, r.tokens_before]
        cells += [r.tokens_after, round(r.ratio, 6), r.broken, r.facts]
        for name, share in rates:
            interval = r.interval(name)
            value = share(r)
            cells += [
                "" if value is None else round(value, 6),
                "" if interval is None else round(interval[0], 6),
                "" if interval is None else round(interval[1], 6),
            ]
        cells += [r.sent, r.cached, round(r.cost, 3), CACHE_RULE.name]
        cells += [round(r.p50_ms, 3), round(r.p95_ms, 3)]
        writer.writerow(cells)
    return out.getvalue()


def _share(value: float | None, interval: tuple[float, float] | None = None) -> str:
    if value is None:
        return "—"
    if interval is None:
        return f"{value:.1%}"
    return f"{value:.1%} [{interval[0]:.1%}–{interval[1]:.1%}]"


def render_table(rows: Sequence[PipelineFigures], *, k: int) -> str:
    """The figures as a text table, one row per pipeline."""
    header: tuple[str, ...] = (
        "pipeline",
        "requests",
        "tokens before",
        "tokens after",
        "ratio",
        "broken pairs",
        "facts kept",
        f"recall@{k}",
        "kept or recalled",
        "p50 ms",
        "p95 ms",
    )
    answers = any(r.judged for r in rows)
    if answers:
        header = (*header, "answers correct")
    body = [
        (
            r.name,
            f"{r.requests:,}",
            f"{r.tokens_before:,}",
            f"{r.tokens_after:,}",
            f"{r.ratio:.2f}x",
            f"{r.broken:,}",
            _share(r.kept_share, r.interval("facts_kept")),
            _share(r.recall_share, r.interval("recall")),
            _share(r.kept_or_recalled_share, r.interval("kept_or_recalled")),
            f"{r.p50_ms:.2f}",
            f"{r.p95_ms:.2f}",
            *((_share(r.answer_share, r.interval("answer_correct")),) if answers else ()),
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in (header, *body)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return "  ".join((first, *rest)).rstrip()

    return "\n".join([line(header), *(line(row) for row in body)]) + "\n"


def _interval_json(row: PipelineFigures) -> dict[str, Any]:
    return {rate: None if found is None else list(found) for rate, found in row.intervals}


def figures_json(
    rows: Sequence[PipelineFigures],
    settings: EvalSettings,
    comparisons: Sequence[Paired] = (),
) -> dict[str, Any]:
    """The figures for machines (``--json``): per pipeline the table's
    figures, the cache columns, the answer-level score when models were
    given, and the bootstrap intervals when asked; the paired comparisons."""
    extra: dict[str, Any] = {}
    if settings.bootstrap:
        extra["bootstrap"] = {"resamples": settings.bootstrap, "seed": settings.seed,
                              "level": LEVEL, "resampled": "conversations"}  # fmt: skip
    if comparisons:
        extra["comparisons"] = [c.to_dict() for c in comparisons]
    if settings.answer_model is not None:
        judge = settings.judge_model
        extra["answer_model"] = settings.answer_model.model
        extra["judge_model"] = None if judge is None else judge.model
    return {
        "dataset": str(settings.dataset),
        "k": settings.k,
        "max_tokens": settings.max_tokens,
        **extra,
        "pipelines": [
            {
                "name": r.name,
                "config": r.config,
                "config_sha256": r.config_sha256,
                "requests": r.requests,
                "tokens_before": r.tokens_before,
                "tokens_after": r.tokens_after,
                "compression_ratio": round(r.ratio, 6),
                "broken_tool_pairs": r.broken,
                "facts": r.facts,
                "facts_kept": r.kept,
                "facts_kept_share": r.kept_share,
                "facts_recalled": r.recalled,
                "recall_share": r.recall_share,
                "facts_kept_or_recalled": r.kept_or_recalled,
                "kept_or_recalled_share": r.kept_or_recalled_share,
                "facts_any_evidence_kept_or_recalled": r.any_evidence,
                "any_evidence_kept_or_recalled_share": r.any_evidence_share,
                "p50_ms": round(r.p50_ms, 3),
                "p95_ms": round(r.p95_ms, 3),
                **(
                    {
                        "recall_p50_ms": round(r.recall_p50_ms, 3),
                        "recall_p95_ms": round(r.recall_p95_ms or 0.0, 3),
                    }
                    if r.recall_p50_ms is not None
                    else {}
                ),
                "cache": {
                    "rule": CACHE_RULE.name,
                    "sent_tokens": r.sent,
                    "cached_tokens": r.cached,
                    "cache_share": r.cache_share,
                    "cost_units": round(r.cost, 3),
                },
                **(
                    {
                        "answers": {
                            "answered": r.answered,
                            "judged": r.judged,
                            "correct": r.correct,
                            "correct_share": r.answer_share,
                        }
                    }
                    if settings.answer_model is not None
                    else {}
                ),
                **({"intervals": _interval_json(r)} if r.intervals else {}),
            }
            for r in rows
        ],
    }
