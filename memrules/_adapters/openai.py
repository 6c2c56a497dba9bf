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
  one `ToolResult` (``tool_call_id`` is its
  ``call_id``). The legacy ``function`` role becomes a ``tool`` message too,
  answering the assistant's most recent legacy ``function_call``.
- ``content`` as a string becomes one `Text`
  (an empty string, none); as a list, ``text`` parts become ``Text`` and every
  other part (``image_url``, ``input_audio``, ``file``, ``refusal``, types
  memrules does not know) an `Opaque` whose ``kind``
  is ``"openai:<type>"`` and whose ``payload`` is the whole part.
- ``tool_calls`` become `ToolCall` parts after the
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
    ``"openai_keys"``: the message's keys in input order, where
    ``to_openai`` would write them in another (see below).
part ``extra`` keys
    ``"openai"`` (on ``Text`` and ``ToolCall``): the part's unmapped keys,
    verbatim. On ``ToolCall`` also ``"openai_function"`` (the unmapped keys
    of its ``function`` or ``custom`` object), ``"openai_type"``
    (``"custom"``) and ``"openai_function_call"`` (``True`` for a legacy
    ``function_call``, whose id memrules makes up as
    ``memrules_function_call_<index>`` so that the pairing invariants can see
    it; the id is not written back).
    ``"openai_keys"`` (on ``Text`` and ``ToolCall``) and
    ``"openai_function_keys"`` (on ``ToolCall``): the keys of the part and
    of its ``function`` object in input order, where they differ from the
    writer's.

Key order: ``to_openai`` writes every object with its keys in the order
``from_openai`` read them (opaque parts and kept fields verbatim, the rest by
the orders recorded above), so the output's bytes follow the input's,
whatever ``PYTHONHASHSEED`` is.

Refused at input, with a `MessageFormatError`
naming the index and field: ``NaN`` and infinities anywhere (``json.dumps``
would write a bare ``NaN``, which is not JSON), and strings or keys with a
lone surrogate (``"\\ud800"``, as ``json.loads`` returns for the escape),
which no UTF-8 writer can write, and values nested more than
`MAX_DEPTH` levels deep. A message built in Python
refuses lone surrogates and such nesting when it is built (a
`MessageFormatError` naming the field), but not a
``NaN`` in its metadata: keep that out of it.

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
    Image,
    ImageCodec,
    array,
    checked_str,
    fail,
    is_array,
    key_order,
    list_form,
    mapping,
    optional_str,
    read_text_or_opaque,
    register_images,
    required_str,
    type_name,
    typed,
    unmapped,
)
from memrules._adapters.conversion_cache import ConversionCache
from memrules._adapters.openai_keys import (
    ARGUMENTS_KEY,
    BODY_KEYS,
    BODY_RANK,
    CALL_KEYS,
    CALL_RANK,
    KNOWN_KEYS,
    LEGACY_ID,
    LEGACY_KEYS,
    PROVIDER,
    RANK,
    ROLES,
)
from memrules._adapters.openai_write import Written, to_openai, write_back, write_image
from memrules._core.frozen import FrozenDict
from memrules._core.messages import ContentPart, Message, Part, Text, ToolCall, ToolResult

__all__ = ["Written", "from_openai", "to_openai", "write_back"]


# --------------------------------------------------------------------------- reading


def from_openai(
    messages: Sequence[Mapping[str, Any]], *, memo: ConversionCache | None = None
) -> tuple[Message, ...]:
    """Read OpenAI chat-completions messages into a conversation.

    ``messages`` is the ``messages`` array of a request (parsed JSON). The
    input is not modified. Raises `MessageFormatError`
    naming the message index and field for malformed input, e.g.
    ``messages[3].tool_calls[0].function.arguments: expected a string, got int``,
    and for values no JSON writer can write back (``NaN``, lone surrogates).

    ``memo``, one conversation's `ConversionCache`,
    makes a request pay only for the messages that conversation has not
    sent before; the others come back as the very messages they became
    then.
    """
    items = array(messages, None, "messages", "messages")
    if memo is not None:
        return memo.convert(PROVIDER, items, _read_one, None, context_free=_context_free)
    out: list[Message] = []
    pending_legacy: str | None = None  # the legacy call a "function" message answers
    for index, raw in enumerate(items):
        message, pending_legacy = _read_one(raw, index, pending_legacy)
        out.append(message)
    return tuple(out)


def _read_one(raw: Any, index: int, pending_legacy: str | None) -> tuple[Message, str | None]:
    """Message ``index``, and the legacy call a following ``function``
    message answers (``pending_legacy`` is the one before it)."""
    raw = mapping(raw, index, "")
    source_role = raw.get("role", MISSING)
    if source_role is MISSING:
        fail("missing", index, "role")
    if not isinstance(source_role, str) or source_role not in ROLES:
        fail(
            f"unknown role {source_role!r}, expected one of {', '.join(ROLES)}",
            index,
            "role",
        )
    if source_role in ("tool", "function"):
        if source_role == "tool":
            call_id = required_str(raw, "tool_call_id", index, "")
        else:
            call_id = pending_legacy or LEGACY_ID.format(index)
            pending_legacy = None
        return _read_result_message(raw, source_role, call_id, index), pending_legacy
    message = _read_message(raw, source_role, index)
    if source_role == "assistant" and message.parts:
        last = message.parts[-1]
        if isinstance(last, ToolCall) and "openai_function_call" in last.extra:
            pending_legacy = last.id
    return message, pending_legacy


def _context_free(raw: Any) -> bool:
    """Whether ``raw`` converts the same wherever it stands: everything but
    the legacy ``function_call`` and ``function`` messages, whose ids come
    from their index and their neighbours."""
    return not (
        isinstance(raw, Mapping) and ("function_call" in raw or raw.get("role") == "function")
    )


def _with(fields: FrozenDict[str, Any] | None, key: str, value: Any) -> FrozenDict[str, Any]:
    """``fields`` with a known key whose value memrules cannot say (a null
    ``name``, empty ``tool_calls``) kept verbatim too."""
    items: dict[str, Any] = dict(fields.items()) if fields else {}
    items[key] = value
    return FrozenDict(items)


def _read_message(raw: Mapping[str, Any], source_role: str, index: int) -> Message:
    role = ROLES[source_role]
    fields = unmapped(raw, KNOWN_KEYS[source_role], index, "")

    name = optional_str(raw, "name", index, "")
    if name is None:
        fields = _with(fields, "name", None)
    elif name is MISSING:
        name = None

    content = raw.get("content", MISSING)
    form: str | None = None
    parts: list[Part]
    if isinstance(content, str):
        parts = [Text(text=checked_str(content, index, "content"))] if content else []
        if not content:
            form = "string"
    elif content is MISSING or content is None:
        parts = []
        form = "absent" if content is MISSING else "null"
    elif is_array(content):
        parts = list(_read_parts(content, index, "content"))
        form = list_form(parts, PROVIDER)
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
                fields = _with(fields, "tool_calls", () if calls is not None else None)
            else:
                items = array(calls, index, "tool_calls", "tool calls")
                for j, call in enumerate(items):
                    parts.append(_read_tool_call(call, index, f"tool_calls[{j}]"))
        legacy = raw.get("function_call", MISSING)
        if legacy is None:
            fields = _with(fields, "function_call", None)
        elif legacy is not MISSING:
            parts.append(_read_legacy_call(legacy, index))

    # Keep the content form only where the default would write it otherwise:
    # no content is null on an assistant message with tool calls, "" elsewhere.
    if form == "null" or form == "string":
        default_null = role == "assistant" and _has_calls(parts)
        if (form == "null") == default_null:
            form = None

    order = key_order(raw, RANK)
    if fields is None and form is None and order is None and source_role == role:
        return Message(role=role, parts=tuple(parts), name=name)
    metadata: dict[str, Any] = {}
    if fields:
        metadata["openai"] = fields
    if source_role != role:
        metadata["openai_role"] = source_role
    if form is not None:
        metadata["openai_content"] = form
    if order is not None:
        metadata["openai_keys"] = order
    return Message(role=role, parts=tuple(parts), name=name, metadata=metadata)


def _read_result_message(
    raw: Mapping[str, Any], source_role: str, call_id: str, index: int
) -> Message:
    fields = unmapped(raw, KNOWN_KEYS[source_role], index, "")
    name = optional_str(raw, "name", index, "")
    if name is None:
        fields = _with(fields, "name", None)
    elif name is MISSING:
        name = None
    content = raw.get("content", MISSING)
    form: str | None = None
    result_content: str | tuple[ContentPart, ...]
    if isinstance(content, str):
        result_content = checked_str(content, index, "content")
    elif content is MISSING or content is None:
        result_content = ""
        form = "absent" if content is MISSING else "null"
    elif is_array(content):
        result_content = _read_parts(content, index, "content")
    else:
        fail(
            f"expected a string, a list of content parts or null, got {type_name(content)}",
            index,
            "content",
        )
    result = ToolResult(call_id=call_id, content=result_content)
    order = key_order(raw, RANK)
    if fields is None and form is None and order is None and source_role == "tool":
        return Message(role="tool", parts=(result,), name=name)
    metadata: dict[str, Any] = {}
    if fields:
        metadata["openai"] = fields
    if source_role != "tool":
        metadata["openai_role"] = source_role
    if form is not None:
        metadata["openai_content"] = form
    if order is not None:
        metadata["openai_keys"] = order
    return Message(role="tool", parts=(result,), name=name, metadata=metadata)


def _read_parts(items: Sequence[Any], index: int, field: str) -> tuple[ContentPart, ...]:
    parts: list[ContentPart] = []
    for j, item in enumerate(items):
        where = f"{field}[{j}]"
        item, kind = typed(item, index, where)
        parts.append(read_text_or_opaque(item, kind, PROVIDER, index, where))
    return tuple(parts)


def _read_tool_call(call: Any, index: int, field: str) -> ToolCall:
    call = mapping(call, index, field)
    call_id = required_str(call, "id", index, field)
    kind = required_str(call, "type", index, field)
    if kind not in CALL_KEYS:
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
    arguments = required_str(body, ARGUMENTS_KEY[kind], index, f"{field}.{kind}")
    extra: dict[str, Any] = {}
    rest = unmapped(call, CALL_KEYS[kind], index, field)
    if rest:
        extra["openai"] = rest
    order = key_order(call, CALL_RANK)
    if order is not None:
        extra["openai_keys"] = order
    _read_body(body, BODY_KEYS[kind], index, f"{field}.{kind}", extra)
    if kind != "function":
        extra["openai_type"] = kind
    if extra:
        return ToolCall(id=call_id, name=name, arguments=arguments, extra=extra)
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _read_body(
    body: Mapping[str, Any], known: frozenset[str], index: int, field: str, extra: dict[str, Any]
) -> None:
    """Keep what a call's ``function`` (or ``custom``) object holds beyond its
    name and arguments, and its key order, in ``extra``."""
    rest = unmapped(body, known, index, field)
    if rest:
        extra["openai_function"] = rest
    order = key_order(body, BODY_RANK)
    if order is not None:
        extra["openai_function_keys"] = order


def _read_legacy_call(call: Any, index: int) -> ToolCall:
    call = mapping(call, index, "function_call")
    name = required_str(call, "name", index, "function_call")
    arguments = required_str(call, "arguments", index, "function_call")
    extra: dict[str, Any] = {"openai_function_call": True}
    _read_body(call, LEGACY_KEYS, index, "function_call", extra)
    return ToolCall(id=LEGACY_ID.format(index), name=name, arguments=arguments, extra=extra)


def _has_calls(parts: Iterable[Part]) -> bool:
    return any(isinstance(p, ToolCall) for p in parts)


# --------------------------------------------------------------------------- writing


# --------------------------------------------------------------------------- images


def _read_image(part: Mapping[str, Any]) -> Image | None:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else None
    return Image.from_url(url) if isinstance(url, str) else None


IMAGES = register_images(
    ImageCodec(provider=PROVIDER, kind="image_url", read=_read_image, write=write_image)
)
"""OpenAI's image parts: ``{"type": "image_url", "image_url": {"url": ...}}``,
inline images as base64 ``data:`` URLs."""
