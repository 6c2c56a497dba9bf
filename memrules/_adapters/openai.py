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
  one :class:`~memrules._core.messages.ToolResult` (``tool_call_id`` is its
  ``call_id``). The legacy ``function`` role becomes a ``tool`` message too,
  answering the assistant's most recent legacy ``function_call``.
- ``content`` as a string becomes one :class:`~memrules._core.messages.Text`
  (an empty string, none); as a list, ``text`` parts become ``Text`` and every
  other part (``image_url``, ``input_audio``, ``file``, ``refusal``, types
  memrules does not know) an :class:`~memrules._core.messages.Opaque` whose ``kind``
  is ``"openai:<type>"`` and whose ``payload`` is the whole part.
- ``tool_calls`` become :class:`~memrules._core.messages.ToolCall` parts after the
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

Refused at input, with a :class:`~memrules._core.errors.MessageFormatError`
naming the index and field: ``NaN`` and infinities anywhere (``json.dumps``
would write a bare ``NaN``, which is not JSON), and strings or keys with a
lone surrogate (``"\\ud800"``, as ``json.loads`` returns for the escape),
which no UTF-8 writer can write, and values nested more than
:data:`~memrules._core.frozen.MAX_DEPTH` levels deep. A message built in Python
refuses lone surrogates and such nesting when it is built (a
:class:`~memrules._core.errors.MessageFormatError` naming the field), but not a
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

import collections
import itertools
import operator
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
    optional_str,
    rank,
    read_text_or_opaque,
    register_images,
    required_str,
    split_kind,
    type_name,
    typed,
    unmapped,
    write_opaque,
    write_text,
)
from memrules._adapters.conversion_cache import ConversionCache
from memrules._core.frozen import FrozenDict
from memrules._core.messages import ContentPart, Message, Part, Role, Text, ToolCall, ToolResult

__all__ = ["from_openai", "to_openai"]

_PROVIDER = "openai"
_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}
# The order the writers write their own keys in (see _common, "Key order").
_RANK = rank("role", "tool_call_id", "content", "name", "tool_calls", "function_call")
_CALL_RANK = rank("id", "type", "function", "custom")
_BODY_RANK = rank("name", "arguments", "input")

_PLAIN_KEYS = frozenset({"role", "content", "name"})
_KNOWN_KEYS: dict[str, frozenset[str]] = {
    "system": _PLAIN_KEYS,
    "developer": _PLAIN_KEYS,
    "user": _PLAIN_KEYS,
    "assistant": _PLAIN_KEYS | {"tool_calls", "function_call"},
    "tool": _PLAIN_KEYS | {"tool_call_id"},
    "function": _PLAIN_KEYS,
}
_CALL_KEYS = {
    "function": frozenset({"id", "type", "function"}),
    "custom": frozenset({"id", "type", "custom"}),
}
_BODY_KEYS = {"function": frozenset({"name", "arguments"}), "custom": frozenset({"name", "input"})}
_ARGUMENTS_KEY = {"function": "arguments", "custom": "input"}
_LEGACY_KEYS = frozenset({"name", "arguments"})
_LEGACY_ID = "memrules_function_call_{}"


# --------------------------------------------------------------------------- reading


def from_openai(
    messages: Sequence[Mapping[str, Any]], *, memo: ConversionCache | None = None
) -> tuple[Message, ...]:
    """Read OpenAI chat-completions messages into a conversation.

    ``messages`` is the ``messages`` array of a request (parsed JSON). The
    input is not modified. Raises :class:`~memrules._core.errors.MessageFormatError`
    naming the message index and field for malformed input, e.g.
    ``messages[3].tool_calls[0].function.arguments: expected a string, got int``,
    and for values no JSON writer can write back (``NaN``, lone surrogates).

    ``memo``, one conversation's :class:`~memrules._adapters.conversion_cache.ConversionCache`,
    makes a request pay only for the messages that conversation has not
    sent before; the others come back as the very messages they became
    then.
    """
    items = array(messages, None, "messages", "messages")
    if memo is not None:
        return memo.convert(_PROVIDER, items, _read_one, None, context_free=_context_free)
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
    role = _ROLES[source_role]
    fields = unmapped(raw, _KNOWN_KEYS[source_role], index, "")

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
        form = list_form(parts, _PROVIDER)
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

    order = key_order(raw, _RANK)
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
    fields = unmapped(raw, _KNOWN_KEYS[source_role], index, "")
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
    order = key_order(raw, _RANK)
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
        parts.append(read_text_or_opaque(item, kind, _PROVIDER, index, where))
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
    rest = unmapped(call, _CALL_KEYS[kind], index, field)
    if rest:
        extra["openai"] = rest
    order = key_order(call, _CALL_RANK)
    if order is not None:
        extra["openai_keys"] = order
    _read_body(body, _BODY_KEYS[kind], index, f"{field}.{kind}", extra)
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
    order = key_order(body, _BODY_RANK)
    if order is not None:
        extra["openai_function_keys"] = order


def _read_legacy_call(call: Any, index: int) -> ToolCall:
    call = mapping(call, index, "function_call")
    name = required_str(call, "name", index, "function_call")
    arguments = required_str(call, "arguments", index, "function_call")
    extra: dict[str, Any] = {"openai_function_call": True}
    _read_body(call, _LEGACY_KEYS, index, "function_call", extra)
    return ToolCall(id=_LEGACY_ID.format(index), name=name, arguments=arguments, extra=extra)


def _has_calls(parts: Iterable[Part]) -> bool:
    return any(isinstance(p, ToolCall) for p in parts)


# --------------------------------------------------------------------------- writing


def to_openai(conversation: Iterable[Message]) -> list[dict[str, Any]]:
    """Write a conversation as OpenAI chat-completions messages.

    Returns fresh plain ``dict``/``list`` values, ready for ``json.dumps``,
    with every object's keys in the order they were read in.
    A message that OpenAI cannot express (a tool call on a user message, a
    tool message with no result) raises
    :class:`~memrules._core.errors.MessageFormatError` naming its index.
    """
    out: list[dict[str, Any]] = []
    for index, message in enumerate(conversation):
        _write_one(message, index, out)
    return out


def _write_one(message: Message, index: int, out: list[dict[str, Any]]) -> None:
    if not isinstance(message, Message):
        fail(f"expected a Message, got {type(message).__name__}", index, "")
    if message.role == "tool":
        _write_tool_message(message, index, out)
    elif message.role == "user" and message.result_ids:
        _write_user_with_results(message, index, out)
    else:
        out.append(_write_message(message, index))


Written = dict[int, tuple[Message, dict[str, Any]]]
"""What :func:`write_back` wrote for the messages it converted, by the
message's ``id``: the message itself (which keeps the id its own) and the
dict, for dicts whose values are all strings, numbers, booleans or None."""

_FLAT = frozenset({str, int, float, bool, type(None)})


def write_back(
    conversation: Sequence[Message],
    source: Sequence[Message],
    raws: Sequence[Any],
    hints: Sequence[int | None] = (),
    *,
    written: Written | None = None,
    keep: Written | None = None,
) -> list[Any]:
    """:func:`to_openai` of ``conversation``, made from ``source``, which
    :func:`from_openai` read from ``raws``: a message of ``source`` that
    ``conversation`` kept (the very object) is written as its raw message,
    the very object too, and only the others are converted. ``hints[j]``,
    where given, is where message ``j`` stands in ``source`` (a report's
    ``origin``); a wrong hint costs one look-up table of ``source``.

    Lossless as :func:`to_openai` is (``to_openai(from_openai(m)) == m``),
    and cheap: the request hook sends back what it kept without converting
    it again. The result shares objects with ``raws``.

    ``written`` is what an earlier call put in its ``keep``: a message it
    converted to a flat dict (every value a string, a number, a boolean or
    None) is that dict copied, not converted again (the caller's edits to
    an earlier result never reach it). ``keep`` gets this call's flat
    dicts: the request hook passes one conversation's last ``keep`` as its
    next ``written``."""
    return _write_back(conversation, source, raws, hints, {} if written is None else written, keep)


def _write_back(
    conversation: Sequence[Message],
    source: Sequence[Message],
    raws: Sequence[Any],
    hints: Sequence[int | None],
    written: Written,
    keep: Written | None,
) -> list[Any]:
    """:func:`write_back`: each message found in ``source`` (by its hint,
    else by one look-up table of ``source``) is its raw message; the others
    are ``written``'s copies or converted, and put in ``keep`` when given."""
    kept = _hinted(conversation, source, raws, hints)
    if kept is None:
        return _write_back_slow(conversation, source, raws, hints, written, keep)
    out, others = kept
    if not others:
        return out
    # A message an earlier call converted is never one the reader made
    # (the source's): its dict, copied (C-level passes over them all).
    messages = list(map(conversation.__getitem__, others))
    entries = list(map(written.get, map(id, messages), itertools.repeat(_NO_ENTRY)))
    hit = list(map(operator.is_, map(_FIRST, entries), messages))
    found: list[Any] = list(itertools.compress(entries, hit))
    collections.deque(
        map(out.__setitem__, itertools.compress(others, hit), map(dict, map(_SECOND, found))),
        maxlen=0,
    )
    if keep is not None:
        keep.update(zip(map(id, map(_FIRST, found)), found, strict=True))
    rest = list(itertools.compress(others, map(operator.not_, hit)))
    if not rest:
        return out
    # The rest, one at a time: the raw message of one found in ``source``
    # elsewhere (one look-up table), else converted.
    made: list[list[Any]] = []
    known = min(len(source), len(raws))
    position = dict(zip(map(id, source[:known]), range(known), strict=True))
    for j in rest:
        message = conversation[j]
        i = position.get(id(message))
        if i is not None:
            made.append([raws[i]])
            continue
        dicts: list[Any] = []
        _write_one(message, j, dicts)
        made.append(dicts)
        if keep is not None and len(dicts) == 1 and set(map(type, dicts[0].values())) <= _FLAT:
            keep[id(message)] = (message, dict(dicts[0]))
    if all(len(dicts) == 1 for dicts in made):
        for j, dicts in zip(rest, made, strict=True):
            out[j] = dicts[0]
        return out
    pieces: list[list[Any]] = [[raw] for raw in out]
    for j, dicts in zip(rest, made, strict=True):
        pieces[j] = dicts
    return [d for dicts in pieces for d in dicts]


_NO_ENTRY = (None, None)
_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)


def _hinted(
    conversation: Sequence[Message],
    source: Sequence[Message],
    raws: Sequence[Any],
    hints: Sequence[int | None],
) -> tuple[list[Any], list[int]] | None:
    """When every message has a hint within ``source``: the raw message at
    each hint, and the positions whose hint is None or names another
    object, which the caller writes (C-level passes, no per-message step
    for the kept ones). None when a hint is missing or out of range."""
    n = len(conversation)
    known = min(len(source), len(raws))
    if len(hints) < n or not n or not known:
        return None
    at: list[Any] = list(itertools.islice(hints, n))
    holes = list(
        itertools.compress(itertools.count(), map(operator.is_, at, itertools.repeat(None)))
    )
    collections.deque(map(at.__setitem__, holes, itertools.repeat(0)), maxlen=0)
    if min(at) < 0 or max(at) >= known:
        return None
    picked = map(source.__getitem__, at)
    others = set(itertools.compress(itertools.count(), map(operator.is_not, picked, conversation)))
    others.update(holes)
    return list(map(raws.__getitem__, at)), sorted(others)


def _write_back_slow(
    conversation: Sequence[Message],
    source: Sequence[Message],
    raws: Sequence[Any],
    hints: Sequence[int | None],
    written: Written,
    keep: Written | None,
) -> list[Any]:
    """:func:`write_back` one message at a time."""
    out: list[Any] = []
    position: dict[int, int] | None = None
    known = min(len(source), len(raws))
    for j, message in enumerate(conversation):
        i = hints[j] if j < len(hints) else None
        if i is None or not 0 <= i < known or source[i] is not message:
            if position is None:
                position = dict(zip(map(id, source[:known]), range(known), strict=True))
            i = position.get(id(message))
        if i is not None:
            out.append(raws[i])
            continue
        entry = written.get(id(message))
        if entry is not None and entry[0] is message:
            made = entry[1]
            out.append(dict(made))
        else:
            start = len(out)
            _write_one(message, j, out)
            if keep is None:
                continue
            if len(out) != start + 1 or not set(map(type, out[start].values())) <= _FLAT:
                continue
            made = dict(out[start])
        if keep is not None:
            keep[id(message)] = (message, made)
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

    blocks: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    legacy: dict[str, Any] | None = None
    for j, part in enumerate(message.parts):
        if isinstance(part, Text):
            blocks.append(write_text(part, _PROVIDER))
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
        elif isinstance(part, ToolResult):
            fail(
                f"a {role} message cannot carry a tool result in OpenAI format",
                index,
                f"parts[{j}]",
            )
        else:
            written = write_opaque(part, _PROVIDER)
            if written is not None:
                blocks.append(written)
    blocks.extend(moved)

    empty = None if role == "assistant" and (calls or legacy is not None) else ""
    content = content_value(blocks, metadata.get("openai_content"), empty)
    if content is not MISSING:
        out["content"] = content
    if message.name is not None:
        out["name"] = message.name
    if calls:
        out["tool_calls"] = calls
    if legacy is not None:
        out["function_call"] = legacy
    if not metadata:
        return out
    return finish(out, metadata.get("openai"), metadata.get("openai_keys"), _RANK)


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
    if metadata:
        written = finish(written, metadata.get("openai"), metadata.get("openai_keys"), _RANK)
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
            parts.append(write_text(part, _PROVIDER))
            continue
        written = write_opaque(part, _PROVIDER)
        if written is None:
            continue
        if split_kind(part.kind)[0] == _PROVIDER:
            parts.append(written)
        else:
            moved.append(written)
    out["content"] = parts
    return out, moved


def _write_tool_call(part: ToolCall) -> dict[str, Any]:
    extra = part.extra
    kind = extra.get("openai_type", "function")
    if kind not in _ARGUMENTS_KEY:
        kind = "function"
    body = _write_body({"name": part.name, _ARGUMENTS_KEY[kind]: part.arguments}, extra)
    out: dict[str, Any] = {"id": part.id, "type": kind, kind: body}
    if not extra:
        return out
    return finish(out, extra.get("openai"), extra.get("openai_keys"), _CALL_RANK)


def _write_legacy_call(part: ToolCall) -> dict[str, Any]:
    return _write_body({"name": part.name, "arguments": part.arguments}, part.extra)


def _write_body(body: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    if not extra:
        return body
    return finish(body, extra.get("openai_function"), extra.get("openai_function_keys"), _BODY_RANK)


# --------------------------------------------------------------------------- images


def _read_image(part: Mapping[str, Any]) -> Image | None:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else None
    return Image.from_url(url) if isinstance(url, str) else None


def _write_image(image: Image) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": image.as_url()}}


IMAGES = register_images(
    ImageCodec(provider=_PROVIDER, kind="image_url", read=_read_image, write=_write_image)
)
"""OpenAI's image parts: ``{"type": "image_url", "image_url": {"url": ...}}``,
inline images as base64 ``data:`` URLs."""
