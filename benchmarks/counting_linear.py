"""Whether compaction time grows with the input, not faster.

    python benchmarks/counting_linear.py                     # 1 to 50 MB, 10k to 500k messages
    python benchmarks/counting_linear.py --mb 1 5 --messages 10000 50000

Two measurements, each through ``Pipeline.apply`` with ``configs/default.yaml``
(o200k and cl100k counting, tool-result clearing, clamping, windows):

- **One huge tool result**: a conversation of four messages whose tool result
  is ``MB`` megabytes of agent output (log lines, JSON records, prose, indented
  code), counted, clamped and counted again. Printed: seconds, and seconds per
  MB, which stays flat when counting is linear in the text.
- **Many messages**: a conversation of ``N`` short messages (user, assistant
  with a tool call, tool result, assistant), compacted to the default window.
  Printed: seconds, and microseconds per message.

Each figure is the best of ``--repeat`` runs in a fresh pipeline (nothing
cached between runs). The machine's load moves every figure; compare the
per-unit columns within one run.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from memrules import Message, Text, ToolCall, ToolResult, load_pipeline

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "default.yaml"


def agent_output(size: int, rng: random.Random) -> str:
    """About ``size`` characters of what tools print, in blocks of each kind."""
    blocks = []
    length = 0
    i = 0
    while length < size:
        kind = i % 4
        if kind == 0:
            block = "".join(
                f"2026-01-01T00:00:{j % 60:02d} INFO worker[{j % 7}] request {i * 40 + j} "
                f"took {rng.randint(1, 999)}ms\n"
                for j in range(40)
            )
        elif kind == 1:
            records = [{"id": i * 20 + j, "name": f"item{j}", "ok": j % 3 == 0} for j in range(20)]
            block = json.dumps(records) + "\n"
        elif kind == 2:
            block = (
                "The service restarted after the deploy; latency rose for a while, then "
                "settled near its usual level. Nobody was paged. "
            ) * 8 + "\n"
        else:
            block = "".join(
                f"def handler_{i}_{j}(event):\n    return process(event, retries={j})\n"
                for j in range(10)
            )
        blocks.append(block)
        length += len(block)
        i += 1
    return "".join(blocks)[:size]


def huge_result(text: str) -> tuple[Message, ...]:
    call = ToolCall(id="c1", name="read_file", arguments='{"path": "out.log"}')
    return (
        Message(role="user", parts=(Text(text="Read out.log and tell me what failed."),)),
        Message(role="assistant", parts=(call,)),
        Message(role="tool", parts=(ToolResult(call_id="c1", content=text),)),
        Message(role="user", parts=(Text(text="So, what failed?"),)),
    )


def many_messages(count: int) -> tuple[Message, ...]:
    out = []
    for i in range(count // 4):
        call = ToolCall(id=f"c{i}", name="grep", arguments=f'{{"pattern": "step {i}"}}')
        out += [
            Message(role="user", parts=(Text(text=f"Run step {i} of the migration."),)),
            Message(role="assistant", parts=(call,)),
            Message(role="tool", parts=(ToolResult(call_id=f"c{i}", content=f"step {i}: ok"),)),
            Message(role="assistant", parts=(Text(text=f"Step {i} is done."),)),
        ]
    return tuple(out)


def best(conversation: tuple[Message, ...], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        pipeline = load_pipeline(CONFIG)
        start = time.perf_counter()
        pipeline.apply(conversation)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, nargs="*", default=[1, 2, 5, 10, 20, 50])
    parser.add_argument(
        "--messages", type=int, nargs="*", default=[10_000, 50_000, 100_000, 500_000]
    )
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(7)
    if args.mb:
        text = agent_output(int(max(args.mb) * 1_000_000), rng)
        print(f"{'tool result':>12}  {'seconds':>8}  {'s per MB':>8}")
        for mb in args.mb:
            seconds = best(huge_result(text[: int(mb * 1_000_000)]), args.repeat)
            print(f"{mb:>9.0f} MB  {seconds:>8.2f}  {seconds / mb:>8.3f}", flush=True)
    if args.messages:
        print(f"{'messages':>12}  {'seconds':>8}  {'µs each':>8}")
        for count in args.messages:
            seconds = best(many_messages(count), args.repeat)
            print(f"{count:>12,}  {seconds:>8.2f}  {seconds / count * 1e6:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
