"""The pure step: one request of a conversation through measure, warn,
compact, the working graph and retrieval memory, as named stages over
values. The shell (`MemoryPlugin`) reads the state, runs `step` and writes
back what `commit` says changed.

Every request goes through five stages, in order:

1. **Measure.** Count the request's tokens and hand one `ContextUsage`
   to every observer. The window is the resolver's answer for the request's
   model when it gives one, else ``config.context_window_tokens``. An observer
   that raises fails the request with `ObserverError`
   before anything has changed.
2. **Warn, once.** When ``warn_fraction`` is set and the usage reaches it,
   append one system message that starts with ``config.warning_marker``.
3. **Compact.** Resolve the budget (``max_fraction`` scales the window of
   step 1) and run the pipeline; with no trigger nothing is compacted.
4. **The working graph.** With ``graph_extractor`` set, merge (``union``)
   the graph it reads from the request as it arrived into the
   conversation's graph. With ``graph_context`` set, render the graph into
   one system message right after the first system message (see
   `memrules.graph.render`): after compaction, so compaction never
   deletes it and its tokens do not count against the request that
   triggered compaction. A graph message the request already holds (the
   plugin's own, from an earlier request the client kept) is stale: it is
   taken out before step 1, so it counts for nothing, and the new one takes
   its place; an empty graph leaves none. `StepResult.graph_tokens`
   is the message's token cost. An extractor that raises fails nothing:
   the error is in `StepResult.graph_error` and the graph is left as
   it was, as a failing strategy is recorded and skipped.

5. **Retrieval memory.** On a route whose config has ``memory`` enabled
   (see `memrules.memory`), the shell asks the shared store with the
   latest user message, within the request's ``user`` and ``tenant`` (a
   request without both gets no memory; `StepResult.memory` says
   why), before the steps run; `step` passes what it found through
   the reflection gate, as of ``now``, and puts one system message right
   after the first system message, after compaction (like the graph's,
   its tokens, `StepResult.memory_tokens`, are not in the budget of
   the request). A memory message the request already holds is stale and
   is taken out before step 1. A store that fails costs the request its
   memory, never the request. After the model answers,
   `MemoryPlugin.on_response` keeps the completed turn
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
given (`ConversationState.warned`). A warning is appended only when
neither says it has been given; either one seen sets ``warned``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from memrules._config.load import MemoryConfig, service_config
from memrules._core.budget import Budget, ContextWindowResolver
from memrules._core.checks import is_whole
from memrules._core.errors import ConfigError, ObserverError
from memrules._core.messages import Conversation, Message, message
from memrules._core.prompt_cache import SentRequest
from memrules._core.report import CompressionResult
from memrules._counting.measure import Measure
from memrules._counting.usage import ContextUsage, ContextUsageObserver
from memrules._engine.marked import any_marked
from memrules._plugin.request import Request, StepResult
from memrules._runtime.pipeline import Pipeline
from memrules._runtime.prompt_cache import policy_rule
from memrules.graph.memory_graph import MemoryGraph
from memrules.graph.merge import MergePolicy, MergeReport
from memrules.graph.render import (
    GraphContext,
    RenderedGraph,
    find_graph_messages,
    insert_graph_message,
    render_graph,
)
from memrules.memory.config import RetrievalStoreConfig
from memrules.memory.gate import reflect, within
from memrules.memory.retrieve import (
    Retrieval,
    RetrievalReport,
    fill,
    insert_memory_message,
    is_memory_message,
    reserved,
    strip_memory_messages,
)
from memrules.state.model import ConversationState

__all__ = ["commit", "has_warning", "measure", "step", "warning_message"]


def measure(
    request: Request,
    *,
    pipeline: Pipeline,
    resolver: ContextWindowResolver | None,
    memo: Measure | None = None,
) -> ContextUsage:
    """Step 1's reading: the request's tokens under ``pipeline``'s counter,
    against the resolver's window for ``request.model`` when it gives one,
    else ``context_window_tokens``.

    Raises `ConfigError` when the resolver answers
    something other than None or a whole number of at least 1: a zero window
    would make every request over budget. ``memo`` is the conversation's
    (`Pipeline.memo`), the pipeline's own by default.
    """
    tokens = pipeline.count(request.messages, memo=memo)
    resolved = None if resolver is None else resolver(request.model)
    if resolved is not None and not is_whole(resolved, 1):
        msg = (
            f"context_window_resolver({request.model!r}) returned {resolved!r}; "
            "return a window of at least 1 token, or None to use context_window_tokens"
        )
        raise ConfigError.single(msg, yaml_path="context_window_resolver")
    return ContextUsage(
        tokens=tokens,
        window=pipeline.config.context_window_tokens if resolved is None else resolved,
        messages=len(request.messages),
        window_resolved=resolved is not None,
    )


def _model_memo(memo: Measure | None, pipeline: Pipeline) -> Measure | None:
    """The conversation's measure for ``pipeline``'s counter (a model's,
    see `Pipeline.for_model`): kept as a note of the conversation's
    own measure ``memo``, made on first use; None without ``memo`` (the
    pipeline's own is used)."""
    if memo is None:
        return None
    found = memo.noted(pipeline.counter)
    if isinstance(found, Measure) and found.counter is pipeline.counter:
        return found
    made = pipeline.measure()
    memo.note(pipeline.counter, made)
    return made


def _notify(observers: Iterable[ContextUsageObserver], usage: ContextUsage) -> None:
    for observer in observers:
        try:
            observer(usage)
        except Exception as exc:
            msg = f"context usage observer {observer!r} failed: {type(exc).__name__}: {exc}"
            raise ObserverError(msg) from exc


def has_warning(messages: Conversation, marker: str, memo: Measure | None = None) -> bool:
    """Whether any message's text starts with the warning ``marker``; with
    ``memo`` (the conversation's), reading only the messages that are new
    since its last request."""
    if memo is None:
        return any(m.text.startswith(marker) for m in messages)
    return any_marked(messages, marker, memo)


def warning_message(usage: ContextUsage, marker: str) -> Message:
    """The near-limit warning for ``usage``: a system message starting with
    ``marker``, e.g. ``memrules context warning: this conversation uses 22%
    of a 256-token context window; older messages may be dropped.``"""
    text = (
        f"{marker} this conversation uses {usage.fraction:.0%} of a "
        f"{usage.window}-token context window; older messages may be dropped."
    )
    return message("system", text)


def _without_graph_messages(
    messages: Conversation, marker: str | None
) -> tuple[Conversation, int | None]:
    """``messages`` without graph messages, and where the first one was."""
    if marker is None:
        return messages, None
    found = find_graph_messages(messages, marker)
    if not found:
        return messages, None
    gone = set(found)
    return tuple(m for i, m in enumerate(messages) if i not in gone), found[0]


def _where(
    old: int | None, before: Conversation, after: Conversation, origin: tuple[int | None, ...]
) -> int | None:
    """Where the stale graph message at input index ``old`` goes in the
    compacted ``after``: just after the last kept message that preceded it."""
    if old is None:
        return None
    if after is before:
        return old
    if len(origin) != len(after):
        return None
    kept = [j for j, i in enumerate(origin) if i is not None and i < old]
    return kept[-1] + 1 if kept else 0


def _extract(
    state: ConversationState, messages: Conversation, pipeline: Pipeline
) -> tuple[ConversationState, MemoryGraph | None, MergeReport | None, str | None]:
    extractor = service_config(pipeline.config).graph_extractor
    if extractor is None:
        return state, None, None, None
    try:
        delta = extractor(messages)
        if not isinstance(delta, MemoryGraph):
            msg = f"returned {type(delta).__name__}, expected a MemoryGraph"
            raise TypeError(msg)
        graph, report = state.graph.merge(delta, MergePolicy.UNION)
    except Exception as exc:
        return state, None, None, f"graph extractor {extractor!r}: {type(exc).__name__}: {exc}"
    if graph is not state.graph:
        state = attrs.evolve(state, graph=graph)
    return state, delta, report, None


def memory_settings(config: MemoryConfig) -> RetrievalStoreConfig | None:
    """The shared memory store's settings, on a route with memory enabled."""
    if config.memory is None or not config.memory.enabled:
        return None
    return config.memory_store


def step(
    state: ConversationState,
    request: Request,
    *,
    pipeline: Pipeline,
    observers: Iterable[ContextUsageObserver],
    resolver: ContextWindowResolver | None,
    memo: Measure | None = None,
    retrieval: Retrieval | None = None,
    now: float | None = None,
    previous: SentRequest | None = None,
) -> StepResult:
    """Run one request of a conversation in ``state`` through the steps (see
    the module docs); pure but for what the observers, the pipeline's seams
    and the graph extractor do. The request is counted for
    ``request.model`` when the config leaves the counter to the model
    (`Pipeline.for_model`). ``memo`` is the conversation's
    (`Pipeline.measure`): it changes what the request costs, never what
    it does, because ``previous`` is always given here (from the
    conversation's state), never taken from the measure.

    ``retrieval`` is what retrieval memory found for the request (the
    shell asks the store; None: nothing was asked), and ``now`` the time
    (seconds since the epoch) the gate decays memories by (None: no decay):
    given both, a replay injects the same bytes.

    On a route with a ``cache:`` section, ``previous`` is the
    conversation's previous request (the last result's ``sent``) and
    ``now`` this one's time: the pipeline measures the prompt cache by the
    section's rule for ``request.model`` and may send what it sent before
    plus the new messages (see `CachePolicy`).
    The measure is of what the pipeline sends, before the graph and memory
    messages go in.

    Changes nothing: the new state and request are in the result. An
    observer error raises `ObserverError`, chained to
    the cause, before anything else has run.
    """
    chosen = pipeline.for_model(request.model)
    if chosen is not pipeline:  # counted for the request's model
        memo = _model_memo(memo, chosen)
        pipeline = chosen
    config = service_config(pipeline.config)
    context = config.graph_context
    settings = memory_settings(config)
    received = _received(request.messages, context, settings)
    messages = received.messages
    usage = measure(
        request if messages is request.messages else attrs.evolve(request, messages=messages),
        pipeline=pipeline,
        resolver=resolver,
        memo=memo,
    )
    _notify(observers, usage)
    state, warned_messages, warn = _warn(state, messages, usage, config, memo)
    policy = config.cache
    budget = pipeline.budget(usage.window)
    shared = None if settings is None or config.memory is None else config.memory
    compaction = pipeline.apply(
        warned_messages,
        budget=budget if shared is None else reserved(budget, shared),
        memo=memo,
        conversation_id=request.conversation_id,
        user=request.user,
        tenant=request.tenant,
        previous=None if policy is None else previous,
        cache=None if policy is None else policy_rule(policy, request.model, pipeline.prices),
        now=None if policy is None else now,
        over_budget="send",  # the shell settles it, once per request
    )
    state, delta, merged, graph_error = _extract(state, messages, pipeline)
    sent, rendered, graph_tokens = _render_graph(
        compaction.messages, state, context, received, warned_messages, compaction, pipeline
    )
    sent, memory, memory_tokens = _inject_memory(
        sent, settings, retrieval, received.stale_memory, now, pipeline, budget
    )
    if len(sent) != len(request.messages) or any(
        a is not b for a, b in zip(sent, request.messages, strict=True)
    ):
        request = attrs.evolve(request, messages=sent)
    return StepResult(
        state=state,
        request=request,
        report=compaction.report,
        usage=usage,
        warned=warn,
        delta=delta,
        merge=merged,
        rendered=rendered,
        graph_tokens=graph_tokens,
        graph_error=graph_error,
        memory=memory,
        memory_tokens=memory_tokens,
        sent=compaction.sent,
    )


@attrs.frozen(kw_only=True, slots=True)
class _Received:
    """A request's messages without the plugin's stale messages: ``messages``
    (the same tuple when there were none), where the stale graph message was
    in them (``stale_at``) and the stale graph and memory messages."""

    messages: Conversation
    stale_at: int | None
    stale_graph: Message | None
    stale_memory: Message | None


def _received(
    received: Conversation, context: GraphContext | None, settings: RetrievalStoreConfig | None
) -> _Received:
    """Stage 0: take out the graph and memory messages an earlier request
    left (they are stale: new ones take their place), so they count for
    nothing."""
    messages, stale_at = _without_graph_messages(
        received, None if context is None else context.marker
    )
    stale_graph = None if stale_at is None else received[stale_at]
    stale_memory = None
    if settings is not None:
        marker = settings.marker
        kept = strip_memory_messages(messages, marker)
        if kept is not messages:
            stale_memory = next(m for m in messages if is_memory_message(m, marker))
            if stale_at is not None:
                stale_at -= sum(1 for m in messages[:stale_at] if is_memory_message(m, marker))
            messages = kept
    return _Received(
        messages=messages, stale_at=stale_at, stale_graph=stale_graph, stale_memory=stale_memory
    )


def _warn(
    state: ConversationState,
    messages: Conversation,
    usage: ContextUsage,
    config: MemoryConfig,
    memo: Measure | None = None,
) -> tuple[ConversationState, Conversation, bool]:
    """Stage 2: the state, the messages with the one-shot warning appended
    when the usage reaches ``warn_fraction`` and neither the state nor the
    messages say it was given, and whether it was appended now."""
    seen = has_warning(messages, config.warning_marker, memo)
    warn = (
        config.warn_fraction is not None
        and not (state.warned or seen)
        and usage.fraction >= config.warn_fraction
    )
    if warn:
        messages = (*messages, warning_message(usage, config.warning_marker))
    if (warn or seen) and not state.warned:
        state = attrs.evolve(state, warned=True)
    return state, messages, warn


def _render_graph(
    sent: Conversation,
    state: ConversationState,
    context: GraphContext | None,
    received: _Received,
    compacted_from: Conversation,
    compaction: CompressionResult,
    pipeline: Pipeline,
) -> tuple[Conversation, RenderedGraph | None, int]:
    """Stage 4: ``sent`` with the conversation's graph rendered into it
    (where the stale one was, else after the first system message), the
    rendering, and the graph message's tokens (outside the budget)."""
    if context is None:
        return sent, None, 0
    rendered = render_graph(state.graph, context)
    if rendered is None:
        return sent, None, 0
    old = received.stale_graph
    graph_message = old if old is not None and old.text == rendered.text else rendered.message()
    graph_tokens = pipeline.counter.count(graph_message)  # the message, not a request
    at = _where(received.stale_at, compacted_from, sent, compaction.report.origin)
    return insert_graph_message(sent, graph_message, at), rendered, graph_tokens


def _inject_memory(
    sent: Conversation,
    settings: RetrievalStoreConfig | None,
    retrieval: Retrieval | None,
    stale_memory: Message | None,
    now: float | None,
    pipeline: Pipeline,
    budget: Budget,
) -> tuple[Conversation, RetrievalReport | None, int]:
    """Stage 5: ``sent`` with what the gate kept of ``retrieval`` as one
    memory message, the report, and the message's tokens. Nothing on a
    route without memory or when nothing was asked.

    On a route with ``memory.retrieval_tokens`` the context was compacted
    to `reserved` and the message holds the
    longest run of the gate's memories with which the whole request fits
    ``budget`` (`fill`; those left out are
    reported over budget); otherwise the message goes on top of the
    budget."""
    if settings is None or retrieval is None:
        return sent, None, 0
    gate = reflect(retrieval.memories, settings.reflection, now=now, marker=settings.marker)
    route = service_config(pipeline.config).memory
    if route is not None and route.retrieval_tokens is not None and gate.memories:
        _, chosen = fill(
            sent,
            gate.memories,
            budget=budget,
            count=pipeline.count,
            marker=settings.marker,
            limit=route.retrieval_limit,
        )
        gate = within(gate, chosen, settings.marker)
    memory_tokens = 0
    if gate.text is not None:
        memory_message = (
            stale_memory
            if stale_memory is not None and stale_memory.text == gate.text
            else gate.message()
        )
        assert memory_message is not None
        memory_tokens = pipeline.count((memory_message,))
        sent = insert_memory_message(sent, memory_message)
    return sent, RetrievalReport(retrieval=retrieval, gate=gate, now=now), memory_tokens


def commit(
    loaded: ConversationState, result: StepResult
) -> Callable[[ConversationState], ConversationState]:
    """What a request changed, as a pure function of the state current when
    it is written: the warning given, the extracted graph merged again. When
    nobody wrote in between, the step's own state."""

    def change(current: ConversationState) -> ConversationState:
        if result.state is loaded:
            return current
        if current is loaded:
            return result.state
        new = current
        if result.state.warned and not new.warned:
            new = attrs.evolve(new, warned=True)
        if result.delta is not None:
            graph, _ = new.graph.merge(result.delta, MergePolicy.UNION)
            if graph is not new.graph:
                new = attrs.evolve(new, graph=graph)
        return new

    return change
