"""Converting a framework's message objects once, by identity.

An agent loop hands the same message objects again on every model call,
plus the few the turn added. `ConversionsByIdentity` remembers what
each object of the last call became, so the next call converts only
objects it has not seen. An object is known only while it is the very same
object (its ``id`` and an ``is`` check), so an object edited in place must
be replaced to be seen as changed, as the frameworks do. The table is
replaced whole on each use (it holds the last call's objects only), so
threads sharing it see a whole table and a race costs a conversion.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from memrules._core.messages import Conversation, Message

__all__ = ["ConversionsByIdentity"]


class ConversionsByIdentity:
    """What each message object of the last call converted to, by ``one``
    (the framework's converter of one message at its index)."""

    __slots__ = ("one", "seen")

    def __init__(self, one: Callable[[Any, int], Message]) -> None:
        self.one = one
        self.seen: dict[int, tuple[Any, Message]] = {}

    def convert(self, messages: Sequence[Any]) -> Conversation:
        seen = self.seen
        one = self.one
        out: list[Message] = []
        fresh: dict[int, tuple[Any, Message]] = {}
        for i, m in enumerate(messages):
            hit = seen.get(id(m))
            converted = hit[1] if hit is not None and hit[0] is m else one(m, i)
            fresh[id(m)] = (m, converted)
            out.append(converted)
        self.seen = fresh
        return tuple(out)
