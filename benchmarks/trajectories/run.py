"""Replay real agent trajectories through the shipped configs and print the
probe table, one row per config and budget.

    python benchmarks/trajectories/run.py ../shared/data/trajectories-dev
    python benchmarks/trajectories/run.py DIR --configs configs/coding_agent.yaml --budgets 16000
    python benchmarks/trajectories/run.py DIR --json figures.json --jobs 2

Each trajectory (``memrules.datasets``: mini-swe-agent or SWE-agent
``.traj``, OpenAI or Anthropic messages, Claude Code or Codex session logs)
is replayed as its agent loop:
one request per model call, compacted with ``previous=`` the last result,
every config on a budget of each ``--budgets`` value (``memrules eval
--trajectories --max-tokens N``, which this calls). The columns are those of
:mod:`memrules._cli.trajectory_output`: requests without the task
statement, task present at the last request, the latest question present,
requests starting with a non-user message, edited paths present (all
requests, last request), last error line and last test command present at
the last request, requests over budget by ``o200k_base``, broken tool
pairs, the OpenAI prompt cache's share of tokens sent, p50 ms of ``apply``.
``--tool-results anthropic`` sends each tool result in a user-role message,
as Anthropic's tool loop does. The data is never in the repository: pass
its directory.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memrules._cli.eval_trajectories import (  # noqa: E402
    TrajectoryRow,
    TrajectorySettings,
    run_trajectories,
)
from memrules._cli.trajectory_output import render_table, row_json  # noqa: E402

CONFIGS = ("configs/default.yaml", "configs/coding_agent.yaml", "configs/cache_aware.yaml")
BUDGETS = (16000, 32000)


def run(
    paths: Sequence[Path],
    *,
    configs: Sequence[Path] = tuple(ROOT / c for c in CONFIGS),
    budgets: Sequence[int] = BUDGETS,
    jobs: int = 1,
    shape: str = "openai",
) -> list[TrajectoryRow]:
    """Every config at every budget over the trajectories of ``paths``: the
    rows, ordered by config, then budget."""
    by_budget = {
        budget: run_trajectories(
            TrajectorySettings(
                configs=tuple(configs),
                trajectories=tuple(paths),
                max_tokens=budget,
                jobs=jobs,
                shape=shape,
            )
        ).rows
        for budget in budgets
    }
    return [by_budget[b][i] for i in range(len(configs)) for b in budgets]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", type=Path, nargs="+", help="trajectory files or directories")
    parser.add_argument("--configs", type=Path, nargs="+", default=[ROOT / c for c in CONFIGS])
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--jobs", type=int, default=1, help="trajectories in N processes")
    parser.add_argument(
        "--tool-results",
        choices=("openai", "anthropic"),
        default="openai",
        help="tool results as tool messages (openai) or in user-role messages (anthropic)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows = run(
        args.paths,
        configs=args.configs,
        budgets=args.budgets,
        jobs=args.jobs,
        shape=args.tool_results,
    )
    load = os.getloadavg()
    print(render_table(rows), end="")
    print(
        f"\n{len(rows)} runs in {time.perf_counter() - started:.0f} s; "
        f"load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}"
    )
    if args.json is not None:
        args.json.write_text(json.dumps([row_json(r) for r in rows], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
