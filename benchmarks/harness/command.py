"""The benchmark's arguments (read by ``benchmarks/run.py``), and the run."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Protocol, TextIO

from benchmarks.harness import measure, render
from benchmarks.harness.targets import judge
from memrules._cli.arguments import whole_number

__all__ = ["add_arguments", "run", "settings"]


MAX_MESSAGES = 1_000_000
"""The most messages (or turns) a history may have: the largest default is 10,000."""
MAX_ROUNDS = 1_000
MAX_SEED = 2**63 - 1

_messages = whole_number(2, MAX_MESSAGES)
_rounds = whole_number(2, MAX_ROUNDS)
_seed = whole_number(0, MAX_SEED)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's arguments."""
    parser.add_argument("--quick", action="store_true", help="a tiny configuration (seconds)")
    parser.add_argument(
        "--sizes", type=_messages, nargs="+", metavar="N", help="history sizes in messages"
    )
    parser.add_argument("--seed", type=_seed, default=0, help="the histories' seed (default 0)")
    parser.add_argument(
        "--turns",
        type=_messages,
        nargs="+",
        metavar="N",
        help="growing-loop lengths in turns (default 1000 3000 10000)",
    )
    parser.add_argument(
        "--rounds",
        type=_rounds,
        metavar="N",
        help="alternating rounds of each comparison (default 5; 3 for the loops)",
    )
    parser.add_argument(
        "--lc-turns",
        type=_messages,
        metavar="N",
        help="time LangChain's exact counter on N evenly spread turns of the shortest loop "
        "and extrapolate (default 300; N >= its turns times every turn, about 8 minutes more)",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every figure as JSON")
    parser.add_argument(
        "--skip-langchain", action="store_true", help="leave LangChain out even if installed"
    )


def settings(args: argparse.Namespace) -> measure.Settings:
    """The run that ``args`` ask for."""
    changes: dict[str, Any] = {"seed": args.seed, "langchain": not args.skip_langchain}
    if args.sizes:
        changes["sizes"] = tuple(sorted(set(args.sizes)))
    if args.turns:
        changes["loop_turns"] = tuple(sorted(set(args.turns)))
    if args.rounds:
        changes["rounds"] = changes["loop_rounds"] = args.rounds
    if args.lc_turns:
        changes["lc_turns"] = args.lc_turns
    if args.quick:
        return measure.Settings.quick_settings(**changes)
    return measure.Settings(**changes)


class Tracker(Protocol):
    """Shows which section runs (:class:`memrules._runtime.progress.Progress`)."""

    def update(self, label: str, fraction: float | None = None) -> None: ...

    def clear(self) -> None: ...


def run(
    settings: measure.Settings, out: TextIO, *, progress: Tracker | None = None
) -> dict[str, Any]:
    """Run the benchmark, writing each section's table to ``out`` as it is
    measured, and return every figure as JSON-ready data. ``progress`` is
    told each section as it starts, and cleared before each table is written."""
    started = time.perf_counter()
    ctx = measure.start(settings)
    out.write(render.header(ctx.figures))
    out.flush()
    sections = measure.SECTIONS
    for index, (key, measure_section) in enumerate(sections):
        if progress is not None:
            progress.update(f"bench: {key} ({index + 1}/{len(sections)})", index / len(sections))
        ctx.load(key, "before")
        measure_section(ctx)
        ctx.load(key, "after")
        if progress is not None:
            progress.clear()
        out.write(render.SECTIONS[key](ctx.figures))
        out.flush()
    judged = judge(ctx.figures)
    ctx.figures["targets"] = {t.key: t.met for t in judged}
    out.write(render.targets(ctx.figures, judged))
    elapsed = time.perf_counter() - started
    ctx.figures["elapsed_s"] = elapsed
    out.write(f"benchmark took {elapsed:,.0f} s\n")
    out.flush()
    return ctx.figures
