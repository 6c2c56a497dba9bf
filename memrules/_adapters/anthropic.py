"""Anthropic Messages API messages, both ways.

``from_anthropic(messages, system=...)`` reads the ``messages`` array (and the
top-level ``system`` parameter) into a conversation; ``to_anthropic`` and
``to_anthropic_request`` write one back. The round trip is lossless:
``to_anthropic(from_anthropic(m)) == m`` for every valid message list ``m``,
``to_anthropic_request(from_anthropic(r)) == r`` for every valid request
``{"system": ..., "messages": [...]}``, and ``from_anthropic(to_anthropic(c))
== c`` for a conversation ``c`` that ``from_anthropic`` produced.

>>> from_anthropic({"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]})[0]
Message(role='system', parts=(Text(text='Be brief.'),), id=None, name=None, metadata=pmap({}))

The system prompt. Anthropic keeps it out of the message list; memrules keeps
it in, as a ``system`` message:

- ``from_anthropic`` takes the message list, or a whole request mapping
  (``{"system": ..., "messages": [...]}``; its other keys, such as ``model``,
  are request settings and are ignored), or the list with ``system=``. A
  system prompt becomes the first message: one ``system`` message, a string
  as one ``Text``, a block list as one ``Text`` per block (its
  ``cache_control`` kept). A null ``system`` is the same as none.
- ``to_anthropic_request(c)`` returns ``{"system": ..., "messages": [...]}``,
  valid for the API: every system message goes into ``system`` (one system
  message as it was written; several as their blocks, in order), the other
  messages into ``messages``. Several system messages therefore come back as
  one.
- ``to_anthropic(c)`` returns the message list only, and writes a system
  message where it stands, as ``{"role": "system", "content": ...}``.
  That is not something the API accepts, but it is lossless, and
  ``from_anthropic`` reads it back (to the same message a ``system``
  parameter gives). Use ``to_anthropic_request`` to call the API.

How each block maps: ``text`` becomes :class:`~memrules._messages.Text`;
``tool_use`` a :class:`~memrules._messages.ToolCall` whose ``arguments`` is
``input`` as JSON text (written back, it parses to an equal object); a
``tool_result`` a :class:`~memrules._messages.ToolResult` part of the same
user message (not a separate ``tool`` message), its ``content`` a string or a
tuple of ``Text``/``Opaque`` parts; every other block (``image``,
``document``, ``thinking``, ``redacted_thinking``, server tool blocks, types
memrules does not know) an :class:`~memrules._messages.Opaque` whose ``kind``
is ``"anthropic:<type>"`` and whose ``payload`` is the whole block.

What the data model cannot say is kept where the writers find it again, and
only when needed:

``Message.metadata`` keys
    ``"anthropic"``: the message's keys other than ``role`` and ``content``,
    verbatim. ``"anthropic_content"``: ``"absent"``, ``"null"`` or ``"list"``,
    how ``content`` was written where the default would write it otherwise
    (by default no blocks is ``""``, one text block without extra fields is a
    string, anything else a list).
part ``extra`` keys
    ``"anthropic"``: the block's unmapped keys (``cache_control``,
    ``citations``…), verbatim. On ``ToolResult`` also
    ``"anthropic_content"`` (``"absent"`` or ``"null"``) and
    ``"anthropic_is_error"`` (``False``: ``is_error`` was written out as
    false).

Converting from OpenAI messages (what is kept, what is lost): ``tool``
messages become user messages of ``tool_result`` blocks, consecutive ones
merged into one; ``developer`` becomes ``system``; ``image_url`` parts become
``image`` blocks (``data:`` URLs as base64 sources). A tool call's arguments
that are not a JSON object (a model's truncated output, a placeholder) are
sent as ``{"arguments": "<the text>"}``, and empty arguments as ``{}``.
Lost: message ``name``, ``refusal``, ``audio`` and other OpenAI fields kept in
metadata or extra, audio and file parts. Opaque parts of no provider (a
``kind`` without a colon) are written as their payload when it is an object
and dropped otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memrules._adapters._common import (
    MISSING,
    array,
    fail,
    is_array,
    mapping,
    plain,
    required_str,
    split_kind,
    type_name,
    unmapped,
)
from memrules._messages import Message, Opaque, Part, Role, Text, ToolCall, ToolResult

__all__ = ["from_anthropic", "to_anthropic", "to_anthropic_request"]

_ROLES: tuple[Role, ...] = ("user", "assistant", "system")
_MESSAGE_KEYS = frozenset({"role", "content"})
_TEXT_KEYS = frozenset({"type", "text"})
_TOOL_USE_KEYS = frozenset({"type", "id", "name", "input"})
_TOOL_RESULT_KEYS = frozenset({"type", "tool_use_id", "content", "is_error"})

ContentPart = Text | Opaque


# --------------------------------------------------------------------------- reading


def from_anthropic(
    messages: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
) -> tuple[Message, ...]:
    """Read Anthropic messages into a conversation.

    ``messages`` is the ``messages`` array of a request, or the whole request
    mapping; ``system`` is the request's ``system`` parameter, when
    ``messages`` is a list. The system prompt becomes the first message. The
    input is not modified. Raises :class:`~memrules._errors.MessageFormatError`
    naming the message index and field for malformed input, e.g.
    ``messages[2].content[0].tool_use_id: missing``; an error in the system
    prompt names ``system``.
    """
    items: Any = messages
    if isinstance(messages, Mapping):
        items = messages.get("messages", MISSING)
        if items is MISSING:
            fail(
                "missing: pass a list of messages, or a request with a 'messages' list",
                None,
                "messages",
            )
        in_request = messages.get("system")
        if in_request is not None:
            if system is not None:
                fail("given both in the request and as system=; pass one", None, "system")
            system = in_request
    items = array(items, None, "messages", "messages")
    out: list[Message] = []
    if system is not None:
        out.append(_read_system(system))
    for index, raw in enumerate(items):
        out.append(_read_message(raw, index))
    return tuple(out)


def _read_system(system: Any) -> Message:
    if not isinstance(system, str) and not is_array(system):
        fail(f"expected a string or a list of text blocks, got {type_name(system)}", None, "system")
    parts, form = _read_content(system, None, "system")
    if form:
        return Message(role="system", parts=parts, metadata={"anthropic_content": form})
    return Message(role="system", parts=parts)


def _read_message(raw: Any, index: int) -> Message:
    raw = mapping(raw, index, "")
    role = raw.get("role", MISSING)
    if role is MISSING:
        fail("missing", index, "role")
    if role not in _ROLES:
        fail(f"unknown role {role!r}, expected 'user', 'assistant' or 'system'", index, "role")
    content = raw.get("content", MISSING)
    if content is MISSING or content is None:
        parts: tuple[Part, ...] = ()
        form: str | None = "absent" if content is MISSING else "null"
    elif isinstance(content, str) or is_array(content):
        parts, form = _read_content(content, index, "content")
    else:
        fail(
            f"expected a string or a list of content blocks, got {type_name(content)}",
            index,
            "content",
        )
    fields = unmapped(raw, _MESSAGE_KEYS)
    if fields or form:
        metadata: dict[str, Any] = {}
        if fields:
            metadata["anthropic"] = fields
        if form:
            metadata["anthropic_content"] = form
        return Message(role=role, parts=parts, metadata=metadata)
    return Message(role=role, parts=parts)


def _read_content(
    content: str | Sequence[Any], index: int | None, field: str
) -> tuple[tuple[Part, ...], str | None]:
    """The parts of a string or block list, and ``"list"`` if the default
    would write them back as a string (or an empty string)."""
    if isinstance(content, str):
        return ((Text(text=content),) if content else ()), None
    parts = tuple(_read_block(block, index, f"{field}[{j}]") for j, block in enumerate(content))
    if not parts or (len(parts) == 1 and _is_plain_text(parts[0])):
        return parts, "list"
    return parts, None


def _block_type(block: Any, index: int | None, where: str) -> tuple[Mapping[str, Any], str]:
    block = mapping(block, index, where)
    kind = block.get("type", MISSING)
    if kind is MISSING:
        fail("missing", index, f"{where}.type")
    if not isinstance(kind, str):
        fail(f"expected a string, got {type_name(kind)}", index, f"{where}.type")
    return block, kind


def _read_block(block: Any, index: int | None, where: str) -> Part:
    block, kind = _block_type(block, index, where)
    if kind == "tool_use":
        return _read_tool_use(block, index, where)
    if kind == "tool_result":
        return _read_tool_result(block, index, where)
    return _read_content_block(block, kind, index, where)


def _read_content_block(
    block: Mapping[str, Any], kind: str, index: int | None, where: str
) -> ContentPart:
    if kind == "text":
        text = required_str(block, "text", index, where)
        rest = unmapped(block, _TEXT_KEYS)
        return Text(text=text, extra={"anthropic": rest}) if rest else Text(text=text)
    payload = block if type(block) is dict else dict(block)
    return Opaque(kind=f"anthropic:{kind}", payload=payload)


def _read_tool_use(block: Mapping[str, Any], index: int | None, where: str) -> ToolCall:
    call_id = required_str(block, "id", index, where)
    name = required_str(block, "name", index, where)
    arguments = block.get("input", MISSING)
    if arguments is MISSING:
        fail("missing", index, f"{where}.input")
    if not isinstance(arguments, Mapping):
        fail(f"expected an object, got {type_name(arguments)}", index, f"{where}.input")
    try:
        text = json.dumps(arguments, ensure_ascii=False, allow_nan=False, default=_jsonable)
    except (TypeError, ValueError) as exc:
        fail(f"is not JSON: {exc}", index, f"{where}.input")
    rest = unmapped(block, _TOOL_USE_KEYS)
    if rest:
        return ToolCall(id=call_id, name=name, arguments=text, extra={"anthropic": rest})
    return ToolCall(id=call_id, name=name, arguments=text)


def _jsonable(value: object) -> object:
    """Let ``json.dumps`` take frozen (pyrsistent) input as well as plain."""
    if isinstance(value, Mapping):
        return dict(value)
    if is_array(value):
        return list(value)  # type: ignore[call-overload]
    msg = f"{type(value).__name__} is not a JSON value"
    raise TypeError(msg)


def _read_tool_result(block: Mapping[str, Any], index: int | None, where: str) -> ToolResult:
    call_id = required_str(block, "tool_use_id", index, where)
    extra: dict[str, Any] = {}
    content = block.get("content", MISSING)
    result: str | tuple[ContentPart, ...]
    if isinstance(content, str):
        result = content
    elif content is MISSING or content is None:
        result = ""
        extra["anthropic_content"] = "absent" if content is MISSING else "null"
    elif is_array(content):
        blocks: list[ContentPart] = []
        for j, inner in enumerate(content):
            inner_where = f"{where}.content[{j}]"
            inner, kind = _block_type(inner, index, inner_where)
            blocks.append(_read_content_block(inner, kind, index, inner_where))
        result = tuple(blocks)
    else:
        fail(
            f"expected a string or a list of content blocks, got {type_name(content)}",
            index,
            f"{where}.content",
        )
    is_error = block.get("is_error", MISSING)
    if is_error is MISSING:
        is_error = False
    elif not isinstance(is_error, bool):
        fail(f"expected a boolean, got {type_name(is_error)}", index, f"{where}.is_error")
    elif not is_error:
        extra["anthropic_is_error"] = False
    rest = unmapped(block, _TOOL_RESULT_KEYS)
    if rest:
        extra["anthropic"] = rest
    if extra:
        return ToolResult(call_id=call_id, content=result, is_error=is_error, extra=extra)
    return ToolResult(call_id=call_id, content=result, is_error=is_error)


def _is_plain_text(part: Part) -> bool:
    return isinstance(part, Text) and "anthropic" not in part.extra


# --------------------------------------------------------------------------- writing


def to_anthropic(conversation: Iterable[Message]) -> list[dict[str, Any]]:
    """Write a conversation as an Anthropic ``messages`` list.

    System messages stay where they are, as ``{"role": "system", ...}``
    entries (lossless, but not for the API: use :func:`to_anthropic_request`).
    Returns fresh plain ``dict``/``list`` values, ready for ``json.dumps``.
    """
    return _write_messages(conversation, hoist_system=False)[1]


def to_anthropic_request(conversation: Iterable[Message]) -> dict[str, Any]:
    """Write a conversation as ``{"system": ..., "messages": [...]}``.

    Every system message goes into ``system``, so the result is valid for the
    API; ``system`` is left out when there is none. Merge the result into your
    request: ``{"model": ..., "max_tokens": ..., **to_anthropic_request(c)}``.
    """
    systems, messages = _write_messages(conversation, hoist_system=True)
    if not systems:
        return {"messages": messages}
    if len(systems) == 1:
        system = _content_value(systems[0][0], systems[0][1] if systems[0][1] == "list" else None)
        return {"system": system, "messages": messages}
    return {"system": [b for blocks, _ in systems for b in blocks], "messages": messages}


def _write_messages(
    conversation: Iterable[Message], *, hoist_system: bool
) -> tuple[list[tuple[list[dict[str, Any]], str | None]], list[dict[str, Any]]]:
    out: list[dict[str, Any]] = []
    systems: list[tuple[list[dict[str, Any]], str | None]] = []
    merged: list[dict[str, Any]] | None = None  # blocks of the user message tool messages join
    for index, message in enumerate(conversation):
        if not isinstance(message, Message):
            fail(f"expected a Message, got {type(message).__name__}", index, "")
        if message.role == "tool":
            blocks = _write_blocks(message, index)
            if merged is None:
                merged = blocks
                out.append({"role": "user", "content": merged})
            else:
                merged.extend(blocks)
            continue
        if message.role == "system" and hoist_system:
            systems.append(
                (_write_blocks(message, index), message.metadata.get("anthropic_content"))
            )
            continue
        merged = None
        out.append(_write_message(message, index))
    return systems, out


def _write_message(message: Message, index: int) -> dict[str, Any]:
    metadata = message.metadata
    out: dict[str, Any] = {"role": message.role}
    content = _content_value(_write_blocks(message, index), metadata.get("anthropic_content"))
    if content is not MISSING:
        out["content"] = content
    _merge(out, metadata.get("anthropic"))
    return out


def _content_value(blocks: list[dict[str, Any]], form: str | None) -> Any:
    if not blocks:
        if form == "absent":
            return MISSING
        if form == "null":
            return None
        return [] if form == "list" else ""
    if len(blocks) == 1 and form != "list" and _is_plain_block(blocks[0]):
        return blocks[0]["text"]
    return blocks


def _write_blocks(message: Message, index: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for j, part in enumerate(message.parts):
        if isinstance(part, Text):
            blocks.append(_write_text(part))
        elif isinstance(part, ToolCall):
            if message.role == "tool":
                fail("a tool message cannot carry a tool call", index, f"parts[{j}]")
            blocks.append(_write_tool_use(part))
        elif isinstance(part, ToolResult):
            blocks.append(_write_tool_result(part))
        else:
            block = _write_opaque(part)
            if block is not None:
                blocks.append(block)
    return blocks


def _write_text(part: Text) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "text", "text": part.text}
    _merge(out, part.extra.get("anthropic"))
    return out


def _write_tool_use(part: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "tool_use",
        "id": part.id,
        "name": part.name,
        "input": _input(part.arguments),
    }
    _merge(out, part.extra.get("anthropic"))
    return out


def _input(arguments: str) -> dict[str, Any]:
    """The ``input`` object for a call's arguments text."""
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": arguments}


def _write_tool_result(part: ToolResult) -> dict[str, Any]:
    extra = part.extra
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.call_id}
    content = part.content
    if isinstance(content, str):
        form = extra.get("anthropic_content") if not content else None
        if form == "null":
            out["content"] = None
        elif form != "absent":
            out["content"] = content
    else:
        blocks = []
        for inner in content:
            block = _write_text(inner) if isinstance(inner, Text) else _write_opaque(inner)
            if block is not None:
                blocks.append(block)
        out["content"] = blocks
    if part.is_error:
        out["is_error"] = True
    elif "anthropic_is_error" in extra:
        out["is_error"] = False
    _merge(out, extra.get("anthropic"))
    return out


def _write_opaque(part: Opaque) -> dict[str, Any] | None:
    provider, kind = split_kind(part.kind)
    payload = part.payload
    if provider == "anthropic" or (not provider and isinstance(payload, Mapping)):
        return plain(payload) if isinstance(payload, Mapping) else None
    if provider == "openai" and kind == "image_url":
        return _image_from_openai(payload)
    return None


def _image_from_openai(part: Any) -> dict[str, Any] | None:
    image = part.get("image_url") if isinstance(part, Mapping) else None
    url = image.get("url") if isinstance(image, Mapping) else None
    if not isinstance(url, str):
        return None
    head, sep, data = url.partition(";base64,")
    if sep and head.startswith("data:"):
        source = {"type": "base64", "media_type": head[len("data:") :], "data": data}
        return {"type": "image", "source": source}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _merge(out: dict[str, Any], fields: Any) -> None:
    """Add the kept verbatim ``fields`` to ``out``; what memrules wrote wins."""
    if fields:
        for key, value in fields.items():
            if key not in out:
                out[key] = plain(value)


def _is_plain_block(block: Mapping[str, Any]) -> bool:
    return len(block) == 2 and block.get("type") == "text" and isinstance(block.get("text"), str)
