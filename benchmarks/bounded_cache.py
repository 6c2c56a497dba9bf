"""Warm-hit cost of the token counters' cache: count the same messages twice.

    python benchmarks/bounded_cache.py                  # 10,000 messages
    python benchmarks/bounded_cache.py --messages 50000 --repeat 7

Three caches with the counters' contract (lock-free hits, locked inserts,
first in first out) over the same o200k counter: the one memrules uses
(:class:`memrules._counting.tokens.BoundedCache`, on
:class:`memrules._core.bounded.BoundedTable`), the same code over a
``cachetools.FIFOCache``, and a plain ``OrderedDict`` written out by hand
(the reference the shared table must not be slower than). Printed per
cache: the cold pass (every message counted) and the warm pass (every
message a hit), both through ``many`` and one ``get`` a message, best of
``--repeat``, in microseconds per message.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from memrules import Message, Text
from memrules._counting.tokens import BoundedCache, TiktokenCounter


class HandWritten:
    """The counters' cache written over an ``OrderedDict`` by hand."""

    def __init__(self, compute: Callable[[Message], int], cap: int) -> None:
        self._compute, self.cap = compute, cap
        self._data: OrderedDict[Message, int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, message: Message) -> int:
        count = self._data.get(message)
        if count is None:
            count = self._compute(message)
            with self._lock:
                if message not in self._data:
                    while len(self._data) >= self.cap:
                        self._data.popitem(last=False)
                    self._data[message] = count
        return count

    def many(self, messages: Sequence[Message]) -> tuple[int, ...]:
        counts: list[Any] = list(map(self._data.get, messages))
        if None in counts:
            for i, count in enumerate(counts):
                if count is None:
                    counts[i] = self.get(messages[i])
        return tuple(counts)


class CacheTools(HandWritten):
    """The same over ``cachetools.FIFOCache`` (its own eviction)."""

    def __init__(self, compute: Callable[[Message], int], cap: int) -> None:
        import cachetools

        super().__init__(compute, cap)
        self._data = cachetools.FIFOCache(cap)  # type: ignore[assignment]

    def get(self, message: Message) -> int:
        count = self._data.get(message)
        if count is None:
            count = self._compute(message)
            with self._lock:
                self._data[message] = count
        return count


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = args.messages
    messages = [
        Message(
            role="user" if i % 2 else "assistant",
            parts=(Text(text=f"message {i}: " + "word " * (i % 40)),),
        )
        for i in range(n)
    ]
    compute = TiktokenCounter.for_name("o200k_base")._compute
    makers: dict[str, Callable[[], Any]] = {
        "BoundedTable (memrules)": lambda: BoundedCache(compute, 65_536),
        "OrderedDict by hand": lambda: HandWritten(compute, 65_536),
        "cachetools.FIFOCache": lambda: CacheTools(compute, 65_536),
    }
    print(f"{n:,} messages, best of {args.repeat}, microseconds per message")
    print(f"{'cache':26} {'cold many':>10} {'warm many':>10} {'warm get':>10}")
    for name, make in makers.items():
        cold = best(lambda make=make: make().many(messages), args.repeat)
        cache = make()
        cache.many(messages)
        warm = best(lambda cache=cache: cache.many(messages), args.repeat * 4)
        get = cache.get
        warm_get = best(lambda get=get: [get(m) for m in messages], args.repeat * 4)
        print(f"{name:26} {cold / n * 1e6:10.2f} {warm / n * 1e6:10.3f} {warm_get / n * 1e6:10.3f}")


if __name__ == "__main__":
    main()
