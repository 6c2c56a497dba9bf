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
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import attrs

from memrules._core.bounded import BoundedTable
from memrules._core.budget import Budget
from memrules._core.checks import is_whole
from memrules._core.errors import OutputError, TraceError
from memrules._core.jsontext import TOO_DEEP, JSONTextError, parse_json
from memrules._core.messages import Conversation, Message
from memrules._core.report import CompressionResult
from memrules._core.seam_protocols import JSONRequests
from memrules._core.seam_records import RecallHit, StoreWrite, decode_message, message_json
from memrules._io.files import AtomicFile, check_output
from memrules._io.version import memrules_version
from memrules._runtime.logged import (
    LoggedExtractor,
    LoggedResolver,
    LoggedStateStore,
    LoggedStore,
    LoggedSummarizer,
    hit_json,
    logged_seams,
    state_json,
)
from memrules._runtime.pipeline import Pipeline
from memrules._trace.canonical import (
    canonical_config,
    config_sha256,
    described,
    encoder_fingerprint,
)
from memrules.graph.state import StateStore
from memrules.memory.config import MemoryStoreConfig
from memrules.seams._log import RecordingLog, ReplayingLog

__all__ = [
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "InputDeltas",
    "InputRebuilder",
    "PluginTracer",
    "TraceHeader",
    "TraceLine",
    "TraceWriter",
    "TracedPipeline",
    "budget_from",
    "dump_line",
    "messages_from",
    "messages_json",
    "pipeline_header",
    "read_trace",
    "record_trace",
    "request_line",
    "response_line",
    "run_line",
]

TRACE_FORMAT = "memrules.trace"
TRACE_VERSION = 2
READS_VERSIONS = (1, 2)
"""The format versions :func:`read_trace` reads (1: every input in full)."""


# --- encoding ------------------------------------------------------------------------


def messages_json(messages: Conversation) -> list[Any]:
    """``messages`` in memrules' lossless JSON form."""
    return [message_json(m) for m in messages]


def messages_from(data: Any, where: str) -> Conversation:
    """The messages :func:`messages_json` wrote; :class:`TraceError` naming
    ``where`` for anything else."""
    if not isinstance(data, list):
        msg = f"{where}: expected a list of messages, got {type(data).__name__}"
        raise TraceError(msg)
    out: list[Message] = []
    for i, item in enumerate(data):
        try:
            out.append(decode_message(json.dumps(item)))
        except Exception as exc:
            msg = f"{where}[{i}]: not a message: {type(exc).__name__}: {exc}"
            raise TraceError(msg) from None
    return tuple(out)


def budget_from(data: Any) -> Budget | None:
    """The budget ``Budget.to_dict`` wrote (None for null)."""
    if data is None:
        return None
    kind, limit = data.get("kind"), data.get("limit")
    if kind == "unlimited":
        return Budget.UNLIMITED
    if kind == "messages":
        return Budget.messages(int(limit))
    if kind == "tokens":
        return Budget.tokens(int(limit))
    msg = f"unknown budget kind {kind!r}"
    raise TraceError(msg)


def dump_line(value: Any) -> bytes:
    """One line of a trace: compact JSON, keys in the order given, UTF-8 (a
    lone surrogate as its JSON escape), ending in a newline."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:
        msg = f"cannot write a trace line: {exc} (NaN or Infinity is not JSON)"
        raise TraceError(msg) from None
    return (text + "\n").encode("utf-8", "backslashreplace")


# --- inputs as deltas -------------------------------------------------------------------

KEPT_CONVERSATIONS = 1024
"""How many conversations' last inputs the writer and the reader keep (the
ones written last); a line may continue only one of those. A reader must
keep at least as many as the writer did."""


def _conversation_key(line: Mapping[str, Any]) -> str:
    """Which conversation a line's input continues: its pipeline and
    conversation id (as JSON text, so an edited trace's odd values still key)."""
    return json.dumps([line.get("pipeline"), line.get("conversation_id")])


def _message_text(message: Any) -> str:
    try:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:
        msg = f"cannot write a trace line: {exc} (NaN or Infinity is not JSON)"
        raise TraceError(msg) from None


class InputDeltas:
    """The writer's side of ``prefix`` (see the module docs): turns each
    numbered line into the line to write, whose input is a delta against the
    conversation's previous line when that line's input is a prefix of it.
    Keeps each conversation's last input as its messages' JSON texts. With
    ``enabled=False`` (a version 1 trace) every line is written whole."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        # least recently written first
        self._last: BoundedTable[str, tuple[int, list[str]]] = BoundedTable(KEPT_CONVERSATIONS)

    def encode(self, number: int, line: Mapping[str, Any]) -> dict[str, Any]:
        """``line`` (without its number) as written, numbered ``number``."""
        out: dict[str, Any] = {"request": number}
        messages = line.get("messages")
        if not self.enabled or not isinstance(messages, list):
            out.update(line)
            return out
        texts = [_message_text(m) for m in messages]
        key = _conversation_key(line)
        last = self._last.get(key)
        self._last.put(key, (number, texts))
        k = 0 if last is None else len(last[1])
        if last is None or k == 0 or k > len(texts) or texts[:k] != last[1]:
            out.update(line)
            return out
        for name, value in line.items():
            if name == "messages":
                out["prefix"] = {"request": last[0], "messages": k}
                out["messages"] = messages[k:]
            else:
                out[name] = value
        return out

    def forget(self, line: Mapping[str, Any]) -> None:
        """Forget the input of ``line``'s conversation (its line was not
        written): the conversation's next line is written whole."""
        self._last.pop(_conversation_key(line), None)


class InputRebuilder:
    """The reader's side of ``prefix``: each line with its input whole again.
    Keeps each conversation's last input (as parsed), unless ``enabled`` is
    false (a version 1 trace, which has no prefix to follow)."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        # least recently read first
        self._last: BoundedTable[str, tuple[int, list[Any]]] = BoundedTable(KEPT_CONVERSATIONS)

    def rebuild(self, number: int, data: dict[str, Any], where: str) -> dict[str, Any]:
        """``data`` (line ``number``) with its whole input and no ``prefix``;
        :class:`TraceError` naming ``where`` for a prefix that cannot be followed."""
        if "prefix" not in data:
            whole = data
        else:
            prefix, tail = data["prefix"], data.get("messages")
            if (
                not isinstance(prefix, dict)
                or not is_whole(prefix.get("request"), 0)
                or not is_whole(prefix.get("messages"), 0)
                or not isinstance(tail, list)
            ):
                msg = (
                    f"{where}: prefix={prefix!r} is not "
                    '{"request": <an earlier request>, "messages": <a count>} before a list '
                    "of messages"
                )
                raise TraceError(msg)
            base, k = prefix["request"], prefix["messages"]
            last = self._last.get(_conversation_key(data))
            if last is None or last[0] != base:
                before = "none kept" if last is None else f"request {last[0]}"
                msg = (
                    f"{where}: its prefix names request {base}, but the line before it of "
                    f"pipeline {data.get('pipeline')!r}, conversation "
                    f"{data.get('conversation_id')!r} is {before} (a trace's prefix names "
                    "the conversation's previous line)"
                )
                raise TraceError(msg)
            if k > len(last[1]):
                msg = (
                    f"{where}: its prefix takes {k} messages of request {base}, whose input "
                    f"has {len(last[1])}"
                )
                raise TraceError(msg)
            whole = {name: value for name, value in data.items() if name != "prefix"}
            whole["messages"] = last[1][:k] + tail
        if self.enabled and isinstance(whole.get("messages"), list):
            self._last.put(_conversation_key(whole), (number, whole["messages"]))
        return whole


# --- the header ----------------------------------------------------------------------


def _seams_header(
    pipeline: Pipeline, *, extractor: object = None, resolver: object = None
) -> dict[str, Any]:
    summarizer = pipeline.seams.summarizer
    inner = summarizer.inner if isinstance(summarizer, LoggedSummarizer) else summarizer
    store = pipeline.seams.store
    return {
        "summarizer": None
        if inner is None
        else {"repr": described(inner), "json_requests": isinstance(inner, JSONRequests)},
        "store": None if store is None else described(store),
        "graph_extractor": None if extractor is None else described(extractor),
        "context_window_resolver": None if resolver is None else described(resolver),
    }


def pipeline_header(name: str, pipeline: Pipeline, *, plugin: bool = False) -> dict[str, Any]:
    """What a trace's header says of one pipeline (see the module docs)."""
    canonical = canonical_config(pipeline.config)
    config = pipeline.config
    return {
        "name": name,
        "config": canonical,
        "config_sha256": config_sha256(canonical),
        "max_passes": pipeline.max_passes,
        **encoder_fingerprint(pipeline.counter),
        "seams": _seams_header(
            pipeline,
            extractor=config.graph_extractor if plugin else None,
            resolver=config.context_window_resolver if plugin else None,
        ),
    }


@attrs.frozen(kw_only=True, slots=True)
class TraceHeader:
    """A trace's first line, read: the format version, the memrules that
    wrote it, and each pipeline's entry (as :func:`pipeline_header` wrote it)."""

    version: int
    memrules: str
    pipelines: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": TRACE_FORMAT,
            "version": self.version,
            "memrules": self.memrules,
            "pipelines": list(self.pipelines),
        }


def _header(entries: Sequence[dict[str, Any]]) -> TraceHeader:
    return TraceHeader(version=TRACE_VERSION, memrules=memrules_version(), pipelines=tuple(entries))


# --- writing -------------------------------------------------------------------------


class TraceWriter:
    """Writes a trace to ``path``: the header at once, then each line as
    :meth:`write` gets it, flushed, so a long-running process's trace is on
    disk as it goes (``atomic=False``); or into a temporary file beside
    ``path`` that :meth:`close` renames into place, so the trace is there
    whole or not at all (``atomic=True``, what the command line does).
    Thread-safe: each line is written whole, and numbered (``request``) in
    the order written; its input is written as a delta (``prefix``, see the
    module docs) when the header's version is 2 or later."""

    def __init__(
        self, path: str | os.PathLike[str], header: TraceHeader, *, atomic: bool = False
    ) -> None:
        self.path = Path(path)
        self.header = header
        self.atomic = atomic
        self.requests = 0
        self._deltas = InputDeltas(enabled=header.version >= 2)
        self._lock = threading.Lock()
        self._atomic: AtomicFile | None = None
        self._closed = False
        self._failed: str | None = None
        try:
            check_output(self.path, "the trace")
            if atomic:
                self._atomic = AtomicFile(self.path, "the trace")
            else:
                self._file: IO[bytes] = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        except OutputError as exc:
            raise TraceError(str(exc)) from None
        except OSError as exc:
            msg = f"cannot write the trace {self.path}: {exc.strerror or exc}"
            raise TraceError(msg) from None
        self._put(dump_line(header.to_dict()))

    @classmethod
    def for_pipelines(
        cls,
        path: str | os.PathLike[str],
        pipelines: Sequence[tuple[str, Pipeline]],
        *,
        atomic: bool = False,
        plugin: bool = False,
    ) -> TraceWriter:
        """A writer whose header describes ``pipelines`` (name, pipeline)."""
        entries = [pipeline_header(name, p, plugin=plugin) for name, p in pipelines]
        return cls(path, _header(entries), atomic=atomic)

    def _put(self, data: bytes) -> None:
        """Write ``data`` whole, or fail: the first failure (a full disk)
        ends the trace, and every later write raises it again."""
        if self._failed is not None:
            raise TraceError(self._failed)
        if self._closed:
            msg = f"cannot write the trace {self.path}: it is closed"
            raise TraceError(msg)
        try:
            if self._atomic is not None:
                self._atomic.write(data)
            else:
                self._file.write(data)
                self._file.flush()
        except OSError as exc:  # OutputError included
            if isinstance(exc, OutputError):
                self._failed = str(exc)
            else:
                self._failed = f"cannot write the trace {self.path}: {exc.strerror or exc}"
            self._give_up()
            raise TraceError(self._failed) from None

    def _give_up(self) -> None:
        """Drop what could not be written, and the file: nothing is retried."""
        self._closed = True
        if self._atomic is not None:
            self._atomic.abort()
            return
        with contextlib.suppress(OSError):
            self._file.close()

    def write(self, line: dict[str, Any]) -> int:
        """Write one request's line (numbered here); returns its number."""
        with self._lock:
            number = self.requests
            try:
                data = dump_line(self._deltas.encode(number, line))
            except TraceError:
                self._deltas.forget(line)  # no line numbered ``number`` to continue
                raise
            self._put(data)
            self.requests += 1
            return number

    def close(self) -> None:
        """Finish the trace (an atomic one is renamed into place)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._atomic is not None:
                    self._atomic.commit()
                else:
                    self._file.close()
            except OutputError as exc:
                raise TraceError(str(exc)) from None
            except OSError as exc:
                msg = f"cannot write the trace {self.path}: {exc.strerror or exc}"
                raise TraceError(msg) from None

    def discard(self) -> None:
        """Drop an atomic trace that will not be finished (nothing is renamed)."""
        with self._lock:
            self._closed = True
            if self._atomic is not None:
                self._atomic.abort()
            else:
                self._file.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None and self.atomic:
            self.discard()
        else:
            self.close()


# --- recording a pipeline's runs ---------------------------------------------------


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


class TracedPipeline:
    """A pipeline whose runs are written to a trace, one line each: its
    ``apply``, ``compress``, ``remember`` and ``recall`` are the pipeline's
    (same arguments, same results), each run under a recording log."""

    def __init__(self, writer: TraceWriter, pipeline: Pipeline, index: int = 0) -> None:
        self.writer = writer
        self.index = index
        seams = logged_seams(pipeline.seams)
        self.pipeline = pipeline if seams is pipeline.seams else attrs.evolve(pipeline, seams=seams)

    def _run(self, kind: str, run: Callable[[], Any], inputs: dict[str, Any]) -> Any:
        result, line = run_line(kind, self.index, inputs, run)
        self.writer.write(line)
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
    ) -> CompressionResult:
        conversation = tuple(messages)
        scope = _scope_fields(conversation_id, user, tenant)
        result: CompressionResult = self._run_on(
            "apply",
            conversation,
            scope,
            lambda: self.pipeline.apply(conversation, budget=budget, **scope),
            budget=None if budget is None else budget.to_dict(),
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
    ) -> StoreWrite:
        conversation = tuple(messages)
        scope = _scope_fields(conversation_id, user, tenant)
        write: StoreWrite = self._run_on(
            "remember", conversation, scope, lambda: self.pipeline.remember(conversation, **scope)
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
    path: str | os.PathLike[str], pipeline: Pipeline, *, name: str = "pipeline"
) -> TracedPipeline:
    """Record ``pipeline``'s runs to a trace at ``path``::

        with memrules.record_trace("run.jsonl", pipeline) as traced:
            result = traced.apply(messages, conversation_id="c1")

    ``traced`` has the pipeline's ``apply``, ``compress``, ``remember`` and
    ``recall``; each call writes one line as it returns. ``memrules replay
    run.jsonl`` (or :func:`~memrules.replay_trace`) runs them again with the
    recorded answers and no seam. Raises :class:`~memrules.TraceError` when
    the file cannot be written."""
    writer = TraceWriter.for_pipelines(path, [(name, pipeline)])
    return TracedPipeline(writer, pipeline)


# --- recording a plugin's requests ----------------------------------------------------


def _whose(request: Any) -> dict[str, Any]:
    """A plugin request's conversation, and its user and tenant when it names them."""
    out: dict[str, Any] = {"conversation_id": request.conversation_id}
    for key in ("user", "tenant"):
        if getattr(request, key) is not None:
            out[key] = getattr(request, key)
    return out


def request_line(
    index: int, request: Any, result: Any, calls: list[Any], *, now: float | None = None
) -> dict[str, Any]:
    """The line of one plugin request (a :class:`~memrules._plugin.plugin.Request`)
    and what it went through (its :class:`~memrules._plugin.plugin.StepResult`).
    On a route with memory it also holds the ``now`` the caller gave, if
    any, and ``memory``: the time the gate decayed by, the memory message's
    tokens and the gate's decisions."""
    line: dict[str, Any] = {"kind": "request", "pipeline": index, **_whose(request)}
    line["model"] = request.model
    if now is not None and result.memory is not None:
        line["now"] = now
    line.update(
        messages=messages_json(request.messages),
        calls=calls,
        output=messages_json(result.request.messages),
        report=result.report.to_dict(),
        usage=attrs.asdict(result.usage),
        warned=result.warned,
        graph_tokens=result.graph_tokens,
        graph_error=result.graph_error,
        state=state_json(result.state),
    )
    if result.memory is not None:
        line["memory"] = {
            "now": result.memory.now,
            "tokens": result.memory_tokens,
            "gate": result.memory.gate.to_dict(),
        }
    return line


def response_line(
    index: int,
    request: Any,
    reply: Message | str,
    outcome: Any,
    calls: list[Any],
    *,
    now: float | None = None,
) -> dict[str, Any]:
    """The line of one ``on_response`` of a plugin: the request and the
    ``reply`` (a string, or a message in its JSON form), the ``now`` the
    caller gave, the seam calls (``clock.now``, ``store.add`` with the
    record) and the ``outcome`` (a :class:`~memrules.memory.StoreOutcome`)."""
    line: dict[str, Any] = {"kind": "response", "pipeline": index, **_whose(request)}
    if now is not None:
        line["now"] = now
    line.update(
        messages=messages_json(request.messages),
        reply=reply if isinstance(reply, str) else message_json(reply),
        calls=calls,
        outcome=outcome.to_dict(),
    )
    return line


class PluginTracer:
    """What :class:`~memrules.MemoryPlugin` does with ``trace=``: its seams,
    graph extractor, context window resolver and state store go through the
    seam log, and each request it handles writes one line (``kind:
    request``) when it completes."""

    def __init__(
        self,
        trace: str | os.PathLike[str],
        pipeline: Pipeline,
        states: StateStore,
        *,
        name: str = "plugin",
    ) -> None:
        config = pipeline.config
        self.writer = TraceWriter.for_pipelines(trace, [(name, pipeline)], plugin=True)
        self.index = 0
        changes: dict[str, Any] = {}
        if config.graph_extractor is not None:
            changes["graph_extractor"] = LoggedExtractor(config.graph_extractor)
        if config.context_window_resolver is not None:
            changes["context_window_resolver"] = LoggedResolver(config.context_window_resolver)
        traced = attrs.evolve(config, **changes) if changes else config
        seams = logged_seams(pipeline.seams)
        self.pipeline = attrs.evolve(pipeline, config=traced, seams=seams)
        self.states: StateStore = LoggedStateStore(states, limits=config.graph_limits)

    def memory_store(self, settings: MemoryStoreConfig, store: Any) -> LoggedStore:
        """The retrieval-memory store ``store`` (the plugin opened it for
        ``settings``), its searches and writes through the seam log."""
        if isinstance(store, LoggedStore):
            return store
        return LoggedStore(store)

    def handle(
        self, request: Any, run: Callable[[Any], Any], *, now: float | None = None
    ) -> Any:
        """``run(request)`` (the plugin's request handling) under a recording
        log, and its line written."""
        log = RecordingLog()
        with log.active():
            result = run(request)
        self.writer.write(request_line(self.index, request, result, log.calls, now=now))
        return result

    def respond(
        self,
        request: Any,
        reply: Message | str,
        run: Callable[[], Any],
        *,
        now: float | None = None,
    ) -> Any:
        """``run()`` (the plugin's auto-store of a completed turn) under a
        recording log, and its line (``kind: response``) written."""
        log = RecordingLog()
        with log.active():
            outcome = run()
        self.writer.write(response_line(self.index, request, reply, outcome, log.calls, now=now))
        return outcome

    def close(self) -> None:
        self.writer.close()


# --- reading -------------------------------------------------------------------------


def _parse(raw: bytes, where: str) -> Any:
    try:
        return parse_json(raw)
    except JSONTextError as exc:
        raise TraceError(f"{where}: {_json_problem(exc)}") from None


def _json_problem(exc: JSONTextError) -> str:
    """What a line's :class:`JSONTextError` says, as a trace reader words it."""
    if exc.reason == TOO_DEEP or exc.reason.startswith("not UTF-8"):
        return exc.reason
    where = f": line {exc.line} column {exc.column}" if exc.line is not None else ""
    return f"not JSON: {exc.reason}{where}"


def _read_header(data: Any, where: str) -> TraceHeader:
    if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
        msg = f"{where}: not a memrules trace (its first line has no format {TRACE_FORMAT!r})"
        raise TraceError(msg)
    version = data.get("version")
    if version not in READS_VERSIONS or isinstance(version, bool):
        msg = (
            f"{where}: a trace of format version {version!r}; this memrules reads versions "
            f"{', '.join(map(str, READS_VERSIONS))}"
        )
        raise TraceError(msg)
    pipelines = data.get("pipelines")
    if not isinstance(pipelines, list) or not all(isinstance(p, dict) for p in pipelines):
        msg = f"{where}: the header's pipelines are not a list of objects"
        raise TraceError(msg)
    return TraceHeader(
        version=version, memrules=str(data.get("memrules", "?")), pipelines=tuple(pipelines)
    )


@attrs.frozen(kw_only=True, slots=True)
class TraceLine:
    """One request line of a trace: where it is (``line``, 1-based), its
    bytes as written, the parsed value with its input whole (``prefix``
    followed), and the ``prefix`` as written (None for a line written whole)."""

    line: int
    raw: bytes
    data: dict[str, Any]
    prefix: Any = None


def read_trace(path: str | os.PathLike[str]) -> tuple[TraceHeader, Iterator[TraceLine]]:
    """The trace at ``path``: its header, and its request lines one at a
    time, each input whole (the file stays open until the iterator is
    exhausted or closed).
    Raises :class:`~memrules._core.errors.TraceError` naming the file and line of
    anything that is not a trace."""
    name = str(path)
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed by the iterator
    except OSError as exc:
        msg = f"cannot read the trace {name}: {exc.strerror or exc}"
        raise TraceError(msg) from None
    first = file.readline()
    if not first:
        file.close()
        msg = f"{name}: empty, not a memrules trace"
        raise TraceError(msg)
    try:
        header = _read_header(_parse(first, f"{name}:1"), f"{name}:1")
    except TraceError:
        file.close()
        raise

    def lines() -> Iterator[TraceLine]:
        inputs = InputRebuilder(enabled=header.version >= 2)
        with file:
            for number, raw in enumerate(file, start=2):
                if not raw.strip():
                    continue
                where = f"{name}:{number}"
                data = _parse(raw, where)
                if not isinstance(data, dict) or "kind" not in data:
                    msg = f"{where}: not a trace line (an object with a kind)"
                    raise TraceError(msg)
                request = data.get("request")
                request = request if isinstance(request, int) else number - 2
                whole = inputs.rebuild(request, data, where)
                yield TraceLine(line=number, raw=raw, data=whole, prefix=data.get("prefix"))

    return header, lines()
