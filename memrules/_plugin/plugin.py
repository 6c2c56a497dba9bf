"""The request hook: `MemoryPlugin`, a thin shell around the pure `step`
(whose module says what each stage does), handing each job to its own
object: the driver of a request, sync and async, and of bodies of every
format (`hook`, `body_formats`); each conversation's state and graph
(`graph_ops`); retrieval memory (`memory_endpoints`); what it opened and
closes (`opening`). Requests without a conversation id share one, ``None``.

>>> from memrules import message
>>> config = MemoryConfig(context_window_tokens=10, max_fraction=None, warn_fraction=0.5)
>>> plugin = MemoryPlugin(config)
>>> ask = Request(messages=(message("user", "one two three four five"),))
>>> [m.role for m in plugin.on_request(ask).messages], plugin.state().warned
(['user', 'system'], True)
>>> len(plugin.on_request(ask).messages)
1
>>> len(plugin.on_request(Request(messages=ask.messages, conversation_id="other")).messages)
2
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Unpack

from memrules._adapters.context_editing import EditPlan
from memrules._config.load import DEFAULT_ROUTE, MemoryConfig, PipelineConfig
from memrules._core.messages import Message
from memrules._core.report import CompressionReport, CompressionResult, OverBudgetMode
from memrules._core.seam_protocols import Summarizer, VectorStore
from memrules._counting.tokens import TokenCounter
from memrules._counting.usage import ContextUsage
from memrules._plugin.body_formats import ANTHROPIC, OPENAI_CHAT, RESPONSES
from memrules._plugin.opening import Opened, open_hook
from memrules._plugin.request import (
    Request,
    StepResult,
    Whose,
    conversation_id_from_metadata,
    whose_of,
)
from memrules._plugin.step import step
from memrules._runtime.pipeline import Pipeline
from memrules.graph.memory_graph import MemoryGraph
from memrules.graph.merge import MergePolicy, MergeReport
from memrules.graph.snapshot import GraphImportReport, GraphSnapshot
from memrules.memory.autostore import StoreOutcome
from memrules.memory.metrics import RetrievalObserver
from memrules.memory.service import ListedRecord, RetrievalService
from memrules.state.memory import DEFAULT_MAX_CONVERSATIONS
from memrules.state.model import ConversationState, StateRecord, StateStore

__all__ = ["ConversationState", "MemoryPlugin", "Request", "StepResult", "step"]


class MemoryPlugin:
    """The stateful shell: holds the pipeline and the
    `StateStore` of each conversation's
    `ConversationState`, and runs `step` for each request.

    Requests of one conversation run one at a time (in this process), which
    makes the warning exactly one-shot; different conversations run in
    parallel. A request writes back what it changed as a function of the
    state then current, so a `merge_graph` in between is never lost;
    a state store that is down fails the request with `StateStoreError`
    before anything is written. `count_tokens` and `compress`
    touch no state; the graph methods are atomic.

    ``state_store`` replaces the store the config names (this process's
    memory by default, with at most ``max_conversations`` conversations).
    Raises `EncodingError` when the config's encoder cannot be loaded.

    ``trace`` (a file path) records every request (and `on_response`)
    to a trace that ``memrules replay`` reproduces without any seam.

    On a route with retrieval memory (``memory`` enabled), ``memory_store``
    replaces the store ``stores.memory`` opens (shared by every plugin of
    the config), ``memory_observers`` get its events, and ``clock`` gives
    the time memories are stamped and decayed by. The embedding model
    begins loading here, in a background thread; a model that cannot load
    says so in the retrieval's ``error``. A memory collection its embedder
    cannot use raises `ConfigError`; while the store is down, requests go
    on without memory.

    ``edits_in_place=False`` is for a caller that hands the body hooks its
    own message dicts again each request and never edits one it has handed
    over: a request then pays for its new dicts only.

    ``over_budget`` replaces the config's ``over_budget``: what a request
    that compaction cannot bring within its budget gets (``"send"``,
    ``"warn"``, ``"raise"``; see `OverBudgetError`). Under ``"raise"`` the
    request fails before anything is written, like an observer error.
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
        self._opened = Opened()  # what close() closes, from here on
        self._hook = open_hook(
            config,
            self._opened,
            summarizer=summarizer,
            store=store,
            counter=counter,
            max_conversations=max_conversations,
            conversation_id_of=conversation_id_of,
            state_store=state_store,
            trace=trace,
            memory_store=memory_store,
            memory_observers=memory_observers,
            clock=clock,
            edits_in_place=edits_in_place,
            over_budget=over_budget,
        )

    @classmethod
    def from_config(
        cls, config: MemoryConfig, *, route: str = DEFAULT_ROUTE, **options: Any
    ) -> MemoryPlugin:
        """A ready plugin for route ``route`` of ``config`` (``default``: the
        file's top level), with its own pipeline, state and memory (the
        plugins of one config share its ``stores.memory`` store). Make one
        per route at start-up and close it when done (``with
        MemoryPlugin.from_config(config, route="support") as plugin:``).
        ``options`` go to `MemoryPlugin`. Raises `ConfigError` for an
        unknown route, or a memory collection its embedder cannot use."""
        return cls(config.route_config(route), **options)

    @property
    def config(self) -> MemoryConfig:
        return self._hook.config

    @property
    def pipeline(self) -> Pipeline:
        return self._hook.pipeline

    @property
    def state_store(self) -> StateStore:
        """Where the conversations' state lives."""
        return self._hook.graphs.states

    @property
    def conversations(self) -> int:
        """How many conversations the plugin's store holds state for."""
        return len(self._hook.graphs.states)

    @property
    def last_result(self) -> StepResult | None:
        """What the most recent successful request (of any conversation)
        went through, if any; `handle` gives the result of one request."""
        return self._hook.last

    @property
    def last_report(self) -> CompressionReport | None:
        return None if self._hook.last is None else self._hook.last.report

    @property
    def last_usage(self) -> ContextUsage | None:
        return None if self._hook.last is None else self._hook.last.usage

    @property
    def last_edits(self) -> tuple[EditPlan, ...]:
        """What the config's ``provider_editing`` took from the most recent
        Responses or Anthropic body: what memrules cleared itself, and what
        the provider will clear (tool uses, thinking blocks, tokens)."""
        return self._hook.last_edits

    def on_request(self, request: Request) -> Request:
        """Run ``request`` through the steps and return the request to send
        (``request`` itself when nothing changed). On an error the state
        and `last_result` are as they were."""
        return self.handle(request).request

    def handle(self, request: Request, *, now: float | None = None) -> StepResult:
        """`on_request`, returning everything the request went through:
        the request to send, the usage, the report, whether it warned, the
        graph step, what memory found (for this very request when others run
        concurrently). ``now`` (seconds since the epoch) is the time
        memories are decayed by; the plugin's clock by default."""
        return self._hook.handle(request, now)

    def _handle(self, request: Request, now: float | None) -> StepResult:
        """`handle` without the trace line (a replay runs it under its own log)."""
        return self._hook.run(request, now)

    def on_openai_request(self, body: Mapping[str, Any], **whose: Unpack[Whose]) -> dict[str, Any]:
        """`on_request` for an OpenAI chat-completions body: returns a
        new body with the new ``messages`` and every other key as it was.
        The conversation is ``conversation_id``, else the one the plugin's
        ``conversation_id_of`` finds in the body; the user and tenant are
        ``user`` and ``tenant``, else the body's ``metadata.user_id`` and
        ``metadata.tenant_id`` (give them from your authentication when the
        body comes from an untrusted client).

        Converting costs what the conversation added since its last request,
        and so does converting back: the messages the request keeps are sent
        as the body's own objects; only new or changed ones (the warning,
        the graph, memories) are converted."""
        return self._hook.on_body(OPENAI_CHAT, body, whose_of(whose))

    def on_responses_request(
        self, body: Mapping[str, Any], **whose: Unpack[Whose]
    ) -> dict[str, Any]:
        """`on_request` for an OpenAI Responses API body (``input``,
        ``instructions``, ``model``): returns a new body with the compacted
        ``input`` and every other key as it was; the instructions are the
        leading system message, never compacted away. The conversation,
        user and tenant are found, and converting costs, as in
        `on_openai_request`."""
        return self._hook.on_body(RESPONSES, body, whose_of(whose))

    def on_anthropic_request(
        self, body: Mapping[str, Any], **whose: Unpack[Whose]
    ) -> dict[str, Any]:
        """`on_request` for an Anthropic Messages API body. The new body
        has the compacted ``system`` and ``messages``, every other key as it
        was, and the config's ``provider_editing`` as ``context_management``
        (send the ``anthropic-beta: context-management-2025-06-27`` header
        with it). The conversation, user and tenant are found, and
        converting costs, as in `on_openai_request`."""
        return self._hook.on_body(ANTHROPIC, body, whose_of(whose))

    async def on_request_async(self, request: Request) -> Request:
        """`on_request` without blocking the event loop (see `handle_async`)."""
        return (await self.handle_async(request)).request

    async def handle_async(self, request: Request, *, now: float | None = None) -> StepResult:
        """`handle`, awaiting the seams instead of blocking on them:
        the same steps, the same result, the same state written. The
        summarizer and store, the graph extractor and the context window
        resolver are awaited (a seam's coroutine method when it has one,
        else its blocking call in a worker thread); retrieval memory asks
        its store in a worker thread. With ``trace=``, the request runs as
        `handle` does, in a worker thread."""
        return await self._hook.handle_async(request, now)

    async def on_openai_request_async(
        self, body: Mapping[str, Any], **whose: Unpack[Whose]
    ) -> dict[str, Any]:
        """`on_openai_request`, awaiting the seams (see `handle_async`)."""
        return await self._hook.on_body_async(OPENAI_CHAT, body, whose_of(whose))

    async def on_responses_request_async(
        self, body: Mapping[str, Any], **whose: Unpack[Whose]
    ) -> dict[str, Any]:
        """`on_responses_request`, awaiting the seams (see `handle_async`)."""
        return await self._hook.on_body_async(RESPONSES, body, whose_of(whose))

    async def on_anthropic_request_async(
        self, body: Mapping[str, Any], **whose: Unpack[Whose]
    ) -> dict[str, Any]:
        """`on_anthropic_request`, awaiting the seams (see `handle_async`)."""
        return await self._hook.on_body_async(ANTHROPIC, body, whose_of(whose))

    @property
    def memory(self) -> RetrievalService | None:
        """The route's retrieval memory (None when it has none)."""
        return self._hook.memory.service

    def on_response(
        self, request: Request, reply: Message | str, *, now: float | None = None
    ) -> StoreOutcome:
        """After the model answered ``request`` (as it arrived, or as sent)
        with ``reply``: keep the completed turn as one memory for the
        request's user and tenant, stamped ``now`` (the plugin's clock by
        default), when the route auto-stores. Never raises: the outcome says
        what happened (``stored``, ``duplicate``, ``skipped`` and why,
        ``error``, ``disabled``)."""
        return self._hook.memory.on_response(request, reply, now)

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
        """`on_response` for an OpenAI chat-completions request
        ``body`` and the ``response`` it got (its first choice's message).
        Raises `MessageFormatError` for a response without one."""
        return self._hook.memory.on_openai_response(
            body, response, conversation_id=conversation_id, user=user, tenant=tenant, now=now
        )

    def forget(self, user: str, tenant: str) -> int:
        """Delete every memory of ``user`` and ``tenant`` from the route's
        store, in every generation of its collection (one per embedding
        model it was used with): the right to be forgotten. Returns how many
        there were. Raises `StoreError` when the store fails (call again to
        finish), and `ConfigError` on a route without memory."""
        return self._hook.memory.forget(user, tenant)

    def list_memories(self, user: str, tenant: str) -> tuple[ListedRecord, ...]:
        """Every memory of ``user`` and ``tenant``, oldest first, in every
        generation of the collection (each says which, and whether it is the
        current embedder's). Raises `StoreError` on failure, and
        `ConfigError` on a route without memory."""
        return self._hook.memory.list_memories(user, tenant)

    def record(self, conversation_id: str | None = None) -> StateRecord:
        """The conversation's state and its version in the store."""
        return self._hook.graphs.record(conversation_id)

    def state(self, conversation_id: str | None = None) -> ConversationState:
        """The state the conversation's next request starts from."""
        return self._hook.graphs.state(conversation_id)

    def reset(self, conversation_id: str | None = None) -> None:
        """Forget a conversation: its next request starts afresh (unwarned, no graph)."""
        self._hook.reset(conversation_id)

    def graph(self, conversation_id: str | None = None) -> MemoryGraph:
        """The conversation's working graph (a value: later updates leave it as it is)."""
        return self._hook.graphs.state(conversation_id).graph

    def snapshot(self, conversation_id: str | None = None) -> GraphSnapshot:
        """The conversation's graph as a `GraphSnapshot`."""
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
        return self._hook.graphs.merge(conversation_id, other, policy)

    def replace_graph(self, conversation_id: str | None, graph: MemoryGraph) -> GraphImportReport:
        """Make ``graph`` the conversation's graph, in one atomic store
        update, cut to the plugin's ``graph_limits`` (lowest weight, oldest
        first) when it is bigger; the report names what was cut."""
        return self._hook.graphs.replace(conversation_id, graph)

    def replace_snapshot(
        self, conversation_id: str | None, snapshot: GraphSnapshot
    ) -> GraphImportReport:
        """Make the graph ``snapshot`` describes the conversation's graph, in
        one atomic store update. An invalid snapshot (a duplicate id, a
        relationship whose endpoint is missing) raises `GraphError` naming
        the ids and changes nothing; one over the cap is cut as it says."""
        return self._hook.graphs.replace_snapshot(conversation_id, snapshot)

    def count_tokens(self, messages: Iterable[Message]) -> int:
        """Tokens of ``messages`` as step 1 counts them."""
        return self._hook.pipeline.count(messages)

    def compress(self, messages: Iterable[Message]) -> CompressionResult:
        """Run every strategy once, with no budget (out of band); touches no state."""
        return self._hook.pipeline.compress(messages)

    def close(self) -> None:
        """Release what this plugin opened (after the memory route's model,
        if it is still loading, has loaded): the state store's connections,
        the offload store its ``store:`` section built, its hold on the
        shared ``stores.memory`` store (a ``store`` or ``memory_store``
        passed in stays open), and the trace. ``with plugin:`` calls it;
        calling it again does nothing more."""
        self._opened.close()

    def __enter__(self) -> MemoryPlugin:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
