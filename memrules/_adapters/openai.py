"""OpenAI chat-completions messages, both ways.

``from_openai(messages)`` reads a list of chat-completions message objects
(JSON already parsed) into a conversation; ``to_openai(conversation)`` writes
one back. The round trip is lossless: ``to_openai(from_openai(m)) == m`` for
every valid ``m``, and ``from_openai(to_openai(c)) == c`` for a conversation
``c`` that ``from_openai`` produced.

>>> from_openai([{"role": "user", "content": "hi"}])
(Message(role='user', parts=(Text(text='hi'),), id=None, name=None, metadata=pmap({})),)

How each message maps:

- ``system`` and ``developer`` become ``system`` messages; ``user`` and
  ``assistant`` keep their role; ``tool`` becomes a ``tool`` message holding
  one :class:`~memrules._messages.ToolResult` (``tool_call_id`` is its
  ``call_id``). The legacy ``function`` role becomes a ``tool`` message too,
  answering the assistant's most recent legacy ``function_call``.
- ``content`` as a string becomes one :class:`~memrules._messages.Text`
  (an empty string, none); as a list, ``text`` parts become ``Text`` and every
  other part (``image_url``, ``input_audio``, ``file``, ``refusal``, types
  memrules does not know) an :class:`~memrules._messages.Opaque` whose ``kind``
  is ``"openai:<type>"`` and whose ``payload`` is the whole part.
- ``tool_calls`` become :class:`~memrules._messages.ToolCall` parts after the
  content, in order; ``arguments`` is kept as the exact text.
  ``custom`` tool calls are read too (``input`` is the arguments).
- ``name`` becomes ``Message.name``.

What the data model cannot say is kept where ``to_openai`` finds it again,
and only when needed (an ordinary message has empty metadata):

``Message.metadata`` keys
    ``"openai"``: the message's keys that memrules does not map (``refusal``,
    ``audio``, vendor extensions, a null ``name``, an empty or null
    ``tool_calls``), verbatim.
    ``"openai_role"``: ``"developer"`` or ``"function"``, the original role
    where ``Message.role`` cannot say it.
    ``"openai_content"``: ``"absent"``, ``"null"``, ``"string"`` or
    ``"list"``: how ``content`` was written, where the default would write
    it differently. By default no content is ``null`` on an assistant message
    with tool calls and ``""`` otherwise, one plain text part is a string, and
    anything else is a list.
part ``extra`` keys
    ``"openai"`` (on ``Text`` and ``ToolCall``): the part's unmapped keys,
    verbatim. On ``ToolCall`` also ``"openai_function"`` (the unmapped keys
    of its ``function`` or ``custom`` object), ``"openai_type"``
    (``"custom"``) and ``"openai_function_call"`` (``True`` for a legacy
    ``function_call``, whose id memrules makes up as
    ``memrules_function_call_<index>`` so that the pairing invariants can see
    it; the id is not written back).

Converting from Anthropic messages (what is kept, what is lost): a user
message's ``ToolResult`` parts become ``tool`` messages, one per result,
followed by a ``user`` message with the rest of its parts, if any; images in
tool results move to that user message, because OpenAI tool messages take
text only. Anthropic images become ``image_url`` parts (base64 sources as
``data:`` URLs). Lost: ``is_error``, Anthropic fields kept in ``extra`` or
``metadata`` (``cache_control``, citations), thinking blocks, documents and
other Anthropic-only blocks. Opaque parts of no provider (a ``kind`` without
a colon) are written as their payload when it is an object and dropped
otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memrules._adapters._common import (
    MISSING,
    array,
    fail,
    is_array,
    mapping,
    optional_str,
    plain,
    required_str,
    split_kind,
    type_name,
    unmapped,
)
from memrules._messages import Message, Opaque, Part, Role, Text, ToolCall, ToolResult

__all__ = ["from_openai", "to_openai"]

_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}
_PLAIN_KEYS = frozenset({"role", "content", "name"})
_KNOWN_KEYS: dict[str, frozenset[str]] = {
    "system": _PLAIN_KEYS,
    "developer": _PLAIN_KEYS,
    "user": _PLAIN_KEYS,
    "assistant": _PLAIN_KEYS | {"tool_calls", "function_call"},
    "tool": _PLAIN_KEYS | {"tool_call_id"},
    "function": _PLAIN_KEYS,
}
_TEXT_KEYS = frozenset({"type", "text"})
_CALL_KEYS = {
    "function": frozenset({"id", "type", "function"}),
    "custom": frozenset({"id", "type", "custom"}),
}
_BODY_KEYS = {"function": frozenset({"name", "arguments"}), "custom": frozenset({"name", "input"})}
_ARGUMENTS_KEY = {"function": "arguments", "custom": "input"}
_LEGACY_KEYS = frozenset({"name", "arguments"})
_LEGACY_ID = "memrules_function_call_{}"

ContentPart = Text | Opaque


# --------------------------------------------------------------------------- reading


def from_openai(messages: Sequence[Mapping[str, Any]]) -> tuple[Message, ...]:
    """Read OpenAI chat-completions messages into a conversation.

    ``messages`` is the ``messages`` array of a request (parsed JSON). The
    input is not modified. Raises :class:`~memrules._errors.MessageFormatError`
    naming the message index and field for malformed input, e.g.
    ``messages[3].tool_calls[0].function.arguments: expected a string, got int``.
    """
    items = array(messages, None, "messages", "messages")
    out: list[Message] = []
    pending_legacy: str | None = None  # the legacy call a "function" message answers
    for index, raw in enumerate(items):
        raw = mapping(raw, index, "")
        source_role = raw.get("role", MISSING)
        if source_role is MISSING:
            fail("missing", index, "role")
        if not isinstance(source_role, str) or source_role not in _ROLES:
            fail(
                f"unknown role {source_role!r}, expected one of {', '.join(_ROLES)}",
                index,
                "role",
            )
        if source_role in ("tool", "function"):
            if source_role == "tool":
                call_id = required_str(raw, "tool_call_id", index, "")
            else:
                call_id = pending_legacy or _LEGACY_ID.format(index)
                pending_legacy = None
            out.append(_read_result_message(raw, source_role, call_id, index))
        else:
            message = _read_message(raw, source_role, index)
            if source_role == "assistant" and message.parts:
                last = message.parts[-1]
                if isinstance(last, ToolCall) and "openai_function_call" in last.extra:
                    pending_legacy = last.id
            out.append(message)
    return tuple(out)


def _read_message(raw: Mapping[str, Any], source_role: str, index: int) -> Message:
    role = _ROLES[source_role]
    fields = unmapped(raw, _KNOWN_KEYS[source_role])
    metadata: dict[str, Any] = {}

    name = optional_str(raw, "name", index, "")
    if name is None:
        fields = {**(fields or {}), "name": None}
    elif name is MISSING:
        name = None

    content = raw.get("content", MISSING)
    form: str | None = None
    parts: list[Part]
    if isinstance(content, str):
        parts = [Text(text=content)] if content else []
        if not content:
            form = "string"
    elif content is MISSING or content is None:
        parts = []
        form = "absent" if content is MISSING else "null"
    elif is_array(content):
        parts = list(_read_parts(content, index, "content"))
        if not parts or (len(parts) == 1 and _is_plain_text(parts[0])):
            form = "list"
    else:
        fail(
            f"expected a string, a list of content parts or null, got {type_name(content)}",
            index,
            "content",
        )

    if source_role == "assistant":
        calls = raw.get("tool_calls", MISSING)
        if calls is not MISSING:
            if calls is None or (is_array(calls) and not calls):
                fields = {**(fields or {}), "tool_calls": calls}
            else:
                items = array(calls, index, "tool_calls", "tool calls")
                for j, call in enumerate(items):
                    parts.append(_read_tool_call(call, index, f"tool_calls[{j}]"))
        legacy = raw.get("function_call", MISSING)
        if legacy is None:
            fields = {**(fields or {}), "function_call": None}
        elif legacy is not MISSING:
            parts.append(_read_legacy_call(legacy, index))

    # Keep the content form only where the default would write it otherwise:
    # no content is null on an assistant message with tool calls, "" elsewhere.
    if form == "null" or form == "string":
        default_null = role == "assistant" and _has_calls(parts)
        if (form == "null") == default_null:
            form = None

    if fields:
        metadata["openai"] = fields
    if source_role != role:
        metadata["openai_role"] = source_role
    if form is not None:
        metadata["openai_content"] = form
    if metadata:
        return Message(role=role, parts=tuple(parts), name=name, metadata=metadata)
    return Message(role=role, parts=tuple(parts), name=name)


def _read_result_message(
    raw: Mapping[str, Any], source_role: str, call_id: str, index: int
) -> Message:
    fields = unmapped(raw, _KNOWN_KEYS[source_role])
    metadata: dict[str, Any] = {}
    name = optional_str(raw, "name", index, "")
    if name is None:
        fields = {**(fields or {}), "name": None}
        name = None
    elif name is MISSING:
        name = None
    content = raw.get("content", MISSING)
    result_content: str | tuple[ContentPart, ...]
    if isinstance(content, str):
        result_content = content
    elif content is MISSING or content is None:
        result_content = ""
        metadata["openai_content"] = "absent" if content is MISSING else "null"
    elif is_array(content):
        result_content = _read_parts(content, index, "content")
    else:
        fail(
            f"expected a string, a list of content parts or null, got {type_name(content)}",
            index,
            "content",
        )
    if fields:
        metadata["openai"] = fields
    if source_role != "tool":
        metadata["openai_role"] = source_role
    result = ToolResult(call_id=call_id, content=result_content)
    if metadata:
        return Message(role="tool", parts=(result,), name=name, metadata=metadata)
    return Message(role="tool", parts=(result,), name=name)


def _read_parts(items: Sequence[Any], index: int, field: str) -> tuple[ContentPart, ...]:
    parts: list[ContentPart] = []
    for j, item in enumerate(items):
        where = f"{field}[{j}]"
        item = mapping(item, index, where)
        kind = item.get("type", MISSING)
        if kind is MISSING:
            fail("missing", index, f"{where}.type")
        if not isinstance(kind, str):
            fail(f"expected a string, got {type_name(kind)}", index, f"{where}.type")
        if kind == "text":
            text = required_str(item, "text", index, where)
            rest = unmapped(item, _TEXT_KEYS)
            parts.append(Text(text=text, extra={"openai": rest}) if rest else Text(text=text))
        else:
            payload = item if type(item) is dict else dict(item)
            parts.append(Opaque(kind=f"openai:{kind}", payload=payload))
    return tuple(parts)


def _read_tool_call(call: Any, index: int, field: str) -> ToolCall:
    call = mapping(call, index, field)
    call_id = required_str(call, "id", index, field)
    kind = required_str(call, "type", index, field)
    if kind not in _CALL_KEYS:
        fail(
            f"unknown tool call type {kind!r}, expected 'function' or 'custom'",
            index,
            f"{field}.type",
        )
    body = call.get(kind, MISSING)
    if body is MISSING:
        fail("missing", index, f"{field}.{kind}")
    body = mapping(body, index, f"{field}.{kind}")
    name = required_str(body, "name", index, f"{field}.{kind}")
    arguments = required_str(body, _ARGUMENTS_KEY[kind], index, f"{field}.{kind}")
    extra: dict[str, Any] = {}
    rest = unmapped(call, _CALL_KEYS[kind])
    if rest:
        extra["openai"] = rest
    body_rest = unmapped(body, _BODY_KEYS[kind])
    if body_rest:
        extra["openai_function"] = body_rest
    if kind != "function":
        extra["openai_type"] = kind
    if extra:
        return ToolCall(id=call_id, name=name, arguments=arguments, extra=extra)
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _read_legacy_call(call: Any, index: int) -> ToolCall:
    call = mapping(call, index, "function_call")
    name = required_str(call, "name", index, "function_call")
    arguments = required_str(call, "arguments", index, "function_call")
    extra: dict[str, Any] = {"openai_function_call": True}
    rest = unmapped(call, _LEGACY_KEYS)
    if rest:
        extra["openai_function"] = rest
    return ToolCall(id=_LEGACY_ID.format(index), name=name, arguments=arguments, extra=extra)


def _is_plain_text(part: Part) -> bool:
    return isinstance(part, Text) and "openai" not in part.extra


def _has_calls(parts: Iterable[Part]) -> bool:
    return any(isinstance(p, ToolCall) for p in parts)


# --------------------------------------------------------------------------- writing


def to_openai(conversation: Iterable[Message]) -> list[dict[str, Any]]:
    """Write a conversation as OpenAI chat-completions messages.

    Returns fresh plain ``dict``/``list`` values, ready for ``json.dumps``.
    A message that OpenAI cannot express (a tool call on a user message, a
    tool message with no result) raises
    :class:`~memrules._errors.MessageFormatError` naming its index.
    """
    out: list[dict[str, Any]] = []
    for index, message in enumerate(conversation):
        if not isinstance(message, Message):
            fail(f"expected a Message, got {type(message).__name__}", index, "")
        if message.role == "tool":
            _write_tool_message(message, index, out)
        elif message.role == "user" and message.result_ids:
            _write_user_with_results(message, index, out)
        else:
            out.append(_write_message(message, index))
    return out


def _write_message(
    message: Message, index: int, moved: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    role = message.role
    metadata = message.metadata
    source_role = metadata.get("openai_role")
    if role == "system" and source_role == "developer":
        out: dict[str, Any] = {"role": "developer"}
    else:
        out = {"role": role}

    content: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    legacy: dict[str, Any] | None = None
    for j, part in enumerate(message.parts):
        if isinstance(part, Text):
            content.append(_write_text(part))
        elif isinstance(part, Opaque):
            written = _write_opaque(part)
            if written is not None:
                content.append(written)
        elif isinstance(part, ToolCall):
            if role != "assistant":
                fail(
                    f"a {role} message cannot carry a tool call in OpenAI format",
                    index,
                    f"parts[{j}]",
                )
            if legacy is None and part.extra.get("openai_function_call"):
                legacy = _write_legacy_call(part)
            else:
                calls.append(_write_tool_call(part))
        else:
            fail(
                f"a {role} message cannot carry a tool result in OpenAI format",
                index,
                f"parts[{j}]",
            )
    content.extend(moved)

    has_calls = bool(calls) or legacy is not None
    form = metadata.get("openai_content")
    if not content:
        if form == "absent":
            pass
        elif form == "null":
            out["content"] = None
        elif form == "list":
            out["content"] = []
        elif form == "string":
            out["content"] = ""
        else:
            out["content"] = None if role == "assistant" and has_calls else ""
    elif len(content) == 1 and form != "list" and _is_plain_part(content[0]):
        out["content"] = content[0]["text"]
    else:
        out["content"] = content
    if message.name is not None:
        out["name"] = message.name
    if calls:
        out["tool_calls"] = calls
    if legacy is not None:
        out["function_call"] = legacy
    _write_fields(out, metadata)
    return out


def _write_tool_message(message: Message, index: int, out: list[dict[str, Any]]) -> None:
    results = [p for p in message.parts if isinstance(p, ToolResult)]
    if len(results) != len(message.parts) or not results:
        fail("a tool message must hold ToolResult parts only, and at least one", index, "parts")
    if len(results) > 1:
        for result in results:
            written, _ = _write_result(result, None)
            out.append(written)
        return
    metadata = message.metadata
    written, moved = _write_result(results[0], metadata.get("openai_content"))
    if metadata.get("openai_role") == "function":
        del written["tool_call_id"]
        written["role"] = "function"
    if message.name is not None:
        written["name"] = message.name
    _write_fields(written, metadata)
    out.append(written)
    if moved:
        out.append({"role": "user", "content": moved})


def _write_user_with_results(message: Message, index: int, out: list[dict[str, Any]]) -> None:
    """A user message carrying tool results (read from Anthropic): one tool
    message per result, then a user message with everything else."""
    moved: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ToolResult):
            written, images = _write_result(part, None)
            out.append(written)
            moved.extend(images)
    rest = message.evolve(parts=tuple(p for p in message.parts if not isinstance(p, ToolResult)))
    if rest.parts or moved:
        out.append(_write_message(rest, index, moved))


def _write_result(
    result: ToolResult, form: str | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The tool message for ``result``, and any parts OpenAI tool messages
    cannot hold (images), which go to a following user message."""
    out: dict[str, Any] = {"role": "tool", "tool_call_id": result.call_id}
    moved: list[dict[str, Any]] = []
    content = result.content
    if isinstance(content, str):
        if content or form is None:
            out["content"] = content
        elif form == "null":
            out["content"] = None
        elif form != "absent":
            out["content"] = content
        return out, moved
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, Text):
            parts.append(_write_text(part))
            continue
        written = _write_opaque(part)
        if written is None:
            continue
        if split_kind(part.kind)[0] == "openai":
            parts.append(written)
        else:
            moved.append(written)
    out["content"] = parts
    return out, moved


def _write_text(part: Text) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "text", "text": part.text}
    extra = part.extra.get("openai")
    if extra:
        for key, value in extra.items():
            out.setdefault(key, plain(value))
    return out


def _write_opaque(part: Opaque) -> dict[str, Any] | None:
    provider, kind = split_kind(part.kind)
    payload = part.payload
    if provider == "openai" or (not provider and isinstance(payload, Mapping)):
        return plain(payload) if isinstance(payload, Mapping) else None
    if provider == "anthropic" and kind == "image":
        return _image_from_anthropic(payload)
    return None


def _image_from_anthropic(block: Any) -> dict[str, Any] | None:
    source = block.get("source") if isinstance(block, Mapping) else None
    if not isinstance(source, Mapping):
        return None
    if source.get("type") == "base64":
        media_type, data = source.get("media_type"), source.get("data")
        if isinstance(media_type, str) and isinstance(data, str):
            return {"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{data}"}}
    elif source.get("type") == "url" and isinstance(source.get("url"), str):
        return {"type": "image_url", "image_url": {"url": source["url"]}}
    return None


def _write_tool_call(part: ToolCall) -> dict[str, Any]:
    extra = part.extra
    kind = extra.get("openai_type", "function")
    if kind not in _ARGUMENTS_KEY:
        kind = "function"
    body: dict[str, Any] = {"name": part.name, _ARGUMENTS_KEY[kind]: part.arguments}
    _merge(body, extra.get("openai_function"))
    out: dict[str, Any] = {"id": part.id, "type": kind, kind: body}
    _merge(out, extra.get("openai"))
    return out


def _write_legacy_call(part: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {"name": part.name, "arguments": part.arguments}
    _merge(out, part.extra.get("openai_function"))
    return out


def _write_fields(out: dict[str, Any], metadata: Mapping[str, Any]) -> None:
    _merge(out, metadata.get("openai"))


def _merge(out: dict[str, Any], fields: Any) -> None:
    """Add the kept verbatim ``fields`` to ``out``; what memrules wrote wins."""
    if fields:
        for key, value in fields.items():
            if key not in out:
                out[key] = plain(value)


def _is_plain_part(part: Mapping[str, Any]) -> bool:
    return len(part) == 2 and part.get("type") == "text" and isinstance(part.get("text"), str)
