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

How each block maps: ``text`` becomes `Text`;
``tool_use`` a `ToolCall` whose ``arguments`` is
``input`` as JSON text (written back, it parses to an equal object); a
``tool_result`` a `ToolResult` part of the same
user message (not a separate ``tool`` message), its ``content`` a string or a
tuple of ``Text``/``Opaque`` parts; every other block (``image``,
``document``, ``thinking``, ``redacted_thinking``, server tool blocks, types
memrules does not know) an `Opaque` whose ``kind``
is ``"anthropic:<type>"`` and whose ``payload`` is the whole block.

What the data model cannot say is kept where the writers find it again, and
only when needed:

``Message.metadata`` keys
    ``"anthropic"``: the message's keys other than ``role`` and ``content``,
    verbatim. ``"anthropic_content"``: ``"absent"``, ``"null"`` or ``"list"``,
    how ``content`` was written where the default would write it otherwise
    (by default no blocks is ``""``, one text block without extra fields is a
    string, anything else a list). ``"anthropic_keys"``: the message's keys
    in input order, where the writers would write them in another.
part ``extra`` keys
    ``"anthropic"``: the block's unmapped keys (``cache_control``,
    ``citations``…), verbatim. ``"anthropic_keys"``: the block's keys in
    input order, where the writers would write them in another. On
    ``ToolResult`` also ``"anthropic_content"`` (``"absent"`` or ``"null"``)
    and ``"anthropic_is_error"`` (``False``: ``is_error`` was written out as
    false).

Key order: the writers write every object with its keys in the order
``from_anthropic`` read them (opaque blocks and kept fields verbatim, a tool
call's ``input`` through its JSON text, the rest by the orders recorded
above), so the output's bytes follow the input's, whatever
``PYTHONHASHSEED`` is. The request object itself is written as ``system``
then ``messages``; merge it into the caller's request to keep that order.

Refused at input, with a `MessageFormatError`
naming the index and field: ``NaN`` and infinities anywhere (``json.dumps``
would write a bare ``NaN``, which is not JSON), and strings or keys with a
lone surrogate (``"\\ud800"``, as ``json.loads`` returns for the escape),
which no UTF-8 writer can write, and values nested more than
`MAX_DEPTH` levels deep. A message built in Python
refuses lone surrogates and such nesting when it is built (a
`MessageFormatError` naming the field), but not a
``NaN`` in its metadata: keep that out of it.

Converting from OpenAI messages (what is kept, what is lost): ``tool``
messages become user messages of ``tool_result`` blocks, consecutive ones
merged into one; ``developer`` becomes ``system``; ``image_url`` parts become
``image`` blocks (``data:`` URLs as base64 sources). A tool call's arguments
that are not a JSON object (a model's truncated output, a placeholder), or
hold ``NaN`` or an escaped lone surrogate, are sent as
``{"arguments": "<the text>"}``, and empty arguments as ``{}``.
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
    Image,
    ImageCodec,
    array,
    checked_str,
    content_value,
    fail,
    finish,
    is_array,
    key_order,
    list_form,
    mapping,
    rank,
    read_text_or_opaque,
    register_images,
    required_str,
    type_name,
    typed,
    unmapped,
    verbatim,
    write_opaque,
    write_text,
)
from memrules._adapters.conversion_cache import ConversionCache
from memrules._core.frozen import ValueProblem, freeze_json, has_surrogate
from memrules._core.messages import ContentPart, Message, Part, Role, Text, ToolCall, ToolResult

__all__ = ["from_anthropic", "to_anthropic", "to_anthropic_request"]

_PROVIDER = "anthropic"
_ROLES: tuple[Role, ...] = ("user", "assistant", "system")
# The order the writers write their own keys in (see _common, "Key order");
# a rank is also the set of keys memrules maps.
_RANK = rank("role", "content")
_TOOL_USE_RANK = rank("type", "id", "name", "input")
_TOOL_RESULT_RANK = rank("type", "tool_use_id", "content", "is_error")


# --------------------------------------------------------------------------- reading


def from_anthropic(
    messages: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    memo: ConversionCache | None = None,
) -> tuple[Message, ...]:
    """Read Anthropic messages into a conversation.

    ``messages`` is the ``messages`` array of a request, or the whole request
    mapping; ``system`` is the request's ``system`` parameter, when
    ``messages`` is a list. The system prompt becomes the first message. The
    input is not modified. Raises `MessageFormatError`
    naming the message index and field for malformed input, e.g.
    ``messages[2].content[0].tool_use_id: missing``, and for values no JSON
    writer can write back (``NaN``, lone surrogates); an error in the system
    prompt names ``system``.

    ``memo``, one conversation's `ConversionCache`,
    makes a request pay only for the messages that conversation has not
    sent before (and reads the system prompt again only when it changed).
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
    if system is None:
        head: tuple[Message, ...] = ()
    else:
        head = (_read_system(system) if memo is None else memo.read_outside(system, _read_system),)
    if memo is not None:
        converted = memo.convert(_PROVIDER, items, _read_one, None)
        return head + converted if head else converted  # one copy of the history at most
    return (*head, *(_read_message(raw, index) for index, raw in enumerate(items)))


def _read_one(raw: Any, index: int, state: None) -> tuple[Message, None]:
    return _read_message(raw, index), state


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
    fields = unmapped(raw, _RANK, index, "")
    order = key_order(raw, _RANK)
    if fields is None and form is None and order is None:
        return Message(role=role, parts=parts)
    metadata: dict[str, Any] = {}
    if fields is not None:
        metadata["anthropic"] = fields
    if form:
        metadata["anthropic_content"] = form
    if order is not None:
        metadata["anthropic_keys"] = order
    return Message(role=role, parts=parts, metadata=metadata)


def _read_content(
    content: str | Sequence[Any], index: int | None, field: str
) -> tuple[tuple[Part, ...], str | None]:
    """The parts of a string or block list, and ``"list"`` if the default
    would write them back as a string (or an empty string)."""
    if isinstance(content, str):
        return ((Text(text=checked_str(content, index, field)),) if content else ()), None
    parts = tuple(_read_block(block, index, f"{field}[{j}]") for j, block in enumerate(content))
    return parts, list_form(parts, _PROVIDER)


def _read_block(block: Any, index: int | None, where: str) -> Part:
    block, kind = typed(block, index, where)
    if kind == "tool_use":
        return _read_tool_use(block, index, where)
    if kind == "tool_result":
        return _read_tool_result(block, index, where)
    return read_text_or_opaque(block, kind, _PROVIDER, index, where)


def _read_tool_use(block: Mapping[str, Any], index: int | None, where: str) -> ToolCall:
    call_id = required_str(block, "id", index, where)
    name = required_str(block, "name", index, where)
    arguments = block.get("input", MISSING)
    if arguments is MISSING:
        fail("missing", index, f"{where}.input")
    if not isinstance(arguments, Mapping):
        fail(f"expected an object, got {type_name(arguments)}", index, f"{where}.input")
    text = _arguments(arguments, index, f"{where}.input")
    extra: dict[str, Any] = {}
    rest = unmapped(block, _TOOL_USE_RANK, index, where)
    if rest is not None:
        extra["anthropic"] = rest
    order = key_order(block, _TOOL_USE_RANK)
    if order is not None:
        extra["anthropic_keys"] = order
    if extra:
        return ToolCall(id=call_id, name=name, arguments=text, extra=extra)
    return ToolCall(id=call_id, name=name, arguments=text)


def _arguments(arguments: Mapping[str, Any], index: int | None, field: str) -> str:
    """A tool call's ``input`` as JSON text, keys in input order."""
    try:
        text = json.dumps(arguments, ensure_ascii=False, allow_nan=False, default=_jsonable)
    except (TypeError, ValueError):
        text = None
    if text is None or has_surrogate(text):
        verbatim(arguments, index, field)  # raises, naming the place inside
        fail("is not JSON", index, field)  # pragma: no cover - verbatim raised
    return text


def _jsonable(value: object) -> object:
    """Let ``json.dumps`` take frozen input as well as plain."""
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
        result = checked_str(content, index, f"{where}.content")
    elif content is MISSING or content is None:
        result = ""
        extra["anthropic_content"] = "absent" if content is MISSING else "null"
    elif is_array(content):
        blocks: list[ContentPart] = []
        for j, inner in enumerate(content):
            inner_where = f"{where}.content[{j}]"
            inner, kind = typed(inner, index, inner_where)
            blocks.append(read_text_or_opaque(inner, kind, _PROVIDER, index, inner_where))
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
    rest = unmapped(block, _TOOL_RESULT_RANK, index, where)
    if rest is not None:
        extra["anthropic"] = rest
    order = key_order(block, _TOOL_RESULT_RANK)
    if order is not None:
        extra["anthropic_keys"] = order
    if extra:
        return ToolResult(call_id=call_id, content=result, is_error=is_error, extra=extra)
    return ToolResult(call_id=call_id, content=result, is_error=is_error)


# --------------------------------------------------------------------------- writing


def to_anthropic(conversation: Iterable[Message]) -> list[dict[str, Any]]:
    """Write a conversation as an Anthropic ``messages`` list.

    System messages stay where they are, as ``{"role": "system", ...}``
    entries (lossless, but not for the API: use `to_anthropic_request`).
    Returns fresh plain ``dict``/``list`` values, ready for ``json.dumps``,
    with every object's keys in the order they were read in.
    """
    return _write_messages(conversation, hoist_system=False)[1]


def to_anthropic_request(
    conversation: Iterable[Message], *, cache_breakpoints: bool = False
) -> dict[str, Any]:
    """Write a conversation as ``{"system": ..., "messages": [...]}``.

    Every system message goes into ``system``, so the result is valid for the
    API; ``system`` is left out when there is none. Merge the result into your
    request: ``{"model": ..., "max_tokens": ..., **to_anthropic_request(c)}``.
    With ``cache_breakpoints``, ``cache_control`` is placed on the last stable
    message, as far as the caller's own leave room for (see
    `place_breakpoints`).
    """
    if cache_breakpoints:
        from memrules._adapters.breakpoints import place_breakpoints

        conversation = place_breakpoints(conversation)
    systems, messages = _write_messages(conversation, hoist_system=True)
    if not systems:
        return {"messages": messages}
    if len(systems) == 1:
        blocks, form = systems[0]
        return {
            "system": content_value(blocks, "list" if form == "list" else None, ""),
            "messages": messages,
        }
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
    content = content_value(_write_blocks(message, index), metadata.get("anthropic_content"), "")
    if content is not MISSING:
        out["content"] = content
    if not metadata:
        return out
    return finish(out, metadata.get("anthropic"), metadata.get("anthropic_keys"), _RANK)


def _write_blocks(message: Message, index: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for j, part in enumerate(message.parts):
        if isinstance(part, Text):
            blocks.append(write_text(part, _PROVIDER))
        elif isinstance(part, ToolCall):
            if message.role == "tool":
                fail("a tool message cannot carry a tool call", index, f"parts[{j}]")
            blocks.append(_write_tool_use(part))
        elif isinstance(part, ToolResult):
            blocks.append(_write_tool_result(part))
        else:
            block = write_opaque(part, _PROVIDER)
            if block is not None:
                blocks.append(block)
    return blocks


def _write_tool_use(part: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "tool_use",
        "id": part.id,
        "name": part.name,
        "input": _input(part.arguments),
    }
    extra = part.extra
    if not extra:
        return out
    return finish(out, extra.get("anthropic"), extra.get("anthropic_keys"), _TOOL_USE_RANK)


def _input(arguments: str) -> dict[str, Any]:
    """The ``input`` object for a call's arguments text: the object it holds,
    or ``{"arguments": text}`` when it holds none that can be written back
    (not JSON, not an object, ``NaN``, an escaped lone surrogate)."""
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments, parse_constant=_no_constant)
    except ValueError:
        return {"arguments": arguments}
    if not isinstance(value, dict):
        return {"arguments": arguments}
    if "\\u" in arguments:  # an escape may have decoded to a lone surrogate
        try:
            freeze_json(value)
        except ValueProblem:
            return {"arguments": arguments}
    return value


def _no_constant(name: str) -> Any:
    msg = f"{name} is not JSON"
    raise ValueError(msg)


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
            if isinstance(inner, Text):
                blocks.append(write_text(inner, _PROVIDER))
                continue
            block = write_opaque(inner, _PROVIDER)
            if block is not None:
                blocks.append(block)
        out["content"] = blocks
    if part.is_error:
        out["is_error"] = True
    elif "anthropic_is_error" in extra:
        out["is_error"] = False
    if not extra:
        return out
    return finish(out, extra.get("anthropic"), extra.get("anthropic_keys"), _TOOL_RESULT_RANK)


# --------------------------------------------------------------------------- images


def _read_image(block: Mapping[str, Any]) -> Image | None:
    source = block.get("source")
    if not isinstance(source, Mapping):
        return None
    kind = source.get("type")
    if kind == "base64":
        media_type, data = source.get("media_type"), source.get("data")
        if isinstance(media_type, str) and isinstance(data, str):
            return Image(media_type=media_type, data=data)
    elif kind == "url":
        url = source.get("url")
        if isinstance(url, str):
            return Image(url=url)
    return None


def _write_image(image: Image) -> dict[str, Any]:
    if image.url is None:
        source = {"type": "base64", "media_type": image.media_type, "data": image.data}
    else:
        source = {"type": "url", "url": image.url}
    return {"type": "image", "source": source}


IMAGES = register_images(
    ImageCodec(provider=_PROVIDER, kind="image", read=_read_image, write=_write_image)
)
"""Anthropic's image blocks: a ``base64`` or ``url`` source."""
