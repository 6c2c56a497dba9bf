"""How big a trace of an agent loop gets, and what replaying it costs.

    python benchmarks/trace_size.py                  # 50 and 400 requests
    python benchmarks/trace_size.py --requests 1000

Seven conversations of a seeded coding-agent history (``benchmarks.harness``)
take turns; each request sends its conversation's whole history so far,
seven messages longer than its last, from 50 up to 400 messages, through a
pipeline that clears old tool results and trims to 8,000 tokens, recorded
with :func:`memrules.record_trace`. A request that continues its
conversation is written as a delta (trace format 2), so the file grows with
what the conversations add, not with the square of their length. Printed
per run: the trace's size, the time to record it, and the wall time and
peak memory of ``memrules replay`` on it, in a child process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's harness and memrules

from benchmarks.harness.histories import agent_history  # noqa: E402
from memrules import load_pipeline, record_trace  # noqa: E402

CONFIG = """
encoder_name: o200k_base
max_tokens: 8000
strategies:
  - type: clear_tool_results
    keep_pairs: 3
  - type: trim_to_budget
"""
CONVERSATIONS = 7


def record(path: Path, requests: int) -> float:
    """Record ``requests`` requests to ``path``; the seconds it took."""
    history = agent_history(400, seed=1).messages
    pipeline = load_pipeline(CONFIG)
    start = time.perf_counter()
    with record_trace(path, pipeline, name="agent") as traced:
        for i in range(requests):
            traced.apply(history[: 50 + (i % 350)], conversation_id=f"c{i % CONVERSATIONS}")
    return time.perf_counter() - start


def replay(path: Path) -> tuple[float, float]:
    """Replay ``path`` in a child process: its wall seconds and peak RSS in MB."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "memrules", "replay", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        error = child.stderr.read().decode() if child.stderr else ""
        raise SystemExit(f"replay failed: {error.strip()}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, nargs="+", default=[50, 400])
    args = parser.parse_args()
    print(f"{'requests':>8}  {'trace MB':>9}  {'record s':>8}  {'replay s':>8}  {'replay MB':>9}")
    with tempfile.TemporaryDirectory() as where:
        for requests in args.requests:
            path = Path(where) / f"trace-{requests}.jsonl"
            recorded = record(path, requests)
            seconds, peak = replay(path)
            size = path.stat().st_size / 1e6
            print(f"{requests:>8}  {size:>9.1f}  {recorded:>8.2f}  {seconds:>8.2f}  {peak:>9.0f}")


if __name__ == "__main__":
    main()
