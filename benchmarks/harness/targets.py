"""The benchmark's targets, judged on the figures of
:mod:`benchmarks.harness.measure`: cold counting within 1.1x of a plain
tiktoken loop; a request that needs no compaction under 5 ms, and one of
rebuilt messages at most 5 ms beyond building them; the request hook no
slower than ``json.loads`` of its body; an agent loop within 3x of the floor
(5x converting from OpenAI dicts every turn) and at least 300x faster than
LangChain's exact ``trim_messages``; no window over budget, no broken tool
pair and a median budget use of at least 90%; a peak memory of at most a
quarter of the history's text. A ratio is judged by the median of its
alternating rounds; the tables show the range beside it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

__all__ = [
    "BUDGET_USE_MIN",
    "COLD_RATIO_MAX",
    "FRESH_MS_MAX",
    "FROM_OPENAI_VS_FLOOR_MAX",
    "HOOK_VS_JSON_MAX",
    "LOOP_VS_FLOOR_MAX",
    "LOOP_VS_LC_MIN",
    "MEMORY_RATIO_MAX",
    "NO_COMPACTION_MS_MAX",
    "Target",
    "judge",
]

COLD_RATIO_MAX = 1.1
NO_COMPACTION_MS_MAX = 5.0
FRESH_MS_MAX = 5.0
HOOK_VS_JSON_MAX = 1.0
LOOP_VS_LC_MIN = 300.0
LOOP_VS_FLOOR_MAX = 3.0
FROM_OPENAI_VS_FLOOR_MAX = 5.0
BUDGET_USE_MIN = 0.90
MEMORY_RATIO_MAX = 0.25


@attrs.frozen(kw_only=True)
class Target:
    """One target: what it measures, the figure, the goal, and whether the
    figure meets it (None when it could not be measured)."""

    key: str
    what: str
    figure: float | int | None
    unit: str  # how to show the figure: "ratio", "ms", "pct", "count"
    goal: str
    met: bool | None


def judge(figures: Mapping[str, Any]) -> tuple[Target, ...]:
    """Every target the figures allow judging, in the order of the sections."""
    targets: list[Target] = []
    for item in figures.get("counting", []):
        r = item["ratio_median"]
        targets.append(
            Target(
                key=f"cold_counting_{item['rule']}_{item['messages']}",
                what=f"cold counting ({item['rule']}), {item['messages']:,} msgs",
                figure=r,
                unit="ratio floor",
                goal=f"≤ {COLD_RATIO_MAX}×",
                met=r <= COLD_RATIO_MAX,
            )
        )
    none = figures.get("no_compaction")
    if none:
        ms = none["memrules_warm_s"] * 1000
        targets.append(
            Target(
                key="no_compaction",
                what=f"no-compaction request, {none['messages']:,} msgs",
                figure=ms,
                unit="ms",
                goal=f"< {NO_COMPACTION_MS_MAX:g} ms",
                met=ms < NO_COMPACTION_MS_MAX,
            )
        )
    fresh = figures.get("fresh")
    if fresh:
        for v in fresh["variants"]:
            if v["name"] == "same tuple":
                continue
            ms = v["apply_s"] * 1000
            targets.append(
                Target(
                    key="fresh_" + v["name"].replace(" ", "_"),
                    what=f"request of {fresh['messages']:,} {v['name']}, beyond building them",
                    figure=ms,
                    unit="ms",
                    goal=f"≤ {FRESH_MS_MAX:g} ms",
                    met=ms <= FRESH_MS_MAX,
                )
            )
    hook = figures.get("hook")
    if hook:
        r = hook["ratio_median"]
        targets.append(
            Target(
                key="hook_vs_json",
                what=f"on_openai_request, {hook['messages']:,} msgs, ÷ json.loads of its body",
                figure=r,
                unit="ratio",
                goal=f"≤ {HOOK_VS_JSON_MAX:g}×",
                met=r <= HOOK_VS_JSON_MAX,
            )
        )
    for item in figures.get("loops", []):
        limit = LOOP_VS_FLOOR_MAX if item["path"] == "list" else FROM_OPENAI_VS_FLOOR_MAX
        r = item["ratio_median"]
        label = "loop" if item["path"] == "list" else "loop, from_openai every turn,"
        targets.append(
            Target(
                key=f"loop_{item['path']}_{item['turns']}",
                what=f"{label} {item['turns']:,} turns ÷ floor",
                figure=r,
                unit="ratio",
                goal=f"≤ {limit:g}×",
                met=r <= limit,
            )
        )
    lc = figures.get("loop_langchain")
    if lc:
        exact = [lc[k] for k in ("lc_exact", "lc_exact_human") if lc.get(k)]
        if exact:
            speedup = min(e["memrules_speedup"] for e in exact)
            extra = " (extrapolated)" if any(e["extrapolated"] for e in exact) else ""
            met: bool | None = speedup >= LOOP_VS_LC_MIN
        else:
            speedup, extra, met = None, "", None
        targets.append(
            Target(
                key="loop_vs_langchain",
                what=f"loop, {lc['turns']:,} turns: LC exact ÷ memrules (lower of two){extra}",
                figure=speedup,
                unit="ratio",
                goal=f"≥ {LOOP_VS_LC_MIN:g}×",
                met=met,
            )
        )
    for item in figures.get("quality", []):
        if item["config"] != "memrules":
            continue
        b = item["budget"]
        use = item["budget_use_median"]
        targets.append(
            Target(
                key=f"over_budget_{b}",
                what=f"windows over budget {b:,} under OpenAI's framing",
                figure=item["over_budget"],
                unit="count",
                goal="0",
                met=item["over_budget"] == 0,
            )
        )
        targets.append(
            Target(
                key=f"broken_pairs_{b}",
                what=f"broken tool pairs, budget {b:,}",
                figure=item["broken_pairs"],
                unit="count",
                goal="0",
                met=item["broken_pairs"] == 0,
            )
        )
        targets.append(
            Target(
                key=f"budget_use_{b}",
                what=f"median budget use, budget {b:,}",
                figure=use,
                unit="pct",
                goal=f"≥ {BUDGET_USE_MIN:.0%}",
                met=use is not None and use >= BUDGET_USE_MIN,
            )
        )
    mem = figures.get("memory")
    if mem:
        targets.append(
            Target(
                key="memory",
                what=f"peak memory, {mem['messages']:,} msgs (cold apply)",
                figure=mem["ratio_cold"],
                unit="ratio text",
                goal=f"≤ {MEMORY_RATIO_MAX:g}×",
                met=mem["ratio_cold"] <= MEMORY_RATIO_MAX,
            )
        )
    return tuple(targets)
