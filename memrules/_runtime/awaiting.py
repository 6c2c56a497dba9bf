"""Awaiting the seams while the pure core stays sync: the driver of
`Pipeline.apply_async` and `MemoryPlugin.handle_async`.

The core (strategies, interpreter, the request hook's `step`) is plain
sync code that calls its seams through `seam_call` (the proxies of
`memrules._runtime.logged`).

`run_awaiting` runs the core **once**, in a thread
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
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from memrules.seams._log import _Log

if TYPE_CHECKING:
    import asyncio

__all__ = ["run_awaiting"]

T = TypeVar("T")


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
