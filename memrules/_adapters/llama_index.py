"""LlamaIndex chat messages to memrules messages and back.

A ``ChatMessage`` is a role, ``additional_kwargs`` and a list of content
blocks. Its role maps as the provider roles do (``developer`` is
``system``, ``model`` and ``chatbot`` are ``assistant``, ``function`` is
``tool``); a ``TextBlock`` is `Text`; a ``ToolCallBlock``
is a `ToolCall` (its kwargs as JSON); a ``tool`` message
that names its call (``additional_kwargs["tool_call_id"]``, as LlamaIndex's
agents write it) is one `ToolResult` holding its text; any
other block (thinking, images, audio, documents, citations) is an
`Opaque` part holding the block's JSON, carried untouched.
The message's role and ``additional_kwargs`` ride along in its metadata
under `KEY`, so `to_llama_index` gives equal messages back.

This module imports no LlamaIndex module until `to_llama_index` needs
its classes (the ``llama-index`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memrules._adapters.frameworks import require
from memrules._core.errors import MessageFormatError
from memrules._core.frozen import thaw as _thaw
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

__all__ = ["KEY", "convert_one", "from_llama_index", "to_llama_index"]

KEY = "llama_index"
"""The metadata key of what memrules keeps of a LlamaIndex message."""

_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "model": "assistant",
    "chatbot": "assistant",
    "tool": "tool",
    "function": "tool",
}
_OPAQUE = "llama_index_block"


def _role(message: Any) -> str:
    role = getattr(message, "role", None)
    return str(getattr(role, "value", role))


def _kwargs(message: Any) -> dict[str, Any]:
    kwargs = getattr(message, "additional_kwargs", None) or {}
    try:
        return dict(json.loads(json.dumps(dict(kwargs))))
    except (TypeError, ValueError):
        return {}  # not JSON: LlamaIndex keeps it in the message object, which is handed back


def _block(block: Any, index: int) -> Part:
    kind = getattr(block, "block_type", None)
    if kind == "text":
        return Text(text=block.text)
    if kind == "tool_call":
        kwargs = block.tool_kwargs
        arguments = kwargs if isinstance(kwargs, str) else json.dumps(kwargs, sort_keys=False)
        return ToolCall(
            id=block.tool_call_id or f"call_{index}", name=block.tool_name, arguments=arguments
        )
    dump = block.model_dump(mode="json") if hasattr(block, "model_dump") else None
    if not isinstance(dump, Mapping):
        msg = f"a content block of type {type(block).__name__} cannot be carried"
        raise MessageFormatError(msg, field="blocks")
    return Opaque(kind=_OPAQUE, payload=dump)


def convert_one(message: Any, index: int) -> Message:
    """LlamaIndex message ``message``, at ``index`` of its list, as a memrules message."""
    role = _role(message)
    if role not in _ROLES or not hasattr(message, "blocks"):
        msg = f"expected a LlamaIndex ChatMessage, got {type(message).__name__} (role {role!r})"
        raise MessageFormatError(msg, index=index, field="role")
    kwargs = _kwargs(message)
    try:
        parts = tuple(_block(b, index) for b in message.blocks)
    except MessageFormatError as exc:
        raise MessageFormatError(str(exc), index=index, field="blocks") from None
    call_id = kwargs.get("tool_call_id")
    if _ROLES[role] == "tool" and isinstance(call_id, str) and call_id:
        text = "".join(p.text for p in parts if isinstance(p, Text))
        if all(isinstance(p, Text) for p in parts):
            parts = (ToolResult(call_id=call_id, content=text),)
    meta = {KEY: {"role": role, "additional_kwargs": kwargs}}
    return Message(role=_ROLES[role], parts=parts, metadata=meta)


def from_llama_index(messages: Iterable[Any]) -> Conversation:
    """LlamaIndex ``ChatMessage`` objects as a memrules conversation (see the
    module docs). Raises `MessageFormatError` naming the
    index of anything that is not a chat message."""
    return tuple(convert_one(m, i) for i, m in enumerate(messages))


def to_llama_index(messages: Sequence[Message]) -> list[Any]:
    """memrules messages as LlamaIndex ``ChatMessage`` objects: the role and
    ``additional_kwargs`` `from_llama_index` kept, else the message's
    own role; text, tool calls, tool results (as text) and carried blocks."""
    types = require("llama_index.core.base.llms.types", "llama-index")
    out: list[Any] = []
    for message in messages:
        kept = message.metadata.get(KEY)
        role = kept["role"] if kept is not None else message.role
        kwargs = _thaw(kept["additional_kwargs"]) if kept is not None else {}
        blocks: list[Any] = []
        for part in message.parts:
            if isinstance(part, Text):
                blocks.append(types.TextBlock(text=part.text))
            elif isinstance(part, ToolCall):
                blocks.append(
                    types.ToolCallBlock(
                        tool_call_id=part.id,
                        tool_name=part.name,
                        tool_kwargs=_arguments(part.arguments),
                    )
                )
            elif isinstance(part, ToolResult):
                kwargs.setdefault("tool_call_id", part.call_id)
                content = (
                    part.content
                    if isinstance(part.content, str)
                    else "".join(getattr(c, "text", "") for c in part.content)
                )
                blocks.append(types.TextBlock(text=content))
            elif isinstance(part, Opaque) and part.kind == _OPAQUE:
                blocks.append(_restore(types, _thaw(part.payload)))
            else:
                blocks.append(types.TextBlock(text=getattr(part, "text", "")))
        out.append(types.ChatMessage(role=role, additional_kwargs=kwargs, blocks=blocks))
    return out


def _arguments(arguments: str) -> Any:
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return arguments
    return value


def _restore(types: Any, dump: dict[str, Any]) -> Any:
    adapter = require("pydantic", "llama-index").TypeAdapter(types.ContentBlock)
    return adapter.validate_python(dump)
