"""The benchmark's tables: text from the figures of :mod:`memrules._bench.measure`.

Every function takes the figures gathered so far and returns the text of
one section (a title, a table and notes); nothing here measures or writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memrules._bench._langchain import CONFIGS
from memrules._bench.measure import ENCODER
from memrules._bench.targets import Target

__all__ = ["SECTIONS", "header", "ms", "pct", "ratio", "table", "targets"]

Figures = Mapping[str, Any]


def ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    milli = seconds * 1000
    if milli >= 10_000:
        return f"{seconds:,.1f} s"
    if milli >= 100:
        return f"{milli:,.0f} ms"
    if milli >= 1:
        return f"{milli:.2f} ms"
    return f"{milli * 1000:.0f} µs"


def ratio(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}×" if x >= 100 else f"{x:.2f}×"


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:.1f}%"


def table(header_row: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell: the first left, the rest right."""
    widths = [max(len(str(r[i])) for r in [header_row, *rows]) for i in range(len(header_row))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    top = line(header_row)
    return "\n".join([top, "-" * len(top), *(line(r) for r in rows)]) + "\n\n"


def _title(text: str) -> str:
    return f"== {text}\n"


def _lc_status(figures: Figures) -> str:
    return str(figures["environment"]["langchain_status"])


def header(figures: Figures) -> str:
    env = figures["environment"]
    lc = (
        f"langchain-core {env['langchain_core']}"
        if env["langchain_core"]
        else f"LangChain {env['langchain_status']}"
    )
    return (
        f"memrules bench — Python {env['python']}, tiktoken {env['tiktoken']}, {lc}, "
        f"{env['machine']}\n\n"
    )


def histories(figures: Figures) -> str:
    seed = figures["settings"]["seed"]
    rows = [
        [
            f"{d['messages']:,}",
            f"{d['tokens']:,}",
            f"{d['tokens'] / d['messages']:,.0f}",
            f"{d['text_bytes'] / 1e6:.1f} MB",
            f"{d['tool_calls']:,}",
            f"{d['parallel_call_messages']:,}",
            f"{d['file_reads']:,}",
            f"{d['cjk_messages']:,}",
        ]
        for d in figures["histories"]
    ]
    head = ["messages", "tokens", "tok/msg", "text", "tool calls", "parallel", "file reads", "CJK"]
    return _title(f"Histories (seed {seed}, {ENCODER})") + table(head, rows)


def counting(figures: Figures) -> str:
    rows = [
        [
            f"{d['messages']:,}",
            f"{d['tokens']:,}",
            ms(d["floor_s"]),
            f"{d['floor_tokens_per_s'] / 1e6:.1f} M/s",
            ms(d["memrules_cold_s"]),
            ratio(d["ratio"]),
        ]
        for d in figures["counting"]
    ]
    head = ["messages", "tokens", "tiktoken floor", "floor rate", "memrules cold", "ratio"]
    return _title("1. Counting a whole history (cold)") + table(head, rows)


def per_call(figures: Figures) -> str:
    status = _lc_status(figures)
    rows = []
    for d in figures["per_call"]:
        row = [
            f"{d['messages']:,}",
            f"{d['budget']:,}",
            f"{d['kept_messages']:,}",
            ms(d["memrules_cold_s"]),
            ms(d["memrules_warm_s"]),
        ]
        for config in CONFIGS:
            t = d[config.key + "_s"]
            row.append(status if t is None else ms(t))
        rows.append(row)
    none = figures["no_compaction"]
    rows.append(
        [
            f"{none['messages']:,} *",
            f"{none['budget']:,}",
            f"{none['messages']:,}",
            "",
            ms(none["memrules_warm_s"]),
            *[""] * len(CONFIGS),
        ]
    )
    head = ["messages", "budget", "kept", "memrules cold", "memrules warm"]
    head += [c.label for c in CONFIGS]
    note = (
        f"* no compaction needed (budget above the total): {ms(none['memrules_warm_s'])} on a "
        f"tuple, {ms(none['memrules_warm_list_s'])} on a list (copied to a tuple)\n\n"
    )
    return _title("2. One request (trim to a token budget)") + table(head, rows) + note


def loop(figures: Figures) -> str:
    d = figures["loop"]
    turns, t_floor, t_mem = d["turns"], d["floor_s"], d["memrules_s"]
    rows = [
        ["count-once floor", ms(t_floor), ms(t_floor / turns), "1.00×", "", ""],
        ["memrules", ms(t_mem), ms(t_mem / turns), ratio(t_mem / t_floor), "1.00×", ""],
    ]
    for config in CONFIGS:
        lc = d[config.key]
        if lc is None:
            rows.append([config.label, _lc_status(figures), "", "", "", ""])
            continue
        t = lc["total_s"]
        note = (
            f"extrapolated from {lc['turns_timed']} of {turns} turns" if lc["extrapolated"] else ""
        )
        rows.append(
            [config.label, ms(t), ms(t / turns), ratio(t / t_floor), ratio(t / t_mem), note]
        )
    title = (
        f"3. Growing loop: {turns:,} turns, one message a turn, trim every turn, "
        f"budget {d['budget']:,} tokens"
    )
    return _title(title) + table(["", "total", "per turn", "vs floor", "vs memrules", "note"], rows)


def quality(figures: Figures) -> str:
    s = figures["settings"]
    labels = {"memrules": "memrules trim_to_budget", **{c.key: c.label for c in CONFIGS}}
    found = {(d["budget"], d["config"]): d for d in figures["quality"]}
    rows = []
    for budget in s["quality_budgets"]:
        for name in labels:
            d = found.get((budget, name))
            if d is None:
                rows.append([f"{budget:,}", labels[name], _lc_status(figures), *[""] * 5])
                continue
            n = d["windows"]
            rows.append(
                [
                    f"{budget:,}",
                    labels[name],
                    pct(d["budget_use_median"]),
                    pct(d["budget_use_min"]),
                    pct(d["budget_use_max"]),
                    f"{d['broken_pairs']:,}",
                    f"{d['windows_with_broken_pairs']}/{n}",
                    f"{d['system_only_windows']}/{n}",
                ]
            )
    title = (
        f"4. Quality: {s['quality_histories']} histories of {s['quality_size']:,} messages "
        f"(seeds {s['seed'] + 1}…{s['seed'] + s['quality_histories']}), {s['quality_cuts']} "
        "request points each over the budget"
    )
    head = ["budget", "configuration", "use median", "use min", "use max"]
    head += ["broken pairs", "windows broken", "system only"]
    note = (
        "use = tokens kept ÷ budget, counted exactly (o200k_base) for everyone; "
        "broken pair = a result whose call is gone, or a call whose result is gone.\n\n"
    )
    return _title(title) + table(head, rows) + note


def memory(figures: Figures) -> str:
    d = figures["memory"]
    text = f"{d['text_bytes'] / 1e6:.2f} MB"
    rows = [
        [
            "cold (fresh counter)",
            f"{d['peak_cold_bytes'] / 1e6:.2f} MB",
            text,
            ratio(d["ratio_cold"]),
        ],
        ["warm", f"{d['peak_warm_bytes'] / 1e6:.2f} MB", text, ratio(d["ratio_warm"])],
    ]
    title = f"5. Peak memory of one apply, {d['messages']:,} messages, budget {d['budget']:,}"
    return _title(title) + table(["apply", "peak", "history text", "ratio"], rows)


def _figure(target: Target, status: str) -> str:
    value = target.figure
    if value is None:
        return status
    if target.unit.startswith("ratio"):
        suffix = target.unit.removeprefix("ratio")
        return ratio(float(value)) + suffix
    if target.unit == "ms":
        return f"{value:.2f} ms"
    if target.unit == "pct":
        return pct(float(value))
    return str(value)


def targets(figures: Figures, judged: Sequence[Target]) -> str:
    status = _lc_status(figures)
    rows = [
        [
            t.what,
            _figure(t, status),
            t.goal,
            "—" if t.met is None else "met" if t.met else "MISSED",
        ]
        for t in judged
    ]
    title = "Targets (issue 4)"
    if figures["settings"]["quick"]:
        title += " — quick run: tiny sizes, verdicts are not meaningful"
    return _title(title) + table(["target", "figure", "goal", "verdict"], rows)


SECTIONS: Mapping[str, Callable[[Figures], str]] = {
    "histories": histories,
    "counting": counting,
    "per_call": per_call,
    "loop": loop,
    "quality": quality,
    "memory": memory,
}
"""The renderer of each measured section, by the key its figures are under."""
