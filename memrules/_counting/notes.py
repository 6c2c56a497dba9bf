"""Notes a strategy keeps in a conversation's `Measure` about its
last inputs, so that the next request (the conversation grown by a turn,
or rewritten in a few places by the strategies before it) works out only
what is new or changed: `Scan` for one fact per message, and the
helpers the strategies' rewrite cache shares with it."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import attrs

from memrules._core.messages import Conversation, Message
from memrules._counting.measure import Measure

__all__ = ["KEPT", "Noted", "Scan", "closest", "keep", "notes_of"]

T = TypeVar("T")

KEPT = 3
"""How many inputs a `Scan` or a rewrite cache keeps a note of per
conversation: a request's input, and the shorter conversations later
passes of the same run hand it, so that those never displace the input the
next request continues."""


class _Sourced(Protocol):
    @property
    def source(self) -> Conversation: ...


_N = TypeVar("_N", bound=_Sourced)


@attrs.frozen(slots=True, eq=False)
class Noted(Generic[T]):
    """A `Scan`'s note: the input it last saw and its facts."""

    source: Conversation
    fact: Callable[[Message], Any]
    facts: list[T]


def notes_of(measure: Measure, owner: object) -> tuple[object, ...]:
    """The notes ``owner`` keeps in ``measure``, newest first."""
    found = measure.noted(owner)
    return found if isinstance(found, tuple) else ()


def closest(notes: tuple[_N, ...], conversation: Conversation) -> _N | None:
    """The note to start from: the newest of those whose input is the
    longest not longer than ``conversation`` (the last request of a growing
    conversation, or the same pass of the last run), else the one with the
    shortest input; None without a note. Which note it is changes what a
    request costs, never what it gives."""
    n = len(conversation)
    best: _N | None = None
    for note in notes:  # newest first
        size = len(note.source)
        if best is None:
            best = note
            continue
        known = len(best.source)
        if (size <= n and (known > n or size > known)) or (size > n and known > n and size < known):
            best = note
    return best


def keep(measure: Measure, owner: object, notes: tuple[object, ...], note: object) -> None:
    """Keep ``note`` first, then the newest others, `KEPT` in all."""
    measure.note(owner, (note, *notes[: KEPT - 1]))


class Scan(Generic[T]):
    """What a strategy worked out about each message of a conversation's
    last input, kept so that its next request works it out only for the
    messages that are new or changed.

    Owner: one strategy instance (or one check of the engine's); it is the
    key into each conversation's `Measure`
    (the plugin's per conversation, a pipeline's own for its direct
    callers), which holds the notes: the last inputs and one fact per
    message. Bound: `KEPT` notes per measure (see
    `Measure.note`). A message counts as
    unchanged when it is the very object at the same position; anything
    else is worked out again, so the facts are those a cold scan gives. A
    copied or unpickled scan starts with nothing kept.
    """

    __slots__ = ()

    def facts(
        self, conversation: Conversation, measure: Measure, fact: Callable[[Message], T]
    ) -> list[T]:
        """``fact`` of every message of ``conversation``, in order: what the
        note in ``measure`` (the conversation's) has for the messages that
        are the same objects as last time, ``fact`` called on the rest.
        ``fact`` must depend on the message only; a note made with another
        (unequal) ``fact`` is not used."""
        notes = tuple(n for n in notes_of(measure, self) if isinstance(n, Noted) and n.fact == fact)
        noted = closest(notes, conversation)
        if noted is not None:
            known, old = noted.facts, noted.source
            common = min(len(old), len(conversation))
            found = known[:common]
            for i in itertools.compress(itertools.count(), map(operator.is_not, conversation, old)):
                found[i] = fact(conversation[i])
            found.extend(map(fact, itertools.islice(conversation, common, None)))
        else:
            found = list(map(fact, conversation))
        keep(measure, self, notes, Noted(conversation, fact, found))
        return found

    def __reduce__(self) -> tuple[type[Scan[T]], tuple[()]]:
        return (Scan, ())
