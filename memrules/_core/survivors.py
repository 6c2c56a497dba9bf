"""Which messages no strategy may remove or alter: the survivors.

An agent needs more than the newest message to go on. The survivors of a
conversation are:

- the **first system message** (the instructions);
- **the task**: the conversation's first message from the person (see
  below), what the agent was asked to do; on by default, ``task: false``
  turns it off;
- **the question**: the latest message from the person;
- the **most recent user message**, whoever wrote it (a provider expects a
  request to end with the turn it answers);
- every message a **pin** rule matches, and every message whose metadata
  says ``pinned: true``.

A message is *from the person* when it is a user message with text that is
neither only tool results (Anthropic carries tool results in user messages),
nor only images of a tool round, nor a summary memrules wrote, nor a
**harness** message: a user-role message an agent harness added (a format
reminder such as "Please always provide EXACTLY ONE action"), which a
``harness`` rule matches or whose metadata says ``harness: true``. Agent
harnesses add such messages all the time, so the newest user message is
often not the question, and the task is rarely the newest.

A `MessageRule` matches a message by role, by its position among the
messages of that role (or of all roles), by a metadata flag and by a
pattern searched in its text (RE2, linear in the text); every field given
must match. `SurvivorRule` is the whole setting, a value; what it
picks in a conversation is `survivors`.

>>> from memrules import message
>>> chat = (
...     message("system", "You fix bugs."),
...     message("user", "Fix issue 12: the parser drops the last line."),
...     message("assistant", "Looking."),
...     message("user", "Please always provide EXACTLY ONE action.", metadata={"harness": True}),
... )
>>> picked = survivors(chat, DEFAULT_SURVIVORS)
>>> (picked.first_system, picked.task, picked.question, picked.last_user)
(0, 1, 1, 3)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from memrules._core.messages import Conversation, Message, Text

__all__ = [
    "DEFAULT_SURVIVORS",
    "PERSON",
    "PIN",
    "MessageRule",
    "Picked",
    "SurvivorRule",
    "first_person_index",
    "is_person",
    "kinds",
    "last_person_index",
    "survivors",
]

PINNED_FLAG = "pinned"
"""The metadata key that pins a message (``pinned: true``)."""

HARNESS_FLAG = "harness"
"""The metadata key that marks a user message as the harness's (``harness: true``)."""


def _compile(pattern: str) -> Any:
    import re2  # type: ignore[import-untyped]  # google-re2: linear in the text

    options = re2.Options()
    options.never_capture = True
    options.log_errors = False  # a bad pattern is a ConfigError, not a line on stderr
    return re2.compile(pattern, options)


@attrs.frozen(kw_only=True, slots=True)
class MessageRule:
    """Matches a message when every field given matches: ``role``; ``index``,
    its position (from 0) among the messages of ``role``, or of the whole
    conversation without a role; ``metadata``, a key whose value in the
    message's metadata is true; ``pattern``, a regular expression (RE2
    syntax) found anywhere in its text. A rule with no field is refused
    where it is built (it would match everything)."""

    role: str | None = None
    index: int | None = None
    metadata: str | None = None
    pattern: str | None = None
    _compiled: Any = attrs.field(default=None, init=False, repr=False, eq=False, hash=False)

    def __attrs_post_init__(self) -> None:
        if self.pattern is not None:
            object.__setattr__(self, "_compiled", _compile(self.pattern))

    def matches(self, message: Message, ordinal: int) -> bool:
        """Whether ``message`` matches, ``ordinal`` being its position among
        the messages of ``self.role`` (or of all roles without one)."""
        if self.role is not None and message.role != self.role:
            return False
        if self.index is not None and ordinal != self.index:
            return False
        if self.metadata is not None and not _flag(message.metadata, self.metadata):
            return False
        return self.pattern is None or self._compiled.search(message.text) is not None


@attrs.frozen(kw_only=True, slots=True)
class SurvivorRule:
    """What survives besides the first system message and the most recent
    user message: ``task`` (the first message from the person, on by
    default), the messages ``pin`` rules match, and which user messages
    are the ``harness``'s rather than the person's (see the module docs).
    The metadata flags ``pinned`` and ``harness`` always count."""

    task: bool = True
    pin: tuple[MessageRule, ...] = ()
    harness: tuple[MessageRule, ...] = ()

    @property
    def positional(self) -> bool:
        """Whether a rule reads a message's position (then each message is
        classified with its ordinal among its role's messages)."""
        return any(r.index is not None for r in (*self.pin, *self.harness))

    def kind(self, message: Message, ordinals: Mapping[str, int] | None = None) -> int:
        """What ``message`` is, as bits: `PERSON` when it is from the
        person, `PIN` when it is pinned. ``ordinals`` gives, per role
        and for ``""`` (all roles), how many such messages came before it
        (only rules with an ``index`` read it)."""
        kind = 0
        if _flag(message.metadata, PINNED_FLAG) or any(
            r.matches(message, _ordinal(r, message, ordinals)) for r in self.pin
        ):
            kind |= PIN
        if message.role == "user" and _says_something(message):
            harness = _flag(message.metadata, HARNESS_FLAG) or any(
                r.matches(message, _ordinal(r, message, ordinals)) for r in self.harness
            )
            if not harness and not _is_summary(message):
                kind |= PERSON
        return kind


PERSON = 1
PIN = 2

DEFAULT_SURVIVORS = SurvivorRule()
"""The default: the task kept, no pin or harness rules but the metadata flags."""


def _ordinal(rule: MessageRule, message: Message, ordinals: Mapping[str, int] | None) -> int:
    if rule.index is None or ordinals is None:
        return -1
    return ordinals.get(message.role if rule.role is not None else "", 0)


def _flag(metadata: Mapping[str, Any], key: str) -> bool:
    return bool(metadata) and metadata.get(key) is True


def _says_something(message: Message) -> bool:
    """Whether ``message`` holds text of its own: not only tool results,
    images or empty text."""
    for part in message.parts:
        if isinstance(part, Text) and part.text and not part.text.isspace():
            return True
    return False


def _is_summary(message: Message) -> bool:
    info = message.metadata.get("memrules") if message.metadata else None
    return isinstance(info, Mapping) and "summary_of" in info


def is_person(message: Message, rule: SurvivorRule = DEFAULT_SURVIVORS) -> bool:
    """Whether ``message`` is from the person (see the module docs); a rule
    with an ``index`` is not applied here (it needs the message's position)."""
    return bool(rule.kind(message) & PERSON)


@attrs.frozen(kw_only=True, slots=True)
class Picked:
    """The survivors of one conversation, by index (None where there is none)."""

    first_system: int | None
    task: int | None
    question: int | None
    last_user: int | None
    pinned: tuple[int, ...] = ()

    @property
    def indices(self) -> frozenset[int]:
        """Every survivor's index."""
        found = {self.first_system, self.task, self.question, self.last_user}
        found.discard(None)
        return frozenset((*found, *self.pinned))  # type: ignore[arg-type]

    def name(self, index: int) -> str:
        """What the survivor at ``index`` is, in words (for a violation)."""
        if index == self.first_system:
            return f"the first system message (index {index})"
        if index == self.last_user:
            return f"the most recent user message (index {index})"
        if index == self.question:
            return f"the question (index {index})"
        if index == self.task:
            return f"the task (index {index})"
        return f"a pinned message (index {index})"


def kinds(conversation: Sequence[Message], rule: SurvivorRule) -> list[int]:
    """`SurvivorRule.kind` of each message, with its ordinals."""
    if not rule.positional:
        return [rule.kind(m) for m in conversation]
    ordinals: dict[str, int] = {}
    out = []
    for m in conversation:
        out.append(rule.kind(m, ordinals))
        ordinals[m.role] = ordinals.get(m.role, 0) + 1
        ordinals[""] = ordinals.get("", 0) + 1
    return out


def survivors(conversation: Conversation, rule: SurvivorRule = DEFAULT_SURVIVORS) -> Picked:
    """The survivors of ``conversation`` under ``rule`` (see the module docs)."""
    first_system = next((i for i, m in enumerate(conversation) if m.role == "system"), None)
    last_user = next(
        (i for i in range(len(conversation) - 1, -1, -1) if conversation[i].role == "user"), None
    )
    found = kinds(conversation, rule)
    persons = [i for i, k in enumerate(found) if k & PERSON]
    return Picked(
        first_system=first_system,
        task=persons[0] if persons and rule.task else None,
        question=persons[-1] if persons else None,
        last_user=last_user,
        pinned=tuple(i for i, k in enumerate(found) if k & PIN),
    )


def first_person_index(
    conversation: Conversation, rule: SurvivorRule = DEFAULT_SURVIVORS
) -> int | None:
    """Index of the first message from the person, or None."""
    return next((i for i, k in enumerate(kinds(conversation, rule)) if k & PERSON), None)


def last_person_index(
    conversation: Conversation, rule: SurvivorRule = DEFAULT_SURVIVORS
) -> int | None:
    """Index of the latest message from the person, or None."""
    found = kinds(conversation, rule)
    return next((i for i in range(len(found) - 1, -1, -1) if found[i] & PERSON), None)
