"""What a warm request costs in the request hook, for every shipped config.

    python benchmarks/hook_speed.py                        # 10,000 messages, 7 rounds
    python benchmarks/hook_speed.py --messages 2000 --rounds 5 --configs default.yaml
    python benchmarks/hook_speed.py --profile default.yaml # where the time goes (cProfile)
    python benchmarks/hook_speed.py --clock cpu            # CPU time, on a loaded machine
    python benchmarks/hook_speed.py --profile routes.yaml --route code

For each config in ``configs/`` (``routes.yaml``: its default and ``code``
routes; the ``support`` route needs a vector store), one coding agent's
history (:func:`benchmarks.harness.histories.agent_history`: tool rounds,
long file reads) of about ``--messages`` messages goes through
:meth:`memrules.MemoryPlugin.on_openai_request` as the same conversation
growing by one agent step a request:

- **parsed**: each body re-parsed from JSON, as a router gets it: every
  message dict is new, equal to the last request's;
- **same dicts**: the caller keeps its message dicts and hands the plugin
  the same objects each request, plus the new ones.

Each request is warm (the conversation's first request went before the
rounds) and paired with ``json.loads`` of the same body, measured in the
same round, the order alternating between rounds. Printed per config and
variant: the median of each and the median and range of the per-round
ratios (the request's time over ``json.loads``'s), with the load average
before and after. The machine's load moves every figure; the ratio is the
one to read.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import json
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness.histories import History, agent_history, request_points
from memrules import MemoryPlugin, load_config

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
ROUTES = {"routes.yaml": ("default", "code")}
"""Routes benchmarked for a file with several (the rest need seams)."""


class Bodies:
    """The history's requests as JSON text, built from each message's JSON
    once (joining is not measured)."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.parts = [json.dumps(m) for m in history.openai]

    def text(self, n: int) -> str:
        return '{"model": "gpt-4o", "messages": [' + ", ".join(self.parts[:n]) + "]}"


def _plugin(config_name: str, route: str) -> MemoryPlugin:
    config = load_config(CONFIGS / config_name)
    return MemoryPlugin.from_config(config, route=route)


def _points(history: History, messages: int, count: int) -> list[int]:
    """``count`` request points from ``messages`` messages on."""
    found = [p for p in request_points(history) if p >= messages][:count]
    if len(found) < count:
        msg = f"the history has only {len(found)} request points past {messages}"
        raise SystemExit(msg)
    return found


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
"""``--clock``: wall time, or this process's CPU time (what other work on a
loaded machine takes from a run moves it less)."""

_clock = time.perf_counter


def _time(fn: Callable[[], object]) -> float:
    begin = _clock()
    fn()
    return _clock() - begin


def paired(
    bodies: Bodies, points: Sequence[int], request: Callable[[int, str], Callable[[], object]]
) -> dict[str, Any]:
    """Round ``r`` at ``points[r + 1]`` (``points[0]`` warms): ``json.loads``
    of the body and the request, in alternating order."""
    first = bodies.text(points[0])
    request(points[0], first)()
    loads: list[float] = []
    hooks: list[float] = []
    for r, n in enumerate(points[1:]):
        text = bodies.text(n)
        call = request(n, text)
        gc.collect()
        if r % 2 == 0:
            loads.append(_time(functools.partial(json.loads, text)))
            hooks.append(_time(call))
        else:
            hooks.append(_time(call))
            loads.append(_time(functools.partial(json.loads, text)))
    ratios = [h / f for h, f in zip(hooks, loads, strict=True)]
    return {
        "rounds": len(ratios),
        "body_mb": len(bodies.text(points[-1]).encode()) / 1e6,
        "loads_s": statistics.median(loads),
        "hook_s": statistics.median(hooks),
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
    }


def parsed_requests(plugin: MemoryPlugin) -> Callable[[int, str], Callable[[], object]]:
    """Each request's body parsed from its text (before the clock starts)."""

    def request(n: int, text: str) -> Callable[[], object]:
        body = json.loads(text)
        return lambda: plugin.on_openai_request(body, conversation_id="bench")

    return request


def same_dict_requests(
    plugin: MemoryPlugin, history: History
) -> Callable[[int, str], Callable[[], object]]:
    """Each request's messages: the caller's one list of dicts, grown."""
    log: list[Any] = []

    def request(n: int, text: str) -> Callable[[], object]:
        log.extend(history.openai[len(log) : n])
        body = {"model": "gpt-4o", "messages": log}
        return lambda: plugin.on_openai_request(body, conversation_id="bench")

    return request


def targets(selected: Sequence[str]) -> list[tuple[str, str]]:
    names = selected or sorted(p.name for p in CONFIGS.glob("*.yaml"))
    return [(name, route) for name in names for route in ROUTES.get(name, ("default",))]


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


def profile(bodies: Bodies, points: Sequence[int], config: str, route: str, top: int) -> None:
    """cProfile of the warm parsed requests, by own time and by cumulative time."""
    plugin = _plugin(config, route)
    make = parsed_requests(plugin)
    make(points[0], bodies.text(points[0]))()
    calls = [make(n, bodies.text(n)) for n in points[1:]]
    profiler = cProfile.Profile()
    profiler.enable()
    for call in calls:
        call()
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--configs", nargs="*", default=[], help="file names in configs/")
    parser.add_argument("--profile", metavar="CONFIG", help="profile this config instead")
    parser.add_argument("--route", default="default", help="the route --profile runs")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    args = parser.parse_args(argv)
    global _clock
    _clock = CLOCKS[args.clock]
    history = agent_history(args.messages + 40 * (args.rounds + 2), seed=0)
    bodies = Bodies(history)
    points = _points(history, args.messages, args.rounds + 1)
    if args.profile:
        profile(bodies, points, args.profile, args.route, args.top)
        return
    print(f"{args.messages:,}+ messages, {args.rounds} paired rounds, {args.clock} clock; {load()}")
    print("| config | variant | body MB | json.loads | request | ratio (median) | range |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for config, route in targets(args.configs):
        label = config if route == "default" else f"{config} ({route})"
        variants = {
            "parsed": lambda p: parsed_requests(p),
            "same dicts": lambda p: same_dict_requests(p, history),
        }
        for variant, make in variants.items():
            found = paired(bodies, points, make(_plugin(config, route)))
            print(
                f"| {label} | {variant} | {found['body_mb']:.1f} | "
                f"{found['loads_s'] * 1e3:.0f} ms | {found['hook_s'] * 1e3:.0f} ms | "
                f"{found['ratio']:.2f}x | {found['ratio_min']:.2f}–{found['ratio_max']:.2f}x |",
                flush=True,
            )
    print(load())


if __name__ == "__main__":
    main()
