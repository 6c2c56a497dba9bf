"""A message as JSON that reads back to an equal message, and its content hash.

What a store keeps of each message (`encode_message`, `decode_message`) and
the hash a record's id is made from (`content_hash`). Provider fields keep the
order of their keys; metadata and `extra` maps are written with sorted keys,
so equal messages are written as equal bytes whatever `PYTHONHASHSEED` is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from memrules._core.errors import StoreError
from memrules._core.frozen import thaw
from memrules._core.messages import Message, Opaque, Part, Text, ToolCall, ToolResult

__all__ = ["content_hash", "decode_message", "encode_message", "message_json"]


def _key_order(item: tuple[Any, Any]) -> tuple[str, str]:
    return type(item[0]).__name__, str(item[0])


def _sorted_thaw(value: Mapping[Any, Any]) -> dict[Any, Any]:
    """A persistent map (metadata, extra) as a dict with its keys sorted: it
    iterates in hash order, which PYTHONHASHSEED moves, so equal messages
    would otherwise be written as different bytes. Nested maps keep their
    order (provider fields are written back in it)."""
    return thaw(dict(sorted(value.items(), key=_key_order)))  # type: ignore[no-any-return]


def _part_json(part: Part) -> dict[str, Any]:
    if isinstance(part, Text):
        out: dict[str, Any] = {"type": "text", "text": part.text}
    elif isinstance(part, ToolCall):
        out = {"type": "tool_call", "id": part.id, "name": part.name, "arguments": part.arguments}
    elif isinstance(part, ToolResult):
        content = part.content
        out = {
            "type": "tool_result",
            "call_id": part.call_id,
            "content": content if isinstance(content, str) else [_part_json(p) for p in content],
            "is_error": part.is_error,
        }
    else:
        return {"type": "opaque", "kind": part.kind, "payload": thaw(part.payload)}
    if part.extra:
        out["extra"] = _sorted_thaw(part.extra)
    return out


def _message_json(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "parts": [_part_json(p) for p in message.parts]}
    if message.id is not None:
        out["id"] = message.id
    if message.name is not None:
        out["name"] = message.name
    if message.metadata:
        out["metadata"] = _sorted_thaw(message.metadata)
    return out


message_json = _message_json
"""``message`` as the JSON value `encode_message` writes (not checked
to read back: for records of runs, where a message that JSON cannot carry is
written as well as it can be)."""


def _part_from(raw: Mapping[str, Any]) -> Part:
    kind = raw["type"]
    extra = raw.get("extra")
    if kind == "text":
        return Text(text=raw["text"], extra=extra)
    if kind == "tool_call":
        return ToolCall(id=raw["id"], name=raw["name"], arguments=raw["arguments"], extra=extra)
    if kind == "tool_result":
        content = raw["content"]
        return ToolResult(
            call_id=raw["call_id"],
            content=content if isinstance(content, str) else tuple(map(_content_part, content)),
            is_error=raw["is_error"],
            extra=extra,
        )
    if kind == "opaque":
        return Opaque(kind=raw["kind"], payload=raw["payload"])
    msg = f"unknown part type {kind!r}"
    raise ValueError(msg)


def _content_part(raw: Mapping[str, Any]) -> Text | Opaque:
    part = _part_from(raw)
    if not isinstance(part, (Text, Opaque)):
        msg = f"a tool result's content holds a {raw['type']} part"
        raise ValueError(msg)
    return part


def encode_message(message: Message) -> str:
    """``message`` as JSON text that `decode_message` reads back to an
    equal message (keys of provider fields in their order). Raises
    `StoreError` for a message that JSON cannot carry losslessly
    (metadata holding a set, bytes, an object, NaN, a key that is not a
    string)."""
    try:
        text = json.dumps(_message_json(message), allow_nan=False, separators=(",", ":"))
        same = decode_message(text) == message
    except (TypeError, ValueError, KeyError) as exc:
        msg = f"a {message.role} message cannot be stored as JSON: {exc}; keep its metadata JSON"
        raise StoreError(msg) from exc
    if not same:
        msg = (
            f"a {message.role} message does not read back from JSON as it was (its metadata "
            "holds a value JSON changes, such as a set or a key that is not a string)"
        )
        raise StoreError(msg)
    return text


def decode_message(text: str) -> Message:
    """The message `encode_message` wrote."""
    raw = json.loads(text)
    return Message(
        role=raw["role"],
        parts=tuple(map(_part_from, raw["parts"])),
        id=raw.get("id"),
        name=raw.get("name"),
        metadata=raw.get("metadata"),
    )


def content_hash(message: Message) -> str:
    """A hash of the message's value: equal messages hash alike (the order of
    keys in provider fields does not count, as it does not for equality)."""
    canonical = json.dumps(
        _message_json(message), sort_keys=True, separators=(",", ":"), default=repr
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
