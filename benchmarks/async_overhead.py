"""What ``Pipeline.apply_async`` costs, and what it buys.

```
python benchmarks/async_overhead.py            # about half a minute
python benchmarks/async_overhead.py --quick    # seconds
```

1. **The core in a thread of its own.** ``apply_async`` runs the sync core
   once in a thread and awaits each seam call on the event loop. With seams
   that answer at once (in process), the difference between ``apply_async``
   and ``apply`` on the same history is that hand-over (the extractive
   summarizer and this store have no coroutine methods, so they are called
   in the core's thread). The memo is fresh for each timed call; the
   counter's own cache is warmed once for both.
2. **Concurrency.** 100 concurrent ``apply_async`` calls against a loopback
   OpenAI-compatible server that takes ``--delay`` seconds per summary,
   against one call: with the async summarizer (httpx), and with the same
   summarizer made sync-only, so each call runs in ``asyncio.to_thread``
   (bounded by the default executor's threads).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's harness and memrules

from benchmarks.harness.histories import agent_history  # noqa: E402
from memrules import Budget, MemoryConfig, Pipeline  # noqa: E402
from memrules._core.messages import Conversation  # noqa: E402
from memrules._counting.named import counter_for  # noqa: E402
from memrules._engine.interpreter import NamedStrategy  # noqa: E402
from memrules.seams import Seams, StoreWrite, extractive_summarizer, openai_summarizer  # noqa: E402
from memrules.strategies import offload, sliding_window, summarize  # noqa: E402


class _InstantStore:
    """A store that keeps nothing and answers at once."""

    def add(self, records: Any) -> StoreWrite:
        return StoreWrite(added=tuple(r.id for r in records))

    def search(self, query: str, **_: Any) -> tuple[Any, ...]:
        return ()


class _SyncOnly:
    """A summarizer with only the blocking ``summarize`` (and its requests)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def summarize(self, messages: Conversation) -> str:
        text: str = self.inner.summarize(messages)
        return text

    def request_json(self, messages: Conversation) -> Any:
        return self.inner.request_json(messages)


def _strategies(*named: tuple[str, Any]) -> tuple[NamedStrategy, ...]:
    return tuple(NamedStrategy(name=name, strategy=s) for name, s in named)


def overhead(sizes: list[int], rounds: int) -> None:
    counter = counter_for("cl100k_base")
    config = MemoryConfig(
        strategies=_strategies(
            ("offload", offload(turns=2)),
            ("summarize", summarize(turns=2)),
            ("sliding_window", sliding_window(keep_messages=60)),
        )
    )
    seams = Seams(store=_InstantStore(), summarizer=extractive_summarizer())  # type: ignore[arg-type]
    pipeline = Pipeline(config=config, counter=counter, seams=seams)
    print("1. re-running the core (seams answer in process)")
    print(f"{'messages':>9} {'seam calls':>10} {'apply ms':>9} {'apply_async ms':>15} {'ratio':>6}")
    for size in sizes:
        history = agent_history(size, seed=0).messages
        budget = Budget.messages(max(8, size // 3))
        sync_times: list[float] = []
        async_times: list[float] = []
        calls = 0

        async def timed(
            history: Conversation,
            budget: Budget,
            sync_times: list[float] = sync_times,
            async_times: list[float] = async_times,
        ) -> None:
            nonlocal calls
            # Warm the counter's own cache of message counts (shared by every
            # memo) once, so neither side pays for the first count.
            pipeline.apply(history, budget=budget, memo=pipeline.measure())
            for _ in range(rounds):
                start = time.perf_counter()
                expected = pipeline.apply(history, budget=budget, memo=pipeline.measure())
                sync_times.append(time.perf_counter() - start)
                start = time.perf_counter()
                got = await pipeline.apply_async(history, budget=budget, memo=pipeline.measure())
                async_times.append(time.perf_counter() - start)
                assert got == expected
                calls = sum(len(a.seam_calls) for a in expected.report.actions)

        asyncio.run(timed(history, budget))
        sync_ms = statistics.median(sync_times) * 1000
        async_ms = statistics.median(async_times) * 1000
        print(f"{size:>9} {calls:>10} {sync_ms:>9.1f} {async_ms:>15.1f} {async_ms / sync_ms:>6.2f}")


def concurrency(delay: float, concurrent: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' loopback server
    from tests.support.chat_server import ChatServer

    counter = counter_for("cl100k_base")
    config = MemoryConfig(strategies=_strategies(("summarize", summarize(turns=3))))
    history = agent_history(24, seed=1).messages
    budget = Budget.messages(12)
    print(f"\n2. {concurrent} concurrent apply_async calls, a summary takes {delay:g} s")
    cpus = os.cpu_count() or 1
    print(f"   (cpus: {cpus}, default executor threads: {min(32, cpus + 4)})")
    with ChatServer(delay=delay) as server:
        summarizer = openai_summarizer(base_url=server.url, model="loopback-model", retries=0)
        kinds = (("async (httpx)", summarizer), ("sync in a thread", _SyncOnly(summarizer)))
        for label, seam in kinds:
            pipeline = Pipeline(config=config, counter=counter, seams=Seams(summarizer=seam))

            async def one(p: Pipeline = pipeline) -> None:
                await p.apply_async(history, budget=budget)

            async def many(p: Pipeline = pipeline) -> None:
                calls = (p.apply_async(history, budget=budget) for _ in range(concurrent))
                await asyncio.gather(*calls)

            start = time.perf_counter()
            asyncio.run(one())
            single = time.perf_counter() - start
            start = time.perf_counter()
            asyncio.run(many())
            took = time.perf_counter() - start
            print(
                f"   {label:<17} one: {single:.2f} s   {concurrent}: {took:.2f} s   "
                f"({took / single:.1f}x one; serial would be {concurrent * single:.0f} s)"
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    parser.add_argument("--delay", type=float, default=0.5, help="seconds per summary")
    parser.add_argument("--concurrent", type=int, default=100)
    args = parser.parse_args(argv)
    if args.quick:
        overhead([100, 300], rounds=1)
    else:
        overhead([100, 1000, 3000], rounds=5)
    concurrency(args.delay, args.concurrent)


if __name__ == "__main__":
    main()
