"""Awaiting the seams while the pure core stays sync: the drivers of
:meth:`Pipeline.apply_async <memrules.Pipeline.apply_async>` and
:meth:`MemoryPlugin.handle_async <memrules.MemoryPlugin.handle_async>`.

The core (strategies, interpreter, the request hook's `step`) is plain
sync code that calls its seams through `seam_call` (the proxies of
`memrules._runtime.logged`).

`run_awaiting` (`apply_async`'s driver) runs the core **once**, in a thread
of its own, under an awaiting log: each seam call the run makes is sent to
the event loop that awaits `run_awaiting` and awaited there (the seam's
coroutine method, `summarize_async`, a store's `add_async` or
`search_async`), while the core's thread waits for its answer; a seam
without a coroutine method is called in the core's thread, which blocks
that thread and never the loop. The answer, or the exception the seam
raised, comes back to the core as the sync call would give it, so the
result and the report are the sync path's. A thread per call, not the
default executor's few, so that a hundred concurrent calls wait for their
seams together.

`SeamAnswers` is the older driver, which `handle_async` still uses: it
runs the core, whole and sync, again and again under an answering log:

1. Each seam call the run makes is looked up among the answers fetched so
   far, by seam, operation and the canonical JSON of its request (the n-th
   identical request of a run gets the n-th answer). Found: the run gets that
   answer, or the exception the seam raised, raised again (the same object,
   so the report says exactly what the sync path says).
2. Not found: the run stops with `_Pending`, a `BaseException`
   (so a strategy's `except Exception`, which records a seam failure and
   goes on, cannot swallow it) carrying the call.
3. The driver awaits that call: the seam's coroutine method when it has one,
   else the blocking method in a worker thread (`asyncio.to_thread`). It
   keeps the answer or the exception, and runs the core again.

A run that makes `n` seam calls is so run `n + 1` times; each seam call is
made once, whatever the number of runs.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from memrules.seams._log import _Log, _unjsonable, plain

if TYPE_CHECKING:
    import asyncio

__all__ = ["SeamAnswers", "run_awaiting"]

T = TypeVar("T")

_Key = tuple[str, str, str]


class _Pending(BaseException):
    """The run needs a seam call that has no answer yet: the driver makes it
    and runs the core again. A ``BaseException`` so that no ``except
    Exception`` in a strategy or the interpreter catches it."""

    def __init__(
        self,
        key: _Key,
        send: Callable[[], Any],
        send_async: Callable[[], Awaitable[Any]] | None,
    ) -> None:
        self.key = key
        self.send = send
        self.send_async = send_async
        super().__init__(f"{key[0]}.{key[1]} has no answer yet")


@attrs.frozen(slots=True)
class _Answer:
    """What one seam call gave: a value, or the exception it raised."""

    value: Any = None
    error: Exception | None = None


class _AnsweringLog(_Log):
    """The log of one run: answers calls from ``answers`` in call order, or
    stops the run with :class:`_Pending`."""

    def __init__(self, answers: dict[_Key, list[_Answer]]) -> None:
        self.notes = {}
        self._answers = answers
        self._made: dict[_Key, int] = {}

    def call(
        self,
        seam: str,
        operation: str,
        request: Callable[[], Any],
        send: Callable[[], T],
        answer: Callable[[T], Any],
        rebuild: Callable[[Any], T] | None,
        send_async: Callable[[], Awaitable[T]] | None = None,
    ) -> T:
        key = (seam, operation, _canonical(request()))
        number = self._made.get(key, 0)
        self._made[key] = number + 1
        found = self._answers.get(key, ())
        if number < len(found):
            got = found[number]
            if got.error is not None:
                raise got.error.with_traceback(None)
            value: T = got.value
            return value
        raise _Pending(key, send, send_async)


def _canonical(request: Any) -> str:
    """``request`` as canonical JSON (sorted keys): what a call is known by."""
    try:
        return json.dumps(request, sort_keys=True, ensure_ascii=False, default=_unjsonable)
    except TypeError:  # keys that do not sort together (1 and "1"): as the log reads them
        return json.dumps(plain(request), sort_keys=True, ensure_ascii=False)


class SeamAnswers:
    """The seam answers of one ``apply_async`` (or ``handle_async``): what
    :meth:`settle` fetched so far, reused by every run of the core (see the
    module docs). :attr:`calls` is how many seam calls were made; :attr:`runs`
    how many times the core ran."""

    def __init__(self) -> None:
        self._answers: dict[_Key, list[_Answer]] = {}
        self.calls = 0
        self.runs = 0

    def run(self, core: Callable[[], T]) -> T:
        """``core()`` once, its seam calls answered from what was fetched;
        raises :class:`_Pending` for the first call that has no answer yet.
        Sync: for a run that must happen elsewhere (a worker thread, under a
        lock), with :meth:`fetch` awaited between runs."""
        self.runs += 1
        with _AnsweringLog(self._answers).active():
            return core()

    async def fetch(self, pending: _Pending) -> None:
        """Make the call ``pending`` carries, awaited, and keep its answer or
        the exception it raised (``BaseException``\\ s, cancellation among
        them, are not answers: they propagate)."""
        self.calls += 1
        try:
            if pending.send_async is not None:
                value = await pending.send_async()
            else:
                import asyncio  # only on the async path: importing memrules loads no event loop

                value = await asyncio.to_thread(pending.send)
        except Exception as exc:
            got = _Answer(error=exc)
        else:
            got = _Answer(value=value)
        self._answers.setdefault(pending.key, []).append(got)

    async def settle(self, core: Callable[[], T]) -> T:
        """``core()``'s result, run in this thread until every seam call it
        makes has an answer, each call awaited once."""
        while True:
            try:
                return self.run(core)
            except _Pending as pending:
                await self.fetch(pending)


class _AwaitingLog(_Log):
    """The log of a core run by `run_awaiting`, in the core's thread: each
    call with a coroutine method is awaited on ``loop`` (the core's thread
    waits for its answer), any other call is made here."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.notes = {}
        self._loop = loop

    def call(
        self,
        seam: str,
        operation: str,
        request: Callable[[], Any],
        send: Callable[[], T],
        answer: Callable[[T], Any],
        rebuild: Callable[[Any], T] | None,
        send_async: Callable[[], Awaitable[T]] | None = None,
    ) -> T:
        if send_async is None:
            return send()
        import asyncio

        awaited = send_async

        async def on_the_loop() -> T:
            return await awaited()

        return asyncio.run_coroutine_threadsafe(on_the_loop(), self._loop).result()


async def run_awaiting(core: Callable[[], T]) -> T:
    """``core()``'s result, the core run once in a thread of its own (with
    this context's variables), each seam call it makes awaited on this event
    loop (see the module docs). What ``core`` raises is raised here."""
    import asyncio  # only on the async path: importing memrules loads no event loop

    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    log = _AwaitingLog(loop)

    def give(result: T) -> None:
        if not done.done():
            done.set_result(result)

    def fail(exc: BaseException) -> None:
        if not done.done():
            done.set_exception(exc)

    def work() -> None:
        try:
            with log.active():
                result = core()
        except BaseException as exc:  # the caller's to handle, in the caller's task
            loop.call_soon_threadsafe(fail, exc)
        else:
            loop.call_soon_threadsafe(give, result)

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(work,), name="memrules-core", daemon=True).start()
    return await done
