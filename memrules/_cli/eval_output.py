"""``memrules eval``'s files for analysis: one JSON line per question
(``--per-question``) and the table as CSV (``--csv``).

A per-question line, one per question and config, in the dataset's order
and the configs' order within it::

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
from collections.abc import Callable, Iterator
from typing import Any

from memrules._cli.eval import CACHE_RULE, RATES, EvalRun, PipelineFigures, RequestFigures

__all__ = ["per_question_lines", "table_csv"]


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
