"""The growing agent loop alone: ``trim_to_budget``, one message a turn.

    python benchmarks/speed_loop.py                      # 1,000 / 3,000 / 10,000 turns
    python benchmarks/speed_loop.py --turns 10000 --rounds 3 --paths list

The loops of ``memrules bench`` section 3 (:mod:`benchmarks.harness.measure`),
without the rest of the benchmark: for each length, the floor (count each
message once as it arrives, keep running sums, bisect for the cut, slice the
window) and memrules on the same history, in rounds that alternate which runs
first. Printed: the median seconds of each side, the median and range of the
per-round ratios, and the load average before and after. The ratio is the
figure to read: the target is at most 2x at 10,000 turns, and the same ratio
at every length (a turn costs what it adds). ``--clock cpu`` times both
sides by the process's CPU time instead, when other work on the machine
moves the wall clock (say which in any figure you report).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness.histories import agent_history  # noqa: E402
from benchmarks.harness.measure import LOOPS, _floor_loop, alternate  # noqa: E402
from memrules._counting.tokens import load_encoding  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1000, 3000, 10000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=100_000)
    parser.add_argument("--paths", nargs="+", default=list(LOOPS), choices=list(LOOPS))
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="cpu: time both sides by this process's CPU time (time.process_time), "
        "for a machine whose other work moves the wall clock",
    )
    args = parser.parse_args(argv)
    if args.clock == "cpu":
        time.perf_counter = time.process_time  # the harness times with perf_counter
    encoding = load_encoding("o200k_base")
    print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cpus)")
    for turns in args.turns:
        history = agent_history(turns)
        for path in args.paths:
            found = alternate(
                functools.partial(_floor_loop, history, args.budget, encoding),
                functools.partial(LOOPS[path], history, args.budget, encoding),
                args.rounds,
            )
            print(
                f"{turns:>6} turns {path:<12} floor {found['floor_s'] * 1e3 / turns:7.3f} ms/turn"
                f"  memrules {found['memrules_s'] * 1e3 / turns:7.3f} ms/turn"
                f"  ratio {found['ratio_median']:5.2f}x"
                f" ({found['ratio_min']:.2f}-{found['ratio_max']:.2f})",
                flush=True,
            )
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
