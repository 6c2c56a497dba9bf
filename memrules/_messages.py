"""Immutable chat messages and their parts.

A conversation is a ``tuple[Message, ...]``. Nothing in memrules mutates one:
every step returns a new tuple, and a step that changes nothing returns the
very same tuple, so ``new is old`` means "nothing happened".

Messages are values: two messages with equal fields are equal and hash alike,
which is what lets token counts be cached per message value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

import attrs
from pyrsistent import PMap, freeze, pmap

__all__ = [
    "ROLES",
    "Conversation",
    "Message",
    "Opaque",
    "Part",
    "Role",
    "Text",
    "ToolCall",
    "ToolResult",
    "message",
    "part_text",
]

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")


def _frozen_map(value: Mapping[str, Any] | None) -> PMap[str, Any]:
    """Deep-freeze a mapping so that the message holding it is hashable."""
    if value is None:
        return pmap()
    if isinstance(value, PMap) and all(_is_frozen(v) for v in value.values()):
        return value
    frozen: PMap[str, Any] = freeze(dict(value))
    return frozen


def _is_frozen(value: object) -> bool:
    return not isinstance(value, (dict, list, set))


def _frozen_value(value: Any) -> Any:
    return freeze(value)


@attrs.frozen(kw_only=True, slots=True, cache_hash=True)
class Text:
    """Plain text. ``extra`` keeps provider fields memrules does not interpret
    (``cache_control``, citations…) so adapters round-trip losslessly."""

    text: str
    extra: PMap[str, Any] = attrs.field(factory=pmap, converter=_frozen_map, repr=False)


@attrs.frozen(kw_only=True, slots=True, cache_hash=True)
class ToolCall:
    """A request by the assistant to run a tool. ``arguments`` is the JSON text
    the model produced (OpenAI's ``arguments``; Anthropic's ``input``, dumped)."""

    id: str
    name: str
    arguments: str = ""
    extra: PMap[str, Any] = attrs.field(factory=pmap, converter=_frozen_map, repr=False)


@attrs.frozen(kw_only=True, slots=True, cache_hash=True)
class ToolResult:
    """The answer to the :class:`ToolCall` whose id is ``call_id``.

    ``content`` is text, or a tuple of :class:`Text` / :class:`Opaque` parts when
    the provider sent structured content (Anthropic's block lists)."""

    call_id: str
    content: str | tuple[Text | Opaque, ...] = ""
    is_error: bool = False
    extra: PMap[str, Any] = attrs.field(factory=pmap, converter=_frozen_map, repr=False)


@attrs.frozen(kw_only=True, slots=True, cache_hash=True)
class Opaque:
    """Anything memrules carries through untouched: images, thinking blocks,
    audio, provider blocks it does not know. ``payload`` is deep-frozen JSON."""

    kind: str
    payload: Any = attrs.field(default=None, converter=_frozen_value)


Part: TypeAlias = Text | ToolCall | ToolResult | Opaque
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
    parts = tuple(value)
    for i, p in enumerate(parts):
        if not isinstance(p, _PART_TYPES):
            msg = f"parts[{i}] is {type(p).__name__}, expected Text, ToolCall, ToolResult or Opaque"
            raise TypeError(msg)
    return parts


def _role(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in ROLES:
        msg = f"role={value!r} is not one of {', '.join(ROLES)}"
        raise ValueError(msg)


@attrs.frozen(kw_only=True, slots=True, cache_hash=True)
class Message:
    """One chat message: a role and a tuple of parts.

    ``id`` and ``name`` are optional; ``metadata`` is a persistent map for
    anything the caller wants to carry along (adapters keep provider fields
    there). Frozen and hashable; its hash is computed once.

    >>> Message(role="user", parts=(Text(text="hi"),)).text
    'hi'
    """

    role: Role = attrs.field(validator=_role)
    parts: tuple[Part, ...] = attrs.field(default=(), converter=_parts)
    id: str | None = None
    name: str | None = None
    metadata: PMap[str, Any] = attrs.field(factory=pmap, converter=_frozen_map)
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
