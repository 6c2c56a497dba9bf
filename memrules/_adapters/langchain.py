"""LangChain messages, both ways, losslessly (used by
`memrules.integrations.langchain`, which re-exports them).

`from_langchain` and `to_langchain` convert ``BaseMessage``
lists: ``to_langchain(from_langchain(ms)) == ms`` for LangChain messages
(content strings and block lists, tool calls valid and invalid,
``ToolMessage`` with status and artifact, ids, names, metadata, chunks), and
``from_langchain(to_langchain(c)) == c`` for memrules conversations
(Anthropic-style tool results inside a user message become ``tool_result``
blocks, as ``langchain-anthropic`` writes them). `LangChainConversions`
converts only the messages an agent loop has not handed over before.

``langchain_core`` is imported on first use, not with this module: the
adapters sit below everything that runs a pipeline.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memrules._adapters.by_identity import ConversionsByIdentity
from memrules._adapters.frameworks import require
from memrules._core.errors import MessageFormatError, MessageTypeError
from memrules._core.frozen import MAX_DEPTH, FrozenDict, ValueProblem, freeze
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

__all__ = ["KEY", "STASH", "LangChainConversions", "from_langchain", "to_langchain"]


@functools.cache
def _langchain_messages() -> Any:
    """``langchain_core.messages``, imported on first use."""
    return require("langchain_core.messages", "langchain")


@functools.cache
def _pydantic_undefined() -> Any:
    """pydantic's marker of a field without a default, imported on first use."""
    return require("pydantic_core", "langchain").PydanticUndefined


KEY = "langchain"
"""The metadata key that holds what a LangChain message has beyond its parts."""
STASH = "memrules"
"""The ``additional_kwargs`` key that holds what a memrules message has beyond
what LangChain can say (written by `to_langchain`, read back and
removed by `from_langchain`; LangChain's providers do not send it)."""

_ROLE_OF_TYPE: dict[str, Role] = {
    "system": "system",
    "human": "user",
    "ai": "assistant",
    "tool": "tool",
    "function": "tool",
}
_CHAT_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "tool": "tool",
}
_CLASS_OF_ROLE = {
    "system": "SystemMessage",
    "user": "HumanMessage",
    "assistant": "AIMessage",
    "tool": "ToolMessage",
}
_DEFAULT_TYPE: dict[Role, str] = {
    "system": "system",
    "user": "human",
    "assistant": "ai",
    "tool": "tool",
}
_CLASS_OF_TYPE = {
    "system": "SystemMessage",
    "human": "HumanMessage",
    "ai": "AIMessage",
    "tool": "ToolMessage",
    "chat": "ChatMessage",
    "function": "FunctionMessage",
    "AIMessageChunk": "AIMessageChunk",
    "HumanMessageChunk": "HumanMessageChunk",
    "SystemMessageChunk": "SystemMessageChunk",
    "ToolMessageChunk": "ToolMessageChunk",
    "ChatMessageChunk": "ChatMessageChunk",
    "FunctionMessageChunk": "FunctionMessageChunk",
}
# Fields that the parts, id and name already say.
_OWN = frozenset(
    {"content", "type", "id", "name", "tool_calls", "invalid_tool_calls", "tool_call_id"}
)

_INVALID = "langchain.invalid"
_NO_ID = "langchain.id_none"
_IS_ERROR_KEY = "langchain.is_error"
_NON_STANDARD = "memrules_opaque"


# --- values that cannot be frozen ----------------------------------------------------


class _Held:
    """A value that cannot be frozen (a provider's pydantic object in
    ``additional_kwargs``), held as it is: equal when the values are equal,
    so that converting the same message twice gives equal messages."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Held) and bool(self.value == other.value)

    def __hash__(self) -> int:
        return hash(type(self.value).__qualname__)

    def __repr__(self) -> str:
        return f"_Held({self.value!r})"


def _freeze(value: Any, _depth: int = 0) -> Any:
    """``value`` frozen, what cannot be frozen held as it is; a value nested
    more than `MAX_DEPTH` levels deep is a
    `MessageFormatError`, as it is from the other formats."""
    try:
        return freeze(value)
    except ValueProblem:
        if _depth >= MAX_DEPTH:
            msg = (
                f"a value is nested more than {MAX_DEPTH} levels deep; flatten it, or send it "
                "as JSON text"
            )
            raise MessageFormatError(msg) from None
        if isinstance(value, Mapping):
            return FrozenDict({k: _freeze(v, _depth + 1) for k, v in value.items()})
        if isinstance(value, list):
            return tuple(_freeze(v, _depth + 1) for v in value)
        return _Held(value)


def _plain(value: Any) -> Any:
    """A frozen value as LangChain holds it: dicts, lists, and held values."""
    if isinstance(value, _Held):
        return value.value
    if isinstance(value, FrozenDict) or (isinstance(value, Mapping) and type(value) is not dict):
        return {k: _plain(v) for k, v in value.items()}
    if type(value) is tuple:
        return [_plain(v) for v in value]
    return value


# --- LangChain → memrules --------------------------------------------------------------


def _block_part(block: Any) -> ContentPart:
    """One content block: a string or a text block is Text, anything else Opaque."""
    if isinstance(block, str):
        return Text(text=block)
    if isinstance(block, Mapping):
        kind = block.get("type", "")
        if kind == "text" and isinstance(block.get("text"), str):
            extra = {k: _freeze(v) for k, v in block.items() if k != "text"}
            return Text(text=block["text"], extra=extra)
        value = block.get("value")
        if (
            kind == "non_standard"
            and isinstance(value, Mapping)
            and set(value) == {_NON_STANDARD, "payload"}
        ):
            return Opaque(kind=str(value[_NON_STANDARD]), payload=_freeze(value["payload"]))
        return Opaque(kind=str(kind) if isinstance(kind, str) else "", payload=_freeze(block))
    return Opaque(kind="", payload=_freeze(block))


def _result_content(content: Any) -> str | tuple[ContentPart, ...]:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return tuple(_block_part(b) for b in content)
    return (Opaque(kind="", payload=_freeze(content)),)


def _tool_result_block(block: Mapping[str, Any]) -> ToolResult | None:
    """A ``tool_result`` block inside a human message (Anthropic's shape)."""
    call_id = block.get("tool_use_id")
    if block.get("type") != "tool_result" or not isinstance(call_id, str):
        return None
    is_error = block.get("is_error", False)
    if not isinstance(is_error, bool):
        return None
    extra = {
        k: _freeze(v)
        for k, v in block.items()
        if k not in ("type", "tool_use_id", "content", "is_error")
    }
    if "is_error" in block and not is_error:
        extra[_IS_ERROR_KEY] = True
    return ToolResult(
        call_id=call_id,
        content=_result_content(block.get("content", "")),
        is_error=is_error,
        extra=extra,
    )


def _content_parts(content: Any, *, results: bool) -> list[Part]:
    if isinstance(content, str):
        return [Text(text=content)] if content else []
    if not isinstance(content, list):
        return [Opaque(kind="", payload=_freeze(content))]
    parts: list[Part] = []
    for block in content:
        result = _tool_result_block(block) if results and isinstance(block, Mapping) else None
        parts.append(result if result is not None else _block_part(block))
    return parts


def _calls(message: Any, stash: Mapping[str, Any]) -> list[ToolCall]:
    raw = stash.get("arguments", {})
    calls: list[ToolCall] = []
    for call in getattr(message, "tool_calls", None) or ():
        call_id = call.get("id")
        args = call.get("args", {})
        if call_id in raw:
            arguments = raw[call_id]
        else:
            try:
                arguments = json.dumps(args, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError):
                arguments = str(args)
        marks: dict[str, Any] = {_NO_ID: True} if call_id is None else {}
        calls.append(
            ToolCall(
                id=call_id or "", name=call.get("name") or "", arguments=arguments, extra=marks
            )
        )
    for call in getattr(message, "invalid_tool_calls", None) or ():
        call_id = call.get("id")
        args = call.get("args")
        arguments = args if isinstance(args, str) else ""
        rest = {k: v for k, v in call.items() if k not in ("id", "name", "args", "type")}
        extra: dict[str, Any] = {}
        if rest.get("error") is not None or _dict_json(arguments) or set(rest) != {"error"}:
            extra[_INVALID] = _freeze(rest)
        if args is None:
            extra[_INVALID + ".args_none"] = True
        if call.get("name") is None:
            extra[_INVALID + ".name_none"] = True
        if call_id is None:
            extra[_NO_ID] = True
        calls.append(
            ToolCall(
                id=call_id or "", name=call.get("name") or "", arguments=arguments, extra=extra
            )
        )
    order = stash.get("order")
    if isinstance(order, list) and sorted(order) == list(range(len(calls))):
        calls = [calls[i] for i in order]
    return calls


def _dict_json(arguments: str) -> bool:
    try:
        return isinstance(json.loads(arguments), dict)
    except (ValueError, RecursionError):
        return False


_NO_DEFAULT = object()


@functools.lru_cache(maxsize=64)
def _defaults(cls: Any) -> tuple[tuple[str, Any], ...]:
    """Each field of a message class that its parts do not say, with its
    default (computed once per class: pydantic builds defaults on request)."""
    out = []
    for name, info in cls.model_fields.items():
        if name not in _OWN:
            default = info.get_default(call_default_factory=True)
            out.append((name, _NO_DEFAULT if default is _pydantic_undefined() else default))
    return tuple(out)


def _one(message: Any, index: int) -> Message:
    """Message ``index``, read; a problem found below it is said at its index."""
    try:
        return _read_one(message, index)
    except MessageFormatError as exc:
        if exc.index is not None:
            raise
        raise MessageFormatError(str(exc), index=index) from None


def _read_one(message: Any, index: int) -> Message:
    if not isinstance(message, _langchain_messages().BaseMessage):
        msg = f"expected a LangChain BaseMessage, got {type(message).__name__}"
        raise MessageFormatError(msg, index=index)
    kind = message.type
    if kind == "remove":
        msg = "a RemoveMessage is an update, not a message of the conversation"
        raise MessageFormatError(msg, index=index)
    if kind not in _CLASS_OF_TYPE:
        known = ", ".join(sorted(_CLASS_OF_TYPE))
        msg = f"unknown LangChain message type {kind!r}; known: {known}"
        raise MessageFormatError(msg, index=index)
    base = kind.removesuffix("MessageChunk").lower() if kind.endswith("Chunk") else kind
    if base == "chat":
        role: Role = _CHAT_ROLES.get(str(message.role), "user")
    else:
        role = _ROLE_OF_TYPE[base]
    additional = dict(message.additional_kwargs)
    stash = additional.pop(STASH, None)
    stash = stash if isinstance(stash, Mapping) else {}
    fields: dict[str, Any] = {}
    for name, default in _defaults(message.__class__):
        if name == "status" and base == "tool":  # is_error says it
            continue
        value = additional if name == "additional_kwargs" else getattr(message, name)
        if value != default:
            fields[name] = _freeze(value)
    parts: list[Part]
    if base == "tool":
        status = getattr(message, "status", "success")
        parts = [
            ToolResult(
                call_id=message.tool_call_id,
                content=_result_content(message.content),
                is_error=status == "error",
            )
        ]
    else:
        parts = _content_parts(message.content, results=role == "user")
        parts.extend(_calls(message, stash))
    own: dict[str, Any] = {}
    if kind != _DEFAULT_TYPE[role]:
        own["type"] = kind
    if fields:
        own["fields"] = FrozenDict(fields)
    if base != "tool" and isinstance(message.content, list) and _str_form(parts):
        own["list"] = True  # a list that the default would write as a string
    metadata: dict[str, Any] = dict(stash.get("metadata", {}))
    if own:  # a message LangChain would build from the role alone needs nothing here
        metadata[KEY] = FrozenDict(own)
    try:
        return Message(
            role=role, parts=tuple(parts), id=message.id, name=message.name, metadata=metadata
        )
    except MessageFormatError as exc:
        raise MessageFormatError(str(exc), index=index) from None


class LangChainConversions(ConversionsByIdentity):
    """The conversions of the last messages seen, by identity: an agent loop
    hands the same message objects again each turn, plus a few new ones
    (see `memrules._adapters.by_identity`)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_one)


def from_langchain(messages: Iterable[Any]) -> Conversation:
    """LangChain messages as a memrules conversation.

    Text content is `Text`; other content blocks are
    `Opaque` (carried untouched); an AI message's tool calls
    (and invalid ones) are `ToolCall` parts whose arguments
    are the args as JSON; a ``ToolMessage`` is a tool message with one
    `ToolResult`; ``tool_result`` blocks in a human message
    are tool results too. Everything else is kept in the message's metadata
    under ``"langchain"``, so `to_langchain` gives the same messages
    back. Raises `MessageFormatError` naming the index of
    anything that is not a conversation message.
    """
    return tuple(_one(m, i) for i, m in enumerate(messages))


# --- memrules → LangChain --------------------------------------------------------------


def _block(part: Part) -> Any:
    if isinstance(part, Text):
        if not part.extra:
            return part.text
        block = {k: _plain(v) for k, v in part.extra.items()}
        block.setdefault("type", "text")
        block["text"] = part.text
        return block
    if isinstance(part, Opaque):
        payload = part.payload
        if isinstance(payload, Mapping) and payload.get("type", "") == part.kind:
            return _plain(payload)
        return {
            "type": "non_standard",
            "value": {_NON_STANDARD: part.kind, "payload": _plain(payload)},
        }
    if isinstance(part, ToolResult):
        block = {k: _plain(v) for k, v in part.extra.items() if k != _IS_ERROR_KEY}
        block = {"type": "tool_result", "tool_use_id": part.call_id, **block}
        block["content"] = _content_out(part.content)
        if part.is_error or _IS_ERROR_KEY in part.extra:
            block["is_error"] = part.is_error
        return block
    msg = f"a {type(part).__name__} cannot be a content block"
    raise MessageTypeError(msg)


def _content_out(content: str | tuple[ContentPart, ...]) -> Any:
    if isinstance(content, str):
        return content
    return [_block(p) for p in content]


def _str_form(parts: Sequence[Part]) -> bool:
    """Whether content of ``parts`` is written as a string (no parts, or one
    plain non-empty text) rather than a list of blocks."""
    if not parts:
        return True
    part = [p for p in parts if not isinstance(p, ToolCall)]
    if not part:
        return True
    return len(part) == 1 and isinstance(part[0], Text) and not part[0].extra and bool(part[0].text)


def _content(parts: Sequence[Part], *, as_list: bool) -> Any:
    if _str_form(parts) and not as_list:
        return parts[0].text if parts else ""  # type: ignore[union-attr]
    return [_block(p) for p in parts]


def _call_out(call: ToolCall) -> tuple[bool, dict[str, Any], str | None]:
    """The call as LangChain holds it: (valid, the dict, the raw arguments
    when the JSON LangChain re-dumps would differ from them)."""
    call_id: str | None = None if call.extra.get(_NO_ID) else call.id
    if _INVALID not in call.extra:
        try:
            args = json.loads(call.arguments) if call.arguments else None
        except (ValueError, RecursionError):
            args = None
        if isinstance(args, dict):
            raw = None
            if json.dumps(args, ensure_ascii=False, allow_nan=False) != call.arguments:
                raw = call.arguments
            return True, {"name": call.name, "args": args, "id": call_id, "type": "tool_call"}, raw
    rest = _plain(call.extra.get(_INVALID, {"error": None}))
    name = None if call.extra.get(_INVALID + ".name_none") else call.name
    args_out = None if call.extra.get(_INVALID + ".args_none") else call.arguments
    invalid = {"name": name, "args": args_out, "id": call_id, "type": "invalid_tool_call", **rest}
    return False, invalid, None


def _to_one(message: Message, classes: Any) -> Any:
    own = message.metadata.get(KEY)
    own = own if isinstance(own, Mapping) else {}
    kind = own.get("type")
    class_name = _CLASS_OF_TYPE.get(kind) if isinstance(kind, str) else None
    if class_name is None:
        class_name = _CLASS_OF_ROLE[message.role]
    cls = getattr(classes, class_name)
    kwargs: dict[str, Any] = {k: _plain(v) for k, v in own.get("fields", {}).items()}
    stash: dict[str, Any] = {}
    rest_metadata = {k: _plain(v) for k, v in message.metadata.items() if k != KEY}
    if rest_metadata:
        stash["metadata"] = rest_metadata
    if class_name.startswith("ToolMessage"):
        results = [p for p in message.parts if isinstance(p, ToolResult)]
        if len(results) != 1 or len(message.parts) != 1:
            msg = (
                f"a LangChain ToolMessage holds one tool result; this tool message has "
                f"{len(message.parts)} parts, {len(results)} of them results"
            )
            raise MessageFormatError(msg)
        (result,) = results
        kwargs["content"] = _content_out(result.content)
        kwargs["tool_call_id"] = result.call_id
        if result.is_error:
            kwargs["status"] = "error"
        elif kwargs.get("status") == "error":
            kwargs["status"] = "success"
    else:
        calls = [p for p in message.parts if isinstance(p, ToolCall)]
        others = [p for p in message.parts if not isinstance(p, ToolCall)]
        kwargs["content"] = _content(others, as_list=bool(own.get("list")))
        if calls:
            if not hasattr(cls, "model_fields") or "tool_calls" not in cls.model_fields:
                msg = f"a {message.role} message cannot hold tool calls in LangChain"
                raise MessageFormatError(msg)
            valid: list[dict[str, Any]] = []
            invalid: list[dict[str, Any]] = []
            kinds: list[tuple[bool, int]] = []
            raw: dict[str, str] = {}
            for call in calls:
                ok, entry, raw_arguments = _call_out(call)
                (valid if ok else invalid).append(entry)
                kinds.append((ok, len(valid if ok else invalid) - 1))
                if raw_arguments is not None:
                    raw[call.id] = raw_arguments
            positions = [i if ok else len(valid) + i for ok, i in kinds]
            if positions != list(range(len(positions))):
                # LangChain lists valid calls, then invalid ones; keep the real order.
                stash["order"] = positions
            if raw:
                stash["arguments"] = raw
            kwargs["tool_calls"] = valid
            kwargs["invalid_tool_calls"] = invalid
    if stash:
        additional = dict(kwargs.get("additional_kwargs", {}))
        additional[STASH] = stash
        kwargs["additional_kwargs"] = additional
    return cls(id=message.id, name=message.name, **kwargs)


def to_langchain(conversation: Iterable[Message]) -> list[Any]:
    """A memrules conversation as LangChain messages (see `from_langchain`).

    A message that came from LangChain becomes the same class with the same
    fields; any other becomes ``SystemMessage``, ``HumanMessage``,
    ``AIMessage`` or ``ToolMessage`` by role. Raises
    `MessageFormatError` naming the index of a message
    LangChain cannot hold (a tool message with several results).
    """
    out = []
    for i, m in enumerate(conversation):
        try:
            out.append(_to_one(m, _langchain_messages()))
        except MessageFormatError as exc:
            raise MessageFormatError(str(exc), index=i) from None
    return out
