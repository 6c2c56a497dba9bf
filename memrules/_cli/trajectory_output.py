"""``memrules eval --trajectories``' output: the probe table, the JSON
figures (``--json``), the table as CSV (``--csv``), one JSON line per
request (``--per-question``) and the HTML report (``--html``).

The table's columns, one row per config (counts over every request of
every trajectory, and "at last" over each trajectory's final request):

- **without task**: requests whose compacted context lost the task
  statement (the first user message's text), as a share of all;
- **task at last**, **last error at last**, **last test at last**: runs
  whose final request kept it, of those that had one;
- **question**: requests that kept the latest user message with the
  person's text (not a harness message, not only tool results);
- **edited paths** and **at last**: the share of the run's edited files
  (those the uncompacted request mentions) the compacted request mentions;
- **non-user first**: requests whose first message after the system
  messages is not a user message (Anthropic rejects them);
- **over budget o200k**: requests above the budget counted with tiktoken's
  ``o200k_base``; **broken pairs**; **cache share** of the tokens sent
  (`CACHE_RULE`); **p50 ms** of ``apply``.

A per-request line:

    {"config": "coding_agent", "trajectory": "django__django-11099",
     "request": 12, "last": false, "messages": 27, "tokens_before": 9120,
     "tokens_after": 9120, "o200k_tokens": 9233, "over_budget": false,
     "broken_tool_pairs": 0, "task": true, "question": true,
     "user_first": true, "edited_paths": 1, "edited_paths_kept": 1,
     "last_error_line": true, "last_test_command": null,
     "cache": {"sent_tokens": 9120, "cached_tokens": 8960, "cost_units": 1064.0},
     "ms": 1.9}
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Iterator, Sequence
from typing import Any

from memrules._cli.eval_figures import CACHE_RULE
from memrules._cli.eval_trajectories import TrajectoryRow, TrajectoryRun

__all__ = [
    "HEADER",
    "figures_json",
    "per_request_lines",
    "render_table",
    "report_html",
    "row_json",
    "table_cells",
    "table_csv",
]

HEADER = (
    "config",
    "budget",
    "runs",
    "requests",
    "without task",
    "task at last",
    "question",
    "non-user first",
    "edited paths",
    "paths at last",
    "last error at last",
    "last test at last",
    "over budget o200k",
    "broken pairs",
    "cache share",
    "p50 ms",
)


def _pct(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "—"


def _of(counts: tuple[int, int]) -> str:
    return f"{counts[0]} / {counts[1]}"


def table_cells(r: TrajectoryRow) -> tuple[str, ...]:
    """One row of the table as text, in `HEADER`'s order."""
    share = r.cache_share
    return (
        r.name,
        "—" if r.budget is None else f"{r.budget:,}",
        f"{r.trajectories:,}",
        f"{r.requests:,}",
        _pct(r.without_task, r.task[1]),
        _of(r.task_last),
        _pct(*r.question),
        f"{r.non_user_first:,}",
        _pct(*r.paths),
        _pct(*r.paths_last),
        _of(r.error_line_last),
        _of(r.test_command_last),
        "—" if r.over_budget is None else f"{r.over_budget:,}",
        f"{r.broken:,}",
        "—" if share is None else f"{share:.0%}",
        f"{r.p50_ms:.2f}",
    )


def render_table(rows: Sequence[TrajectoryRow]) -> str:
    """The probe table as text (see the module docs), one row per config."""
    body = [table_cells(r) for r in rows]
    widths = [max(len(row[i]) for row in (HEADER, *body)) for i in range(len(HEADER))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return "  ".join((first, *rest)).rstrip()

    return "\n".join([line(HEADER), *(line(row) for row in body)]) + "\n"


def _counts(counts: tuple[int, int]) -> dict[str, Any]:
    kept, of = counts
    return {"kept": kept, "of": of, "share": kept / of if of else None}


def row_json(r: TrajectoryRow) -> dict[str, Any]:
    """One config's figures for machines."""
    return {
        "name": r.name,
        "config": r.config,
        "config_sha256": r.config_sha256,
        "budget_tokens": r.budget,
        "trajectories": r.trajectories,
        "requests": r.requests,
        "tokens_before": r.tokens_before,
        "tokens_after": r.tokens_after,
        "requests_without_task": r.without_task,
        "task": _counts(r.task),
        "task_at_last": _counts(r.task_last),
        "question": _counts(r.question),
        "question_at_last": _counts(r.question_last),
        "requests_not_starting_with_user": r.non_user_first,
        "edited_paths": _counts(r.paths),
        "edited_paths_at_last": _counts(r.paths_last),
        "last_error_line": _counts(r.error_line),
        "last_error_line_at_last": _counts(r.error_line_last),
        "last_test_command": _counts(r.test_command),
        "last_test_command_at_last": _counts(r.test_command_last),
        "over_budget_o200k": r.over_budget,
        "broken_tool_pairs": r.broken,
        "cache": {
            "rule": CACHE_RULE.name,
            "sent_tokens": r.sent,
            "cached_tokens": r.cached,
            "cache_share": r.cache_share,
            "cost_units": round(r.cost, 3),
        },
        "p50_ms": round(r.p50_ms, 3),
        "p95_ms": round(r.p95_ms, 3),
    }


def figures_json(run: TrajectoryRun) -> dict[str, Any]:
    """The figures for machines (``--json``): the trajectories, the budget
    override, and per config `row_json`."""
    return {
        "trajectories": [str(p) for p in run.settings.trajectories],
        "max_tokens": run.settings.max_tokens,
        "pipelines": [row_json(r) for r in run.rows],
    }


_CSV_COUNTS = ("task", "task_last", "question", "question_last", "paths", "paths_last",
               "error_line", "error_line_last", "test_command", "test_command_last")  # fmt: skip


def table_csv(run: TrajectoryRun) -> str:
    """The table as CSV: one row per config, each probe as its ``_kept`` and
    ``_of`` counts, and the cache columns."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["pipeline", "config", "config_sha256", "budget_tokens", "trajectories", "requests"]
    header += ["tokens_before", "tokens_after", "requests_without_task", "non_user_first"]
    for name in _CSV_COUNTS:
        header += [f"{name}_kept", f"{name}_of"]
    header += ["over_budget_o200k", "broken_tool_pairs", "sent_tokens", "cached_tokens"]
    header += ["cache_share", "cost_units", "cache_rule", "p50_ms", "p95_ms"]
    writer.writerow(header)
    for r in run.rows:
        cells: list[Any] = [r.name, r.config, r.config_sha256, r.budget or "", r.trajectories]
        cells += [r.requests, r.tokens_before, r.tokens_after, r.without_task, r.non_user_first]
        for name in _CSV_COUNTS:
            cells += list(getattr(r, name))
        share = r.cache_share
        cells += ["" if r.over_budget is None else r.over_budget, r.broken, r.sent, r.cached]
        cells += ["" if share is None else round(share, 6), round(r.cost, 3), CACHE_RULE.name]
        cells += [round(r.p50_ms, 3), round(r.p95_ms, 3)]
        writer.writerow(cells)
    return out.getvalue()


def per_request_lines(run: TrajectoryRun) -> Iterator[str]:
    """The ``--per-question`` file's lines: one per request and config, in
    the trajectories' order and the configs' order within a request."""
    for i in range(len(run.requests[0]) if run.requests else 0):
        for row, requests in zip(run.rows, run.requests, strict=True):
            line = {"config": row.name, **requests[i].to_dict()}
            yield json.dumps(line, ensure_ascii=False) + "\n"


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; background: #fff; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f0f0f0; }
.note { color: #555; font-size: 0.9em; }
"""


def _lost(run: TrajectoryRun) -> str:
    """Per config, the trajectories whose final request lost the task, the
    last error line or an edited path."""
    items = []
    for row, requests in zip(run.rows, run.requests, strict=True):
        lost = [
            r.trajectory
            for r in requests
            if r.last and (r.task is False or r.error_line is False or r.paths_kept < r.paths)
        ]
        names = ", ".join(html.escape(t) for t in lost) or "none"
        items.append(f"<li>{html.escape(row.name)}: {names}</li>")
    return "<ul>" + "".join(items) + "</ul>"


def report_html(run: TrajectoryRun) -> str:
    """The run as one self-contained HTML document: the probe table and,
    per config, the runs whose final request lost something."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in table_cells(r)) + "</tr>"
        for r in run.rows
    )
    about = ", ".join(html.escape(str(p)) for p in run.settings.trajectories)
    if run.settings.max_tokens is not None:
        about += f"; every pipeline on a budget of {run.settings.max_tokens:,} tokens"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>memrules eval: trajectories</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>memrules eval: agent trajectories</h1>",
        f"<p class=note>{about}.</p>",
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>",
        "<h2>Runs whose last request lost the task, the last error or an edited path</h2>",
        _lost(run),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
