"""The benchmark's tables: text from the figures of :mod:`benchmarks.harness.measure`.

Every function takes the figures gathered so far and returns the text of
one section (a title, a table and notes); nothing here measures or writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from benchmarks.harness._langchain import CONFIGS
from benchmarks.harness.measure import ENCODER
from benchmarks.harness.targets import Target

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


def _range(d: Mapping[str, Any]) -> str:
    """A ratio's median and range over the rounds: ``2.10× (1.95–2.31, 3 rounds)``."""
    return (
        f"{ratio(d['ratio_median'])} ({ratio(d['ratio_min'])}–{ratio(d['ratio_max'])}, "
        f"{d['rounds']} rounds)"
    )


def load_line(figures: Figures, section: str) -> str:
    """The load average before and after ``section``, as measured."""
    found = {r["when"]: r["load"] for r in figures.get("load", []) if r["section"] == section}
    if not found:
        return ""
    cpus = figures["environment"].get("cpus") or "?"
    shown = ", ".join(
        f"{when} {'/'.join(f'{x:.2f}' for x in load)}" for when, load in found.items()
    )
    return f"machine load (1/5/15 min, {cpus} CPUs): {shown}\n\n"


def histories(figures: Figures) -> str:
    seed = figures["settings"]["seed"]
    rows = [
        [
            f"{d['messages']:,}",
            f"{d['tokens']:,}",
            f"{d['tokens_openai']:,}",
            f"{d['tokens'] / d['messages']:,.0f}",
            f"{d['text_bytes'] / 1e6:.1f} MB",
            f"{d['tool_calls']:,}",
            f"{d['parallel_call_messages']:,}",
            f"{d['file_reads']:,}",
            f"{d['cjk_messages']:,}",
        ]
        for d in figures["histories"]
    ]
    head = ["messages", "tokens (seed)", "tokens (openai)", "tok/msg", "text"]
    head += ["tool calls", "parallel", "file reads", "CJK"]
    return _title(f"Histories (seed {seed}, {ENCODER})") + table(head, rows)


def counting(figures: Figures) -> str:
    rows = [
        [
            f"{d['messages']:,}",
            d["rule"],
            f"{d['tokens']:,}",
            ms(d["floor_s"]),
            f"{d['floor_tokens_per_s'] / 1e6:.1f} M/s",
            ms(d["memrules_s"]),
            _range(d),
        ]
        for d in figures["counting"]
    ]
    head = ["messages", "rule", "tokens", "tiktoken floor", "floor rate", "memrules cold"]
    head.append("ratio")
    note = (
        "floor: a plain loop over the texts (seed: encode(f'{role} {text}'); openai: "
        "OpenAI's guide on the JSON, each field apart, short strings counted once); "
        "memrules: a fresh counter's counts() of the messages.\n\n"
    )
    title = "1. Counting a whole history (cold), medians of alternating rounds"
    return _title(title) + table(head, rows) + note + load_line(figures, "counting")


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
    title = "2. One request (trim to a token budget, OpenAI's framing), best of a few"
    return _title(title) + table(head, rows) + note + load_line(figures, "per_call")


def fresh(figures: Figures) -> str:
    d = figures["fresh"]
    rows = [
        [
            v["name"],
            ms(v["build_s"]),
            ms(v["apply_s"]),
            f"{ms(v['apply_min_s'])}–{ms(v['apply_max_s'])}",
            v["what"],
        ]
        for v in d["variants"]
    ]
    title = (
        f"2b. One request of {d['messages']:,} messages that are new objects every time "
        f"(budget {d['budget']:,}), medians of {d['variants'][0]['rounds']} rounds"
    )
    head = ["messages are", "building them", "apply", "apply range", "how"]
    return _title(title) + table(head, rows) + load_line(figures, "fresh")


def hook(figures: Figures) -> str:
    d = figures["hook"]
    rows = [
        ["json.loads of the body", ms(d["floor_s"]), ""],
        ["on_openai_request", ms(d["memrules_s"]), _range(d)],
    ]
    title = (
        f"2c. The request hook: {d['messages']:,} messages, a {d['body_bytes'] / 1e6:.1f} MB "
        f"body parsed afresh each time, one conversation, budget {d['budget']:,} "
        f"({d['kept_messages']:,} sent)"
    )
    return _title(title) + table(["", "median", "÷ json.loads"], rows) + load_line(figures, "hook")


def loops(figures: Figures) -> str:
    rows = []
    for d in figures["loops"]:
        turns = d["turns"]
        path = "list, appended" if d["path"] == "list" else "from_openai every turn"
        rows.append(
            [
                f"{turns:,}",
                path,
                ms(d["floor_s"]),
                ms(d["memrules_s"]),
                ms(d["memrules_s"] / turns),
                _range(d),
            ]
        )
    budget = figures["loops"][0]["budget"] if figures["loops"] else 0
    title = (
        f"3. Growing loops: one message a turn, trimmed every turn to {budget:,} tokens, "
        "alternating rounds"
    )
    head = ["turns", "memrules path", "floor", "memrules", "per turn", "÷ floor"]
    note = (
        "floor: count each message once as it arrives (OpenAI's framing on its JSON), "
        "keep running sums, bisect for the cut, slice the window.\n\n"
    )
    text = _title(title) + table(head, rows) + note
    lc = figures.get("loop_langchain")
    if lc:
        status = _lc_status(figures)
        lc_rows = []
        for config in CONFIGS:
            found = lc[config.key]
            if found is None:
                lc_rows.append([config.label, status, "", "", ""])
                continue
            note = (
                f"extrapolated from {found['turns_timed']} of {lc['turns']} turns"
                if found["extrapolated"]
                else ""
            )
            lc_rows.append(
                [
                    config.label,
                    ms(found["total_s"]),
                    ratio(found["vs_floor"]),
                    ratio(found["memrules_speedup"]),
                    note,
                ]
            )
        text += f"LangChain trim_messages, the same loop of {lc['turns']:,} turns:\n"
        text += table(["", "total", "÷ floor", "÷ memrules", "note"], lc_rows)
    return text + load_line(figures, "loops")


def quality(figures: Figures) -> str:
    s = figures["settings"]
    labels = {
        "memrules": "memrules (count_rule: openai)",
        "memrules_seed": "memrules (count_rule: seed)",
        **{c.key: c.label for c in CONFIGS},
    }
    found = {(d["budget"], d["config"]): d for d in figures["quality"]}
    rows = []
    for budget in s["quality_budgets"]:
        for name in labels:
            d = found.get((budget, name))
            if d is None:
                rows.append([f"{budget:,}", labels[name], _lc_status(figures), *[""] * 6])
                continue
            n = d["windows"]
            rows.append(
                [
                    f"{budget:,}",
                    labels[name],
                    f"{d['over_budget']}/{n}",
                    pct(d["worst_over"]) if d["over_budget"] else "",
                    pct(d["budget_use_median"]),
                    f"{pct(d['budget_use_min'])}–{pct(d['budget_use_max'])}",
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
    head = ["budget", "configuration", "over budget", "worst", "use median", "use range"]
    head += ["broken pairs", "windows broken", "system only"]
    note = (
        "every window counted alike: OpenAI's framing on the JSON that would be sent "
        "(o200k_base; 3 a message, role, fields, ids and names of tool calls, 3 for the "
        "reply); use = that ÷ budget; over = above the budget; broken pair = a result "
        "whose call is gone, or a call whose result is gone.\n\n"
    )
    return _title(title) + table(head, rows) + note + load_line(figures, "quality")


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
    title = "Targets: speed, budget use and peak memory"
    if figures["settings"]["quick"]:
        title += " — quick run: tiny sizes, verdicts are not meaningful"
    return _title(title) + table(["target", "figure", "goal", "verdict"], rows)


SECTIONS: Mapping[str, Callable[[Figures], str]] = {
    "histories": histories,
    "counting": counting,
    "per_call": per_call,
    "fresh": fresh,
    "hook": hook,
    "loops": loops,
    "quality": quality,
    "memory": memory,
}
"""The renderer of each measured section, by the key its figures are under."""
