"""pydantic-ai (the ``pydantic-ai`` extra): a ``history_processors`` entry.

With pydantic-ai 2.x, which the extra installs, the processor goes in as a
capability (2.x has no ``history_processors=`` argument):

    from pydantic_ai import Agent
    from memrules.integrations.pydantic_ai import history_capability

    agent = Agent("openai:gpt-4o", capabilities=[history_capability(pipeline)])

and with pydantic-ai 1.x, ``Agent(...,
history_processors=[history_processor(pipeline)])``. pydantic-ai calls it with
the message history before every model request and sends the model what it
returns. `async_history_processor` does
the same from a worker thread, so a pipeline with a summarizer seam does not
block the event loop.

How the history is seen: a ``ModelRequest``'s system prompt parts are a
system message, each tool return (and each retry prompt aimed at a tool
call) a tool message answering its call, and its user prompt parts a user
message; a ``ModelResponse`` is one assistant message (text, tool calls;
thinking and other parts carried as `Opaque`). So the
pipeline keeps every tool call with its return, and the user's latest prompt
is the most recent user message, which no strategy removes. Parts the
pipeline kept are handed back as the very part objects, and a request or
response it did not touch as the very message object; a part a strategy
changed (a cleared tool return, a clamped text) is the original part with
its new content; changed text becomes a new part of its kind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from memrules._adapters.pydantic_ai import HistorySource, from_pydantic_ai, to_pydantic_ai
from memrules._core.public_names import report_public_module
from memrules._core.report import CompressionResult, OverBudgetMode
from memrules._runtime.pipeline import Pipeline
from memrules.integrations._extras import require

__all__ = [
    "HistorySource",
    "async_history_processor",
    "compact_pydantic_ai",
    "from_pydantic_ai",
    "history_capability",
    "history_processor",
    "to_pydantic_ai",
]

# The extra is checked on import: without pydantic-ai this module says which to install.
_pai: Any = require("pydantic_ai.messages", "pydantic-ai")


def compact_pydantic_ai(
    pipeline: Pipeline,
    messages: Sequence[Any],
    *,
    conversation_id: str | None = None,
    over_budget: OverBudgetMode | None = None,
) -> tuple[list[Any], CompressionResult]:
    """``pipeline.apply`` over a pydantic-ai message history: the messages to
    send and the result. ``over_budget`` is `Pipeline.apply`'s."""
    conversation, source = from_pydantic_ai(messages)
    result = pipeline.apply(conversation, conversation_id=conversation_id, over_budget=over_budget)
    if result.messages is conversation:
        return list(messages), result
    return to_pydantic_ai(result.messages, source), result


def history_processor(
    pipeline: Pipeline, *, over_budget: OverBudgetMode | None = None
) -> Callable[[list[Any]], list[Any]]:
    """A ``history_processors`` entry that compacts the history with
    ``pipeline``; ``over_budget`` is what a model request that cannot fit
    the budget gets (``"send"``, ``"warn"``, ``"raise"``; the config's by
    default)."""

    def process(messages: list[Any]) -> list[Any]:
        return compact_pydantic_ai(pipeline, messages, over_budget=over_budget)[0]

    return process


def async_history_processor(
    pipeline: Pipeline, *, over_budget: OverBudgetMode | None = None
) -> Callable[[list[Any]], Awaitable[list[Any]]]:
    """The same, as a coroutine that compacts in a worker thread."""

    async def process(messages: list[Any]) -> list[Any]:
        compacted, _ = await asyncio.to_thread(
            compact_pydantic_ai, pipeline, messages, over_budget=over_budget
        )
        return compacted

    return process


def history_capability(
    pipeline: Pipeline, *, in_thread: bool = True, over_budget: OverBudgetMode | None = None
) -> Any:
    """pydantic-ai's ``ProcessHistory`` capability around the processor (the
    async one unless ``in_thread=False``), for ``Agent(capabilities=[...])``.
    pydantic-ai then also keeps the compacted history as the run's own."""
    capabilities = require("pydantic_ai.capabilities", "pydantic-ai")
    processor = (
        async_history_processor(pipeline, over_budget=over_budget)
        if in_thread
        else history_processor(pipeline, over_budget=over_budget)
    )
    return capabilities.ProcessHistory(processor)


report_public_module(__name__, __all__, globals())
del report_public_module
