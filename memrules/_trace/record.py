"""Traces: what a run asked, what its seams answered, and what came out, as
JSON Lines that a replay reproduces byte for byte.

The first line is the header:

    {"format": "memrules.trace", "version": 2, "memrules": "0.1.0",
     "pipelines": [{"name": "default", "config": {...}, "config_sha256": "...",
                    "max_passes": 4, "encoder": "cl100k_base", "vocabulary_sha256": "...",
                    "seams": {"summarizer": {...} | null, "store": "..." | null,
                              "graph_extractor": "..." | null,
                              "context_window_resolver": "..." | null}}]}

``config`` is the pipeline's canonical config (`memrules._trace.canonical`),
``max_passes`` the interpreter's pass limit, ``vocabulary_sha256`` the hash
of its encoder's vocabulary, ``seams`` what each seam was (its ``repr``,
which names no key). Then one line per request, written as each one
completes:

    {"request": 0, "kind": "apply", "pipeline": 0, "conversation_id": "c1",
     "user": null, "tenant": null, "budget": null, "messages": [...],
     "calls": [...], "output": [...], "report": {...}}

An ``apply`` line given the prompt-cache inputs also says them
(``previous``, ``cache``, ``now``; the time a traced pipeline's clock read
is its ``clock.now`` call), and a ``remember`` line its ``session_time``
and ``context`` (see `memrules._trace.run_inputs`).

``kind`` is ``apply`` or ``compress`` (a pipeline run), ``remember`` or
``recall`` (the pipeline's store), ``request`` (one request through
`MemoryPlugin`) or ``response`` (a plugin's
``on_response``: the turn auto-store kept, or why not). On a route with
retrieval memory a ``request`` line also says whose request it was
(``user``, ``tenant``), the ``now`` the caller gave (else the ``clock.now``
call says the time read), the ``memory.retrieve`` call with the memories
the store answered, and what the gate made of them (``memory``). Each line
holds the request's input in full, every seam call it made with the answer
(see `memrules._runtime.logged`), and what came out.

An agent loop sends its whole growing history with every request, so a line
whose input starts with the whole input of the conversation's previous line
(same ``pipeline``, same ``conversation_id``; lines without one form one
conversation per pipeline) holds only the messages after it:

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

This module records a pipeline's runs (`record_trace`,
`TracedPipeline`) and is where the layers above find the trace's
names; each job has its module: `memrules._trace.lines` (messages and
lines as JSON), `memrules._trace.deltas` (inputs as ``prefix`` deltas),
`memrules._trace.header` (the first line), `memrules._trace.writer`
(the file), `memrules._trace.run_inputs` (a run's optional inputs),
`memrules._trace.plugin_tracer` (a plugin's requests) and
`memrules._trace.reader` (reading a trace back).
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, ParamSpec, TypeAlias, TypeVar

import attrs

from memrules._core.bounded import BoundedTable
from memrules._core.errors import TraceError
from memrules._core.prompt_cache import SentRequest
from memrules._core.report import CompressionResult
from memrules._core.seam_records import IndexContext, StoreWrite
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


P = ParamSpec("P")
R = TypeVar("R")

_Said: TypeAlias = tuple[dict[str, Any], Callable[[dict[str, Any]], None] | None]
_Inputs: TypeAlias = Callable[[dict[str, Any]], _Said]
"""What a line says went in, read from a call's bound arguments (which it
may complete: messages as a tuple, the config's default), and what to do to
them under the run's log before the call, if anything."""


def _scoped_inputs(arguments: dict[str, Any]) -> _Said:
    """The scope and the messages (taken once, as a tuple)."""
    conversation = arguments["messages"] = tuple(arguments["messages"])
    said = {key: arguments[key] for key in ("conversation_id", "user", "tenant")}
    return {**said, "messages": messages_json(conversation)}, None


def _recall_inputs(arguments: dict[str, Any]) -> _Said:
    keys = ("query", "k", "mode", "conversation_id", "user", "tenant")
    return {key: arguments[key] for key in keys}, None


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
"""What a line says went in besides, after `INPUTS` and in this order,
when the run was given it (see `memrules._trace.run_inputs`)."""


def run_line(
    kind: str,
    index: int,
    inputs: dict[str, Any],
    run: Callable[[], R],
    log: RecordingLog | ReplayingLog | None = None,
) -> tuple[R, dict[str, Any]]:
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
    line's number, for the `KEPT_CONVERSATIONS` conversations that
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
        """The ``previous`` a line says (see `reference`)."""
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
    own methods, recorded (the same signature, the same results), each run
    under a recording log.

    ``clock`` (seconds since the epoch) is read, through the seam log
    (``clock.now``), by an ``apply`` that is not given ``now`` and measures
    the prompt cache (given ``previous`` or ``cache``, or its config has a
    ``cache:`` section): a replay answers it with the time read, so the
    cache figures replay byte for byte. Without a clock such a run has no
    time, as `Pipeline.apply` has none."""

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
        # Each is the pipeline's own method, recorded: the same signature and
        # result, and one line per call (see `_recorded`).
        self.apply = self._recorded("apply", self.pipeline.apply, self._apply_inputs)
        self.compress = self._recorded("compress", self.pipeline.compress, _scoped_inputs)
        self.remember = self._recorded("remember", self.pipeline.remember, self._remember_inputs)
        self.recall = self._recorded("recall", self.pipeline.recall, _recall_inputs)

    def _recorded(self, kind: str, method: Callable[P, R], inputs: _Inputs) -> Callable[P, R]:
        """``method`` (the pipeline's ``kind``: ``apply``, ``compress``,
        ``remember`` or ``recall``) with each call written as a line: its
        arguments bound to its own signature, what the line says went in
        read from them by ``inputs``, the call run under a recording log."""
        signature = inspect.signature(method)

        def recorded(*args: P.args, **kwargs: P.kwargs) -> R:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            said, before = inputs(bound.arguments)

            def run() -> R:
                if before is not None:
                    before(bound.arguments)
                return method(*bound.args, **bound.kwargs)

            result, line = run_line(kind, self.index, said, run)
            number = self.writer.write(line)
            if isinstance(result, CompressionResult) and kind == "apply":
                self._sent.keep(said["conversation_id"], number, result.sent)
            return result

        return functools.wraps(method)(recorded)

    def _apply_inputs(self, arguments: dict[str, Any]) -> _Said:
        """An ``apply`` line's inputs; when the run measures the prompt
        cache with no ``now``, it reads ``clock`` through the seam log."""
        said = _scoped_inputs(arguments)[0]
        budget = arguments["budget"]
        said["budget"] = None if budget is None else budget.to_dict()
        previous, cache, now = arguments["previous"], arguments["cache"], arguments["now"]
        if not isinstance(previous, SentRequest | None):  # by default, what memo= remembers
            previous = self.pipeline.previous(arguments["messages"], arguments["memo"])
            arguments["previous"] = previous  # the run and the line take the same one
        if previous is not None:
            said["previous"] = self._sent.reference(arguments["conversation_id"], previous)
        if cache is not None:
            said["cache"] = rule_json(cache)
        if now is not None:
            said["now"] = now
        clock = self.clock
        if clock is None or now is not None:
            return said, None
        if previous is None and cache is None and self.pipeline.config.cache is None:
            return said, None  # the run has no use for the time

        def read(arguments: dict[str, Any]) -> None:
            arguments["now"] = LoggedClock(clock)()

        return said, read

    def _remember_inputs(self, arguments: dict[str, Any]) -> _Said:
        """A ``remember`` line's inputs: ``context`` when it is not the one a
        replay's ``remember`` takes without it (the config's)."""
        said = _scoped_inputs(arguments)[0]
        session_time, context = arguments["session_time"], arguments["context"]
        if session_time is not None:
            said["session_time"] = time_json(session_time)
        if not isinstance(context, IndexContext | None):  # the config's, by default
            context = arguments["context"] = self.pipeline.config.index_context
        if context != self.pipeline.config.index_context:
            said["context"] = context_json(context)
        return said, None

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
    """Record ``pipeline``'s runs to a trace at ``path``:

        with memrules.record_trace("run.jsonl", pipeline) as traced:
            result = traced.apply(messages, conversation_id="c1")

    ``traced`` has the pipeline's ``apply``, ``compress``, ``remember`` and
    ``recall``; each call writes one line as it returns. ``memrules replay
    run.jsonl`` (or `replay_trace`) runs them again with the
    recorded answers and no seam. Raises `TraceError` when
    the file cannot be written. ``clock`` is the time an ``apply`` that
    measures the prompt cache reads when not given ``now`` (see
    `TracedPipeline`)."""
    writer = TraceWriter.for_pipelines(path, [(name, pipeline)])
    return TracedPipeline(writer, pipeline, clock=clock)
