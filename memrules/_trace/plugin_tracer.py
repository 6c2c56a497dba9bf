"""Recording a plugin's requests: what `MemoryPlugin` does with
``trace=``, one ``request`` or ``response`` line per request it handles."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import attrs

from memrules._config.load import service_config
from memrules._core.messages import Message
from memrules._core.seam_records import message_json
from memrules._runtime.logged import (
    LoggedExtractor,
    LoggedResolver,
    LoggedStateStore,
    LoggedStore,
    logged_seams,
    state_json,
)
from memrules._runtime.pipeline import Pipeline
from memrules._trace.lines import messages_json
from memrules._trace.writer import TraceWriter
from memrules.memory.config import RetrievalStoreConfig
from memrules.seams._log import RecordingLog
from memrules.state.model import StateStore

__all__ = ["PluginTracer", "request_line", "response_line"]


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
    """The line of one plugin request (a `Request`)
    and what it went through (its `StepResult`).
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
    record) and the ``outcome`` (a `StoreOutcome`)."""
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
    """What `MemoryPlugin` does with ``trace=``: its seams,
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
        config = service_config(pipeline.config)
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

    def memory_store(self, settings: RetrievalStoreConfig, store: Any) -> LoggedStore:
        """The retrieval-memory store ``store`` (the plugin opened it for
        ``settings``), its searches and writes through the seam log."""
        if isinstance(store, LoggedStore):
            return store
        return LoggedStore(store)

    def handle(self, request: Any, run: Callable[[Any], Any], *, now: float | None = None) -> Any:
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
