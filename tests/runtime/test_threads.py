"""The public API under many threads: shared caches, one shared plugin.

Each test narrows the interpreter's switch interval so that threads are
preempted between almost every bytecode, which is how the eviction race in
a shared bounded cache showed before its writes took a lock.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

import memrules
from memrules import MemoryConfig, MemoryPlugin, Request, TiktokenCounter
from memrules._core.messages import Conversation, message
from memrules.strategies import sliding_window

T = TypeVar("T")
THREADS = 16


@pytest.fixture(autouse=True)
def preempt_often() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def in_threads(work: Callable[[int], T]) -> list[T]:
    """``work(k)`` for k in 0..THREADS-1, each in its own thread, started
    together; re-raises the first exception any of them raised."""
    results: list[T | None] = [None] * THREADS
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def run(k: int) -> None:
        start.wait()
        try:
            results[k] = work(k)
        except BaseException as exc:  # collected and re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results  # type: ignore[return-value]


def history(k: int, n: int = 60) -> Conversation:
    """A conversation of ``n`` messages no other thread's history shares."""
    msgs = [message("system", "You are terse.")]
    for i in range(n - 1):
        role = "user" if i % 2 == 0 else "assistant"
        msgs.append(message(role, f"thread {k} message {i}: " + "lorem ipsum " * (i % 7)))
    return tuple(msgs)


def test_a_small_shared_cache_counts_right_under_threads() -> None:
    counter = TiktokenCounter.for_name("cl100k_base", cache_size=8)
    expected = [
        sum(counter.encoding.encode_ordinary(f"{m.role} {m.text}").__len__() for m in history(k))
        for k in range(THREADS)
    ]

    def work(k: int) -> int:
        return sum(sum(counter.counts(history(k))) for _ in range(40)) // 40

    assert in_threads(work) == expected
    assert counter.cached <= 8


def test_count_tokens_is_thread_safe() -> None:
    expected = [memrules.count_tokens(history(k), "o200k_base") for k in range(THREADS)]
    assert in_threads(lambda k: memrules.count_tokens(history(k), "o200k_base")) == expected


def test_one_pipeline_applied_from_many_threads() -> None:
    counter = TiktokenCounter.for_name("cl100k_base", cache_size=16)
    pipeline = memrules.load_pipeline(
        "max_messages: 20\nstrategies:\n  - type: sliding_window\n    keep_messages: 10\n",
        counter=counter,
    )
    single = [pipeline.apply(history(k)) for k in range(THREADS)]

    def work(k: int) -> tuple[Conversation, int]:
        result = pipeline.apply(history(k))
        return result.messages, result.report.tokens_after

    got = in_threads(work)
    assert got == [(r.messages, r.report.tokens_after) for r in single]


def test_one_shared_plugin_under_every_entry_point_at_once() -> None:
    counter = TiktokenCounter.for_name("cl100k_base", cache_size=16)
    config = MemoryConfig(
        context_window_tokens=400,
        max_messages=12,
        warn_fraction=0.1,
        strategies=[sliding_window(keep_messages=8)],
    )
    plugin = MemoryPlugin(config, counter=counter)
    reference = MemoryPlugin(config, counter=TiktokenCounter.for_name("cl100k_base"))
    expected = []
    for k in range(THREADS):
        sent = reference.on_request(Request(messages=history(k), conversation_id=f"c{k}"))
        expected.append(
            (
                sent.messages,
                reference.count_tokens(history(k)),
                reference.compress(history(k)).messages,
            )
        )

    def work(k: int) -> tuple[Conversation, int, Conversation]:
        sent = plugin.on_request(Request(messages=history(k), conversation_id=f"c{k}"))
        return sent.messages, plugin.count_tokens(history(k)), plugin.compress(history(k)).messages

    assert in_threads(work) == expected
    assert all(plugin.state(f"c{k}").warned for k in range(THREADS))


def test_one_memo_grown_from_many_threads_at_once() -> None:
    """Threads that grow conversations through one pipeline's memo, some the
    same conversation by different paths (a tuple, a list, rebuilt copies),
    get what a fresh pipeline gives each request."""
    counter = TiktokenCounter.for_name("cl100k_base")
    yaml = "max_tokens: 300\nstrategies:\n  - type: trim_to_budget\n"
    shared = memrules.load_pipeline(yaml, counter=counter)
    histories = [history(k % 4, n=40) for k in range(THREADS)]  # four threads a history

    def expected(conversation: Conversation) -> tuple[Conversation, int]:
        result = memrules.load_pipeline(yaml, counter=counter).apply(conversation)
        return result.messages, result.report.tokens_after

    def work(k: int) -> list[tuple[Conversation, int]]:
        out = []
        full = histories[k]
        for n in range(1, len(full) + 1, 3):
            grown = full[:n]
            given = (
                grown
                if k % 3 == 0
                else list(grown)
                if k % 3 == 1
                else tuple(m.evolve() for m in grown)
            )
            result = shared.apply(given)
            out.append((result.messages, result.report.tokens_after))
        return out

    got = in_threads(work)
    for k in range(THREADS):
        full = histories[k]
        assert got[k] == [expected(full[:n]) for n in range(1, len(full) + 1, 3)]


def test_one_conversion_memo_from_many_threads() -> None:
    memo = memrules.ConversionCache(size=8)
    raw = [{"role": "user" if i % 2 else "assistant", "content": f"m{i}"} for i in range(30)]

    def work(k: int) -> bool:
        ok = True
        for n in range(1, 31, 1 + k % 3):
            request = raw[k % 5 : n]
            ok &= memrules.from_openai(request, memo=memo) == memrules.from_openai(request)
        return ok

    assert all(in_threads(work))
