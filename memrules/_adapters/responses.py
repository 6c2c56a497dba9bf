"""OpenAI Responses API input items, both ways.

``from_responses(items)`` reads the ``input`` list of a Responses request
(parsed JSON) into a conversation; ``to_responses(conversation)`` writes one
back. The round trip is lossless: ``to_responses(from_responses(x)) == x``
for every valid ``x``, with every object's keys in the order they came.

>>> from_responses([{"role": "user", "content": "hi"}])[0].text
'hi'

How the items map:

- A ``message`` item of role ``user``, ``system`` or ``developer`` becomes
  one message of that role (``developer`` as ``system``); its ``input_text``
  parts become `Text`, every other part
  (``input_image``, ``input_file``, ``input_audio``, types memrules does not
  know) an `Opaque` of kind
  ``"responses:<type>"`` holding the whole part.
- The model's side of a turn becomes one ``assistant`` message: an
  assistant ``message`` item (``output_text`` parts as ``Text``,
  ``refusal`` as ``Opaque``), ``function_call`` and ``custom_tool_call``
  items as `ToolCall` parts (``call_id`` is
  the id), and every other item (``reasoning`` with its
  ``encrypted_content``, ``compaction``, hosted tool calls, types memrules
  does not know) as an ``Opaque`` of kind ``"responses_item:<type>"``
  holding the whole item, in place. A ``reasoning`` item opens a new
  assistant message, and so does a second ``message`` item: a reasoning
  item and the item it leads to are one message, so no strategy keeps the
  one and drops the other (the API refuses a reasoning item sent without
  its following item, and a call sent without its reasoning).
- ``function_call_output`` and ``custom_tool_call_output`` become one
  ``tool`` message holding one `ToolResult`
  (a string ``output`` as its text, a list as ``Text`` and ``Opaque`` parts).
- Other calls answered by a ``call_id`` (``<kind>_call`` with a
  ``<kind>_call_output``: shell, computer, apply-patch calls) pair the same
  way, so the pairing invariant keeps them together: the call is a
  ``ToolCall`` named by its ``name`` or its type, with empty arguments, and
  the output a ``ToolResult`` whose text is a string ``output``. Both keep
  the whole item (``extra["responses_raw"]``) and are written back as it
  was; only a changed string ``output`` is written over.

What the data model cannot say is kept where ``to_responses`` finds it:

``Message.metadata`` keys
    ``"responses_role"``: ``"developer"``. ``"responses_message"``: the
    message item's keys that memrules does not map (``id``, ``status``,
    ``phase``), its key order, ``"form"`` where the content was not written
    the default way (a string for an assistant message of plain text, a
    list for the other roles) and ``"untyped": True`` where the item had no
    ``type``.
part ``extra`` keys
    ``"responses"``: the part's or item's unmapped keys, verbatim;
    ``"responses_keys"``: their order where the writer's differs;
    ``"responses_type"``: ``custom_tool_call`` (on a call),
    ``custom_tool_call_output`` (on a result), or a text part's type where
    it is not its role's default (``output_text`` in an assistant message,
    ``input_text`` elsewhere); ``"responses_bare": True`` on an
    ``output_text`` part without ``annotations`` (the writer adds an empty
    list, which the API requires).

Writing another format's conversation: an assistant message of plain
text becomes one string (its texts joined by newlines), the form the SDK's
``EasyInputMessageParam`` takes for an assistant message without an item
id; system messages become ``system`` message items, tool calls ``function_call`` items and results
``function_call_output`` items, images (OpenAI ``image_url``, Anthropic
``image``) ``input_image`` parts with ``detail: "auto"``. Lost: names and
message ids, which the Responses API has no field for, and every other
provider's kept fields and blocks (as between the other formats).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memrules._adapters._common import (
    MISSING,
    Image,
    ImageCodec,
    array,
    fail,
    finish,
    is_array,
    key_order,
    mapping,
    rank,
    register_images,
    required_str,
    split_kind,
    type_name,
    typed,
    unmapped,
    verbatim,
    write_opaque,
)
from memrules._adapters.conversion_cache import ConversionCache
from memrules._core.frozen import FrozenDict, thaw
from memrules._core.messages import (
    ContentPart,
    Message,
    Opaque,
    Part,
    Role,
    Text,
    ToolCall,
    ToolResult,
)

__all__ = ["ITEM_KIND", "PROVIDER", "from_responses", "to_responses"]

PROVIDER = "responses"
"""The provider name of Responses content parts (``"responses:input_image"``)."""
ITEM_KIND = "responses_item"
"""The kind prefix of whole Responses items kept opaque (``"responses_item:reasoning"``)."""

_ROLES: dict[str, Role] = {
    "user": "user",
    "system": "system",
    "developer": "system",
    "assistant": "assistant",
}
_MESSAGE_RANK = rank("type", "role", "content")
_MESSAGE_KEYS = frozenset({"type", "role", "content"})
_TEXT_RANK = rank("type", "text", "annotations")
_TEXT_KEYS = frozenset({"type", "text"})
_TEXT_TYPES = frozenset({"input_text", "output_text"})
_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
_CALL_RANK = {kind: rank("type", "call_id", "name", key) for kind, key in _CALLS.items()}
_CALL_KEYS = {kind: frozenset({"type", "call_id", "name", key}) for kind, key in _CALLS.items()}
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
_OUTPUT_RANK = rank("type", "call_id", "output")
_OUTPUT_KEYS = frozenset({"type", "call_id", "output"})


# --------------------------------------------------------------------------- reading


def from_responses(
    items: Sequence[Mapping[str, Any]], *, memo: ConversionCache | None = None
) -> tuple[Message, ...]:
    """Read a Responses API ``input`` item list into a conversation.

    The input is not modified. Raises
    `MessageFormatError` naming the item index
    and field for malformed input (``items[2].call_id: missing``), and for
    values no JSON writer can write back (``NaN``, lone surrogates).

    ``memo``, one conversation's `ConversionCache`,
    makes a request pay only for the items after those it shares with the
    conversation's last request (the messages they made come back as the
    very same objects).
    """
    items = array(items, None, "input", "input items")
    if memo is not None:
        return memo.convert_grouped(PROVIDER, items, _read_item, _NO_GROUP, _close)
    out: list[Message] = []
    group = _NO_GROUP
    for index, raw in enumerate(items):
        closed, group = _read_item(raw, index, group)
        out.extend(closed)
    out.extend(_close(group))
    return tuple(out)


_Group = tuple[tuple[Part, ...], Any, bool]
"""The assistant message being gathered: its parts, the message item's
record (None when there is none), and whether it holds a message item."""
_NO_GROUP: _Group = ((), None, False)


def _close(group: _Group) -> tuple[Message, ...]:
    """The gathered assistant message, if it has parts."""
    parts, record, _ = group
    if not parts:
        return ()
    metadata = {} if record is None else {"responses_message": record}
    return (Message(role="assistant", parts=parts, metadata=metadata),)


def _read_item(raw: Any, index: int, group: _Group) -> tuple[tuple[Message, ...], _Group]:
    """Item ``index`` read after ``group``: the messages it closes (the
    gathered assistant message, its own message) and the group it leaves."""
    raw = mapping(raw, index, "")
    kind = raw.get("type", MISSING)
    if kind is not MISSING and not isinstance(kind, str):
        fail(f"expected a string, got {type_name(kind)}", index, "type")
    if kind is MISSING or kind == "message":
        role = raw.get("role", MISSING)
        if role is MISSING:
            fail("missing", index, "role")
        if not isinstance(role, str) or role not in _ROLES:
            fail(f"unknown role {role!r}, expected one of {', '.join(_ROLES)}", index, "role")
        if role != "assistant":
            return (*_close(group), _read_message(raw, role, index)), _NO_GROUP
        closed: tuple[Message, ...] = ()
        if group[2]:
            closed, group = _close(group), _NO_GROUP
        gathered, record, _ = group
        parts, found = _read_message_item(raw, "assistant", index)
        if parts is None:  # no content: kept whole, as its own item
            opaque = Opaque(kind=f"{ITEM_KIND}:message", payload=verbatim(raw, index, ""))
            return closed, ((*gathered, opaque), record, True)
        return closed, ((*gathered, *parts), found if found else record, True)
    if kind in _OUTPUTS:
        tool = Message(role="tool", parts=(_read_output(raw, kind, index),))
        return (*_close(group), tool), _NO_GROUP
    call_id = raw.get("call_id")
    if kind.endswith("_call_output") and isinstance(call_id, str):
        tool = Message(role="tool", parts=(_read_other_output(raw, index),))
        return (*_close(group), tool), _NO_GROUP
    closed = ()
    if kind == "reasoning" and group[0] and not _only_reasoning(group[0]):
        closed, group = _close(group), _NO_GROUP
    part: Part
    if kind in _CALLS:
        part = _read_call(raw, kind, index)
    elif kind.endswith("_call") and isinstance(call_id, str):
        part = _read_other_call(raw, kind, index)
    else:
        part = Opaque(kind=f"{ITEM_KIND}:{kind}", payload=verbatim(raw, index, ""))
    return closed, ((*group[0], part), group[1], group[2])


def _only_reasoning(parts: Sequence[Part]) -> bool:
    return all(isinstance(p, Opaque) and p.kind == f"{ITEM_KIND}:reasoning" for p in parts)


def _read_message(raw: Mapping[str, Any], role: str, index: int) -> Message:
    parts, record = _read_message_item(raw, role, index)
    metadata: dict[str, Any] = {}
    if record:
        metadata["responses_message"] = record
    if role == "developer":
        metadata["responses_role"] = "developer"
    return Message(role=_ROLES[role], parts=tuple(parts or ()), metadata=metadata)


def _read_message_item(
    raw: Mapping[str, Any], role: str, index: int
) -> tuple[list[ContentPart] | None, FrozenDict[str, Any] | None]:
    """A message item's parts and what else it holds. None for parts when an
    assistant item has no content (it is kept whole instead)."""
    record: dict[str, Any] = {}
    rest = unmapped(raw, _MESSAGE_KEYS, index, "")
    if rest is not None:
        record["fields"] = rest
    order = key_order(raw, _MESSAGE_RANK)
    if order is not None:
        record["keys"] = order
    if "type" not in raw:
        record["untyped"] = True
    content = raw.get("content", MISSING)
    if content is MISSING:
        fail("missing", index, "content")
    parts: list[ContentPart]
    if isinstance(content, str):
        parts = [Text(text=required_str(raw, "content", index, ""))] if content else []
        if role != "assistant":
            record["form"] = "string"
    elif is_array(content):
        parts = list(_read_parts(content, role, index, "content"))
        if role == "assistant":
            record["form"] = "list"
    else:
        fail(
            f"expected a string or a list of content parts, got {type_name(content)}",
            index,
            "content",
        )
    if role == "assistant" and not parts:
        return None, None
    return parts, FrozenDict(record) if record else None


def _default_text_type(role: str) -> str:
    return "output_text" if role == "assistant" else "input_text"


def _read_parts(items: Sequence[Any], role: str, index: int, field: str) -> tuple[ContentPart, ...]:
    parts: list[ContentPart] = []
    for j, item in enumerate(items):
        where = f"{field}[{j}]"
        item, kind = typed(item, index, where)
        if kind not in _TEXT_TYPES:
            parts.append(Opaque(kind=f"{PROVIDER}:{kind}", payload=verbatim(item, index, where)))
            continue
        text = required_str(item, "text", index, where)
        extra: dict[str, Any] = {}
        if kind != _default_text_type(role):
            extra["responses_type"] = kind
        known = _TEXT_KEYS
        if kind == "output_text":
            annotations = item.get("annotations", MISSING)
            if annotations is MISSING:
                extra["responses_bare"] = True
            elif is_array(annotations) and not annotations:
                known = _TEXT_KEYS | {"annotations"}
        rest = unmapped(item, known, index, where)
        if rest is not None:
            extra["responses"] = rest
        order = key_order(item, _TEXT_RANK)
        if order is not None:
            extra["responses_keys"] = order
        parts.append(Text(text=text, extra=extra) if extra else Text(text=text))
    return tuple(parts)


def _read_call(raw: Mapping[str, Any], kind: str, index: int) -> ToolCall:
    key = _CALLS[kind]
    call_id = required_str(raw, "call_id", index, "")
    name = required_str(raw, "name", index, "")
    arguments = required_str(raw, key, index, "")
    extra: dict[str, Any] = {}
    rest = unmapped(raw, _CALL_KEYS[kind], index, "")
    if rest is not None:
        extra["responses"] = rest
    order = key_order(raw, _CALL_RANK[kind])
    if order is not None:
        extra["responses_keys"] = order
    if kind != "function_call":
        extra["responses_type"] = kind
    return ToolCall(id=call_id, name=name, arguments=arguments, extra=extra)


def _read_output(raw: Mapping[str, Any], kind: str, index: int) -> ToolResult:
    call_id = required_str(raw, "call_id", index, "")
    output = raw.get("output", MISSING)
    content: str | tuple[ContentPart, ...]
    if output is MISSING:
        fail("missing", index, "output")
    if isinstance(output, str):
        content = required_str(raw, "output", index, "")
    elif is_array(output):
        content = _read_parts(output, "tool", index, "output")
    else:
        fail(
            f"expected a string or a list of content parts, got {type_name(output)}",
            index,
            "output",
        )
    extra: dict[str, Any] = {}
    rest = unmapped(raw, _OUTPUT_KEYS, index, "")
    if rest is not None:
        extra["responses"] = rest
    order = key_order(raw, _OUTPUT_RANK)
    if order is not None:
        extra["responses_keys"] = order
    if kind != "function_call_output":
        extra["responses_type"] = kind
    return ToolResult(call_id=call_id, content=content, extra=extra)


def _read_other_call(raw: Mapping[str, Any], kind: str, index: int) -> ToolCall:
    name = raw.get("name")
    return ToolCall(
        id=required_str(raw, "call_id", index, ""),
        name=name if isinstance(name, str) and name else kind,
        extra={"responses_raw": verbatim(raw, index, "")},
    )


def _read_other_output(raw: Mapping[str, Any], index: int) -> ToolResult:
    output = raw.get("output")
    return ToolResult(
        call_id=required_str(raw, "call_id", index, ""),
        content=required_str(raw, "output", index, "") if isinstance(output, str) else "",
        extra={"responses_raw": verbatim(raw, index, "")},
    )


# --------------------------------------------------------------------------- writing


def to_responses(conversation: Iterable[Message]) -> list[dict[str, Any]]:
    """Write a conversation as a Responses API ``input`` item list.

    Returns fresh plain ``dict``/``list`` values, ready for ``json.dumps``,
    with every object's keys in the order they were read in. Every message
    can be written: each part becomes its item in order (text and content
    parts gathered into one message item of the message's role, calls and
    results their own items, kept items as they came).
    """
    out: list[dict[str, Any]] = []
    for index, message in enumerate(conversation):
        if not isinstance(message, Message):
            fail(f"expected a Message, got {type(message).__name__}", index, "")
        _write_message(message, out)
    return out


def _write_message(message: Message, out: list[dict[str, Any]]) -> None:
    role = message.role
    metadata = message.metadata
    item_role = metadata.get("responses_role", role) if role == "system" else role
    if item_role == "tool":
        item_role = "user"  # content parts beside results (read from Anthropic)
    content: list[dict[str, Any]] = []
    at: int | None = None  # where the message item goes among the items
    start = len(out)
    for part in message.parts:
        if isinstance(part, ToolCall):
            out.append(_write_call(part))
        elif isinstance(part, ToolResult):
            out.append(_write_output(part))
        elif isinstance(part, Opaque) and split_kind(part.kind)[0] == ITEM_KIND:
            if isinstance(part.payload, Mapping):
                out.append(thaw(part.payload))
        else:
            written = _write_part(part, item_role)
            if written is None:
                continue
            if at is None:
                at = len(out)
                out.append({})  # the message item's place
            content.append(written)
    if at is None and len(out) == start:
        at = len(out)
        out.append({})  # a message with nothing in it is an empty message item
    if at is not None:
        out[at] = _message_item(item_role, content, metadata.get("responses_message"))


def _message_item(
    role: str, content: list[dict[str, Any]], record: Mapping[str, Any] | None
) -> dict[str, Any]:
    record = record or {}
    value: Any = content
    if record.get("form", "string" if role == "assistant" else "list") == "string":
        if not content:
            value = ""
        elif all(_plain_text(block) for block in content):
            value = "\n".join(block["text"] for block in content)
    out: dict[str, Any] = {} if record.get("untyped") else {"type": "message"}
    out["role"] = role
    out["content"] = value
    if not record:
        return out
    return finish(out, record.get("fields"), record.get("keys"), _MESSAGE_RANK)


def _plain_text(block: Mapping[str, Any]) -> bool:
    return (len(block) == 2 and block.get("type") == "input_text" and "text" in block) or (
        len(block) == 3
        and block.get("type") == "output_text"
        and "text" in block
        and block.get("annotations") == []
    )


def _write_part(part: Part, role: str) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return _write_text(part, role)
    if isinstance(part, Opaque):
        return write_opaque(part, PROVIDER)
    return None


def _write_text(part: Text, role: str) -> dict[str, Any]:
    extra = part.extra
    kind = extra.get("responses_type", _default_text_type(role))
    out: dict[str, Any] = {"type": kind, "text": part.text}
    kept = extra.get("responses")
    if (
        kind == "output_text"
        and not extra.get("responses_bare")
        and not (kept and "annotations" in kept)
    ):
        out["annotations"] = []
    if not extra:
        return out
    return finish(out, kept, extra.get("responses_keys"), _TEXT_RANK)


def _write_call(part: ToolCall) -> dict[str, Any]:
    extra = part.extra
    raw = extra.get("responses_raw")
    if isinstance(raw, Mapping):
        return thaw(raw)  # type: ignore[no-any-return]
    kind = extra.get("responses_type", "function_call")
    if kind not in _CALLS:
        kind = "function_call"
    out: dict[str, Any] = {
        "type": kind,
        "call_id": part.id,
        "name": part.name,
        _CALLS[kind]: part.arguments,
    }
    if not extra:
        return out
    return finish(out, extra.get("responses"), extra.get("responses_keys"), _CALL_RANK[kind])


def _write_output(part: ToolResult) -> dict[str, Any]:
    extra = part.extra
    raw = extra.get("responses_raw")
    if isinstance(raw, Mapping):
        written: dict[str, Any] = thaw(raw)
        content = part.content
        if isinstance(written.get("output"), str) and isinstance(content, str):
            written["output"] = content
        return written
    kind = extra.get("responses_type", "function_call_output")
    if kind not in _OUTPUTS:
        kind = "function_call_output"
    output: Any
    if isinstance(part.content, str):
        output = part.content
    else:
        output = [w for p in part.content if (w := _write_part(p, "tool")) is not None]
    out: dict[str, Any] = {"type": kind, "call_id": part.call_id, "output": output}
    if not extra:
        return out
    return finish(out, extra.get("responses"), extra.get("responses_keys"), _OUTPUT_RANK)


# --------------------------------------------------------------------------- images


def _read_image(part: Mapping[str, Any]) -> Image | None:
    url = part.get("image_url")
    return Image.from_url(url) if isinstance(url, str) else None


def _write_image(image: Image) -> dict[str, Any]:
    return {"type": "input_image", "image_url": image.as_url(), "detail": "auto"}


IMAGES = register_images(
    ImageCodec(provider=PROVIDER, kind="input_image", read=_read_image, write=_write_image)
)
"""Responses image parts: ``{"type": "input_image", "image_url": ..., "detail": ...}``,
inline images as base64 ``data:`` URLs (a ``file_id`` image is not converted)."""
