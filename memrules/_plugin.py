"""The request hook: :class:`MemoryPlugin`, a thin shell around a pure :func:`step`.

Every request goes through the seed's four steps, in order:

1. **Measure.** Count the request's tokens and hand one :class:`ContextUsage`
   to every observer. The window is the resolver's answer for the request's
   model when it gives one, else ``config.context_window_tokens``. An observer
   that raises fails the request with :class:`~memrules._errors.ObserverError`
   before anything has changed.
2. **Warn, once.** When ``warn_fraction`` is set and the usage reaches it,
   append one system message that starts with ``config.warning_marker``.
3. **Compact.** Resolve the budget (``max_fraction`` scales the window of
   step 1) and run the pipeline; with no trigger nothing is compacted.

The warning is appended before compaction, so the pipeline sees it and its
tokens count toward the trigger: the budget is about what is sent, and the
warning is sent (in the seed's example it is one of the nine messages the
window trims to four). Observers see the usage measured before it.

**One warning per conversation.** The seed makes the warning one-shot by its
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
without an id share one conversation, ``None``. The plugin keeps the state
of at most ``max_conversations`` conversations (10,000 by default); past
that, the least recently seen conversation that has no request in progress
is forgotten (its next request starts afresh, as after :meth:`reset`).
Requests of one conversation run one at a time, which makes the warning
exactly one-shot under concurrency; different conversations never wait for
each other.

>>> from memrules._messages import message
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

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from memrules._adapters import from_openai, to_openai
from memrules._budget import ContextWindowResolver
from memrules._config import MemoryConfig
from memrules._errors import ConfigError, MessageFormatError, ObserverError
from memrules._messages import Conversation, Message, message
from memrules._pipeline import Pipeline, as_conversation
from memrules._report import CompressionReport, CompressionResult
from memrules._tokens import TokenCounter
from memrules._usage import ContextUsage, ContextUsageObserver
from memrules.seams import Seams, Summarizer, VectorStore

__all__ = [
    "DEFAULT_MAX_CONVERSATIONS",
    "ConversationState",
    "MemoryPlugin",
    "Request",
    "StepResult",
    "conversation_id_from_metadata",
    "has_warning",
    "measure",
    "step",
    "warning_message",
]

DEFAULT_MAX_CONVERSATIONS = 10_000


@attrs.frozen(kw_only=True, slots=True)
class ConversationState:
    """What the plugin carries from one request of a conversation to the next.

    ``warned``: the conversation has had its context warning, because the
    plugin appended it or a request arrived already holding it. It never goes
    back to False (but :meth:`MemoryPlugin.reset`).
    """

    warned: bool = False


_FRESH = ConversationState()


def _conversation_id(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        msg = f"conversation_id={value!r} must be a string or None"
        raise MessageFormatError(msg, field="conversation_id")
    return value


def conversation_id_from_metadata(body: Mapping[str, Any]) -> str | None:
    """The default way to find the conversation of an OpenAI body: the
    string ``metadata.conversation_id``, else None."""
    metadata = body.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    found = metadata.get("conversation_id")
    return found if isinstance(found, str) else None


@attrs.frozen(kw_only=True, slots=True)
class Request:
    """A chat request as the hook sees it: the messages, the model they go
    to (which the :class:`~memrules._budget.ContextWindowResolver` is asked
    about) and the conversation they belong to (None: the plugin's default
    conversation). Building one checks that every message is a
    :class:`~memrules._messages.Message`."""

    messages: Conversation = attrs.field(converter=as_conversation)
    model: str | None = None
    conversation_id: str | None = attrs.field(default=None, converter=_conversation_id)

    @classmethod
    def from_openai(
        cls,
        body: Mapping[str, Any],
        *,
        conversation_id: str | None = None,
        conversation_id_of: Callable[[Mapping[str, Any]], str | None] = (
            conversation_id_from_metadata
        ),
    ) -> Request:
        """The request in an OpenAI chat-completions body (parsed JSON): its
        ``messages`` and ``model``, and the conversation ``conversation_id``
        names, else the one ``conversation_id_of(body)`` finds (by default
        ``metadata.conversation_id``). Raises
        :class:`~memrules._errors.MessageFormatError` for malformed input."""
        if not isinstance(body, Mapping):
            msg = f"expected a request object, got {type(body).__name__}"
            raise MessageFormatError(msg)
        model = body.get("model")
        if model is not None and not isinstance(model, str):
            msg = f"expected a string, got {type(model).__name__}"
            raise MessageFormatError(msg, field="model")
        messages: Any = body.get("messages")  # from_openai names what is wrong with it
        if conversation_id is None:
            conversation_id = conversation_id_of(body)
        return cls(messages=from_openai(messages), model=model, conversation_id=conversation_id)

    def to_openai(self) -> list[dict[str, Any]]:
        """The messages as OpenAI chat-completions messages, ready for JSON."""
        return to_openai(self.messages)


@attrs.frozen(kw_only=True, slots=True)
class StepResult:
    """What one request went through.

    ``state`` is the conversation's state for its next request (the same
    object when nothing changed), ``request`` the request to send (the same object when nothing
    changed), ``usage`` the reading the observers got, ``report`` what the
    pipeline did, and ``warned`` whether this step appended the warning.
    """

    state: ConversationState
    request: Request
    report: CompressionReport
    usage: ContextUsage
    warned: bool

    @property
    def compacted(self) -> bool:
        """Whether the pipeline changed the messages."""
        return self.report.compacted


def measure(
    request: Request, *, pipeline: Pipeline, resolver: ContextWindowResolver | None
) -> ContextUsage:
    """Step 1's reading: the request's tokens under ``pipeline``'s counter,
    against the resolver's window for ``request.model`` when it gives one,
    else ``context_window_tokens``.

    Raises :class:`~memrules._errors.ConfigError` when the resolver answers
    something other than None or a whole number of at least 1: a zero window
    would make every request over budget.
    """
    tokens = pipeline.count(request.messages)
    resolved = None if resolver is None else resolver(request.model)
    if resolved is not None and (
        isinstance(resolved, bool) or not isinstance(resolved, int) or resolved < 1
    ):
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


def _notify(observers: Iterable[ContextUsageObserver], usage: ContextUsage) -> None:
    for observer in observers:
        try:
            observer(usage)
        except Exception as exc:
            msg = f"context usage observer {observer!r} failed: {type(exc).__name__}: {exc}"
            raise ObserverError(msg) from exc


def has_warning(messages: Conversation, marker: str) -> bool:
    """Whether any message's text starts with the warning ``marker``."""
    return any(m.text.startswith(marker) for m in messages)


def warning_message(usage: ContextUsage, marker: str) -> Message:
    """The near-limit warning for ``usage``: a system message starting with
    ``marker``, e.g. ``memrules context warning: this conversation uses 22%
    of a 256-token context window; older messages may be dropped.``"""
    text = (
        f"{marker} this conversation uses {usage.fraction:.0%} of a "
        f"{usage.window}-token context window; older messages may be dropped."
    )
    return message("system", text)


def step(
    state: ConversationState,
    request: Request,
    *,
    pipeline: Pipeline,
    observers: Iterable[ContextUsageObserver],
    resolver: ContextWindowResolver | None,
) -> StepResult:
    """Run one request of a conversation in ``state`` through the steps (see
    the module docs); pure but for what the observers and the pipeline's
    seams do.

    Changes nothing: the new state and request are in the result. An
    observer error raises :class:`~memrules._errors.ObserverError`, chained to
    the cause, before anything else has run.
    """
    config = pipeline.config
    usage = measure(request, pipeline=pipeline, resolver=resolver)
    _notify(observers, usage)

    messages = request.messages
    seen = has_warning(messages, config.warning_marker)
    warn = (
        config.warn_fraction is not None
        and not (state.warned or seen)
        and usage.fraction >= config.warn_fraction
    )
    if warn:
        messages = (*messages, warning_message(usage, config.warning_marker))
    if (warn or seen) and not state.warned:
        state = attrs.evolve(state, warned=True)

    compaction = pipeline.apply(
        messages, budget=pipeline.budget(usage.window), conversation_id=request.conversation_id
    )
    messages = compaction.messages

    if messages is not request.messages:
        request = attrs.evolve(request, messages=messages)
    return StepResult(
        state=state, request=request, report=compaction.report, usage=usage, warned=warn
    )


class _Conversation:
    """One conversation's state, and the lock its requests take in turn."""

    __slots__ = ("lock", "state")

    def __init__(self) -> None:
        self.state = _FRESH
        self.lock = threading.Lock()


class _Conversations:
    """The plugin's table of conversations, at most ``cap`` of them, least
    recently seen first. Owned by one plugin; the table's own lock guards
    every change to it (never held while a request runs)."""

    __slots__ = ("_lock", "_table", "cap")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._table: OrderedDict[str | None, _Conversation] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, conversation_id: str | None) -> _Conversation:
        """The conversation's entry, made if new; marks it recently seen and
        forgets the least recently seen idle ones past the cap."""
        with self._lock:
            entry = self._table.get(conversation_id)
            if entry is None:
                entry = self._table[conversation_id] = _Conversation()
                self._evict()
            else:
                self._table.move_to_end(conversation_id)
            return entry

    def peek(self, conversation_id: str | None) -> ConversationState:
        entry = self._table.get(conversation_id)
        return _FRESH if entry is None else entry.state

    def forget(self, conversation_id: str | None) -> None:
        with self._lock:
            self._table.pop(conversation_id, None)

    def _evict(self) -> None:
        excess = len(self._table) - self.cap
        if excess <= 0:
            return
        idle = [cid for cid, e in self._table.items() if not e.lock.locked()][:excess]
        for cid in idle:
            del self._table[cid]

    def __len__(self) -> int:
        return len(self._table)


class MemoryPlugin:
    """The stateful shell: holds the pipeline and each conversation's
    :class:`ConversationState`, and runs :func:`step` for each request.

    Requests of one conversation run one at a time, which is what makes the
    warning exactly one-shot when they arrive concurrently; requests of
    different conversations run in parallel (see the module docs).
    :meth:`count_tokens` and :meth:`compress` touch no state and are safe to
    call from any thread at any time.

    Raises :class:`~memrules._errors.EncodingError` when the config's encoder
    cannot be loaded (the config validated itself when it was built).
    """

    def __init__(
        self,
        config: MemoryConfig,
        *,
        summarizer: Summarizer | None = None,
        store: VectorStore | None = None,
        counter: TokenCounter | None = None,
        max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
        conversation_id_of: Callable[[Mapping[str, Any]], str | None] = (
            conversation_id_from_metadata
        ),
    ) -> None:
        if (
            isinstance(max_conversations, bool)
            or not isinstance(max_conversations, int)
            or max_conversations < 1
        ):
            msg = f"max_conversations={max_conversations!r} must be a whole number of at least 1"
            raise ConfigError.single(msg, yaml_path="max_conversations")
        self._pipeline = Pipeline.from_config(
            config, seams=Seams(summarizer=summarizer, store=store), counter=counter
        )
        self._conversations = _Conversations(max_conversations)
        self._conversation_id_of = conversation_id_of
        self._last: StepResult | None = None

    @classmethod
    def with_extensions(
        cls, config: MemoryConfig, summarizer: Summarizer | None, store: VectorStore | None
    ) -> MemoryPlugin:
        """A plugin whose ``summarize`` and ``offload`` strategies have the
        seams they need (each may be None)."""
        return cls(config, summarizer=summarizer, store=store)

    @property
    def config(self) -> MemoryConfig:
        return self._pipeline.config

    @property
    def pipeline(self) -> Pipeline:
        return self._pipeline

    def state(self, conversation_id: str | None = None) -> ConversationState:
        """The state the conversation's next request starts from."""
        return self._conversations.peek(conversation_id)

    @property
    def conversations(self) -> int:
        """How many conversations the plugin holds state for."""
        return len(self._conversations)

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

    def handle(self, request: Request) -> StepResult:
        """:meth:`on_request`, returning everything the request went through:
        the request to send, the usage, the report, whether it warned. Unlike
        :attr:`last_result`, this is the answer for this very request when
        others run concurrently."""
        entry = self._conversations.get(request.conversation_id)
        with entry.lock:
            result = step(
                entry.state,
                request,
                pipeline=self._pipeline,
                observers=self.config.observers,
                resolver=self.config.context_window_resolver,
            )
            entry.state = result.state
            self._last = result
        return result

    def on_openai_request(
        self, body: Mapping[str, Any], *, conversation_id: str | None = None
    ) -> dict[str, Any]:
        """:meth:`on_request` for an OpenAI chat-completions body: returns a
        new body with the new ``messages`` and every other key as it was.
        The conversation is ``conversation_id``, else the one the plugin's
        ``conversation_id_of`` finds in the body."""
        request = Request.from_openai(
            body, conversation_id=conversation_id, conversation_id_of=self._conversation_id_of
        )
        sent = self.on_request(request)
        return {**body, "messages": sent.to_openai()}

    def reset(self, conversation_id: str | None = None) -> None:
        """Forget a conversation: its next request starts afresh (the
        warning may be given again)."""
        self._conversations.forget(conversation_id)

    def count_tokens(self, messages: Iterable[Message]) -> int:
        """Tokens of ``messages`` as step 1 counts them."""
        return self._pipeline.count(messages)

    def compress(self, messages: Iterable[Message]) -> CompressionResult:
        """Run every strategy once, with no budget: the out-of-band entry
        point. Touches no state."""
        return self._pipeline.compress(messages)
