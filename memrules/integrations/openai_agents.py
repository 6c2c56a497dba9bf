"""The OpenAI Agents SDK (the ``agents`` extra).

:func:`from_items` and :func:`to_items` convert the SDK's items (the
Responses API input items a ``Session`` stores) both ways, losslessly:
``to_items(from_items(items)) == items``. A message item is a message of its
role (``developer`` is ``system``); a ``function_call`` is an assistant
message with one :class:`~memrules.ToolCall`; a ``function_call_output`` a
tool message with its :class:`~memrules.ToolResult`, so the pipeline keeps
every call with its output. Any other item (reasoning, web search, computer
calls...) is an assistant message holding it as an
:class:`~memrules.Opaque` part, carried through untouched.

Then, two places to compact:

- :class:`CompactingSession` wraps any session (``SQLiteSession``, Redis,
  SQLAlchemy...): what ``get_items`` returns is compacted by the pipeline;
  what is stored is never changed::

      session = CompactingSession(SQLiteSession("user-42", "chats.db"), pipeline)
      await Runner.run(agent, "next question", session=session)

- :func:`session_input_callback` compacts the history and the new input
  together, for ``RunConfig(session_input_callback=...)``.

Compaction runs in a worker thread (``asyncio.to_thread``), so a pipeline
with a summarizer seam does not block the event loop. The session id names
the conversation to observers (``gen_ai.conversation.id``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from memrules._adapters.openai_agents import KEY, from_items, to_items
from memrules._core.public_names import report_public_module
from memrules._core.report import CompressionResult
from memrules._runtime.pipeline import Pipeline
from memrules.integrations._extras import require

__all__ = [
    "KEY",
    "CompactingSession",
    "compact_items",
    "from_items",
    "session_input_callback",
    "to_items",
]


def compact_items(
    pipeline: Pipeline, items: Sequence[Any], *, conversation_id: str | None = None
) -> tuple[list[Any], CompressionResult]:
    """``pipeline.apply`` over items: the compacted items (the very item
    objects given, where the pipeline kept a message as it was) and the result."""
    items = list(items)
    conversation = from_items(items)
    result = pipeline.apply(conversation, conversation_id=conversation_id)
    origin = result.report.origin
    out: list[Any] = []
    for j, m in enumerate(result.messages):
        i = origin[j] if j < len(origin) else None
        if i is not None and conversation[i] == m:
            out.append(items[i])
        else:
            out.extend(to_items((m,)))
    return out, result


class CompactingSession:
    """An Agents SDK ``Session`` that compacts what ``get_items`` returns.

    Everything else goes to ``session`` unchanged: ``add_items`` stores the
    whole turn, so the stored history stays complete and a later, larger
    budget can use it. ``session_id`` and ``session_settings`` are the
    wrapped session's. The last run's report is ``last_result``.
    """

    def __init__(self, session: Any, pipeline: Pipeline) -> None:
        require("agents", "agents")
        self.session = session
        self.pipeline = pipeline
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
            compact_items, self.pipeline, items, conversation_id=self.session_id
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
    pipeline: Pipeline,
) -> Callable[[list[Any], list[Any]], Awaitable[list[Any]]]:
    """A ``RunConfig(session_input_callback=...)`` that compacts the stored
    history and the new input together (the new input is the most recent
    user message, which no strategy removes)."""

    async def combine(history: list[Any], new_input: list[Any]) -> list[Any]:
        compacted, _ = await asyncio.to_thread(compact_items, pipeline, [*history, *new_input])
        return compacted

    return combine


report_public_module(__name__, __all__, globals())
del report_public_module
