"""pydantic-ai (the ``pydantic-ai`` extra): a ``history_processors`` entry.

::

    from pydantic_ai import Agent
    from memrules.integrations.pydantic_ai import history_processor

    agent = Agent("openai:gpt-4o", history_processors=[history_processor(pipeline)])

or, where pydantic-ai has capabilities (2.x), ``Agent(...,
capabilities=[history_capability(pipeline)])``. pydantic-ai calls it with
the message history before every model request and sends the model what it
returns. :func:`async_history_processor` does
the same from a worker thread, so a pipeline with a summarizer seam does not
block the event loop.

How the history is seen: a ``ModelRequest``'s system prompt parts are a
system message, each tool return (and each retry prompt aimed at a tool
call) a tool message answering its call, and its user prompt parts a user
message; a ``ModelResponse`` is one assistant message (text, tool calls;
thinking and other parts carried as :class:`~memrules.Opaque`). So the
pipeline keeps every tool call with its return, and the user's latest prompt
is the most recent user message, which no strategy removes. Parts the
pipeline kept are handed back as the very part objects, and a request or
response it did not touch as the very message object; a part a strategy
changed (a cleared tool return, a clamped text) is the original part with
its new content; changed text becomes a new part of its kind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from memrules._core.messages import (
    Conversation,
    Message,
    Opaque,
    Part,
    Role,
    Text,
    ToolCall,
    ToolResult,
)
from memrules._core.public_names import report_public_module
from memrules._core.report import CompressionResult
from memrules._runtime.pipeline import Pipeline
from memrules.integrations._extras import require

__all__ = [
    "async_history_processor",
    "compact_history",
    "history_capability",
    "history_processor",
]

_pai: Any = require("pydantic_ai.messages", "pydantic-ai")

KEY = "pydantic_ai"
"""The metadata key that holds the index of the model message a message came from."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    try:
        return json.dumps(content, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(content)


class _Source:
    """What the converted conversation came from: each part's original
    pydantic-ai part (by the memrules part's identity), and each model
    message. Local to one call."""

    def __init__(self, messages: Sequence[Any]) -> None:
        self.messages = list(messages)
        self.parts: dict[int, tuple[Part, Any]] = {}
        self.calls: dict[str, Any] = {}  # tool call id → the ToolCallPart
        self.returns: dict[str, Any] = {}  # tool call id → the ToolReturnPart / RetryPromptPart

    def keep(self, part: Part, original: Any) -> Part:
        self.parts[id(part)] = (part, original)
        return part

    def original(self, part: Part) -> Any:
        hit = self.parts.get(id(part))
        return hit[1] if hit is not None and hit[0] is part else None


def _request(index: int, request: Any, source: _Source) -> list[Message]:
    groups: list[tuple[Role, list[Part]]] = []

    def add(role: Role, part: Part, *, alone: bool = False) -> None:
        if alone or not groups or groups[-1][0] != role or groups[-1][0] == "tool":
            groups.append((role, [part]))
        else:
            groups[-1][1].append(part)

    for part in request.parts:
        kind = getattr(part, "part_kind", "")
        if kind == "system-prompt":
            add("system", source.keep(Text(text=part.content), part))
        elif kind in ("tool-return", "retry-prompt") and getattr(part, "tool_name", None):
            content = part.model_response_str() if kind == "tool-return" else part.model_response()
            result = ToolResult(
                call_id=part.tool_call_id, content=content, is_error=kind == "retry-prompt"
            )
            source.returns[part.tool_call_id] = part
            add("tool", source.keep(result, part), alone=True)
        elif kind == "user-prompt" and isinstance(part.content, str):
            add("user", source.keep(Text(text=part.content), part))
        elif kind == "retry-prompt":
            add("user", source.keep(Text(text=part.model_response()), part))
        elif kind == "user-prompt":
            text = "\n".join(c for c in part.content if isinstance(c, str))
            add("user", source.keep(Text(text=text), part))
        else:
            add("user", source.keep(Opaque(kind=str(kind)), part))
    return [Message(role=role, parts=tuple(parts), metadata={KEY: index}) for role, parts in groups]


def _response(index: int, response: Any, source: _Source) -> Message:
    parts: list[Part] = []
    for part in response.parts:
        kind = getattr(part, "part_kind", "")
        if kind == "text":
            parts.append(source.keep(Text(text=part.content), part))
        elif kind == "tool-call":
            call = ToolCall(
                id=part.tool_call_id, name=part.tool_name, arguments=part.args_as_json_str()
            )
            source.calls[part.tool_call_id] = part
            parts.append(source.keep(call, part))
        else:
            parts.append(source.keep(Opaque(kind=str(kind)), part))
    return Message(role="assistant", parts=tuple(parts), metadata={KEY: index})


def _convert(messages: Sequence[Any]) -> tuple[Conversation, _Source]:
    source = _Source(messages)
    out: list[Message] = []
    for index, message in enumerate(messages):
        if getattr(message, "kind", "") == "response":
            out.append(_response(index, message, source))
        else:
            out.extend(_request(index, message, source))
    return tuple(out), source


def _part_back(part: Part, role: str, source: _Source) -> Any:
    original = source.original(part)
    if original is not None:
        return original
    if isinstance(part, ToolResult):
        before = source.returns.get(part.call_id)
        content = (
            part.content
            if isinstance(part.content, str)
            else _text([p.text for p in part.content if isinstance(p, Text)])
        )
        if before is not None:  # a cleared or clamped return: its part, new content
            return dataclasses.replace(before, content=content)
        return _pai.ToolReturnPart(tool_name="", content=content, tool_call_id=part.call_id)
    if isinstance(part, ToolCall):
        before = source.calls.get(part.id)
        if before is not None:
            return dataclasses.replace(before, args=part.arguments)
        return _pai.ToolCallPart(tool_name=part.name, args=part.arguments, tool_call_id=part.id)
    if isinstance(part, Text):
        if role == "assistant":
            return _pai.TextPart(content=part.text)
        if role == "system":
            return _pai.SystemPromptPart(content=part.text)
        return _pai.UserPromptPart(content=part.text)
    return None  # an Opaque part a strategy made: nothing pydantic-ai can hold


def _back(conversation: Conversation, source: _Source) -> list[Any]:
    out: list[Any] = []
    group: int | None = None
    pending: list[Any] = []

    def flush() -> None:
        if group is None:
            if pending:
                out.append(_pai.ModelRequest(parts=list(pending)))
            return
        original = source.messages[group]
        if list(original.parts) == pending and all(
            a is b for a, b in zip(original.parts, pending, strict=True)
        ):
            out.append(original)
        else:
            out.append(dataclasses.replace(original, parts=list(pending)))

    for message in conversation:
        index = message.metadata.get(KEY)
        index = index if isinstance(index, int) and 0 <= index < len(source.messages) else None
        if pending and (index != group or index is None):
            flush()
            pending = []
        group = index
        for part in message.parts:
            back = _part_back(part, message.role, source)
            if back is not None:
                pending.append(back)
    if pending:
        flush()
    return out


def compact_history(
    pipeline: Pipeline, messages: Sequence[Any], *, conversation_id: str | None = None
) -> tuple[list[Any], CompressionResult]:
    """``pipeline.apply`` over a pydantic-ai message history: the messages to
    send and the result."""
    conversation, source = _convert(messages)
    result = pipeline.apply(conversation, conversation_id=conversation_id)
    if result.messages is conversation:
        return list(messages), result
    return _back(result.messages, source), result


def history_processor(pipeline: Pipeline) -> Callable[[list[Any]], list[Any]]:
    """A ``history_processors`` entry that compacts the history with ``pipeline``."""

    def process(messages: list[Any]) -> list[Any]:
        return compact_history(pipeline, messages)[0]

    return process


def async_history_processor(pipeline: Pipeline) -> Callable[[list[Any]], Awaitable[list[Any]]]:
    """The same, as a coroutine that compacts in a worker thread."""

    async def process(messages: list[Any]) -> list[Any]:
        compacted, _ = await asyncio.to_thread(compact_history, pipeline, messages)
        return compacted

    return process


def history_capability(pipeline: Pipeline, *, in_thread: bool = True) -> Any:
    """pydantic-ai's ``ProcessHistory`` capability around the processor (the
    async one unless ``in_thread=False``), for ``Agent(capabilities=[...])``.
    pydantic-ai then also keeps the compacted history as the run's own."""
    capabilities = require("pydantic_ai.capabilities", "pydantic-ai")
    processor = async_history_processor(pipeline) if in_thread else history_processor(pipeline)
    return capabilities.ProcessHistory(processor)


report_public_module(__name__, __all__, globals())
del report_public_module
