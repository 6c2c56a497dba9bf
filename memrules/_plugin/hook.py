"""The request hook's driver: one request of a conversation through the pure
`step`, synchronously (`Hook.handle`) or awaiting its seams
(`Hook.handle_async`), and a request body of any format through it
(`Hook.on_body`, `Hook.on_body_async`, over the table of
`memrules._plugin.body_formats`).

**Many conversations.** One hook serves many conversations, told apart by
`Request.conversation_id`. Each conversation's state lives in the plugin's
state store; requests of one conversation run one at a time in a process
(the store's lock), which makes the warning exactly one-shot under
concurrency, and different conversations never wait for each other. On
a store that can swap (`SwappingStateStore`: the in-memory and Valkey
stores) a request runs `step` on the state this process holds and writes
the result with one compare-and-set on that record: one round trip when no
other replica wrote since. When one did, the write fails, answers the newer
state in the same round trip, and the step runs again on it (its seams are
called again; its observers are not: the usage they were told depends on
the request alone), so every request decides on the state it commits
over and a graph merge from another replica is never lost. A conversation
whose last request here found its state out of date (round-robin across
replicas) reads the state first instead, so that its step runs once: two
round trips, until a request finds the state as this process left it. On any other
store (and under a trace, whose log records one load and one update per
request) the request loads the state, runs `step`, and writes back what it
changed as a pure function of the state then current (`commit`): two round
trips. A store that is down fails the request with `StateStoreError`
before anything was written.

**What a request costs.** Beside the state, the hook keeps each
conversation's `ConversationCache` in this process: what its requests
measured and converted, and the request the pipeline last sent
(``previous``, for the prompt cache). `Hook._locked` is the one place a
request reads and writes them, under the conversation's lock.

**Async.** `handle_async` runs the same `_locked` turn as `handle`, once,
in a thread of its own (`run_awaiting`, as `Pipeline.apply_async` does):
the summarizer and store, the graph extractor and the context window
resolver are awaited on the event loop while that thread waits (a seam's
coroutine method when it has one, else its blocking call in that thread);
retrieval memory asks its store in a worker thread first. The state
store's lock is a threading lock held by that thread, never by the event
loop. With a trace, the request runs as `handle` does, in a worker thread (the trace
records calls in the order one synchronous run makes them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from memrules._adapters.context_editing import EditPlan
from memrules._config.load import MemoryConfig, service_config
from memrules._core.report import OverBudgetMode
from memrules._counting.usage import ContextUsageObserver
from memrules._plugin.body_formats import BodyFormat, EditedRequest
from memrules._plugin.conversation_caches import ConversationCache, ConversationCaches
from memrules._plugin.graph_ops import GraphOps
from memrules._plugin.memory_endpoints import MemoryEndpoints
from memrules._plugin.request import Request, StepResult
from memrules._plugin.step import commit, step
from memrules._runtime.awaiting import run_awaiting
from memrules._runtime.logged import LoggedClock, LoggedExtractor, LoggedResolver, logged_seams
from memrules._runtime.over_budget import settle
from memrules._runtime.pipeline import Pipeline
from memrules._trace.plugin_tracer import PluginTracer
from memrules.memory.retrieve import Retrieval
from memrules.state.carry import hold, previous_request, with_carry
from memrules.state.model import ConversationState, SwappingStateStore

__all__ = ["Hook"]

Whose = tuple[str | None, str | None, str | None]
"""A body's conversation, user and tenant, as the caller gives them (None: the body's)."""

Step = Callable[[Pipeline, Iterable[ContextUsageObserver]], StepResult]
"""The request's step under a pipeline and its observers (see `Hook._locked`)."""


@attrs.define(kw_only=True, eq=False)
class Hook:
    """Requests of many conversations through ``pipeline``: the state in
    ``graphs``' store, the memos in ``memos``, retrieval memory through
    ``memory``, the time from ``clock``, a request over its budget settled
    by ``over_budget``, each request written to ``tracer``'s trace when
    there is one, a body's conversation found by ``conversation_id_of``.
    `last` is the most recent result, `last_edits` the context edits of the
    most recent body of a format that takes them."""

    pipeline: Pipeline
    graphs: GraphOps
    memos: ConversationCaches
    memory: MemoryEndpoints
    clock: Callable[[], float]
    over_budget: OverBudgetMode
    tracer: PluginTracer | None
    conversation_id_of: Callable[[Mapping[str, Any]], str | None]
    last: StepResult | None = attrs.field(default=None, init=False)
    last_edits: tuple[EditPlan, ...] = attrs.field(default=(), init=False)
    _answered: Pipeline | None = attrs.field(default=None, init=False)

    @property
    def config(self) -> MemoryConfig:
        return service_config(self.pipeline.config)

    # --- one request ----------------------------------------------------------------

    def handle(self, request: Request, now: float | None) -> StepResult:
        """``request``'s turn, its trace line written when there is a trace."""
        if self.tracer is None:
            return self.run(request, now)
        result: StepResult = self.tracer.handle(request, lambda r: self.run(r, now), now=now)
        return result

    def run(self, request: Request, now: float | None) -> StepResult:
        """``request``'s turn, its seams called where they are (through the
        seam log when one is active: a trace records it, a replay answers it)."""
        retrieval = self.memory.retrieve(request)
        when = self._when(now)
        pipeline = self.pipeline
        return self._locked(
            request, retrieval, when, lambda one: one(pipeline, self.config.observers)
        )

    async def handle_async(self, request: Request, now: float | None) -> StepResult:
        """``request``'s turn, its seams awaited (see the module docs)."""
        import asyncio  # only on the async path: importing memrules loads no event loop

        if self.tracer is not None:
            return await asyncio.to_thread(self.handle, request, now)
        retrieval = await asyncio.to_thread(self.memory.retrieve, request)
        when = self._when(now)
        watched = self._answered_pipeline()
        observers = self.config.observers
        return await run_awaiting(
            lambda: self._locked(request, retrieval, when, lambda one: one(watched, observers))
        )

    def _when(self, now: float | None) -> float:
        """The request's time: ``now``, else the clock's (through the seam
        log where memory or the prompt cache reads it)."""
        if now is not None:
            return now
        if self.memory.service is not None:
            return self.memory.service.clock()
        if self.config.cache is not None:
            return LoggedClock(self.clock)()
        return self.clock()

    def _locked(
        self,
        request: Request,
        retrieval: Retrieval | None,
        when: float,
        run: Callable[[Step], StepResult],
    ) -> StepResult:
        """``run`` given the request's step on the conversation's state and
        memos, under its lock; the result settled, and the state, the
        previous request and `last` written. The one place a request reads
        and writes its conversation."""
        conversation_id = request.conversation_id
        graphs = self.graphs
        states = graphs.states
        if not isinstance(states, SwappingStateStore):
            prepare = functools.partial(self._step, request, retrieval, when)
            return self._loaded(
                conversation_id, lambda loaded, memo: run(prepare(loaded, memo, notify=True))
            )
        with states.lock(conversation_id):
            memo = self.memos.get(conversation_id)
            held = states.held(conversation_id)
            seen = held
            if seen is None or memo.contended:
                seen = states.load(conversation_id)
            contended = held is not None and seen is not held
            notify = True
            while True:
                loaded = graphs.adopt(seen.state)
                result = run(self._step(request, retrieval, when, loaded, memo, notify=notify))
                if self.over_budget == "raise":
                    settle(result.report, "raise")  # refused before anything is written
                sent = hold(result.sent, memo.previous)
                new = with_carry(commit(loaded, result)(loaded), sent)
                done, seen = states.swap(conversation_id, seen, new)
                if done:
                    break
                contended = True
                notify = False  # the usage is the request's: the observers had it
            memo.contended = contended
            memo.previous = sent
            self.last = result
        settle(result.report, self.over_budget)  # once, for the run that was written
        return result

    def _step(
        self,
        request: Request,
        retrieval: Retrieval | None,
        when: float,
        loaded: ConversationState,
        memo: ConversationCache,
        *,
        notify: bool,
    ) -> Step:
        """The request's step on ``loaded``, its observers told the usage
        when ``notify``."""

        def one(pipeline: Pipeline, observers: Iterable[ContextUsageObserver]) -> StepResult:
            return step(
                loaded,
                request,
                pipeline=pipeline,
                observers=observers if notify else (),
                resolver=service_config(pipeline.config).context_window_resolver,
                memo=memo.measure,
                retrieval=retrieval,
                now=when,
                previous=previous_request(loaded.carry, request.messages, memo.previous),
            )

        return one

    def _loaded(
        self,
        conversation_id: str | None,
        run: Callable[[ConversationState, ConversationCache], StepResult],
    ) -> StepResult:
        """`_locked` on a store that cannot `swap` (a traced one, or one of
        the caller's): the state loaded, ``run`` given it and the
        conversation's memos, then the change written with
        `StateStore.update`, two round trips."""
        graphs = self.graphs
        with graphs.states.lock(conversation_id):
            loaded = graphs.state(conversation_id)
            memo = self.memos.get(conversation_id)
            result = run(loaded, memo)
            settle(result.report, self.over_budget)
            change, held = commit(loaded, result), hold(result.sent, memo.previous)
            graphs.states.update(
                conversation_id, lambda current: with_carry(change(graphs.adopt(current)), held)
            )
            memo.previous = held
            self.last = result
        return result

    def _answered_pipeline(self) -> Pipeline:
        """The pipeline `handle_async` runs, its seams, graph extractor and
        resolver behind the seam log's proxies (made once)."""
        if self._answered is None:
            config = self.config
            changes: dict[str, Any] = {}
            if config.graph_extractor is not None:
                changes["graph_extractor"] = LoggedExtractor(config.graph_extractor)
            if config.context_window_resolver is not None:
                changes["context_window_resolver"] = LoggedResolver(config.context_window_resolver)
            watched = attrs.evolve(
                self.pipeline,
                config=attrs.evolve(config, **changes) if changes else config,
                seams=logged_seams(self.pipeline.seams),
            )
            self._answered = watched
        return self._answered

    # --- one body, of any format ------------------------------------------------------

    def on_body(self, kind: BodyFormat, body: Mapping[str, Any], whose: Whose) -> dict[str, Any]:
        """The body to send for ``body``, a request body of format ``kind``."""
        edited = self._edited(kind, body, whose)
        return self._written(edited, self.handle(edited.request, None))

    async def on_body_async(
        self, kind: BodyFormat, body: Mapping[str, Any], whose: Whose
    ) -> dict[str, Any]:
        """`on_body`, its request's seams awaited."""
        edited = self._edited(kind, body, whose)
        return self._written(edited, await self.handle_async(edited.request, None))

    def _edited(self, kind: BodyFormat, body: Mapping[str, Any], whose: Whose) -> EditedRequest:
        request = kind.read(body, whose, self.conversation_id_of, self.memos.get)
        editing = self.config.provider_editing
        return EditedRequest.of(kind, body, request, editing, self.pipeline.count)

    def _written(self, edited: EditedRequest, result: StepResult) -> dict[str, Any]:
        memo = self.memos.get(result.request.conversation_id)
        body, plans = edited.body_for(result, memo, self.pipeline.count)
        if plans is not None:
            self.last_edits = plans
        return body

    def reset(self, conversation_id: str | None) -> None:
        """Forget the conversation's state and memos."""
        self.graphs.states.forget(conversation_id)
        self.memos.forget(conversation_id)
