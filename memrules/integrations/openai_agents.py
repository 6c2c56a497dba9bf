"""The OpenAI Agents SDK (the ``agents`` extra).

`from_openai_agents` and `to_openai_agents` convert the SDK's items (the
Responses API input items a ``Session`` stores) both ways, losslessly:
``to_openai_agents(from_openai_agents(items)) == items``. A message item is a message of its
role (``developer`` is ``system``); a ``function_call`` is an assistant
message with one `ToolCall`; a ``function_call_output`` a
tool message with its `ToolResult`, so the pipeline keeps
every call with its output. Any other item (reasoning, web search, computer
calls...) is an assistant message holding it as an
`Opaque` part, carried through untouched.

Then, three places to compact:

- `call_model_input_filter` compacts what **every model call** of a
  run is sent (the agent's instructions counted with it), for
  ``RunConfig(call_model_input_filter=...)``: a run that calls tools thirty
  times stays within the budget at each of its thirty model calls. Use it
  whenever a run may make more than one model call:

      config = RunConfig(call_model_input_filter=call_model_input_filter(pipeline))
      await Runner.run(agent, "next question", session=session, run_config=config)

- `CompactingSession` wraps any session (``SQLiteSession``, Redis,
  SQLAlchemy...): what ``get_items`` returns is compacted by the pipeline;
  what is stored is never changed:

      session = CompactingSession(SQLiteSession("user-42", "chats.db"), pipeline)
      await Runner.run(agent, "next question", session=session)

  The SDK reads a session once, when a run starts: the tool calls the run
  makes are not compacted by it (add the filter above).

- `session_input_callback` compacts the history and the new input
  together, for ``RunConfig(session_input_callback=...)``; also once per run.

Each takes ``over_budget`` (``"send"``, ``"warn"``, ``"raise"``; the
config's by default): what a model call that cannot fit the budget gets
(see `OverBudgetError`).

Compaction runs in a worker thread (``asyncio.to_thread``), so a pipeline
with a summarizer seam does not block the event loop. The session id names
the conversation to observers (``gen_ai.conversation.id``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from memrules._adapters.openai_agents import KEY, from_openai_agents, to_openai_agents
from memrules._core.public_names import report_public_module
from memrules._core.report import CompressionResult, OverBudgetMode
from memrules._runtime.pipeline import Pipeline
from memrules.integrations._extras import require

__all__ = [
    "KEY",
    "CompactingInputFilter",
    "CompactingSession",
    "call_model_input_filter",
    "compact_openai_agents",
    "from_openai_agents",
    "session_input_callback",
    "to_openai_agents",
]


def compact_openai_agents(
    pipeline: Pipeline,
    items: Sequence[Any],
    *,
    conversation_id: str | None = None,
    over_budget: OverBudgetMode | None = None,
) -> tuple[list[Any], CompressionResult]:
    """``pipeline.apply`` over items: the compacted items (the very item
    objects given, where the pipeline kept a message as it was) and the result."""
    items = list(items)
    conversation = from_openai_agents(items)
    result = pipeline.apply(conversation, conversation_id=conversation_id, over_budget=over_budget)
    origin = result.report.origin
    out: list[Any] = []
    for j, m in enumerate(result.messages):
        i = origin[j] if j < len(origin) else None
        if i is not None and conversation[i] == m:
            out.append(items[i])
        else:
            out.extend(to_openai_agents((m,)))
    return out, result


class CompactingSession:
    """An Agents SDK ``Session`` that compacts what ``get_items`` returns.

    Everything else goes to ``session`` unchanged: ``add_items`` stores the
    whole turn, so the stored history stays complete and a later, larger
    budget can use it. ``session_id`` and ``session_settings`` are the
    wrapped session's. The last run's report is ``last_result``.
    """

    def __init__(
        self, session: Any, pipeline: Pipeline, *, over_budget: OverBudgetMode | None = None
    ) -> None:
        require("agents", "agents")
        self.session = session
        self.pipeline = pipeline
        self.over_budget = over_budget
        self.last_result: CompressionResult | None = None

    # The SDK's ``Session`` protocol declares both as settable attributes:
    # properties with setters that read and write the wrapped session's.
    @property
    def session_id(self) -> str:
        return str(self.session.session_id)

    @session_id.setter
    def session_id(self, value: str) -> None:
        self.session.session_id = value

    @property
    def session_settings(self) -> Any:
        return getattr(self.session, "session_settings", None)

    @session_settings.setter
    def session_settings(self, value: Any) -> None:
        self.session.session_settings = value

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items = await self.session.get_items(limit)
        compacted, result = await asyncio.to_thread(
            compact_openai_agents,
            self.pipeline,
            items,
            conversation_id=self.session_id,
            over_budget=self.over_budget,
        )
        self.last_result = result
        return compacted

    async def add_items(self, items: list[Any]) -> None:
        await self.session.add_items(items)

    async def pop_item(self) -> Any:
        return await self.session.pop_item()

    async def clear_session(self) -> None:
        await self.session.clear_session()

    def __repr__(self) -> str:
        return f"CompactingSession({self.session!r})"


def session_input_callback(
    pipeline: Pipeline, *, over_budget: OverBudgetMode | None = None
) -> Callable[[list[Any], list[Any]], Awaitable[list[Any]]]:
    """A ``RunConfig(session_input_callback=...)`` that compacts the stored
    history and the new input together (the new input is the most recent
    user message, which no strategy removes)."""

    async def combine(history: list[Any], new_input: list[Any]) -> list[Any]:
        compacted, _ = await asyncio.to_thread(
            compact_openai_agents, pipeline, [*history, *new_input], over_budget=over_budget
        )
        return compacted

    return combine


class CompactingInputFilter:
    """A ``RunConfig(call_model_input_filter=...)`` that compacts the input
    of every model call of a run with ``pipeline`` (see
    `call_model_input_filter`). The last call's result is
    ``last_result``; its report counts the agent's instructions as the
    first system message, which the pipeline always keeps and the filter
    hands back as ``instructions``, unchanged."""

    __slots__ = ("conversation_id", "last_result", "over_budget", "pipeline")

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        conversation_id: str | None = None,
        over_budget: OverBudgetMode | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.conversation_id = conversation_id
        self.over_budget = over_budget
        self.last_result: CompressionResult | None = None

    async def __call__(self, data: Any) -> Any:
        run_config: Any = require("agents.run_config", "agents")
        given = data.model_data
        instructions = given.instructions
        head = [] if not instructions else [{"role": "system", "content": instructions}]
        compacted, result = await asyncio.to_thread(
            compact_openai_agents,
            self.pipeline,
            [*head, *given.input],
            conversation_id=self.conversation_id,
            over_budget=self.over_budget,
        )
        self.last_result = result
        if head and compacted and compacted[0] is head[0]:
            compacted = compacted[1:]
        return run_config.ModelInputData(input=compacted, instructions=instructions)

    def __repr__(self) -> str:
        return f"CompactingInputFilter(over_budget={self.over_budget!r})"


def call_model_input_filter(
    pipeline: Pipeline,
    *,
    conversation_id: str | None = None,
    over_budget: OverBudgetMode | None = None,
) -> CompactingInputFilter:
    """A ``RunConfig(call_model_input_filter=...)`` that compacts, before
    each model call of a run, the instructions and input items the model is
    about to be sent: the history, the new input and every tool call and
    output of the run so far. Items the pipeline kept are the very item
    objects given (the SDK matches them to its own). ``conversation_id``
    names the conversation to the pipeline's observers."""
    require("agents", "agents")
    return CompactingInputFilter(pipeline, conversation_id=conversation_id, over_budget=over_budget)


report_public_module(__name__, __all__, globals())
del report_public_module
