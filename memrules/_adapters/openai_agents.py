"""OpenAI Agents SDK items, both ways, losslessly (used by
`memrules.integrations.openai_agents`, which re-exports them).

`from_openai_agents` and `to_openai_agents` convert the SDK's items (the
Responses API input items a ``Session`` stores): ``to_openai_agents(from_openai_agents(items))
== items``. A message item is a message of its role (``developer`` is
``system``); a ``function_call`` is an assistant message with one
`ToolCall`; a ``function_call_output`` a tool message with
its `ToolResult`. Any other item (reasoning, web search,
computer calls...) is an assistant message holding it as an
`Opaque` part, carried through untouched. Items are read by
duck typing; the SDK is never imported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memrules._core.errors import MessageFormatError
from memrules._core.frozen import FrozenDict, ValueProblem, freeze, thaw
from memrules._core.messages import (
    ContentPart,
    Conversation,
    Message,
    Opaque,
    Part,
    Role,
    Text,
    ToolCall,
    ToolResult,
)

__all__ = ["KEY", "from_openai_agents", "to_openai_agents"]

KEY = "openai_agents"
"""The metadata key that holds an item's fields beyond its parts."""

_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}
_TEXT_TYPES = ("input_text", "output_text")

Item = Mapping[str, Any]


def _frozen(value: Any, index: int, field: str) -> Any:
    try:
        return freeze(value)
    except ValueProblem as problem:
        raise MessageFormatError(problem.problem, index=index, field=field) from None


def _block_part(block: Any, index: int) -> ContentPart:
    if isinstance(block, Mapping) and block.get("type") in _TEXT_TYPES:
        text = block.get("text")
        if isinstance(text, str):
            extra = {k: _frozen(v, index, f"content.{k}") for k, v in block.items() if k != "text"}
            return Text(text=text, extra=extra)
    kind = block.get("type", "") if isinstance(block, Mapping) else ""
    return Opaque(kind=str(kind), payload=_frozen(block, index, "content"))


def _content(value: Any, index: int) -> tuple[list[ContentPart], str]:
    """Parts of a content value, and its form (``str`` or ``list``)."""
    if isinstance(value, str):
        return ([Text(text=value)] if value else []), "str"
    if isinstance(value, list):
        return [_block_part(b, index) for b in value], "list"
    msg = f"content must be a string or a list, got {type(value).__name__}"
    raise MessageFormatError(msg, index=index, field="content")


def _rest(item: Item, skip: tuple[str, ...], index: int) -> FrozenDict[str, Any]:
    return FrozenDict({k: _frozen(v, index, k) for k, v in item.items() if k not in skip})


def _one(item: Any, index: int) -> Message:
    if not isinstance(item, Mapping):
        msg = f"an item is a mapping, got {type(item).__name__}"
        raise MessageFormatError(msg, index=index)
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message" and item.get("role") in _ROLES:
        parts, form = _content(item.get("content", ""), index)
        own = {"item": _rest(item, ("content",), index), "content": form}
        role = _ROLES[item["role"]]
        return Message(role=role, parts=tuple(parts), id=_id(item), metadata={KEY: own})
    if kind == "function_call" and isinstance(item.get("call_id"), str):
        call = ToolCall(
            id=item["call_id"],
            name=str(item.get("name", "")),
            arguments=str(item.get("arguments", "")),
        )
        own = {"item": _rest(item, ("call_id", "name", "arguments"), index)}
        return Message(role="assistant", parts=(call,), id=_id(item), metadata={KEY: own})
    if kind == "function_call_output" and isinstance(item.get("call_id"), str):
        output = item.get("output", "")
        if isinstance(output, str):
            content: str | tuple[ContentPart, ...] = output
        else:
            content = tuple(_content(output, index)[0])
        result = ToolResult(call_id=item["call_id"], content=content)
        own = {"item": _rest(item, ("call_id", "output"), index), "output": type(output).__name__}
        return Message(role="tool", parts=(result,), id=_id(item), metadata={KEY: own})
    payload = _frozen(item, index, "")
    return Message(role="assistant", parts=(Opaque(kind=str(kind or ""), payload=payload),))


def _id(item: Item) -> str | None:
    value = item.get("id")
    return value if isinstance(value, str) else None


def from_openai_agents(items: Iterable[Any]) -> Conversation:
    """Agents SDK items (Responses API input items) as a memrules conversation.

    Raises `MessageFormatError` naming the index of an item
    that is not a mapping or whose content is neither text nor a list.
    """
    return tuple(_one(item, i) for i, item in enumerate(items))


def _block(part: Part, role: str) -> Any:
    if isinstance(part, Text):
        block = {k: thaw(v) for k, v in part.extra.items()}
        if "type" not in block:
            block["type"] = "output_text" if role == "assistant" else "input_text"
            if role == "assistant":
                block["annotations"] = []
        block["text"] = part.text
        return block
    if isinstance(part, Opaque):
        return thaw(part.payload)
    msg = f"a {type(part).__name__} cannot be message content in the Agents SDK"
    raise MessageFormatError(msg)


def _item(message: Message) -> dict[str, Any]:
    own = message.metadata.get(KEY)
    own = own if isinstance(own, Mapping) else {}
    base: dict[str, Any] = thaw(own.get("item", {}))
    parts = message.parts
    if len(parts) == 1 and isinstance(parts[0], Opaque) and not own:
        payload = thaw(parts[0].payload)
        if isinstance(payload, dict):
            return payload
    if len(parts) == 1 and isinstance(parts[0], ToolCall):
        call = parts[0]
        return {
            "type": "function_call",
            **base,
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments,
        }
    if len(parts) == 1 and isinstance(parts[0], ToolResult):
        result = parts[0]
        if isinstance(result.content, str) and own.get("output", "str") == "str":
            output: Any = result.content
        elif isinstance(result.content, str):
            output = [{"type": "input_text", "text": result.content}]
        else:
            output = [_block(p, "tool") for p in result.content]
        return {"type": "function_call_output", **base, "call_id": result.call_id, "output": output}
    if any(isinstance(p, (ToolCall, ToolResult)) for p in parts):
        msg = (
            "the Agents SDK holds one tool call or one tool output per item; "
            f"this {message.role} message has {len(parts)} parts"
        )
        raise MessageFormatError(msg)
    role = base.get("role")
    if role is None:
        role = {"tool": "user"}.get(message.role, message.role)
        base["role"] = role
    form = own.get("content", "str")  # a message a strategy made: text if it can be
    content: Any
    if form == "str" and _plain_text(parts):
        content = parts[0].text if parts else ""  # type: ignore[union-attr]
    else:
        content = [_block(p, role) for p in parts]
    return {**base, "content": content}


def _plain_text(parts: Sequence[Part]) -> bool:
    return not parts or (len(parts) == 1 and isinstance(parts[0], Text) and not parts[0].extra)


def to_openai_agents(conversation: Iterable[Message]) -> list[dict[str, Any]]:
    """A memrules conversation as Agents SDK items (see `from_openai_agents`).

    A message that came from an item becomes that item again, with its
    parts' current content; a message a strategy made (a summary) becomes a
    message item of its role with text content.
    """
    out = []
    for i, m in enumerate(conversation):
        try:
            out.append(_item(m))
        except MessageFormatError as exc:
            raise MessageFormatError(str(exc), index=i) from None
    return out
