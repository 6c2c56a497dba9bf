"""The seam log: the one recorder every seam call goes through when a run
is traced, and the one replayer that answers them from a trace.

Code that reaches outside the pure core (a summarizer, a vector store and
the embedder inside it, the graph extractor, the state store, the context
window resolver) makes the call through `seam_call`, or through a
proxy of `memrules._runtime.logged` that does. With no log active that is the
call itself, after one context-variable read. Inside ``with log.active():``
(in this thread or task only) the call goes through the log:

- `RecordingLog` makes the call and keeps it as a JSON object:
  ``seam``, ``operation``, the ``request``, and the ``response`` or the
  ``error`` it raised (``"StoreError: ..."``), in the order the calls
  started. A call made while another is in progress (the embedder inside a
  store's write) is kept with its ``depth``, after the call it serves.
- `ReplayingLog` makes no call. It checks that the call and its
  request are the next recorded ones and answers with the recorded answer,
  or raises the recorded error again (same type name, same message). The
  calls nested in the one it answers are part of that answer: they are
  copied, not made. A call the trace has no answer for, or whose request
  differs, fails loudly: `ReplayMismatch` is raised
  *and* kept as `ReplayingLog.failure`, so code that catches every
  exception (a strategy's seam failure is recorded, and the pipeline goes
  on) cannot hide it.

Requests and answers are plain JSON values, computed only while a log is
active; nothing here reads a clock or draws a random number, so the same
run records the same calls.
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import hashlib
import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

from memrules._core.errors import MemrulesError, ReplayMismatch
from memrules._core.jsondiff import describe, differences, within

__all__ = [
    "RecordingLog",
    "ReplayedError",
    "ReplayingLog",
    "active_log",
    "plain",
    "rebuilt_error",
    "seam_call",
    "texts_request",
    "vectors_answer",
]

T = TypeVar("T")

_ACTIVE: contextvars.ContextVar[_Log | None] = contextvars.ContextVar(
    "memrules_seam_log", default=None
)


def active_log() -> _Log | None:
    """The log of the run in progress in this context, if one is active."""
    return _ACTIVE.get()


def _unjsonable(value: object) -> str:
    return f"<{type(value).__name__}>"


def plain(value: Any) -> Any:
    """``value`` as the JSON value it reads back as (tuples become lists,
    keys strings); what cannot be JSON is named by its type (``"<set>"``),
    never by an address that changes between runs."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=_unjsonable))


def seam_call(
    seam: str,
    operation: str,
    request: Callable[[], Any],
    send: Callable[[], T],
    *,
    answer: Callable[[T], Any],
    rebuild: Callable[[Any], T] | None = None,
    send_async: Callable[[], Awaitable[T]] | None = None,
) -> T:
    """``send()``, through the active log when there is one.

    ``request()`` says, as JSON, what is asked (called only under a log);
    ``answer(result)`` says what came back; ``rebuild(response)`` makes the
    result again from a recorded answer (None: the call is answered only as
    part of the call it is nested in, like the embedder inside a store).
    ``send_async()`` is the same call made without blocking, when the seam
    can: the log of ``Pipeline.apply_async`` awaits it (see
    `memrules._runtime.awaiting`); the others never use it.
    """
    log = _ACTIVE.get()
    if log is None:
        return send()
    return log.call(seam, operation, request, send, answer, rebuild, send_async)


def texts_request(texts: Sequence[str]) -> dict[str, Any]:
    """What a trace keeps of an embedder's request: how many texts, and a
    sha256 of them (the store's call, which it serves, says them)."""
    data = json.dumps(list(texts), ensure_ascii=False).encode("utf-8", "surrogatepass")
    return {"texts": len(texts), "sha256": hashlib.sha256(data).hexdigest()}


def vectors_answer(vectors: Sequence[Sequence[float]]) -> dict[str, Any]:
    """What a trace keeps of an embedder's answer: how many vectors, their
    dimension, and a sha256 of them (as JSON), not the floats themselves (a
    store's answer already says what they found)."""
    data = json.dumps(vectors, allow_nan=True, separators=(",", ":"), default=_unjsonable)
    return {
        "vectors": len(vectors),
        "dimension": len(vectors[0]) if len(vectors) else 0,
        "sha256": hashlib.sha256(data.encode("utf-8")).hexdigest(),
    }


class _Log:
    """What both logs share: being the active one, and `notes`, where
    the proxies of one run keep what a later call of the run needs (the
    state a request loaded)."""

    notes: dict[Any, Any]

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Make this the log seam calls go through, in this context, for the block."""
        token = _ACTIVE.set(self)
        try:
            yield
        finally:
            _ACTIVE.reset(token)

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
        """Make (or answer) one call; ``send_async`` is the same call made
        without blocking, which only a log that awaits uses."""
        raise NotImplementedError


def _entry(
    seam: str, operation: str, depth: int, request: Any, response: Any, error: str | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"seam": seam, "operation": operation}
    if depth:
        entry["depth"] = depth
    entry.update(request=request, response=response, error=error)
    return entry


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class RecordingLog(_Log):
    """Makes each call and keeps it (see the module docs): `calls`,
    JSON objects in the order the calls started."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.notes = {}
        self._depth = 0

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
        slot = len(self.calls)
        depth = self._depth
        asked = plain(request())
        self.calls.append(_entry(seam, operation, depth, asked, None, None))
        self._depth += 1
        try:
            result = send()
        except Exception as exc:
            self.calls[slot] = _entry(seam, operation, depth, asked, None, _error_text(exc))
            raise
        finally:
            self._depth -= 1
        try:
            response = plain(answer(result))
        except Exception as exc:  # an answer the seam's protocol does not promise
            response = {"unreadable": _error_text(exc)}
        self.calls[slot] = _entry(seam, operation, depth, asked, response, None)
        return result


class ReplayedError(MemrulesError):
    """The base of an error a replay raises again whose type is neither a
    memrules error nor a built-in one (a custom seam's own exception): it
    keeps the recorded type name and message."""


def _memrules_errors() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    todo: list[type[BaseException]] = [MemrulesError]
    while todo:
        kind = todo.pop()
        found.setdefault(kind.__name__, kind)
        todo.extend(kind.__subclasses__())
    return found


def _replayed_str(error: BaseException) -> str:
    return str(error.args[0]) if error.args else ""


_KINDS: dict[tuple[str, type[BaseException]], Any] = {}


def _replayed_kind(name: str, base: type[BaseException]) -> Any:
    """The class a replayed error is an instance of (one per name and base)."""
    found = _KINDS.get((name, base))
    if found is None:
        namespace = {"__str__": _replayed_str, "__module__": base.__module__}
        found = _KINDS.setdefault((name, base), type(name, (base,), namespace))
    return found


def rebuilt_error(text: str) -> Exception:
    """The error a recorded ``"Type: message"`` names, made again: an
    instance of that memrules or built-in exception type (a subclass of
    `ReplayedError` for any other), named as recorded, whose ``str``
    is the recorded message exactly."""
    name, _, message = text.partition(": ")
    base: type[BaseException] = ReplayedError
    known = _memrules_errors().get(name)
    found = getattr(builtins, name, None) if known is None else known
    if isinstance(found, type) and issubclass(found, Exception):
        base = found
    kind = _replayed_kind(name, base)
    error: Exception = kind.__new__(kind)
    BaseException.__init__(error, message)
    return error


class ReplayingLog(_Log):
    """Answers each call from ``recorded`` (the calls of one recorded
    request, as `RecordingLog` kept them) and makes none (see the
    module docs). `calls` is the replayed log: equal to ``recorded``
    when the run asked for exactly what it recorded. `failure` is the
    first mismatch, if any; `finish` adds one for recorded calls the
    run did not make."""

    def __init__(self, recorded: Sequence[dict[str, Any]], *, request: int | None = None) -> None:
        self._recorded = list(recorded)
        self._at = 0
        self._depth = 0
        self.request = request
        self.calls: list[dict[str, Any]] = []
        self.notes = {}
        self.failure: ReplayMismatch | None = None

    def _fail(
        self, message: str, *, path: str = "", recorded: Any = None, replayed: Any = None
    ) -> ReplayMismatch:
        error = ReplayMismatch(
            message, request=self.request, path=path, recorded=recorded, replayed=replayed
        )
        if self.failure is None:
            self.failure = error
        return error

    def _next(self, seam: str, operation: str) -> dict[str, Any]:
        number = len(self.calls)
        if self._at >= len(self._recorded):
            msg = (
                f"calls[{number}]: the run calls {seam}.{operation}, and the trace has no "
                f"answer for it (it recorded {len(self.calls)} calls)"
            )
            raise self._fail(msg, path=f"calls[{number}]", replayed=f"{seam}.{operation}")
        entry = self._recorded[self._at]
        made = (seam, operation, self._depth)
        kept = (entry.get("seam"), entry.get("operation"), entry.get("depth", 0))
        if made != kept:
            msg = (
                f"calls[{number}]: the run calls {seam}.{operation} where the trace recorded "
                f"{kept[0]}.{kept[1]}"
            )
            raise self._fail(
                msg,
                path=f"calls[{number}]",
                recorded=f"{kept[0]}.{kept[1]}",
                replayed=f"{seam}.{operation}",
            )
        return entry

    def peek_request(self, seam: str, operation: str) -> Any:
        """The recorded request of the next call, which must be
        ``seam.operation`` (for a stand-in that cannot compute it)."""
        return self._next(seam, operation).get("request")

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
        entry = self._next(seam, operation)
        number = len(self.calls)
        asked = plain(request())
        if asked != entry.get("request"):
            where = f"calls[{number}].request"
            found = differences(entry.get("request"), asked, limit=1)
            detail = describe(within(where, found[0])) if found else f"{where}: another key order"
            msg = (
                f"calls[{number}]: the run's {seam}.{operation} request is not the recorded one, "
                f"so the recorded answer does not apply: {detail}"
            )
            raise self._fail(msg, path=where, recorded=entry.get("request"), replayed=asked)
        if rebuild is None:
            msg = (
                f"calls[{number}]: {seam}.{operation} is answered only inside the call it was "
                "recorded in, and the run makes it on its own"
            )
            raise self._fail(msg, path=f"calls[{number}]")
        self._at += 1
        self.calls.append(entry)
        depth = entry.get("depth", 0)
        while self._at < len(self._recorded) and self._recorded[self._at].get("depth", 0) > depth:
            self.calls.append(self._recorded[self._at])
            self._at += 1
        error = entry.get("error")
        if error is not None:
            raise rebuilt_error(str(error))
        try:
            return rebuild(entry.get("response"))
        except ReplayMismatch:
            raise
        except Exception as exc:
            msg = (
                f"calls[{number}]: the recorded answer of {seam}.{operation} cannot be read: "
                f"{_error_text(exc)}"
            )
            raise self._fail(msg, path=f"calls[{number}].response") from exc

    def finish(self) -> ReplayMismatch | None:
        """The first failure, counting recorded calls the run never made."""
        if self.failure is None and self._at < len(self._recorded):
            entry = self._recorded[self._at]
            number = len(self.calls)
            left = len(self._recorded) - self._at
            msg = (
                f"calls[{number}]: the trace recorded {left} more calls, from "
                f"{entry.get('seam')}.{entry.get('operation')} on, which the run did not make"
            )
            self._fail(msg, path=f"calls[{number}]", recorded=entry, replayed=None)
        return self.failure
