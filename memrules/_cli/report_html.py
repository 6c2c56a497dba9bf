"""``memrules eval --html``: the run as one self-contained HTML file.

The file holds the table (with the bootstrap intervals when asked), a plot
drawn by matplotlib as inline SVG (tokens after compaction per request
against the share of facts kept, one point per config, with the interval
as an error bar; beside it the prompt cache's share of what was sent), the
figures per question category, where the evidence of lost facts went (by
the strategy that removed it), and the paired comparisons. No script, no
stylesheet or font from elsewhere: it opens from disk anywhere. The plot
needs the ``report`` extra (``pip install 'memrules[report]'``).
"""

from __future__ import annotations

import html
import io
from collections.abc import Iterable, Sequence
from typing import Any

from memrules._cli.eval import EvalRun, PipelineFigures, RequestFigures
from memrules._cli.stats import LEVEL, Paired
from memrules._core.errors import MemrulesError

__all__ = ["ReportError", "comparisons_text", "plot_svg", "report_html"]


class ReportError(MemrulesError, RuntimeError):
    """A report that cannot be drawn (its plotting library is not installed)."""


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; background: #fff; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f0f0f0; }
.plot svg { max-width: 100%; height: auto; }
.note { color: #555; font-size: 0.9em; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _pct(value: float | None, interval: tuple[float, float] | None = None) -> str:
    if value is None:
        return "—"
    if interval is None:
        return f"{value:.1%}"
    return f"{value:.1%} <span class=note>[{interval[0]:.1%}–{interval[1]:.1%}]</span>"


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], *, raw: bool = False) -> str:
    """An HTML table; cells are escaped unless ``raw`` (cells built here)."""
    cells = ["<table><thead><tr>", *(f"<th>{_e(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for row in rows:
        cells.append("<tr>" + "".join(f"<td>{c if raw else _e(c)}</td>" for c in row) + "</tr>")
    cells.append("</tbody></table>")
    return "".join(cells)


def _main_table(run: EvalRun) -> str:
    k = run.settings.k
    head = ["pipeline", "requests", "tokens before", "tokens after", "ratio", "broken pairs",
            "facts kept", f"recall@{k}", "kept or recalled", "cache share", "cost units",
            "answers correct", "p50 ms", "p95 ms"]  # fmt: skip
    rows = [
        [
            _e(r.name),
            f"{r.requests:,}",
            f"{r.tokens_before:,}",
            f"{r.tokens_after:,}",
            f"{r.ratio:.2f}x",
            f"{r.broken:,}",
            _pct(r.kept_share, r.interval("facts_kept")),
            _pct(r.recall_share, r.interval("recall")),
            _pct(r.kept_or_recalled_share, r.interval("kept_or_recalled")),
            _pct(r.cache_share, r.interval("cache_share")),
            f"{r.cost:,.0f}",
            _pct(r.answer_share, r.interval("answer_correct")),
            f"{r.p50_ms:.2f}",
            f"{r.p95_ms:.2f}",
        ]
        for r in run.rows
    ]
    return _table(head, rows, raw=True)


def plot_svg(rows: Sequence[PipelineFigures]) -> str:
    """The plot (see the module docs) as an SVG document, the same bytes for
    the same figures (no date, a fixed id salt)."""
    try:
        import matplotlib
    except ImportError:
        msg = "the HTML report draws its plot with matplotlib: pip install 'memrules[report]'"
        raise ReportError(msg) from None
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    caching = any(r.sent for r in rows)
    with matplotlib.rc_context({"svg.hashsalt": "memrules", "svg.fonttype": "path"}):
        figure = Figure(figsize=(10 if caching else 6, 4.2))
        plot = figure.add_subplot(1, 2 if caching else 1, 1)
        for r in rows:
            x = r.tokens_after / r.requests if r.requests else 0.0
            y = 100 * (r.kept_share or 0.0)
            interval = r.interval("facts_kept")
            err = None
            if interval is not None:
                err = [[max(0.0, y - 100 * interval[0])], [max(0.0, 100 * interval[1] - y)]]
            plot.errorbar([x], [y], yerr=err, fmt="o", capsize=4, label=r.name)
            plot.annotate(r.name, (x, y), textcoords="offset points", xytext=(6, 6))
        plot.set_xlabel("tokens after compaction, per request")
        plot.set_ylabel("facts kept (%)")
        plot.set_ylim(-5, 105)
        plot.set_title("tokens against facts kept")
        plot.grid(True, alpha=0.3)
        if caching:
            bars = figure.add_subplot(1, 2, 2)
            names = [r.name for r in rows]
            bars.bar(names, [100 * (r.cache_share or 0.0) for r in rows], color="#4c72b0")
            bars.set_ylabel("cache share of tokens sent (%)")
            bars.set_ylim(0, 100)
            bars.set_title("prompt cache share")
            bars.tick_params(axis="x", labelrotation=20)
        figure.tight_layout()
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    start = text.find("<svg")
    return text[start:] if start >= 0 else text


def _categories(run: EvalRun) -> str:
    asked = [[r for r in requests if r.question] for requests in run.requests]
    labels = sorted({r.category or "(none)" for requests in asked for r in requests})
    if not asked or labels == ["(none)"]:
        return "<p class=note>The dataset's questions have no categories.</p>"
    head = ["category", "questions", *(f"{row.name}: kept" for row in run.rows)]
    if any(row.recalled is not None for row in run.rows):
        head += [f"{row.name}: kept or recalled" for row in run.rows]
    if any(row.judged for row in run.rows):
        head += [f"{row.name}: answers correct" for row in run.rows]
    body = []
    for label in labels:
        groups = [[r for r in requests if (r.category or "(none)") == label] for requests in asked]
        cells = [label, str(len(groups[0]))]
        cells += [_share(sum(r.kept for r in g), len(g)) for g in groups]
        if any(row.recalled is not None for row in run.rows):
            cells += [_share(sum(r.kept or bool(r.recalled) for r in g), len(g)) for g in groups]
        if any(row.judged for row in run.rows):
            for g in groups:
                judged = [r for r in g if r.scored is not None and r.scored.score is not None]
                cells.append(
                    _share(sum(r.scored.score == 1 for r in judged if r.scored), len(judged))
                )
        body.append(cells)
    return _table(head, body)


def _share(hits: int, total: int) -> str:
    return f"{hits / total:.1%} ({hits}/{total})" if total else "—"


def _lost_by(requests: Sequence[RequestFigures]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in requests:
        if r.question and not r.kept:
            for e in r.evidence:
                if e.where != "context":
                    key = f"{e.where} by {e.by or 'no strategy'}"
                    counts[key] = counts.get(key, 0) + 1
    return counts


def _evidence_table(run: EvalRun) -> str:
    per = [_lost_by(requests) for requests in run.requests]
    keys = sorted({key for counts in per for key in counts})
    if not keys:
        return "<p class=note>No fact was lost from the context.</p>"
    head = ["evidence of a fact not kept", *(row.name for row in run.rows)]
    return _table(head, [[key, *(str(c.get(key, 0)) for c in per)] for key in keys])


def _comparisons(comparisons: Sequence[Paired]) -> str:
    if not comparisons:
        return "<p class=note>One config: nothing to compare.</p>"
    head = ["rate", "a", "b", "questions", "a got", "b got", "only a", "only b",
            "b − a", f"{LEVEL:.0%} interval", "McNemar p"]  # fmt: skip
    body = [
        [
            c.rate,
            c.a,
            c.b,
            str(c.questions),
            str(c.a_hits),
            str(c.b_hits),
            str(c.only_a),
            str(c.only_b),
            f"{c.difference:+.1%}",
            "—" if c.interval is None else f"[{c.interval[0]:+.1%}, {c.interval[1]:+.1%}]",
            f"{c.p_value:.3g}",
        ]
        for c in comparisons
    ]
    return _table(head, body)


def comparisons_text(run: EvalRun) -> str:
    """The paired comparisons as text lines after the table (only with
    ``--bootstrap``, so the plain table stays as it was)."""
    if not run.settings.bootstrap or not run.comparisons:
        return ""
    lines = ["", f"paired, each config against {run.rows[0].name} ({LEVEL:.0%} intervals):"]
    for c in run.comparisons:
        interval = "" if c.interval is None else f" [{c.interval[0]:+.1%}, {c.interval[1]:+.1%}]"
        lines.append(
            f"  {c.b} vs {c.a}, {c.rate}: {c.difference:+.1%}{interval}, only {c.a} {c.only_a},"
            f" only {c.b} {c.only_b}, McNemar p={c.p_value:.3g}"
        )
    return "\n".join(lines) + "\n"


def report_html(run: EvalRun) -> str:
    """The report (see the module docs) as one HTML document."""
    settings = run.settings
    about: list[Any] = [f"dataset {_e(settings.dataset)}", f"k={settings.k}"]
    if settings.max_tokens is not None:
        about.append(f"every pipeline on a budget of {settings.max_tokens:,} tokens")
    if settings.bootstrap:
        about.append(
            f"{LEVEL:.0%} intervals from {settings.bootstrap:,} resamples of the conversations "
            f"(seed {settings.seed})"
        )
    if settings.answer_model is not None:
        judge = settings.judge_model
        about.append(
            f"answers by {_e(settings.answer_model.model)}"
            + ("" if judge is None else f", judged by {_e(judge.model)}")
        )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>memrules eval report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>memrules eval</h1>",
        f"<p class=note>{'; '.join(about)}.</p>",
        "<h2>Figures</h2>",
        _main_table(run),
        '<h2>Tokens against facts kept</h2><div class="plot">',
        plot_svg(run.rows),
        "</div>",
        "<h2>By category</h2>",
        _categories(run),
        "<h2>Where the evidence of lost facts went</h2>",
        _evidence_table(run),
        "<h2>Paired comparisons</h2>",
        _comparisons(run.comparisons),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
