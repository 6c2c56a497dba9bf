"""Per-turn cost of every shipped config as a conversation grows.

    python benchmarks/speed_configs.py                          # 1k / 5k / 20k messages
    python benchmarks/speed_configs.py --sizes 1000 20000 --configs default.yaml
    python benchmarks/speed_configs.py --repeats 3 --path from_openai --configs default.yaml
    python benchmarks/speed_configs.py --profile default.yaml --sizes 20000

For each config in ``configs/`` that runs without seams, and each size ``N``:
one coding agent's history (:func:`benchmarks.harness.histories.agent_history`)
is brought to ``N`` messages one message a turn (on the caller's list, one
pipeline, so one measure; a config with a ``cache:`` section gets each
turn's ``previous`` request, as the request hook passes it), then
``--turns`` more turns are timed in ``--rounds`` rounds, each paired with
the floor on the same turns: count each new message once (OpenAI's framing
on its JSON), keep running sums, bisect for a 100k-token cut and slice the
window, as ``benchmarks/speed_loop.py`` does. The order alternates between
rounds. Printed: milliseconds a turn (the median of the rounds) and the
median and range of the per-round ratios to the floor, with the load average
before and after. A config whose turn costs what the turn adds has the same
figures at every size.

``--path from_openai``: the caller keeps OpenAI dicts and converts the whole
list each turn, ``from_openai(log, memo=ConversionCache(edits_in_place=False))``.
``--repeats K``: every fifth user message says one of ``K`` fixed texts,
verbatim (a harness's reminders), so equal dicts recur and the conversion
cache hands back one object for them.
"""

from __future__ import annotations

import argparse
import bisect
import cProfile
import gc
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness.histories import History, agent_history  # noqa: E402
from benchmarks.harness.reference import PRIMING, openai_message_tokens  # noqa: E402
from memrules import ConversionCache, from_openai, load_pipeline  # noqa: E402
from memrules._counting.tokens import load_encoding  # noqa: E402

CONFIGS = ROOT / "configs"
SKIP = ("routes.yaml",)  # its routes need a vector store
REMINDERS = (
    "Please always provide EXACTLY ONE action in triple backticks.",
    "Remember to run the tests before you answer.",
    "Keep going: the task is not done yet.",
)


def with_repeats(history: History, k: int) -> History:
    """``history`` with every fifth user message (after the first) saying
    one of ``k`` fixed texts."""
    if k <= 0:
        return history
    raws = [dict(r) for r in history.openai]
    users = [i for i, r in enumerate(raws) if r["role"] == "user"][1:]
    for n, i in enumerate(users[::5]):
        raws[i] = {"role": "user", "content": REMINDERS[n % k]}
    return History(seed=history.seed, messages=from_openai(raws), openai=tuple(raws))


class Loop:
    """One config's growing conversation: the caller's log and the pipeline."""

    def __init__(self, config: Path, history: History, path: str) -> None:
        self.pipeline = load_pipeline(config)
        self.history = history
        self.path = path
        self.log: list[Any] = []
        self.memo = ConversionCache(edits_in_place=False)
        self.previous: Any = None
        self.cached = self.pipeline.config.cache is not None

    def turn(self, i: int) -> None:
        if self.path == "list":
            self.log.append(self.history.messages[i])
            messages: Any = self.log
        else:
            self.log.append(self.history.openai[i])
            messages = from_openai(self.log, memo=self.memo)
        if self.cached:
            result = self.pipeline.apply(
                messages, previous=self.previous, now=float(i), over_budget="send"
            )
            self.previous = result.sent
        else:
            self.pipeline.apply(messages, over_budget="send")

    def run(self, start: int, stop: int) -> float:
        gc.collect()
        begin = time.perf_counter()
        for i in range(start, stop):
            self.turn(i)
        return time.perf_counter() - begin


class Floor:
    """Count each message once, keep running sums, bisect, slice."""

    def __init__(self, history: History, budget: int = 100_000) -> None:
        encode = load_encoding("o200k_base").encode_ordinary
        known: dict[str, int] = {}

        def count(text: str) -> int:
            found = known.get(text)
            if found is None:
                found = len(encode(text))
                if len(text) <= 12:
                    known[text] = found
            return found

        self.count = count
        self.history = history
        self.budget = budget
        self.log: list[Any] = []
        self.sums = [0]

    def run(self, start: int, stop: int) -> float:
        log, sums, raws = self.log, self.sums, self.history.openai
        del log[start:], sums[start + 1 :]
        while len(log) < start:  # catch up, untimed
            raw = raws[len(log)]
            log.append(raw)
            sums.append(sums[-1] + openai_message_tokens(raw, self.count))
        gc.collect()
        begin = time.perf_counter()
        for i in range(start, stop):
            raw = raws[i]
            log.append(raw)
            sums.append(sums[-1] + openai_message_tokens(raw, self.count))
            first = sums[1]
            cut = max(1, bisect.bisect_left(sums, sums[-1] + first + PRIMING - self.budget))
            window = [log[0], *log[cut:]]
            del window
        return time.perf_counter() - begin


def measure(config: Path, size: int, args: argparse.Namespace) -> dict[str, Any]:
    total = size + args.turns * args.rounds
    history = with_repeats(agent_history(total), args.repeats)
    loop = Loop(config, history, args.path)
    floor = Floor(history)
    for i in range(size):  # warm: the conversation as it grew
        loop.turn(i)
    floors: list[float] = []
    mems: list[float] = []
    for r in range(args.rounds):
        start = size + r * args.turns
        stop = start + args.turns
        if r % 2 == 0:
            floors.append(floor.run(start, stop))
            mems.append(loop.run(start, stop))
        else:
            mems.append(loop.run(start, stop))
            floors.append(floor.run(start, stop))
    ratios = [m / f for m, f in zip(mems, floors, strict=True)]
    return {
        "ms": statistics.median(mems) * 1e3 / args.turns,
        "floor_ms": statistics.median(floors) * 1e3 / args.turns,
        "ratio": statistics.median(ratios),
        "lo": min(ratios),
        "hi": max(ratios),
    }


def profile(config: Path, size: int, args: argparse.Namespace) -> None:
    history = with_repeats(agent_history(size + args.turns), args.repeats)
    loop = Loop(config, history, args.path)
    for i in range(size):
        loop.turn(i)
    profiler = cProfile.Profile()
    profiler.runcall(loop.run, size, size + args.turns)
    pstats.Stats(profiler).sort_stats(args.sort).print_stats(40)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--turns", type=int, default=40, help="timed turns per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--configs", nargs="*", default=[], help="file names in configs/")
    parser.add_argument("--path", choices=("list", "from_openai"), default="list")
    parser.add_argument("--repeats", type=int, default=0)
    parser.add_argument("--profile", metavar="CONFIG", help="profile one config instead")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--sort", default="cumulative", help="the profile's order")
    args = parser.parse_args(argv)
    if args.clock == "cpu":
        time.perf_counter = time.process_time
    if args.profile:
        profile(CONFIGS / args.profile, max(args.sizes), args)
        return 0
    names = args.configs or sorted(p.name for p in CONFIGS.glob("*.yaml") if p.name not in SKIP)
    loads: Callable[[], str] = lambda: " ".join(f"{x:.2f}" for x in os.getloadavg())  # noqa: E731
    print(
        f"load before: {loads()} ({os.cpu_count()} cpus); path {args.path}, repeats {args.repeats}"
    )
    for name in names:
        for size in args.sizes:
            found = measure(CONFIGS / name, size, args)
            print(
                f"{name:<18} {size:>6} msgs  {found['ms']:8.3f} ms/turn"
                f"  floor {found['floor_ms']:6.3f}  ratio {found['ratio']:7.2f}x"
                f" ({found['lo']:.2f}-{found['hi']:.2f})",
                flush=True,
            )
    print(f"load after: {loads()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
