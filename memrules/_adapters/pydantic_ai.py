"""pydantic-ai message histories, both ways (used by
`memrules.integrations.pydantic_ai`).

`from_pydantic_ai` turns ``ModelRequest``/``ModelResponse`` lists into a
conversation and a `HistorySource` that remembers each original part;
`to_pydantic_ai` turns a (compacted) conversation back, reusing the
original messages and parts wherever they were kept. ``pydantic_ai`` is
imported on first use, not with this module.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from typing import Any

from memrules._adapters.frameworks import require
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

__all__ = ["KEY", "HistorySource", "from_pydantic_ai", "to_pydantic_ai"]


@functools.cache
def _pai() -> Any:
    """``pydantic_ai.messages``, imported on first use."""
    return require("pydantic_ai.messages", "pydantic-ai")


KEY = "pydantic_ai"
"""The metadata key that holds the index of the model message a message came from."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    try:
        return json.dumps(content, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(content)


class HistorySource:
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


def _request(index: int, request: Any, source: HistorySource) -> list[Message]:
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


def _response(index: int, response: Any, source: HistorySource) -> Message:
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


def from_pydantic_ai(messages: Sequence[Any]) -> tuple[Conversation, HistorySource]:
    """A pydantic-ai message history as a memrules conversation, and the
    source that `to_pydantic_ai` takes its original parts from."""
    source = HistorySource(messages)
    out: list[Message] = []
    for index, message in enumerate(messages):
        if getattr(message, "kind", "") == "response":
            out.append(_response(index, message, source))
        else:
            out.extend(_request(index, message, source))
    return tuple(out), source


def _part_back(part: Part, role: str, source: HistorySource) -> Any:
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
        return _pai().ToolReturnPart(tool_name="", content=content, tool_call_id=part.call_id)
    if isinstance(part, ToolCall):
        before = source.calls.get(part.id)
        if before is not None:
            return dataclasses.replace(before, args=part.arguments)
        return _pai().ToolCallPart(tool_name=part.name, args=part.arguments, tool_call_id=part.id)
    if isinstance(part, Text):
        if role == "assistant":
            return _pai().TextPart(content=part.text)
        if role == "system":
            return _pai().SystemPromptPart(content=part.text)
        return _pai().UserPromptPart(content=part.text)
    return None  # an Opaque part a strategy made: nothing pydantic-ai can hold


def to_pydantic_ai(conversation: Conversation, source: HistorySource) -> list[Any]:
    """``conversation`` (from `from_pydantic_ai`, maybe compacted) as
    pydantic-ai messages: the original messages and parts wherever they were
    kept, changed copies where a strategy changed them."""
    out: list[Any] = []
    group: int | None = None
    pending: list[Any] = []

    def flush() -> None:
        if group is None:
            if pending:
                out.append(_pai().ModelRequest(parts=list(pending)))
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
