"""Traces: what a run asked, what its seams answered, and what came out, as
JSON Lines that a replay reproduces byte for byte.

The first line is the header::

    {"format": "memrules.trace", "version": 2, "memrules": "0.1.0",
     "pipelines": [{"name": "default", "config": {...}, "config_sha256": "...",
                    "max_passes": 4, "encoder": "cl100k_base", "vocabulary_sha256": "...",
                    "seams": {"summarizer": {...} | null, "store": "..." | null,
                              "graph_extractor": "..." | null,
                              "context_window_resolver": "..." | null}}]}

``config`` is the pipeline's canonical config (:mod:`memrules._trace.canonical`),
``max_passes`` the interpreter's pass limit, ``vocabulary_sha256`` the hash
of its encoder's vocabulary, ``seams`` what each seam was (its ``repr``,
which names no key). Then one line per request, written as each one
completes::

    {"request": 0, "kind": "apply", "pipeline": 0, "conversation_id": "c1",
     "user": null, "tenant": null, "budget": null, "messages": [...],
     "calls": [...], "output": [...], "report": {...}}

An ``apply`` line given the prompt-cache inputs also says them
(``previous``, ``cache``, ``now``; the time a traced pipeline's clock read
is its ``clock.now`` call), and a ``remember`` line its ``session_time``
and ``context`` (see :mod:`~memrules._trace.run_inputs`).

``kind`` is ``apply`` or ``compress`` (a pipeline run), ``remember`` or
``recall`` (the pipeline's store), ``request`` (one request through
:class:`~memrules.MemoryPlugin`) or ``response`` (a plugin's
``on_response``: the turn auto-store kept, or why not). On a route with
retrieval memory a ``request`` line also says whose request it was
(``user``, ``tenant``), the ``now`` the caller gave (else the ``clock.now``
call says the time read), the ``memory.retrieve`` call with the memories
the store answered, and what the gate made of them (``memory``). Each line
holds the request's input in full, every seam call it made with the answer
(see :mod:`memrules._runtime.logged`), and what came out.

An agent loop sends its whole growing history with every request, so a line
whose input starts with the whole input of the conversation's previous line
(same ``pipeline``, same ``conversation_id``; lines without one form one
conversation per pipeline) holds only the messages after it::

    {"request": 7, "kind": "apply", ..., "prefix": {"request": 3, "messages": 40},
     "messages": [<the messages after the first 40>], ...}

``prefix`` says: the input is the first ``messages`` messages of request
``request``'s input, then this line's ``messages``. It always names the
conversation's line just before, and stands where ``messages`` would be, in
every kind of line that has an input (``apply``, ``compress``, ``remember``,
``request``, ``response``). A line whose input is not such a continuation
(a history edited in the middle, or the conversation's first line) holds it
in full. The writer keeps, per conversation, the last input (each message's
JSON text, to compare), and the reader the last input it rebuilt, so both
hold at most one history per conversation, however many requests: a trace
is still written and replayed one line at a time. Both keep only the
``KEPT_CONVERSATIONS`` (1,024) conversations whose inputs came last, and
forget the others alike (a forgotten conversation's next line is written
whole), so a trace of a million conversations is no different. Version 1
traces (every input in full, no ``prefix``) are still read.
Messages are written in memrules' lossless JSON form; nothing in a line
depends on the clock, randomness or ``PYTHONHASHSEED``, and nothing in it is
a secret (seams record requests without their API keys, and URLs lose their
passwords).

A request that raises writes no line: it returned nothing to reproduce.

This module records a pipeline's runs (:func:`record_trace`,
:class:`TracedPipeline`) and is where the layers above find the trace's
names; each job has its module: :mod:`~memrules._trace.lines` (messages and
lines as JSON), :mod:`~memrules._trace.deltas` (inputs as ``prefix`` deltas),
:mod:`~memrules._trace.header` (the first line), :mod:`~memrules._trace.writer`
(the file), :mod:`~memrules._trace.run_inputs` (a run's optional inputs),
:mod:`~memrules._trace.plugin_tracer` (a plugin's requests) and
:mod:`~memrules._trace.reader` (reading a trace back).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from datetime import date, datetime
from types import TracebackType
from typing import Any

import attrs

from memrules._core.bounded import BoundedTable
from memrules._core.budget import Budget
from memrules._core.errors import TraceError
from memrules._core.messages import Conversation, Message
from memrules._core.prompt_cache import SentRequest
from memrules._core.report import CompressionResult
from memrules._core.seam_records import DEFAULT_CONTEXT, IndexContext, RecallHit, StoreWrite
from memrules._counting.cache import CacheRule
from memrules._runtime.logged import LoggedClock, hit_json, logged_seams
from memrules._runtime.pipeline import Pipeline
from memrules._trace.deltas import KEPT_CONVERSATIONS, InputDeltas, InputRebuilder
from memrules._trace.header import (
    READS_VERSIONS,
    TRACE_FORMAT,
    TRACE_VERSION,
    TraceHeader,
    _header,
    _version,
    pipeline_header,
)
from memrules._trace.lines import budget_from, dump_line, messages_from, messages_json
from memrules._trace.plugin_tracer import PluginTracer, request_line, response_line
from memrules._trace.reader import TraceLine, read_trace
from memrules._trace.run_inputs import (
    context_json,
    rule_json,
    sent_request_from,
    sent_request_json,
    time_json,
)
from memrules._trace.writer import TraceWriter
from memrules.seams._log import RecordingLog, ReplayingLog

__all__ = [
    "INPUTS",
    "KEPT_CONVERSATIONS",
    "OPTIONAL_INPUTS",
    "READS_VERSIONS",
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "InputDeltas",
    "InputRebuilder",
    "PluginTracer",
    "SentRequests",
    "TraceHeader",
    "TraceLine",
    "TraceWriter",
    "TracedPipeline",
    "_header",
    "_version",
    "budget_from",
    "dump_line",
    "messages_from",
    "messages_json",
    "outputs",
    "pipeline_header",
    "read_trace",
    "record_trace",
    "request_line",
    "response_line",
    "run_line",
]


def _scope_fields(
    conversation_id: str | None, user: str | None, tenant: str | None
) -> dict[str, Any]:
    return {"conversation_id": conversation_id, "user": user, "tenant": tenant}


INPUTS: dict[str, tuple[str, ...]] = {
    "apply": ("conversation_id", "user", "tenant", "budget", "messages"),
    "compress": ("conversation_id", "user", "tenant", "messages"),
    "remember": ("conversation_id", "user", "tenant", "messages"),
    "recall": ("query", "k", "conversation_id", "user", "tenant", "mode"),
}
"""What a line of each kind of pipeline run says went in, in this order."""

OPTIONAL_INPUTS: dict[str, tuple[str, ...]] = {
    "apply": ("previous", "cache", "now"),
    "remember": ("session_time", "context"),
}
"""What a line says went in besides, after :data:`INPUTS` and in this order,
when the run was given it (see :mod:`memrules._trace.run_inputs`)."""


def run_line(
    kind: str,
    index: int,
    inputs: dict[str, Any],
    run: Callable[[], Any],
    log: RecordingLog | ReplayingLog | None = None,
) -> tuple[Any, dict[str, Any]]:
    """``run()`` (an ``apply``, ``compress``, ``remember`` or ``recall`` of a
    pipeline whose seams log) under ``log`` (a new recording one by
    default); its result, and its trace line (without a number)."""
    log = RecordingLog() if log is None else log
    with log.active():
        result = run()
    line: dict[str, Any] = {"kind": kind, "pipeline": index}
    line.update((key, inputs[key]) for key in INPUTS[kind])
    line.update((key, inputs[key]) for key in OPTIONAL_INPUTS.get(kind, ()) if key in inputs)
    line["calls"] = log.calls
    line.update(outputs(kind, result))
    return result, line


def outputs(kind: str, result: Any) -> dict[str, Any]:
    """What a line says came out of a run of ``kind``."""
    if kind in ("apply", "compress"):
        assert isinstance(result, CompressionResult)
        return {"output": messages_json(result.messages), "report": result.report.to_dict()}
    if kind == "remember":
        return {"write": result.to_dict() if isinstance(result, StoreWrite) else None}
    if kind == "recall":
        return {"hits": [hit_json(h) for h in result]}
    msg = f"unknown kind {kind!r}"
    raise TraceError(msg)


class SentRequests:
    """The ``sent`` of each conversation's last ``apply`` line and that
    line's number, for the :data:`KEPT_CONVERSATIONS` conversations that
    ran last, so that a ``previous`` that is one of them is written as a
    reference to its line (and a replay finds it again) rather than in full.
    Writer and reader each keep one. Thread-safe."""

    def __init__(self) -> None:
        self._table: BoundedTable[str | None, tuple[int, SentRequest]] = BoundedTable(
            KEPT_CONVERSATIONS
        )
        self._lock = threading.Lock()

    def keep(self, conversation_id: str | None, number: int, sent: SentRequest | None) -> None:
        with self._lock:
            if sent is None:
                self._table.pop(conversation_id, None)
            else:
                self._table.put(conversation_id, (number, sent))

    def reference(self, conversation_id: str | None, previous: SentRequest) -> dict[str, Any]:
        """How a line says ``previous``: by its line when it is the
        conversation's last ``sent``, else in full."""
        with self._lock:
            found = self._table.get(conversation_id)
        if found is not None and found[1] is previous:
            return {"request": found[0]}
        return sent_request_json(previous)

    def find(self, conversation_id: str | None, data: Any, where: str) -> SentRequest:
        """The ``previous`` a line says (see :meth:`reference`)."""
        if isinstance(data, dict) and set(data) == {"request"}:
            with self._lock:
                found = self._table.get(conversation_id)
            if found is None or found[0] != data["request"]:
                msg = (
                    f"{where}: previous names request {data['request']!r}, which is not the "
                    "last apply of this conversation replayed"
                )
                raise TraceError(msg)
            return found[1]
        return sent_request_from(data, where)


class TracedPipeline:
    """A pipeline whose runs are written to a trace, one line each: its
    ``apply``, ``compress``, ``remember`` and ``recall`` are the pipeline's
    (same arguments, same results), each run under a recording log.

    ``clock`` (seconds since the epoch) is read, through the seam log
    (``clock.now``), by an ``apply`` that is not given ``now`` and measures
    the prompt cache (given ``previous`` or ``cache``, or its config has a
    ``cache:`` section): a replay answers it with the time read, so the
    cache figures replay byte for byte. Without a clock such a run has no
    time, as :meth:`Pipeline.apply <memrules.Pipeline.apply>` has none."""

    def __init__(
        self,
        writer: TraceWriter,
        pipeline: Pipeline,
        index: int = 0,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.writer = writer
        self.index = index
        self.clock = clock
        seams = logged_seams(pipeline.seams)
        self.pipeline = pipeline if seams is pipeline.seams else attrs.evolve(pipeline, seams=seams)
        self._sent = SentRequests()

    def _run(self, kind: str, run: Callable[[], Any], inputs: dict[str, Any]) -> Any:
        result, line = run_line(kind, self.index, inputs, run)
        number = self.writer.write(line)
        if kind == "apply":
            self._sent.keep(inputs["conversation_id"], number, result.sent)
        return result

    def _run_on(
        self,
        kind: str,
        conversation: Conversation,
        scope: dict[str, Any],
        run: Callable[[], Any],
        **extra: Any,
    ) -> Any:
        """``_run`` of a run over ``conversation``: its inputs are the scope,
        then ``extra``, then the messages (the order of :data:`INPUTS`)."""
        inputs = {**scope, **extra, "messages": messages_json(conversation)}
        return self._run(kind, run, inputs)

    def apply(
        self,
        messages: Sequence[Message],
        *,
        budget: Budget | None = None,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
        previous: SentRequest | None = None,
        cache: CacheRule | None = None,
        now: float | None = None,
    ) -> CompressionResult:
        conversation = tuple(messages)
        scope = _scope_fields(conversation_id, user, tenant)
        optional: dict[str, Any] = {}
        if previous is not None:
            optional["previous"] = self._sent.reference(conversation_id, previous)
        if cache is not None:
            optional["cache"] = rule_json(cache)
        if now is not None:
            optional["now"] = now
        clock = self.clock
        if (
            now is None
            and previous is None
            and cache is None
            and self.pipeline.config.cache is None
        ):
            clock = None  # the run has no use for the time

        def run() -> CompressionResult:
            when = now if now is not None or clock is None else LoggedClock(clock)()
            return self.pipeline.apply(
                conversation, budget=budget, previous=previous, cache=cache, now=when, **scope
            )

        result: CompressionResult = self._run_on(
            "apply",
            conversation,
            scope,
            run,
            budget=None if budget is None else budget.to_dict(),
            **optional,
        )
        return result

    def compress(
        self,
        messages: Sequence[Message],
        *,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
    ) -> CompressionResult:
        conversation = tuple(messages)
        scope = _scope_fields(conversation_id, user, tenant)
        result: CompressionResult = self._run_on(
            "compress", conversation, scope, lambda: self.pipeline.compress(conversation, **scope)
        )
        return result

    def remember(
        self,
        messages: Sequence[Message],
        *,
        conversation_id: str,
        user: str | None = None,
        tenant: str | None = None,
        session_time: date | datetime | None = None,
        context: IndexContext | None = DEFAULT_CONTEXT,
    ) -> StoreWrite:
        conversation = tuple(messages)
        scope = _scope_fields(conversation_id, user, tenant)
        optional: dict[str, Any] = {}
        if session_time is not None:
            optional["session_time"] = time_json(session_time)
        if context != DEFAULT_CONTEXT:
            optional["context"] = context_json(context)
        write: StoreWrite = self._run_on(
            "remember",
            conversation,
            scope,
            lambda: self.pipeline.remember(
                conversation, session_time=session_time, context=context, **scope
            ),
            **optional,
        )
        return write

    def recall(
        self,
        query: str,
        *,
        k: int = 5,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
        mode: str | None = None,
    ) -> tuple[RecallHit, ...]:
        inputs = {"query": query, "k": k, "mode": mode}
        inputs.update(_scope_fields(conversation_id, user, tenant))
        hits: tuple[RecallHit, ...] = self._run(
            "recall",
            lambda: self.pipeline.recall(
                query, k=k, conversation_id=conversation_id, user=user, tenant=tenant, mode=mode
            ),
            inputs,
        )
        return hits

    def close(self) -> None:
        self.writer.close()

    def __enter__(self) -> TracedPipeline:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.writer.__exit__(exc_type, exc, tb)


def record_trace(
    path: str | os.PathLike[str],
    pipeline: Pipeline,
    *,
    name: str = "pipeline",
    clock: Callable[[], float] | None = None,
) -> TracedPipeline:
    """Record ``pipeline``'s runs to a trace at ``path``::

        with memrules.record_trace("run.jsonl", pipeline) as traced:
            result = traced.apply(messages, conversation_id="c1")

    ``traced`` has the pipeline's ``apply``, ``compress``, ``remember`` and
    ``recall``; each call writes one line as it returns. ``memrules replay
    run.jsonl`` (or :func:`~memrules.replay_trace`) runs them again with the
    recorded answers and no seam. Raises :class:`~memrules.TraceError` when
    the file cannot be written. ``clock`` is the time an ``apply`` that
    measures the prompt cache reads when not given ``now`` (see
    :class:`TracedPipeline`)."""
    writer = TraceWriter.for_pipelines(path, [(name, pipeline)])
    return TracedPipeline(writer, pipeline, clock=clock)
