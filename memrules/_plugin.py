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
4. **Render the working graph** after the first system message. The graph
   arrives with :mod:`memrules.graph`; until then the state has no graph and
   this step returns the messages as they are.

The warning is appended before compaction, so the pipeline sees it (in the
seed's example it is one of the nine messages the window trims to four);
observers see the usage measured before it.

**One warning per conversation.** The seed makes the warning one-shot by its
marker: a request that already holds a message starting with the marker gets
no other. A client that drops the warning from its history (or never keeps
the prompt it sent, as most don't) would then be warned again on every
request, so the state also remembers :attr:`PluginState.warned`. A warning is
appended only when neither says it has been given; either one seen sets
``warned``. One plugin serves one conversation; :meth:`MemoryPlugin.reset`
starts the next.

>>> from memrules._messages import message
>>> config = MemoryConfig(context_window_tokens=10, max_fraction=None, warn_fraction=0.5)
>>> plugin = MemoryPlugin(config)
>>> sent = plugin.on_request(Request(messages=(message("user", "one two three four five"),)))
>>> [m.role for m in sent.messages], plugin.state.warned
(['user', 'system'], True)
>>> len(plugin.on_request(Request(messages=(message("user", "one two three four five"),))).messages)
1
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from memrules._adapters import from_openai, to_openai
from memrules._budget import ContextWindowResolver
from memrules._config import MemoryConfig
from memrules._errors import ConfigError, MessageFormatError, ObserverError
from memrules._messages import Conversation, Message, message
from memrules._pipeline import Pipeline, as_conversation
from memrules._report import Compaction, CompressionReport
from memrules._tokens import TokenCounter
from memrules._usage import ContextUsage, ContextUsageObserver
from memrules.seams import Seams, Summarizer, VectorStore

__all__ = [
    "MemoryPlugin",
    "PluginState",
    "Request",
    "StepResult",
    "has_warning",
    "measure",
    "render_graph",
    "step",
    "warning_message",
]


@attrs.frozen(kw_only=True, slots=True)
class PluginState:
    """What the plugin carries from one request to the next.

    ``warned``: the conversation has had its context warning, because the
    plugin appended it or a request arrived already holding it. It never goes
    back to False (but :meth:`MemoryPlugin.reset`, for a new conversation).

    ``graph``: the working graph rendered at step 4. The graph is not built
    yet (:mod:`memrules.graph`), so the only value it can hold is None.
    """

    warned: bool = False
    graph: None = None


@attrs.frozen(kw_only=True, slots=True)
class Request:
    """A chat request as the hook sees it: the messages, and the model they go
    to (which the :class:`~memrules._budget.ContextWindowResolver` is asked
    about). Building one checks that every message is a
    :class:`~memrules._messages.Message`."""

    messages: Conversation = attrs.field(converter=as_conversation)
    model: str | None = None

    @classmethod
    def from_openai(cls, body: Mapping[str, Any]) -> Request:
        """The request in an OpenAI chat-completions body (parsed JSON): its
        ``messages`` and ``model``. Raises
        :class:`~memrules._errors.MessageFormatError` for malformed input."""
        model = body.get("model")
        if model is not None and not isinstance(model, str):
            msg = f"expected a string, got {type(model).__name__}"
            raise MessageFormatError(msg, field="model")
        messages: Any = body.get("messages")  # from_openai names what is wrong with it
        return cls(messages=from_openai(messages), model=model)

    def to_openai(self) -> list[dict[str, Any]]:
        """The messages as OpenAI chat-completions messages, ready for JSON."""
        return to_openai(self.messages)


@attrs.frozen(kw_only=True, slots=True)
class StepResult:
    """What one request went through.

    ``state`` is the state for the next request (the same object when nothing
    changed), ``request`` the request to send (the same object when nothing
    changed), ``usage`` the reading the observers got, ``report`` what the
    pipeline did, and ``warned`` whether this step appended the warning.
    """

    state: PluginState
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


def render_graph(graph: None, messages: Conversation) -> Conversation:
    """Step 4: put the working graph in a system message after the first
    system message. There is no graph yet (``graph`` can only be None), so
    the messages come back unchanged, the same tuple."""
    return messages


def step(
    state: PluginState,
    request: Request,
    *,
    pipeline: Pipeline,
    observers: Iterable[ContextUsageObserver],
    resolver: ContextWindowResolver | None,
) -> StepResult:
    """Run one request through the four steps (see the module docs); pure but
    for what the observers and the pipeline's seams do.

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

    compaction = pipeline.apply(messages, budget=pipeline.budget(usage.window))
    messages = render_graph(state.graph, compaction.messages)

    if messages is not request.messages:
        request = attrs.evolve(request, messages=messages)
    return StepResult(
        state=state, request=request, report=compaction.report, usage=usage, warned=warn
    )


class _AtomicRef:
    """One :class:`PluginState` reference, replaced only under its lock."""

    def __init__(self, value: PluginState) -> None:
        self._value = value
        self._lock = threading.Lock()

    def get(self) -> PluginState:
        return self._value

    def update(self, change: Callable[[PluginState], PluginState]) -> PluginState:
        """Replace the value with ``change(value)``, atomically; returns it."""
        with self._lock:
            self._value = change(self._value)
            return self._value


class MemoryPlugin:
    """The stateful shell: holds the pipeline and the :class:`PluginState`,
    and runs :func:`step` for each request.

    Requests to one plugin run one at a time, which is what makes the
    warning exactly one-shot when requests arrive concurrently; use one
    plugin per conversation so that conversations do not wait for each
    other. The state sits in one reference that every write replaces under
    a lock, so writers that do not wait for a request (the graph's, when it
    comes) lose nothing.

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
    ) -> None:
        self._pipeline = Pipeline.from_config(
            config, seams=Seams(summarizer=summarizer, store=store), counter=counter
        )
        self._state = _AtomicRef(PluginState())
        self._request_lock = threading.Lock()
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

    @property
    def state(self) -> PluginState:
        """The state the next request starts from."""
        return self._state.get()

    @property
    def last_result(self) -> StepResult | None:
        """What the most recent successful request went through, if any
        (see :meth:`handle` for the result of one request)."""
        return self._last

    @property
    def last_report(self) -> CompressionReport | None:
        return None if self._last is None else self._last.report

    @property
    def last_usage(self) -> ContextUsage | None:
        return None if self._last is None else self._last.usage

    def on_request(self, request: Request) -> Request:
        """Run ``request`` through the four steps and return the request to
        send (``request`` itself when nothing changed). On an error the state
        and :attr:`last_result` are as they were."""
        return self.handle(request).request

    def handle(self, request: Request) -> StepResult:
        """:meth:`on_request`, returning everything the request went through:
        the request to send, the usage, the report, whether it warned. Unlike
        :attr:`last_result`, this is the answer for this very request when
        others run concurrently."""
        with self._request_lock:
            state = self._state.get()
            result = step(
                state,
                request,
                pipeline=self._pipeline,
                observers=self.config.observers,
                resolver=self.config.context_window_resolver,
            )
            if result.state is not state:
                # step changes only ``warned``, False to True; a graph writer
                # may have replaced the state meanwhile, so apply just that.
                self._state.update(_set_warned)
            self._last = result
        return result

    def on_openai_request(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`on_request` for an OpenAI chat-completions body: returns a
        new body with the new ``messages`` and every other key as it was."""
        sent = self.on_request(Request.from_openai(body))
        return {**body, "messages": sent.to_openai()}

    def reset(self) -> None:
        """Start a new conversation: forget that the warning was given. Waits
        for a request in progress."""
        with self._request_lock:
            self._state.update(lambda state: attrs.evolve(state, warned=False))

    def count_tokens(self, messages: Iterable[Message]) -> int:
        """Tokens of ``messages`` as step 1 counts them."""
        return self._pipeline.count(messages)

    def compress(self, messages: Iterable[Message]) -> Compaction:
        """Run every strategy once, with no budget: the out-of-band entry
        point. Touches no state."""
        return self._pipeline.compress(messages)


def _set_warned(state: PluginState) -> PluginState:
    return state if state.warned else attrs.evolve(state, warned=True)
