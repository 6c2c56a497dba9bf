"""The benchmark's targets (from the speed issue), judged on the figures of
:mod:`memrules._bench.measure`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

__all__ = [
    "BUDGET_USE_MIN",
    "COLD_RATIO_MAX",
    "LOOP_VS_FLOOR_MAX",
    "LOOP_VS_LC_MIN",
    "MEMORY_RATIO_MAX",
    "NO_COMPACTION_MS_MAX",
    "Target",
    "judge",
]

COLD_RATIO_MAX = 1.3
NO_COMPACTION_MS_MAX = 5.0
LOOP_VS_LC_MIN = 300.0
LOOP_VS_FLOOR_MAX = 5.0
BUDGET_USE_MIN = 0.85
MEMORY_RATIO_MAX = 2.0


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
        targets.append(
            Target(
                key=f"cold_counting_{item['messages']}",
                what=f"cold counting, {item['messages']:,} msgs",
                figure=item["ratio"],
                unit="ratio floor",
                goal=f"≤ {COLD_RATIO_MAX}×",
                met=item["ratio"] <= COLD_RATIO_MAX,
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
    loop = figures.get("loop")
    if loop:
        exact = [loop[k] for k in ("lc_exact", "lc_exact_human") if loop.get(k)]
        if exact:
            speedup = min(e["memrules_speedup"] for e in exact)
            extra = " (extrapolated)" if any(e["extrapolated"] for e in exact) else ""
            targets.append(
                Target(
                    key="loop_vs_langchain",
                    what=f"loop: memrules speed-up over LC exact (lower of two){extra}",
                    figure=speedup,
                    unit="ratio",
                    goal=f"≥ {LOOP_VS_LC_MIN:g}×",
                    met=speedup >= LOOP_VS_LC_MIN,
                )
            )
        else:
            targets.append(
                Target(
                    key="loop_vs_langchain",
                    what="loop: memrules vs LC exact",
                    figure=None,
                    unit="ratio",
                    goal=f"≥ {LOOP_VS_LC_MIN:g}×",
                    met=None,
                )
            )
        targets.append(
            Target(
                key="loop_vs_floor",
                what="loop: memrules vs count-once floor",
                figure=loop["memrules_vs_floor"],
                unit="ratio",
                goal=f"≤ {LOOP_VS_FLOOR_MAX:g}×",
                met=loop["memrules_vs_floor"] <= LOOP_VS_FLOOR_MAX,
            )
        )
    for item in figures.get("quality", []):
        if item["config"] != "memrules":
            continue
        b = item["budget"]
        use = item["budget_use_median"]
        targets.append(
            Target(
                key=f"broken_pairs_{b}",
                what=f"memrules broken tool pairs, budget {b:,}",
                figure=item["broken_pairs"],
                unit="count",
                goal="0",
                met=item["broken_pairs"] == 0,
            )
        )
        targets.append(
            Target(
                key=f"budget_use_{b}",
                what=f"memrules median budget use, budget {b:,}",
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
