"""Immutable chat messages and their parts.

A conversation is a ``tuple[Message, ...]``. Nothing in memrules mutates one:
every step returns a new tuple, and a step that changes nothing returns the
very same tuple, so ``new is old`` means "nothing happened".

Messages are values: two messages with equal fields are equal and hash alike,
which is what lets token counts be cached per message value.

Every field is checked when a value is built, so nothing later (counting, a
strategy, a writer, a trace) meets a value it cannot handle: text fields are
``str`` without lone surrogates (which no UTF-8 writer can write), ``is_error``
is a bool, and what ``metadata``, ``extra`` and ``payload`` hold is hashable
and nested at most `MAX_DEPTH` levels deep. A bad
value raises `MessageTypeError` (also a
``TypeError``) for a wrong type, or
`MessageFormatError` (a ``ValueError``) otherwise,
naming the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

import attrs
from pyrsistent import PMap, pmap

from memrules._core.errors import MessageFormatError, MessageTypeError
from memrules._core.frozen import (
    ValueProblem,
    freeze,
    freeze_items,
    has_surrogate,
    surrogate_problem,
)

__all__ = [
    "ROLES",
    "ContentPart",
    "Conversation",
    "Message",
    "Opaque",
    "Part",
    "Role",
    "Text",
    "ToolCall",
    "ToolResult",
    "as_messages",
    "check_messages",
    "message",
    "part_text",
    "starts_with",
]

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")


def _frozen_map(value: Mapping[str, Any] | None, field: str) -> PMap[str, Any]:
    """``value`` as a persistent map of deep-frozen values, so that the message
    holding it is hashable. Nested mappings become `FrozenDict`, which
    keeps their key order (provider fields are written back in it); the keys
    of the top-level map are memrules' own and need no order. A map that is
    already frozen is returned as it is."""
    if value is _EMPTY or value is None:  # the default: pmap() is one shared value
        return _EMPTY
    kind = type(value)
    if kind is not dict and kind is not PMap and not isinstance(value, Mapping):
        msg = f"expected a mapping, got {kind.__name__}"
        raise MessageTypeError(msg, field=field)
    if not value:
        return _EMPTY
    try:
        frozen = freeze_items(value)
    except ValueProblem as problem:
        raise MessageTypeError(problem.problem, field=problem.where(field)) from None
    if kind is PMap and all(frozen[key] is item for key, item in value.items()):
        return value  # type: ignore[return-value]
    return pmap(frozen)


def _metadata(value: Mapping[str, Any] | None) -> PMap[str, Any]:
    return _frozen_map(value, "metadata")


def _extra(value: Mapping[str, Any] | None) -> PMap[str, Any]:
    return _frozen_map(value, "extra")


def _payload(value: Any) -> Any:
    try:
        return freeze(value)
    except ValueProblem as problem:
        raise MessageTypeError(problem.problem, field=problem.where("payload")) from None


# Field validators. Each is on the hot path (every message of every request
# is built through them), so the usual value is accepted by one type check
# and one O(1) ``isascii`` before anything slower is looked at.

_HINTS = {
    "bytes": "; decode it (bytes.decode('utf-8'))",
    "bytearray": "; decode it (bytes.decode('utf-8'))",
}


def _check_text(value: object, field: str, what: str = "a str", hint: str = "") -> None:
    if not isinstance(value, str):
        name = type(value).__name__
        msg = f"expected {what}, got {name}{hint or _HINTS.get(name, '')}"
        raise MessageTypeError(msg, field=field)
    if has_surrogate(value):
        raise MessageFormatError(surrogate_problem(value), field=field)


def _text(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """A ``str`` that UTF-8 can write (no lone surrogate)."""
    if type(value) is str and value.isascii():
        return
    _check_text(value, attribute.name)


def _optional_text(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """None, or a ``str`` that UTF-8 can write."""
    if value is None or (type(value) is str and value.isascii()):
        return
    _check_text(value, attribute.name, "a str or None")


def _arguments(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """The JSON text of a tool call's arguments."""
    if type(value) is str and value.isascii():
        return
    hint = "; the arguments are JSON text: pass json.dumps(arguments)"
    is_json = isinstance(value, (Mapping, list, tuple))
    _check_text(value, "arguments", "JSON text (a str)", hint if is_json else "")


def _flag(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not True and value is not False:
        msg = f"expected True or False, got {type(value).__name__} {value!r}"
        raise MessageTypeError(msg, field=attribute.name)


def _result_content(value: str | Iterable[ContentPart]) -> str | tuple[ContentPart, ...]:
    if type(value) is str:
        if value.isascii() or not has_surrogate(value):
            return value
        raise MessageFormatError(surrogate_problem(value), field="content")
    if isinstance(value, str):
        _check_text(value, "content")
        return value
    parts = _tuple(value, "content")
    for i, p in enumerate(parts):
        if not isinstance(p, (Text, Opaque)):
            msg = f"expected Text or Opaque, got {type(p).__name__}"
            raise MessageTypeError(msg, field=f"content[{i}]")
    return parts


_EMPTY: PMap[str, Any] = pmap()

_BOOL = "\x00bool"
_FLOAT = "\x00float"


def _json_key(value: Any) -> Any:
    """``value`` as its JSON tells it: what a message's payload, extra
    fields and metadata are compared and hashed by. Python holds ``1``,
    ``1.0`` and ``True`` equal (and ``0``, ``-0.0`` and ``False``), but
    they are different JSON, sent and counted differently (``1.0`` is three
    tokens where ``1`` is one), so a cache keyed by message values must not
    take one for the other. Objects stay equal whatever their key order,
    as dicts are."""
    kind = type(value)
    if kind is str or kind is int or value is None:
        return value
    if kind is bool:
        return (_BOOL, value)
    if kind is float:
        return (_FLOAT, repr(value))
    if isinstance(value, Mapping):
        if not value:
            return frozenset()
        return frozenset((k, _json_key(v)) for k, v in value.items())
    if kind is tuple:
        return tuple(_json_key(v) for v in value)
    if kind is frozenset:
        return frozenset(_json_key(v) for v in value)
    return value


@attrs.frozen(kw_only=True, slots=True, cache_hash=True)
class Text:
    """Plain text. ``extra`` keeps provider fields memrules does not interpret
    (``cache_control``, citations…) so adapters round-trip losslessly; its
    values are frozen as ``metadata``'s are."""

    text: str = attrs.field(validator=_text)
    extra: PMap[str, Any] = attrs.field(default=_EMPTY, converter=_extra, repr=False, eq=_json_key)


@attrs.frozen(kw_only=True, slots=True, cache_hash=True)
class ToolCall:
    """A request by the assistant to run a tool. ``arguments`` is the JSON text
    the model produced (OpenAI's ``arguments``; Anthropic's ``input``, dumped)."""

    id: str = attrs.field(validator=_text)
    name: str = attrs.field(validator=_text)
    arguments: str = attrs.field(default="", validator=_arguments)
    extra: PMap[str, Any] = attrs.field(default=_EMPTY, converter=_extra, repr=False, eq=_json_key)


@attrs.frozen(kw_only=True, slots=True, cache_hash=True)
class ToolResult:
    """The answer to the `ToolCall` whose id is ``call_id``.

    ``content`` is text, or a tuple of `Text` / `Opaque` parts when
    the provider sent structured content (Anthropic's block lists)."""

    call_id: str = attrs.field(validator=_text)
    content: str | tuple[ContentPart, ...] = attrs.field(default="", converter=_result_content)
    is_error: bool = attrs.field(default=False, validator=_flag)
    extra: PMap[str, Any] = attrs.field(default=_EMPTY, converter=_extra, repr=False, eq=_json_key)


@attrs.frozen(kw_only=True, slots=True, cache_hash=True)
class Opaque:
    """Anything memrules carries through untouched: images, thinking blocks,
    audio, provider blocks it does not know. ``payload`` is deep-frozen:
    objects as `FrozenDict` (keys in the order given,
    which is the order adapters write back), arrays as tuples."""

    kind: str = attrs.field(validator=_text)
    payload: Any = attrs.field(default=None, converter=_payload, eq=_json_key)


Part: TypeAlias = Text | ToolCall | ToolResult | Opaque
ContentPart: TypeAlias = Text | Opaque
"""A part that content lists hold: a tool result's structured content."""
_PART_TYPES = (Text, ToolCall, ToolResult, Opaque)


def part_text(part: Part) -> str:
    """The text of a part as token counting sees it.

    Text counts its text, a tool call its arguments, a tool result its content
    (the text of its Text parts when structured); opaque parts count nothing.
    """
    if isinstance(part, Text):
        return part.text
    if isinstance(part, ToolCall):
        return part.arguments
    if isinstance(part, ToolResult):
        content = part.content
        if isinstance(content, str):
            return content
        return "\n".join(p.text for p in content if isinstance(p, Text))
    return ""


def _parts(value: Iterable[Part]) -> tuple[Part, ...]:
    parts = _tuple(value, "parts")
    for i, p in enumerate(parts):
        if not isinstance(p, _PART_TYPES):
            msg = f"expected Text, ToolCall, ToolResult or Opaque, got {type(p).__name__}"
            raise MessageTypeError(msg, field=f"parts[{i}]")
    return parts


def _tuple(value: Iterable[Any], field: str) -> tuple[Any, ...]:
    if type(value) is tuple:
        return value
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        msg = f"expected a tuple, got {type(value).__name__}"
        raise MessageTypeError(msg, field=field)
    return tuple(value)


def _role(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in ROLES:
        msg = f"unknown role {value!r}, expected one of {', '.join(ROLES)}"
        raise MessageFormatError(msg, field="role")


@attrs.frozen(kw_only=True, slots=True, cache_hash=True)
class Message:
    """One chat message: a role and a tuple of parts.

    ``id`` and ``name`` are optional; ``metadata`` is a persistent map for
    anything the caller wants to carry along (adapters keep provider fields
    there). Its values are frozen deeply (mappings as
    `FrozenDict`, keeping their key order; lists and
    tuples as tuples; sets as frozensets), so every message is hashable; a
    value that cannot be frozen raises
    `MessageTypeError` naming where it is. Frozen and
    hashable; its hash is computed once.

    >>> Message(role="user", parts=(Text(text="hi"),)).text
    'hi'
    """

    role: Role = attrs.field(validator=_role)
    parts: tuple[Part, ...] = attrs.field(default=(), converter=_parts)
    id: str | None = attrs.field(default=None, validator=_optional_text)
    name: str | None = attrs.field(default=None, validator=_optional_text)
    metadata: PMap[str, Any] = attrs.field(default=_EMPTY, converter=_metadata, eq=_json_key)
    # Derived once at construction: the hot paths (pairing closure, windows)
    # ask these of every message on every request.
    call_ids: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)
    result_ids: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)
    is_tool_carrier: bool = attrs.field(init=False, eq=False, repr=False)
    """True when the message holds tool calls or tool results."""

    def __attrs_post_init__(self) -> None:
        calls = tuple(p.id for p in self.parts if isinstance(p, ToolCall))
        results = tuple(p.call_id for p in self.parts if isinstance(p, ToolResult))
        object.__setattr__(self, "call_ids", calls)
        object.__setattr__(self, "result_ids", results)
        object.__setattr__(self, "is_tool_carrier", bool(calls or results))

    @property
    def text(self) -> str:
        """The message's Text parts joined by newlines."""
        return "\n".join(p.text for p in self.parts if isinstance(p, Text))

    @property
    def countable_text(self) -> str:
        """Everything token counting sees: text, call arguments, result content."""
        return "\n".join(part_text(p) for p in self.parts if not isinstance(p, Opaque))

    def evolve(self, **changes: Any) -> Message:
        """Return a copy with ``changes`` applied; the original is untouched."""
        return attrs.evolve(self, **changes)


def message(role: Role, *content: str | Part, **fields: Any) -> Message:
    """Build a message from strings and parts: ``message("user", "hi")``."""
    parts = tuple(Text(text=c) if isinstance(c, str) else c for c in content)
    return Message(role=role, parts=parts, **fields)


Conversation: TypeAlias = tuple[Message, ...]


def as_messages(messages: Iterable[Message], field: str = "messages") -> Conversation:
    """``messages`` as a tuple (the same tuple when it is one), or a
    `MessageTypeError` naming ``field`` when it is
    not a sequence of messages at all (None, a string, one message, a
    mapping). Its items are `check_messages`' to check."""
    if type(messages) is tuple or type(messages) is list:  # the usual two, first
        return tuple(messages)
    if isinstance(messages, tuple):
        return messages
    if isinstance(messages, (str, bytes, bytearray, Mapping, Message)) or not isinstance(
        messages, Iterable
    ):
        msg = (
            f"expected a sequence of Message, got {type(messages).__name__} "
            "(use from_openai or from_anthropic to read provider messages)"
        )
        raise MessageTypeError(msg, field=field)
    return tuple(messages)


def check_messages(conversation: Conversation, start: int = 0) -> None:
    """Raise `MessageTypeError`, naming its index,
    for the first item of ``conversation[start:]`` that is not a
    `Message` (one C-level pass when all are)."""
    tail = conversation[start:] if start else conversation
    if set(map(type, tail)) <= {Message}:
        return
    for i in range(start, len(conversation)):
        m = conversation[i]
        if not isinstance(m, Message):
            msg = f"expected a Message, got {type(m).__name__} (use from_openai or from_anthropic)"
            raise MessageTypeError(msg, index=i)


def starts_with(conversation: Sequence[Message], prefix: Sequence[Message]) -> bool:
    """Whether ``conversation`` starts with the messages of ``prefix``
    (position by position the same objects, or equal ones), with no copy
    of either: one C-level pass over ``prefix``, short-cut by identity.

    Tuples order item by item: their ``<=`` compares items with ``==``
    until one differs, and by length when none does (then ``prefix <=
    conversation`` is True exactly when ``prefix`` is no longer); where one
    differs, it asks the two items for their order, which messages do not
    have (a TypeError). An item that claims to be equal to the message
    where it stands, or to follow it, is taken for it, as ``==`` takes an
    item that claims equality. (A tuple is used as it is; another
    sequence is copied into one.)"""
    try:
        return (tuple(prefix) <= tuple(conversation)) is True
    except TypeError:
        return False
