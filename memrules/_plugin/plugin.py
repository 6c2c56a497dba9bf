"""The request hook: :class:`MemoryPlugin`, a thin shell around a pure :func:`step`.

Every request goes through four steps, in order:

1. **Measure.** Count the request's tokens and hand one :class:`ContextUsage`
   to every observer. The window is the resolver's answer for the request's
   model when it gives one, else ``config.context_window_tokens``. An observer
   that raises fails the request with :class:`~memrules._core.errors.ObserverError`
   before anything has changed.
2. **Warn, once.** When ``warn_fraction`` is set and the usage reaches it,
   append one system message that starts with ``config.warning_marker``.
3. **Compact.** Resolve the budget (``max_fraction`` scales the window of
   step 1) and run the pipeline; with no trigger nothing is compacted.
4. **The working graph.** With ``graph_extractor`` set, merge (``union``)
   the graph it reads from the request as it arrived into the
   conversation's graph. With ``graph_context`` set, render the graph into
   one system message right after the first system message (see
   :mod:`memrules.graph.render`): after compaction, so compaction never
   deletes it and its tokens do not count against the request that
   triggered compaction. A graph message the request already holds (the
   plugin's own, from an earlier request the client kept) is stale: it is
   taken out before step 1, so it counts for nothing, and the new one takes
   its place; an empty graph leaves none. :attr:`StepResult.graph_tokens`
   is the message's token cost. An extractor that raises fails nothing:
   the error is in :attr:`StepResult.graph_error` and the graph is left as
   it was, as a failing strategy is recorded and skipped.

5. **Retrieval memory.** On a route whose config has ``memory`` enabled
   (see :mod:`memrules.memory`), the shell asks the shared store with the
   latest user message, within the request's ``user`` and ``tenant`` (a
   request without both gets no memory; :attr:`StepResult.memory` says
   why), before the steps run; :func:`step` passes what it found through
   the reflection gate, as of ``now``, and puts one system message right
   after the first system message, after compaction (like the graph's,
   its tokens, :attr:`StepResult.memory_tokens`, are not in the budget of
   the request). A memory message the request already holds is stale and
   is taken out before step 1. A store that fails costs the request its
   memory, never the request. After the model answers,
   :meth:`MemoryPlugin.on_response` keeps the completed turn
   (``auto_store``).

The warning is appended before compaction, so the pipeline sees it and its
tokens count toward the trigger: the budget is about what is sent, and the
warning is sent (in ``memrules demo`` it is one of the nine messages the
window trims to four). Observers see the usage measured before it.

**One warning per conversation.** The warning is one-shot by its
marker: a request that already holds a message starting with the marker gets
no other. A client that drops the warning from its history (or never keeps
the prompt it sent, as most don't) would then be warned again on every
request, so the plugin also remembers, per conversation, that the warning was
given (:attr:`ConversationState.warned`). A warning is appended only when
neither says it has been given; either one seen sets ``warned``.

**Many conversations.** One plugin serves many conversations, told apart by
:attr:`Request.conversation_id` (from an OpenAI body: the ``conversation_id``
of its ``metadata``, or what the plugin's ``conversation_id_of`` reads from
it, e.g. the ``user`` field or a header the caller copied in). Requests
without an id share one conversation, ``None``. Each conversation's state
lives in the plugin's :class:`~memrules.graph.StateStore`: by default this
process's memory, holding at most ``max_conversations`` conversations
(10,000 by default); past that, the least recently seen conversation that
has no request in progress is forgotten (its next request starts afresh, as
after :meth:`reset`). With ``state_store: {url: valkey://...}`` the state is
in Valkey, shared by every replica and surviving restarts (see
`memrules.state`). Requests of one conversation run one at a
time in a process, which makes the warning exactly one-shot under
concurrency; different conversations never wait for each other. A request
reads the state, runs :func:`step`, and writes back what it changed as a
pure function of the state then current (the warning given; its extracted
graph merged again), so a :meth:`merge_graph` from another thread or replica
in between is never lost. A store that is down fails the request, or the
graph call, with :class:`~memrules._core.errors.StateStoreError` before anything
was written.

**What a request costs.** Beside the state, the plugin keeps, in this
process, each conversation's :class:`~memrules._plugin.conversation_caches.ConversationCache` (at
most ``max_conversations``, least recently used out first): what its
requests measured and converted, so that a request pays for what the
conversation added since the last one. Memos change what a request costs,
never what it does; a replica without one builds it on the next request.

**The graph, per conversation.** :meth:`MemoryPlugin.graph`,
:meth:`~MemoryPlugin.snapshot`, :meth:`~MemoryPlugin.merge_graph`,
:meth:`~MemoryPlugin.replace_graph` and :meth:`~MemoryPlugin.replace_snapshot`
read or replace one conversation's graph; each write is one atomic store
update, so many threads (or replicas) merging into one conversation lose no
update.

>>> from memrules._core.messages import message
>>> config = MemoryConfig(context_window_tokens=10, max_fraction=None, warn_fraction=0.5)
>>> plugin = MemoryPlugin(config)
>>> ask = Request(messages=(message("user", "one two three four five"),))
>>> [m.role for m in plugin.on_request(ask).messages], plugin.state().warned
(['user', 'system'], True)
>>> len(plugin.on_request(ask).messages)
1
>>> len(plugin.on_request(attrs.evolve(ask, conversation_id="other")).messages)
2
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from memrules._adapters import from_openai
from memrules._adapters.context_editing import EditPlan
from memrules._adapters.conversion_cache import ConversionCache
from memrules._adapters.openai import Written, write_back
from memrules._config.load import DEFAULT_ROUTE, MemoryConfig, PipelineConfig, service_config
from memrules._core.checks import check_whole
from memrules._core.errors import ConfigError, GraphError, MessageFormatError
from memrules._core.messages import Message
from memrules._core.report import CompressionReport, CompressionResult, OverBudgetMode
from memrules._core.seam_protocols import Seams, Summarizer, VectorStore
from memrules._counting.tokens import TokenCounter
from memrules._counting.usage import ContextUsage, ContextUsageObserver
from memrules._plugin.conversation_caches import ConversationCache, ConversationCaches
from memrules._plugin.provider_bodies import (
    anthropic_body,
    request_from_anthropic,
    run_edited,
    run_edited_async,
    with_provider_edits,
)
from memrules._plugin.request import (
    Request,
    StepResult,
    conversation_id_from_metadata,
    scope_from_metadata,
)
from memrules._plugin.responses_hook import request_from_responses, responses_body
from memrules._plugin.step import commit as _commit
from memrules._plugin.step import has_warning, measure, memory_settings, step, warning_message
from memrules._runtime.awaiting import SeamAnswers, _Pending
from memrules._runtime.logged import (
    LoggedClock,
    LoggedExtractor,
    LoggedResolver,
    logged_seams,
    retrieval_request,
)
from memrules._runtime.over_budget import check_mode, settle
from memrules._runtime.pipeline import Pipeline
from memrules._trace.record import PluginTracer
from memrules.graph.memory_graph import MemoryGraph
from memrules.graph.merge import MergePolicy, MergeReport
from memrules.graph.snapshot import GraphImportReport, GraphSnapshot
from memrules.memory.autostore import StoreOutcome
from memrules.memory.config import RetrievalStoreConfig
from memrules.memory.metrics import RetrievalObserver
from memrules.memory.retrieve import (
    Retrieval,
)
from memrules.memory.service import ListedRecord, RetrievalService, load_ahead
from memrules.memory.shared import SHARED_STORES
from memrules.seams._log import seam_call
from memrules.state.carry import hold, previous_request, with_carry
from memrules.state.memory import DEFAULT_MAX_CONVERSATIONS
from memrules.state.model import ConversationState, StateRecord, StateStore
from memrules.state.opening import open_state_store

__all__ = [
    "DEFAULT_MAX_CONVERSATIONS",
    "ConversationState",
    "MemoryPlugin",
    "Request",
    "StepResult",
    "conversation_id_from_metadata",
    "has_warning",
    "measure",
    "scope_from_metadata",
    "step",
    "warning_message",
]


def _no_id(body: Mapping[str, Any]) -> None:
    return None


def _openai_body(
    body: Mapping[str, Any],
    request: Request,
    result: StepResult,
    memo: ConversationCache | None = None,
) -> dict[str, Any]:
    """``body`` with the messages ``result`` sends, as :meth:`MemoryPlugin.on_openai_request`
    returns it: kept messages as the body's own objects; with ``memo`` (the
    conversation's), the messages its last request converted copied from
    what they became then."""
    if memo is None:
        sent = write_back(
            result.request.messages, request.messages, body["messages"], result.report.origin
        )
        return {**body, "messages": sent}
    keep: Written = {}
    sent = write_back(
        result.request.messages,
        request.messages,
        body["messages"],
        result.report.origin,
        written=memo.written,
        keep=keep,
    )
    memo.written = keep
    return {**body, "messages": sent}


class MemoryPlugin:
    """The stateful shell: holds the pipeline and the
    :class:`~memrules.graph.StateStore` of each conversation's
    :class:`ConversationState`, and runs :func:`step` for each request.

    Requests of one conversation run one at a time (in this process), which
    is what makes the warning exactly one-shot when they arrive
    concurrently; requests of different conversations run in parallel (see
    the module docs). :meth:`count_tokens` and :meth:`compress` touch no
    state and are safe to call from any thread at any time; the graph
    methods are atomic.

    ``state_store`` replaces the store the config names (``state_store``;
    this process's memory by default, with at most ``max_conversations``
    conversations). Raises :class:`~memrules._core.errors.EncodingError` when the
    config's encoder cannot be loaded (the config validated itself when it
    was built).

    ``trace`` (a file path) records every request to a trace that
    ``memrules replay`` reproduces without any seam (see
    :mod:`memrules._trace.record`), each line written as its request completes;
    on a route with memory, also what retrieval answered, the clock's
    time, and each :meth:`on_response` (its store write and outcome).

    On a route with retrieval memory (``memory`` enabled; see
    :mod:`memrules.memory`), ``memory_store`` replaces the store
    ``stores.memory`` opens (shared by every plugin of the config),
    ``memory_observers`` get its events (metrics), and ``clock`` gives the
    time memories are stamped and decayed by. The embedding model begins
    loading here, first, in a background thread (:meth:`close` waits for
    it), so that it loads while the pipeline's encoder and the state store
    do; a model that cannot load says so at its first use, in the
    retrieval's ``error``. The memory collection is
    checked here: one its embedder cannot use raises
    :class:`~memrules._core.errors.ConfigError`; a store that is down is logged,
    and requests go on without memory until it is back.

    ``edits_in_place=False`` is for a caller that hands the body hooks its
    own message dicts again each request and never edits one it has handed
    over (it replaces the dict instead): each conversation's
    :class:`~memrules._adapters.conversion_cache.ConversionCache` then takes
    the very same objects unread, so a request pays for its new dicts only
    (see there). Bodies parsed afresh cost the same either way.

    ``over_budget`` replaces the config's ``over_budget``: what a request
    that compaction cannot bring within its budget gets (``"send"``,
    ``"warn"``, ``"raise"``; see :class:`~memrules.OverBudgetError`). Under
    ``"raise"`` the request fails before anything is written, like an
    observer error.
    """

    def __init__(
        self,
        config: PipelineConfig,
        *,
        summarizer: Summarizer | None = None,
        store: VectorStore | None = None,
        counter: TokenCounter | None = None,
        max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
        conversation_id_of: Callable[[Mapping[str, Any]], str | None] = (
            conversation_id_from_metadata
        ),
        state_store: StateStore | None = None,
        trace: str | os.PathLike[str] | None = None,
        memory_store: VectorStore | None = None,
        memory_observers: Iterable[RetrievalObserver] = (),
        clock: Callable[[], float] = time.time,
        edits_in_place: bool = True,
        over_budget: OverBudgetMode | None = None,
    ) -> None:
        check_whole("max_conversations", max_conversations, 1)
        config = service_config(config)  # a pipeline's config: the service's defaults
        self._over_budget = config.over_budget if over_budget is None else check_mode(over_budget)
        if not isinstance(edits_in_place, bool):
            msg = f"edits_in_place={edits_in_place!r} must be True or False"
            raise ValueError(msg)
        self._memory: RetrievalService | None = None
        self._shared: RetrievalStoreConfig | None = None
        self._loading: threading.Thread | None = None
        self._built_store: VectorStore | None = None
        self._states: StateStore  # set by _build; close() works without it
        self._tracer: PluginTracer | None = None
        settings = memory_settings(config)
        try:
            if settings is not None:
                # The memory store first, and its model loading from here on:
                # it loads while the pipeline's encoder and the state store
                # load (the first request waits for whatever is left of it).
                if memory_store is None:
                    memory_store = SHARED_STORES.acquire(settings)
                    self._shared = settings
                self._loading = load_ahead(memory_store)
            self._build(
                config,
                summarizer=summarizer,
                store=store,
                counter=counter,
                max_conversations=max_conversations,
                conversation_id_of=conversation_id_of,
                state_store=state_store,
                trace=trace,
                clock=clock,
                edits_in_place=edits_in_place,
            )
            if settings is not None:
                assert config.memory is not None
                assert memory_store is not None
                if self._tracer is not None:
                    memory_store = self._tracer.memory_store(settings, memory_store)
                self._memory = RetrievalService(
                    settings,
                    config.memory,
                    store=memory_store,
                    observers=memory_observers,
                    clock=LoggedClock(clock),
                    source=config.source,
                    loading=self._loading,
                )
                self._memory.start()
        except BaseException:
            self.close()
            raise

    def _build(
        self,
        config: MemoryConfig,
        *,
        summarizer: Summarizer | None,
        store: VectorStore | None,
        counter: TokenCounter | None,
        max_conversations: int,
        conversation_id_of: Callable[[Mapping[str, Any]], str | None],
        state_store: StateStore | None,
        trace: str | os.PathLike[str] | None,
        clock: Callable[[], float],
        edits_in_place: bool,
    ) -> None:
        """The pipeline, the state store, the tracer and the conversation
        caches (everything but retrieval memory)."""
        made = Pipeline.from_config(
            config, seams=Seams(summarizer=summarizer, store=store), counter=counter
        )
        # The hook sends requests: with repair: null it repairs what a provider rejects.
        self._pipeline = attrs.evolve(made, default_repair=True)
        # The offload store the config's ``store:`` section built is this
        # plugin's to close; one passed in is its giver's.
        built = self._pipeline.seams.store
        self._built_store = built if store is None else None
        self._states = (
            state_store
            if state_store is not None
            else open_state_store(
                config.state_store,
                max_conversations=max_conversations,
                graph_limits=config.graph_limits,
            )
        )
        self._conversation_id_of = conversation_id_of
        self._last: StepResult | None = None
        self._last_edits: tuple[EditPlan, ...] = ()
        # Tracing (memrules._trace.record): the seams, the graph extractor, the
        # resolver and the state store go through the seam log, and each
        # request writes a trace line.
        if trace is not None:
            self._tracer = PluginTracer(trace, self._pipeline, self._states)
            self._pipeline, self._states = self._tracer.pipeline, self._tracer.states
        pipeline = self._pipeline
        self._memos = ConversationCaches(
            lambda: ConversationCache(pipeline, edits_in_place=edits_in_place), max_conversations
        )
        self._clock = clock

    @classmethod
    def from_config(
        cls, config: MemoryConfig, *, route: str = DEFAULT_ROUTE, **options: Any
    ) -> MemoryPlugin:
        """A ready plugin for route ``route`` of ``config`` (``default``: the
        file's top level), with its own pipeline, conversation state and
        memory. Every plugin made from one config shares its
        ``stores.memory`` store (one client, opened by the first plugin and
        closed when the last one closes); each call makes a new plugin, so
        make one per route at start-up and close it when done (``with
        MemoryPlugin.from_config(config, route="support") as plugin:``).
        ``options`` go to :class:`MemoryPlugin` (``memory_observers``,
        ``state_store``, ``clock``, ...). Raises
        :class:`~memrules._core.errors.ConfigError` for an unknown route, or
        a memory collection its embedder cannot use."""
        return cls(config.route_config(route), **options)

    @property
    def config(self) -> MemoryConfig:
        return service_config(self._pipeline.config)

    @property
    def pipeline(self) -> Pipeline:
        return self._pipeline

    @property
    def state_store(self) -> StateStore:
        """Where the conversations' state lives."""
        return self._states

    def _adopt(self, state: ConversationState) -> ConversationState:
        """``state`` with its graph under this plugin's graph limits (a store
        built elsewhere may hand out graphs with other limits)."""
        limits = self.config.graph_limits
        if state.graph.limits == limits:
            return state
        return attrs.evolve(state, graph=state.graph.with_limits(limits))

    def record(self, conversation_id: str | None = None) -> StateRecord:
        """The conversation's state and its version in the store."""
        record = self._states.load(conversation_id)
        state = self._adopt(record.state)
        return record if state is record.state else attrs.evolve(record, state=state)

    def state(self, conversation_id: str | None = None) -> ConversationState:
        """The state the conversation's next request starts from."""
        return self.record(conversation_id).state

    @property
    def conversations(self) -> int:
        """How many conversations the plugin's store holds state for."""
        return len(self._states)

    @property
    def last_result(self) -> StepResult | None:
        """What the most recent successful request (of any conversation)
        went through, if any; :meth:`handle` gives the result of one request."""
        return self._last

    @property
    def last_report(self) -> CompressionReport | None:
        return None if self._last is None else self._last.report

    @property
    def last_usage(self) -> ContextUsage | None:
        return None if self._last is None else self._last.usage

    def on_request(self, request: Request) -> Request:
        """Run ``request`` through the steps and return the request to send
        (``request`` itself when nothing changed). On an error the state
        and :attr:`last_result` are as they were."""
        return self.handle(request).request

    def handle(self, request: Request, *, now: float | None = None) -> StepResult:
        """:meth:`on_request`, returning everything the request went through:
        the request to send, the usage, the report, whether it warned, the
        graph step, what memory found. Unlike :attr:`last_result`, this is
        the answer for this very request when others run concurrently.
        ``now`` (seconds since the epoch) is the time memories are decayed
        by; the plugin's clock by default. With ``trace=``, the request's
        line is written when it completes."""
        if self._tracer is not None:
            result: StepResult = self._tracer.handle(
                request, lambda r: self._handle(r, now), now=now
            )
            return result
        return self._handle(request, now)

    def _handle(self, request: Request, now: float | None) -> StepResult:
        conversation_id = request.conversation_id
        retrieval = None
        if self._memory is not None:  # the store and the clock, through the seam log
            memory, messages = self._memory, request.messages
            retrieval = seam_call(
                "memory",
                "retrieve",
                lambda: retrieval_request(messages, user=request.user, tenant=request.tenant),
                lambda: memory.retrieve(messages, user=request.user, tenant=request.tenant),
                answer=Retrieval.to_dict,
                rebuild=Retrieval.from_dict,
            )
            if now is None:
                now = memory.clock()
        if now is None and self.config.cache is not None:
            now = LoggedClock(self._clock)()  # the prompt cache's age, through the seam log
        when = self._clock() if now is None else now
        with self._states.lock(conversation_id):
            loaded = self.state(conversation_id)
            memo = self._memos.get(conversation_id)
            result = step(
                loaded,
                request,
                pipeline=self._pipeline,
                observers=self.config.observers,
                resolver=self.config.context_window_resolver,
                memo=memo.measure,
                retrieval=retrieval,
                now=when,
                previous=previous_request(loaded.carry, request.messages, memo.previous),
            )
            settle(result.report, self._over_budget)
            commit, held = _commit(loaded, result), hold(result.sent, memo.previous)
            self._states.update(
                conversation_id, lambda current: with_carry(commit(self._adopt(current)), held)
            )
            memo.previous = held
            self._last = result
        return result

    def on_openai_request(
        self,
        body: Mapping[str, Any],
        *,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """:meth:`on_request` for an OpenAI chat-completions body: returns a
        new body with the new ``messages`` and every other key as it was.
        The conversation is ``conversation_id``, else the one the plugin's
        ``conversation_id_of`` finds in the body; the user and tenant are
        ``user`` and ``tenant``, else the body's ``metadata.user_id`` and
        ``metadata.tenant_id`` (give them from your authentication when the
        body comes from an untrusted client).

        Converting costs what the conversation added since its last request
        (its messages are remembered, see
        :class:`~memrules._adapters.conversion_cache.ConversionCache`), and so does
        converting back: the messages the request keeps are sent as the
        body's own message objects (equal to what converting would give),
        and only new or changed ones (the warning, the graph, memories) are
        converted."""
        request = self._from_openai_body(body, conversation_id, user, tenant)
        result = self.handle(request)
        return _openai_body(body, request, result, self._memos.get(request.conversation_id))

    def _from_openai_body(
        self,
        body: Mapping[str, Any],
        conversation_id: str | None,
        user: str | None,
        tenant: str | None,
    ) -> Request:
        """The request of :meth:`on_openai_request`, converted with its
        conversation's memo."""
        memo = None
        if isinstance(body, Mapping):  # else from_openai says what is wrong
            if conversation_id is None:
                conversation_id = self._conversation_id_of(body)
            memo = self._memos.get(conversation_id).conversion
        return Request.from_openai(
            body,
            conversation_id=conversation_id,
            conversation_id_of=_no_id,
            memo=memo,
            user=user,
            tenant=tenant,
        )

    def on_responses_request(
        self,
        body: Mapping[str, Any],
        *,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """:meth:`on_request` for an OpenAI Responses API body (``input``,
        ``instructions``, ``model``): returns a new body with the compacted
        ``input`` and every other key as it was (see
        :mod:`memrules._plugin.responses_hook`). The conversation, user and
        tenant are found as :meth:`on_openai_request` finds them, and
        converting costs what the conversation added since its last
        request, as there."""
        request = self._from_responses_body(body, conversation_id, user, tenant)
        editing = self.config.provider_editing
        request, result, self._last_edits = run_edited(
            self.handle, self._pipeline.count, editing, request, "openai"
        )
        return with_provider_edits(responses_body(body, request, result), editing, "openai")

    def on_anthropic_request(
        self,
        body: Mapping[str, Any],
        *,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """:meth:`on_request` for an Anthropic Messages API body (``system``,
        ``messages``, ``model``): returns a new body with the compacted
        ``system`` and ``messages``, every other key as it was, and the
        config's ``provider_editing`` written in as ``context_management``
        (send the ``anthropic-beta: context-management-2025-06-27`` header
        with it); see :mod:`memrules._plugin.provider_bodies`. Converting
        costs what the conversation added since its last request, as in
        :meth:`on_openai_request`."""
        request = self._from_anthropic_body(body, conversation_id, user, tenant)
        editing = self.config.provider_editing
        _, result, self._last_edits = run_edited(
            self.handle, self._pipeline.count, editing, request, "anthropic"
        )
        return with_provider_edits(anthropic_body(body, result), editing, "anthropic")

    def _body_memo(
        self, body: Mapping[str, Any], conversation_id: str | None, provider: str
    ) -> tuple[str | None, ConversionCache | None]:
        """The body's conversation and that conversation's conversion cache
        for ``provider`` (none for a body that is not a mapping: reading it
        says what is wrong)."""
        if not isinstance(body, Mapping):
            return conversation_id, None
        if conversation_id is None:
            conversation_id = self._conversation_id_of(body)
        return conversation_id, self._memos.get(conversation_id).conversion_for(provider)

    def _from_responses_body(
        self,
        body: Mapping[str, Any],
        conversation_id: str | None,
        user: str | None,
        tenant: str | None,
    ) -> Request:
        conversation_id, memo = self._body_memo(body, conversation_id, "responses")
        return request_from_responses(
            body,
            conversation_id=conversation_id,
            conversation_id_of=_no_id,
            user=user,
            tenant=tenant,
            memo=memo,
        )

    def _from_anthropic_body(
        self,
        body: Mapping[str, Any],
        conversation_id: str | None,
        user: str | None,
        tenant: str | None,
    ) -> Request:
        conversation_id, memo = self._body_memo(body, conversation_id, "anthropic")
        return request_from_anthropic(
            body,
            conversation_id=conversation_id,
            conversation_id_of=_no_id,
            user=user,
            tenant=tenant,
            memo=memo,
        )

    @property
    def last_edits(self) -> tuple[EditPlan, ...]:
        """What the config's ``provider_editing`` took from the most recent
        Responses or Anthropic body: what memrules cleared itself, and what
        the provider will clear (tool uses, thinking blocks, tokens)."""
        return self._last_edits

    # --- async: the same steps, the seams awaited (see memrules._runtime.awaiting) ----------------

    async def on_request_async(self, request: Request) -> Request:
        """:meth:`on_request` without blocking the event loop (see :meth:`handle_async`)."""
        return (await self.handle_async(request)).request

    async def on_openai_request_async(
        self,
        body: Mapping[str, Any],
        *,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """:meth:`on_openai_request` without blocking the event loop (see
        :meth:`handle_async`)."""
        request = self._from_openai_body(body, conversation_id, user, tenant)
        result = await self.handle_async(request)
        return _openai_body(body, request, result, self._memos.get(request.conversation_id))

    async def on_responses_request_async(
        self,
        body: Mapping[str, Any],
        *,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """:meth:`on_responses_request` without blocking the event loop (see
        :meth:`handle_async`)."""
        request = self._from_responses_body(body, conversation_id, user, tenant)
        editing = self.config.provider_editing
        request, result, self._last_edits = await run_edited_async(
            self.handle_async, self._pipeline.count, editing, request, "openai"
        )
        return with_provider_edits(responses_body(body, request, result), editing, "openai")

    async def on_anthropic_request_async(
        self,
        body: Mapping[str, Any],
        *,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """:meth:`on_anthropic_request` without blocking the event loop (see
        :meth:`handle_async`)."""
        request = self._from_anthropic_body(body, conversation_id, user, tenant)
        editing = self.config.provider_editing
        _, result, self._last_edits = await run_edited_async(
            self.handle_async, self._pipeline.count, editing, request, "anthropic"
        )
        return with_provider_edits(anthropic_body(body, result), editing, "anthropic")

    async def handle_async(self, request: Request, *, now: float | None = None) -> StepResult:
        """:meth:`handle`, awaiting the seams instead of blocking on them:
        the same steps, the same result, the same state written.

        The summarizer and store, the graph extractor and the context window
        resolver are awaited between runs of :func:`step` (as in
        :meth:`Pipeline.apply_async <memrules.Pipeline.apply_async>`): a
        seam's coroutine method when it has one (the OpenAI-compatible
        summarizer's), else its blocking call in a worker thread. Retrieval
        memory asks its store in a worker thread first.

        The state store's lock is a threading lock, never held across an
        ``await``: each run of :func:`step` happens in a worker thread that
        takes the conversation's lock, loads its state, runs the step with
        the answers fetched so far and, when every call had its answer, runs
        it once more with the observers and writes the state back, all
        before it lets the lock go. A call without an answer lets the lock
        go, is awaited, and the next run starts from the state then current,
        so requests of one conversation still run their steps one at a time
        and the warning stays one-shot. The observers see one run.

        With ``trace=``, the request runs as :meth:`handle` does, in a
        worker thread: the loop stays free and the trace line is the one
        :meth:`handle` writes, but the seams block that thread instead of
        being awaited (the trace records calls in the order one synchronous
        run makes them)."""
        import asyncio  # only on the async path: importing memrules loads no event loop

        if self._tracer is not None:
            return await asyncio.to_thread(lambda: self.handle(request, now=now))
        conversation_id = request.conversation_id
        retrieval = None
        memory = self._memory
        if memory is not None:
            retrieval = await asyncio.to_thread(
                lambda: memory.retrieve(request.messages, user=request.user, tenant=request.tenant)
            )
        when = self._clock() if now is None else now
        quiet, watched = self._answered_pipelines()
        answers = SeamAnswers()

        def attempt() -> StepResult:
            with self._states.lock(conversation_id):
                loaded = self.state(conversation_id)
                memos = self._memos.get(conversation_id)
                memo = memos.measure

                def run(
                    pipeline: Pipeline, observers: Iterable[ContextUsageObserver]
                ) -> StepResult:
                    return step(
                        loaded,
                        request,
                        pipeline=pipeline,
                        observers=observers,
                        resolver=service_config(pipeline.config).context_window_resolver,
                        memo=memo,
                        retrieval=retrieval,
                        now=when,
                        previous=previous_request(loaded.carry, request.messages, memos.previous),
                    )

                answers.run(lambda: run(quiet, ()))  # raises _Pending for a call to make
                result = answers.run(lambda: run(watched, self.config.observers))
                settle(result.report, self._over_budget)
                commit, held = _commit(loaded, result), hold(result.sent, memos.previous)
                self._states.update(
                    conversation_id, lambda current: with_carry(commit(self._adopt(current)), held)
                )
                memos.previous = held
                self._last = result
            return result

        while True:
            try:
                return await asyncio.to_thread(attempt)
            except _Pending as pending:
                await answers.fetch(pending)

    def _answered_pipelines(self) -> tuple[Pipeline, Pipeline]:
        """The pipeline :meth:`handle_async` runs, its seams, graph extractor
        and resolver behind the seam log's proxies: without observers, and
        with them."""
        found: tuple[Pipeline, Pipeline] | None = getattr(self, "_answered", None)
        if found is None:
            config = self.config
            changes: dict[str, Any] = {}
            if config.graph_extractor is not None:
                changes["graph_extractor"] = LoggedExtractor(config.graph_extractor)
            if config.context_window_resolver is not None:
                changes["context_window_resolver"] = LoggedResolver(config.context_window_resolver)
            watched = attrs.evolve(
                self._pipeline,
                config=attrs.evolve(config, **changes) if changes else config,
                seams=logged_seams(self._pipeline.seams),
            )
            found = (attrs.evolve(watched, observers=()), watched)
            self._answered = found
        return found

    def _openai_request(
        self,
        body: Mapping[str, Any],
        conversation_id: str | None,
        user: str | None,
        tenant: str | None,
    ) -> Request:
        return Request.from_openai(
            body,
            conversation_id=conversation_id,
            conversation_id_of=self._conversation_id_of,
            user=user,
            tenant=tenant,
        )

    # --- retrieval memory ---------------------------------------------------------

    @property
    def memory(self) -> RetrievalService | None:
        """The route's retrieval memory (None when it has none)."""
        return self._memory

    def _require_memory(self, doing: str) -> RetrievalService:
        if self._memory is None:
            msg = (
                f"cannot {doing}: this route has no retrieval memory (give it a memory: entry "
                "with enabled: true, and the file a stores.memory)"
            )
            raise ConfigError.single(msg, path=self.config.source, yaml_path="memory")
        return self._memory

    def on_response(
        self, request: Request, reply: Message | str, *, now: float | None = None
    ) -> StoreOutcome:
        """After the model answered ``request`` (as it arrived, or as sent)
        with ``reply``: keep the completed turn as one memory for the
        request's user and tenant, stamped ``now`` (the plugin's clock by
        default), when the route auto-stores (see
        :mod:`memrules.memory.autostore`). Never raises: the outcome says
        what happened (``stored``, ``duplicate``, ``skipped`` and why,
        ``error``, ``disabled``)."""
        if self._memory is None:
            return StoreOutcome(status="disabled", reason="this route has no retrieval memory")
        memory = self._memory

        def store() -> StoreOutcome:
            return memory.store_turn(
                request.messages,
                reply,
                user=request.user,
                tenant=request.tenant,
                conversation_id=request.conversation_id,
                now=now,
            )

        if self._tracer is not None:
            outcome: StoreOutcome = self._tracer.respond(request, reply, store, now=now)
            return outcome
        return store()

    def on_openai_response(
        self,
        body: Mapping[str, Any],
        response: Mapping[str, Any],
        *,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
        now: float | None = None,
    ) -> StoreOutcome:
        """:meth:`on_response` for an OpenAI chat-completions request
        ``body`` and the ``response`` it got (its first choice's message).
        Raises :class:`~memrules._core.errors.MessageFormatError` for a response
        without one."""
        request = self._openai_request(body, conversation_id, user, tenant)
        choices = response.get("choices") if isinstance(response, Mapping) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        reply = first.get("message") if isinstance(first, Mapping) else None
        if not isinstance(reply, Mapping):
            msg = "expected a chat completion with choices[0].message"
            raise MessageFormatError(msg, field="response")
        (answer,) = from_openai([reply])
        return self.on_response(request, answer, now=now)

    def forget(self, user: str, tenant: str) -> int:
        """Delete every memory of ``user`` and ``tenant`` from the route's
        store, in every generation of its collection (one per embedding
        model it was used with): the right to be forgotten. Returns how many
        there were. Raises :class:`~memrules._core.errors.StoreError` when the
        store fails (call again to finish)."""
        return self._require_memory("forget").forget(user=user, tenant=tenant)

    def list_memories(self, user: str, tenant: str) -> tuple[ListedRecord, ...]:
        """Every memory of ``user`` and ``tenant``, oldest first, in every
        generation of the collection (each says which, and whether it is the
        current embedder's). Raises :class:`~memrules._core.errors.StoreError` on
        failure."""
        return self._require_memory("list memories").memories(user=user, tenant=tenant)

    def reset(self, conversation_id: str | None = None) -> None:
        """Forget a conversation: its next request starts afresh (the
        warning may be given again, the graph is empty)."""
        self._states.forget(conversation_id)
        self._memos.forget(conversation_id)

    # --- the working graph, per conversation ------------------------------------

    def graph(self, conversation_id: str | None = None) -> MemoryGraph:
        """The conversation's working graph (a value: later updates make new
        graphs and leave this one as it is)."""
        return self.state(conversation_id).graph

    def snapshot(self, conversation_id: str | None = None) -> GraphSnapshot:
        """The conversation's graph as a :class:`~memrules.graph.GraphSnapshot`."""
        return self.graph(conversation_id).snapshot()

    def merge_graph(
        self,
        conversation_id: str | None,
        other: MemoryGraph,
        policy: MergePolicy = MergePolicy.UNION,
    ) -> MergeReport:
        """Merge ``other`` into the conversation's graph under ``policy``, in
        one atomic store update, and report what it did (with the
        conversation's ``version`` after it). Concurrent merges, from any
        thread or replica, are applied one after another: none is lost."""
        if not isinstance(other, MemoryGraph):
            msg = f"can only merge a MemoryGraph, got {type(other).__name__}"
            raise GraphError(msg)
        policy = MergePolicy(policy)
        reports: list[MergeReport] = []

        def change(current: ConversationState) -> ConversationState:
            current = self._adopt(current)
            graph, report = current.graph.merge(other, policy)
            reports.append(report)
            return current if graph is current.graph else attrs.evolve(current, graph=graph)

        record = self._states.update(conversation_id, change)
        return attrs.evolve(reports[-1], version=record.version)

    def replace_graph(self, conversation_id: str | None, graph: MemoryGraph) -> GraphImportReport:
        """Make ``graph`` the conversation's graph, in one atomic store
        update, cut to the plugin's ``graph_limits`` (lowest weight, oldest
        first) when it is bigger; the report names what was cut."""
        if not isinstance(graph, MemoryGraph):
            msg = f"expected a MemoryGraph, got {type(graph).__name__}"
            raise GraphError(msg)
        fitted = graph.with_limits(self.config.graph_limits)
        evicted_nodes: tuple[str, ...] = ()
        evicted_relationships: tuple[str, ...] = ()
        if fitted is not graph:
            evicted_nodes = tuple(sorted(set(graph.nodes) - set(fitted.nodes)))
            evicted_relationships = tuple(
                sorted(set(graph.relationships) - set(fitted.relationships))
            )
        report = GraphImportReport(
            nodes=len(fitted.nodes),
            relationships=len(fitted.relationships),
            evicted_nodes=evicted_nodes,
            evicted_relationships=evicted_relationships,
        )
        return self._replace(conversation_id, fitted, report)

    def replace_snapshot(
        self, conversation_id: str | None, snapshot: GraphSnapshot
    ) -> GraphImportReport:
        """Make the graph ``snapshot`` describes the conversation's graph, in
        one atomic store update. An invalid snapshot (a duplicate id, a
        relationship whose endpoint is missing) raises
        :class:`~memrules._core.errors.GraphError` naming the ids, and the graph is
        untouched; one over the cap is cut as the cap's policy says."""
        graph, report = MemoryGraph.from_snapshot(snapshot, limits=self.config.graph_limits)
        return self._replace(conversation_id, graph, report)

    def _replace(
        self, conversation_id: str | None, graph: MemoryGraph, report: GraphImportReport
    ) -> GraphImportReport:
        def change(current: ConversationState) -> ConversationState:
            current = self._adopt(current)
            return current if current.graph is graph else attrs.evolve(current, graph=graph)

        record = self._states.update(conversation_id, change)
        return attrs.evolve(report, version=record.version)

    # --- out of band ---------------------------------------------------------------

    def count_tokens(self, messages: Iterable[Message]) -> int:
        """Tokens of ``messages`` as step 1 counts them."""
        return self._pipeline.count(messages)

    def compress(self, messages: Iterable[Message]) -> CompressionResult:
        """Run every strategy once, with no budget: the out-of-band entry
        point. Touches no state."""
        return self._pipeline.compress(messages)

    def close(self) -> None:
        """Release what this plugin opened (after the memory route's model,
        if it is still loading, has loaded): the state store's connections,
        the offload store its config's ``store:`` section built (one passed
        as ``store`` stays open), its hold on the shared ``stores.memory``
        store (the last plugin of a config closes it; a ``memory_store``
        passed in stays open, its giver's to close), and finish the trace.
        ``with plugin:`` calls it at the end of the block; calling it again
        does nothing more."""
        loading, self._loading = self._loading, None
        if loading is not None:
            loading.join()  # a model still loading is not left running
        close = getattr(getattr(self, "_states", None), "close", None)
        if callable(close):
            close()
        if self._shared is not None:
            settings, self._shared = self._shared, None
            SHARED_STORES.release(settings)
        built, self._built_store = self._built_store, None
        close_built = getattr(built, "close", None)
        if callable(close_built):
            close_built()
        if self._tracer is not None:
            self._tracer.close()

    def __enter__(self) -> MemoryPlugin:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
