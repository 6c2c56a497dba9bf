"""Watching pipeline runs: the one instrumentation point of the interpreter.

A `PipelineObserver` is called *around* each pipeline run and each
strategy run, with what is known before it starts (`RunInfo`,
`StepInfo`) and a ``proceed`` callable that does the work and
returns its result (the `CompressionResult`, or the
strategy's `CompressionAction`). Wrapping, rather than
"started"/"finished" events, lets an observer keep per-run state on its own
stack: a tracer opens a span with ``with``, a timer reads the clock before
and after, and runs on many threads at once never share anything.

Observers watch; they cannot change the outcome. Whatever an observer
returns is ignored: the interpreter keeps what ``proceed`` returned. Calling
``proceed`` again returns the same value without running anything twice (a
strategy may call a seam). An observer that never calls it fails the run
with `ObserverError`, since the run would otherwise be
silently skipped. The report holds no wall-clock values, so a run replays
byte for byte whatever observes it; timings live in the observers.

The core imports no tracing library: OpenTelemetry, Prometheus and logging
observers are in `memrules.observability` and
`memrules.integrations`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar, runtime_checkable

import attrs

from memrules._core.budget import Budget
from memrules._core.errors import ObserverError
from memrules._core.messages import Conversation
from memrules._core.report import CompressionAction, CompressionResult

__all__ = ["PipelineObserver", "RunInfo", "StepInfo", "observe"]

T = TypeVar("T")


@attrs.frozen(kw_only=True, slots=True)
class RunInfo:
    """A pipeline run about to start.

    ``operation`` is ``"apply"`` (compact until the budget is met) or
    ``"compress"`` (every strategy once). ``counter`` is the token counter's
    name, ``strategies`` the names in pipeline order, ``messages`` the input's
    length. ``conversation_id`` is whatever the caller passed to name the
    conversation (OpenTelemetry's ``gen_ai.conversation.id``), or None.
    ``conversation`` is the input itself, for an observer that was asked to
    record content (none of memrules' does unless told to).
    """

    operation: str
    counter: str
    budget: Budget
    messages: int
    strategies: tuple[str, ...]
    max_passes: int
    conversation_id: str | None = None
    conversation: Conversation = attrs.field(default=(), repr=False, eq=False)


@attrs.frozen(kw_only=True, slots=True)
class StepInfo:
    """One strategy run about to start: its name, its pass (0 for the
    ``repair`` step), its position in the pipeline (``index`` of
    ``len(run.strategies)``; -1 for ``repair``), and the size of the
    conversation it is handed."""

    strategy: str
    pass_number: int
    index: int
    messages: int
    tokens: int
    run: RunInfo


@runtime_checkable
class PipelineObserver(Protocol):
    """Watches pipeline runs. Both methods must call ``proceed()`` once and
    may do anything around it but change its result:

        class Timer:
            def observe_run(self, run, proceed):
                started = time.perf_counter()
                result = proceed()
                print(run.operation, result.report.stop_reason,
                      time.perf_counter() - started)

            def observe_step(self, step, proceed):
                proceed()

    Observers run on the caller's thread, in the order given: the first is
    outermost. An exception an observer raises fails the run.
    """

    def observe_run(self, run: RunInfo, proceed: Callable[[], CompressionResult]) -> None: ...

    def observe_step(self, step: StepInfo, proceed: Callable[[], CompressionAction]) -> None: ...


class _Once:
    """``proceed``: runs the work the first time it is called, then returns
    the same result."""

    __slots__ = ("_done", "_result", "_work")

    def __init__(self, work: Callable[[], object]) -> None:
        self._work = work
        self._done = False
        self._result: object = None

    def __call__(self) -> object:
        if not self._done:
            self._result = self._work()
            self._done = True
        return self._result


def _around(
    method: Callable[[object, Callable[[], object]], object],
    info: object,
    inner: Callable[[], object],
    once: _Once,
) -> object:
    """One observer's layer: the observer around ``inner``, then the work's
    result for the layer outside it (whatever the observer returned)."""
    method(info, inner)
    return once._result


def observe(
    observers: Sequence[PipelineObserver],
    method: str,
    info: RunInfo | StepInfo,
    work: Callable[[], T],
) -> T:
    """``work()`` run inside each observer's ``method`` (the first observer
    outermost); its own result, whatever the observers return."""
    once = _Once(work)
    call: Callable[[], object] = once
    for observer in reversed(observers):
        call = _Once(functools.partial(_around, getattr(observer, method), info, call, once))
    call()
    if not once._done:
        names = ", ".join(type(o).__name__ for o in observers)
        msg = f"an observer ({names}) did not call proceed() in {method}: the run was skipped"
        raise ObserverError(msg)
    return once._result  # type: ignore[return-value]
