"""memrules' time per model call in a LangChain agent loop, against the
history's length: a call should cost what the turn added, not the history.

An agent loop of STEPS tool rounds (an AI message with a tool call, its
ToolMessage, a long read every few rounds) is handed to the middleware's
``wrap_model_call`` (the default mode) after each round, as LangChain does:
the same message objects again, plus the new ones, inside a LangGraph
thread. Printed: the median time per call in each
tenth of the loop (by history length), and the ratio of the last tenth to
the first. A flat profile (ratio near 1) is what "O(new)" means; a profile
that grows with the history is a per-call cost in the whole history. The
floor printed beside it is the same loop converting only the new messages.

    python benchmarks/integrations/langchain_loop.py [--steps 120] [--config configs/default.yaml]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import memrules
from memrules._adapters.langchain import from_langchain
from memrules.integrations.langchain import memrules_middleware

ROOT = Path(__file__).resolve().parents[2]


def _round(i: int) -> list[Any]:
    call = {"name": "read_file", "args": {"path": f"src/module_{i}.py"}, "id": f"call_{i}"}
    body = "\n".join(f"line {k}: value = compute({k}, {i})" for k in range(60 if i % 4 else 400))
    return [
        AIMessage(content=f"Reading module {i}.", tool_calls=[call]),
        ToolMessage(content=body, tool_call_id=f"call_{i}"),
    ]


class _Request:
    """What ``wrap_model_call`` reads of LangChain's ``ModelRequest``."""

    def __init__(self, messages: list[Any]) -> None:
        self.messages = messages

    def override(self, *, messages: list[Any]) -> _Request:
        return _Request(messages)


def _handler(request: _Request) -> int:
    return len(request.messages)


def run(steps: int, config: str) -> None:
    pipeline = memrules.load_pipeline(config)
    middleware = memrules_middleware(pipeline)
    history: list[Any] = [
        SystemMessage(content="You are a coding agent."),
        HumanMessage(content="Refactor the compute() calls across the code base."),
    ]
    times: list[tuple[int, float, float]] = []
    for i in range(steps):
        new = _round(i)
        history.extend(new)
        request = _Request(list(history))
        t0 = time.perf_counter()
        middleware.wrap_model_call(request, _handler)
        t1 = time.perf_counter()
        from_langchain(new)
        t2 = time.perf_counter()
        times.append((len(history), t1 - t0, t2 - t1))
    tenth = max(1, steps // 10)
    print(f"{steps} steps, config {config}, load average {os.getloadavg()[0]:.2f}")
    print(f"{'messages':>10} {'memrules ms/call':>17} {'floor ms':>9}")
    medians = []
    for k in range(0, steps, tenth):
        chunk = times[k : k + tenth]
        mem = statistics.median(t for _, t, _ in chunk) * 1000
        floor = statistics.median(f for _, _, f in chunk) * 1000
        medians.append(mem)
        print(f"{chunk[-1][0]:>10} {mem:>17.2f} {floor:>9.3f}")
    print(f"last tenth / first tenth: {medians[-1] / medians[0]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--config", default=str(ROOT / "configs" / "default.yaml"))
    args = parser.parse_args()
    run(args.steps, args.config)


if __name__ == "__main__":
    main()
