"""A caller's own list of message dicts, converted with ``from_openai`` every turn.

    python benchmarks/conversion_loop.py                   # 10,000 turns, 3 paired rounds
    python benchmarks/conversion_loop.py --turns 3000 --rounds 5
    python benchmarks/conversion_loop.py --variants exact  # one variant only
    python benchmarks/conversion_loop.py --clock cpu       # this process's CPU time
    python benchmarks/conversion_loop.py --apply           # and pipeline.apply every turn

The loop: a coding agent's history
(:func:`benchmarks.harness.histories.agent_history`: tool rounds, long file
reads, about 500 tokens a message) arrives one message a turn; the caller
appends the message dict to its list and calls
``from_openai(log, memo=cache)`` with the conversation's
:class:`~memrules.ConversionCache`, every turn, for ``--turns`` turns.

**The floor** is the least any converter does on the same turns: each dict
converted once, as it arrives (``from_openai([raw])``), kept in a list.

Variants of the cache:

- **exact** (``ConversionCache()``): a dict edited in place between turns is
  seen, so every earlier dict is compared with the cache's copy every turn;
- **same objects** (``ConversionCache(edits_in_place=False)``): a dict the
  cache has seen is taken while it is the very same object (the caller
  replaces a dict to change it), so a turn pays for its new dicts only.

``--apply`` adds what a caller does next: ``pipeline.apply`` of the
converted messages every turn (``trim_to_budget`` at ``--budget`` tokens, the
pipeline of ``benchmarks/speed_loop.py``), against that script's floor
(count each dict once as it arrives, keep running sums, bisect for the cut,
slice the window).

Each round times the floor and each variant over the whole loop, the order
rotating between rounds; printed: the median of each, and the median and
range of the per-round ratios (the loop's time over the floor's), with the
load average before and after. The machine's load moves the milliseconds;
the ratio is the figure to read. ``--clock cpu`` times every side by this
process's CPU time (``time.process_time``) instead of the wall clock, for a
machine whose other work moves the wall clock (say which in a figure).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness.histories import History, agent_history
from benchmarks.harness.measure import _floor_loop, _pipeline
from memrules import ConversionCache, from_openai
from memrules._counting.tokens import load_encoding

VARIANTS: dict[str, Callable[[], ConversionCache]] = {
    "exact": ConversionCache,
    "same objects": lambda: ConversionCache(edits_in_place=False),
}


def floor(raws: Sequence[Any]) -> float:
    """Each dict converted once, as it arrives."""
    log: list[Any] = []
    kept: list[Any] = []
    gc.collect()
    begin = time.perf_counter()
    for raw in raws:
        log.append(raw)
        kept.extend(from_openai([raw]))
    return time.perf_counter() - begin


def loop(raws: Sequence[Any], make: Callable[[], ConversionCache]) -> float:
    """The whole list converted every turn, with the conversation's cache."""
    cache = make()
    log: list[Any] = []
    gc.collect()
    begin = time.perf_counter()
    for raw in raws:
        log.append(raw)
        from_openai(log, memo=cache)
    return time.perf_counter() - begin


def loop_apply(history: History, budget: int, make: Callable[[], ConversionCache]) -> float:
    """The whole list converted every turn and the pipeline applied to it."""
    pipeline = _pipeline(budget, load_encoding("o200k_base"))
    cache = make()
    log: list[Any] = []
    gc.collect()
    begin = time.perf_counter()
    for raw in history.openai:
        log.append(raw)
        pipeline.apply(from_openai(log, memo=cache))
    return time.perf_counter() - begin


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--apply", action="store_true", help="pipeline.apply every turn too")
    parser.add_argument("--budget", type=int, default=100_000)
    args = parser.parse_args(argv)
    if args.clock == "cpu":
        time.perf_counter = time.process_time  # every side times with perf_counter
    history = agent_history(args.turns, seed=0)
    raws = history.openai
    assert from_openai(list(raws), memo=ConversionCache()) == from_openai(list(raws))
    print(
        f"{args.turns:,} turns, {args.rounds} paired rounds, {args.clock} clock"
        f"{', with apply' if args.apply else ''}; {load()}",
        flush=True,
    )
    sides: list[tuple[str, Callable[[], float]]]
    if args.apply:
        encoding = load_encoding("o200k_base")
        sides = [("floor", lambda: _floor_loop(history, args.budget, encoding))]
        sides += [
            (v, lambda v=v: loop_apply(history, args.budget, VARIANTS[v])) for v in args.variants
        ]
    else:
        sides = [("floor", lambda: floor(raws))]
        sides += [(v, lambda v=v: loop(raws, VARIANTS[v])) for v in args.variants]
    times: dict[str, list[float]] = {name: [] for name, _ in sides}
    for r in range(args.rounds):
        shift = r % len(sides)
        for name, run in sides[shift:] + sides[:shift]:
            times[name].append(run())
    print("| side | loop (median) | ratio to the floor (median) | range |")
    print("|---|---:|---:|---:|")
    what = "each dict counted once" if args.apply else "each dict converted once"
    print(f"| floor: {what} | {statistics.median(times['floor']):.3f} s | 1x | |")
    for name in args.variants:
        ratios = [t / f for t, f in zip(times[name], times["floor"], strict=True)]
        print(
            f"| {name} | {statistics.median(times[name]):.3f} s | "
            f"{statistics.median(ratios):.2f}x | {min(ratios):.2f}–{max(ratios):.2f}x |"
        )
    print(load())


if __name__ == "__main__":
    main()
