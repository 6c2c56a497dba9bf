"""LangChain and LangGraph (the ``langchain`` extra).

`from_langchain` and `to_langchain` convert ``BaseMessage``
lists both ways, losslessly: ``to_langchain(from_langchain(ms)) == ms`` for
LangChain messages (content strings and block lists, tool calls valid and
invalid, ``ToolMessage`` with status and artifact, ids, names, metadata,
chunks), and ``from_langchain(to_langchain(c)) == c`` for memrules
conversations (Anthropic-style tool results inside a user message become
``tool_result`` blocks, as ``langchain-anthropic`` writes them).

Then a pipeline runs before each model call, two ways:

- `PreModelHook`: LangGraph's ``create_react_agent(...,
  pre_model_hook=PreModelHook(pipeline))``;
- `memrules_middleware`: a LangChain v1 agent middleware,
  ``create_agent(..., middleware=[memrules_middleware(pipeline)])``.

Each either leaves the history alone and sends the model the compacted
messages (``mode="llm_input_messages"``, the default), or rewrites the
history with ``RemoveMessage`` updates (``mode="remove_messages"``). Every
tool call the model sees keeps its result and every result its call: the
interpreter's invariants, which the peers' trimming does not keep.
Messages the pipeline kept are handed back as the very objects that came
in; only messages it changed are converted.

The conversation id given to observers (``gen_ai.conversation.id``) is
LangGraph's ``thread_id`` when the run has one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from memrules._adapters.langchain import LangChainConversions, from_langchain, to_langchain
from memrules._core.bounded import BoundedTable
from memrules._core.errors import ConfigError
from memrules._core.public_names import report_public_module
from memrules._core.report import CompressionResult, OverBudgetMode
from memrules._runtime.pipeline import Pipeline
from memrules.integrations._extras import require

__all__ = [
    "MODES",
    "Mode",
    "PreModelHook",
    "compact_langchain",
    "from_langchain",
    "memrules_middleware",
    "to_langchain",
]

_messages: Any = require("langchain_core.messages", "langchain")

Mode = Literal["llm_input_messages", "remove_messages"]
MODES: tuple[Mode, ...] = ("llm_input_messages", "remove_messages")

# --- running a pipeline on LangChain messages ------------------------------------------------


def compact_langchain(
    pipeline: Pipeline,
    messages: Sequence[Any],
    *,
    conversation_id: str | None = None,
    memo: LangChainConversions | None = None,
    over_budget: OverBudgetMode | None = None,
) -> tuple[list[Any], CompressionResult]:
    """``pipeline.apply`` over LangChain messages: the compacted messages and
    the result. Messages the pipeline kept as they were are the very objects
    given; only changed or new ones are converted back. ``over_budget`` is
    `Pipeline.apply`'s."""
    messages = list(messages)
    conversation = from_langchain(messages) if memo is None else memo.convert(messages)
    result = pipeline.apply(conversation, conversation_id=conversation_id, over_budget=over_budget)
    origin = result.report.origin
    out: list[Any] = []
    for j, m in enumerate(result.messages):
        i = origin[j] if j < len(origin) else None
        if i is not None and (conversation[i] is m or conversation[i] == m):
            out.append(messages[i])
        else:
            out.extend(to_langchain((m,)))
    return out, result


def _thread_id(config: Any) -> str | None:
    """LangGraph's ``thread_id`` from ``config``, or from the running graph's."""
    if config is None:
        try:
            config = require("langgraph.config", "langchain").get_config()
        except RuntimeError:  # not inside a LangGraph run
            return None
    if not isinstance(config, Mapping):
        return None
    configurable = config.get("configurable")
    if isinstance(configurable, Mapping):
        thread = configurable.get("thread_id")
        if thread is not None:
            return str(thread)
    return None


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        msg = f"mode={mode!r} must be one of {', '.join(map(repr, MODES))}"
        raise ConfigError.single(msg, yaml_path="mode")


def _updates(
    pipeline: Pipeline,
    messages: Sequence[Any],
    mode: str,
    thread: str | None,
    memo: LangChainConversions,
    over_budget: OverBudgetMode | None,
) -> dict[str, Any]:
    compacted, _ = compact_langchain(
        pipeline, messages, conversation_id=thread, memo=memo, over_budget=over_budget
    )
    if mode == "llm_input_messages":
        return {"llm_input_messages": compacted}
    if len(compacted) == len(messages) and all(
        a is b for a, b in zip(compacted, messages, strict=True)
    ):
        return {}
    remove_all = require("langgraph.graph.message", "langchain").REMOVE_ALL_MESSAGES
    return {"messages": [_messages.RemoveMessage(id=remove_all), *compacted]}


MAX_THREADS = 1_024
"""How many LangGraph threads' conversions one hook or middleware remembers
(the least recently used thread goes first; a thread forgotten costs its
next call one whole conversion, never a wrong answer)."""


class _ThreadConversions:
    """One `LangChainConversions` per LangGraph thread (``None``: calls
    outside a LangGraph run), bounded to `MAX_THREADS`. Owned by one
    hook or middleware; the lock guards the table only."""

    __slots__ = ("_lock", "_table")

    def __init__(self) -> None:
        self._table: BoundedTable[str | None, LangChainConversions] = BoundedTable(MAX_THREADS)
        self._lock = threading.Lock()

    def of(self, thread: str | None) -> LangChainConversions:
        with self._lock:
            memo = self._table.get(thread)
            if memo is None:
                memo = LangChainConversions()
                self._table.add(thread, memo)
            else:
                self._table.touch(thread)
            return memo


class PreModelHook:
    """A LangGraph ``pre_model_hook`` that runs ``pipeline`` before each model
    call:

        agent = create_react_agent(model, tools, pre_model_hook=PreModelHook(pipeline))

    ``mode="llm_input_messages"`` (default) sends the model the compacted
    messages and keeps the state's history whole; ``"remove_messages"``
    replaces the history with the compacted one (a ``RemoveMessage`` of all
    messages, then the survivors, which keep their ids), and returns no
    update when nothing changed. ``over_budget`` is what a model call that
    cannot fit the budget gets (``"send"``, ``"warn"``, ``"raise"``; the
    config's by default).
    """

    __slots__ = ("_memo", "mode", "over_budget", "pipeline")

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        mode: Mode = "llm_input_messages",
        over_budget: OverBudgetMode | None = None,
    ) -> None:
        _check_mode(mode)
        self.pipeline = pipeline
        self.mode = mode
        self.over_budget = over_budget
        self._memo = _ThreadConversions()

    def __call__(self, state: Any) -> dict[str, Any]:
        messages = state["messages"] if isinstance(state, Mapping) else state.messages
        thread = _thread_id(None)
        memo = self._memo.of(thread)
        return _updates(self.pipeline, messages, self.mode, thread, memo, self.over_budget)

    def __repr__(self) -> str:
        return f"PreModelHook(mode={self.mode!r})"


_MIDDLEWARE: list[type] = []


def _middleware_class() -> type:
    if _MIDDLEWARE:
        return _MIDDLEWARE[0]
    middleware = require("langchain.agents.middleware", "langchain")

    base: Any = middleware.AgentMiddleware

    class MemrulesMiddleware(base):  # type: ignore[misc]
        """Runs a memrules pipeline before each model call (see `memrules_middleware`)."""

        def __init__(
            self, pipeline: Pipeline, mode: Mode, over_budget: OverBudgetMode | None
        ) -> None:
            super().__init__()
            self.pipeline = pipeline
            self.mode = mode
            self.over_budget = over_budget
            self._memo = _ThreadConversions()

        def _compacted(self, messages: Any) -> list[Any]:
            thread = _thread_id(None)
            compacted, _ = compact_langchain(
                self.pipeline,
                messages,
                conversation_id=thread,
                memo=self._memo.of(thread),
                over_budget=self.over_budget,
            )
            return compacted

        @property
        def name(self) -> str:
            return "memrules"

        def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            if self.mode != "remove_messages":
                return None
            thread = _thread_id(None)
            memo = self._memo.of(thread)
            updates = _updates(
                self.pipeline, state["messages"], self.mode, thread, memo, self.over_budget
            )
            return updates or None

        async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            return self.before_model(state, runtime)

        def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            if self.mode != "llm_input_messages":
                return handler(request)
            return handler(request.override(messages=self._compacted(request.messages)))

        async def awrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            if self.mode != "llm_input_messages":
                return await handler(request)
            return await handler(request.override(messages=self._compacted(request.messages)))

        def __repr__(self) -> str:
            return f"MemrulesMiddleware(mode={self.mode!r})"

    _MIDDLEWARE.append(MemrulesMiddleware)
    return MemrulesMiddleware


def memrules_middleware(
    pipeline: Pipeline,
    *,
    mode: Mode = "llm_input_messages",
    over_budget: OverBudgetMode | None = None,
) -> Any:
    """A LangChain v1 agent middleware that runs ``pipeline`` before each
    model call (``langchain`` >= 1.0):

        agent = create_agent(model, tools, middleware=[memrules_middleware(pipeline)])

    ``mode`` as for `PreModelHook`: ``"llm_input_messages"`` compacts
    what the model is sent (``wrap_model_call``), ``"remove_messages"``
    rewrites the history before the model node (``before_model``);
    ``over_budget`` as for `PreModelHook`.
    """
    _check_mode(mode)
    return _middleware_class()(pipeline, mode, over_budget)


report_public_module(__name__, __all__, globals())
del report_public_module
