"""Converting a conversation's provider messages once, not on every request.

A router converts the whole message list of every request, and a request
of a long conversation repeats every message the last one had.
:class:`ConversionCache` remembers, for one conversation, what each message
object was converted to, so that :func:`~memrules.from_openai` and
:func:`~memrules.from_anthropic` handed the memo pay per message only for
messages this conversation has not sent before. A message is known:

- **in place**: it equals the message at the same index of the last
  request (one C-level comparison of the whole list, which stops at the
  first message that differs); the usual case of a conversation that grew;
- **by fingerprint**: elsewhere (a client that drops its oldest messages
  shifts every index), found in a table keyed by an exact fingerprint of
  the message (every key in order, every value with its type), bounded to
  ``size`` entries, oldest out first.

Messages are compared with Python's ``==`` in place (that is what makes
the usual case cost nothing per message): a message that differs from the
one at its index only in its keys' order or in writing a number as ``1``,
``1.0`` or ``true`` is taken as that one. The fingerprints tell those
apart. The memo keeps its own copy of each message's lists and objects
(the strings are shared), so a client that edits a message object in place
between requests is seen to have changed it.

A memo belongs to one conversation and one provider (using it with the
other raises ``ValueError``). It is safe to share between threads: the
remembered request is one immutable value replaced whole, and the table
changes under the memo's lock; a race costs a conversion, never a wrong
answer.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import attrs

from memrules._core.bounded import BoundedTable
from memrules._core.checks import is_whole
from memrules._core.messages import Message

__all__ = ["DEFAULT_MEMO_SIZE", "ConversionCache", "fingerprint"]

DEFAULT_MEMO_SIZE = 65_536

S = TypeVar("S")

Reader = Callable[[Any, int, S], tuple[Message, S]]
"""Converts message ``index`` given the state the messages before it left
(a reader's own: OpenAI's pending legacy call), and returns the new state."""


def fingerprint(value: Any) -> Any:
    """An exact, hashable stand-in for a parsed JSON value: objects keep
    their key order, and numbers and booleans their type, so two values
    with equal fingerprints convert to the same message. None for a value
    that is not plain JSON (it is then never looked up)."""
    kind = type(value)
    if kind is str or value is None:
        return value
    if kind is dict:
        items = []
        for key, item in value.items():
            found = fingerprint(item)
            if found is None and item is not None:
                return None
            items.append((key, found))
        return (dict, tuple(items))
    if kind is list:
        parts = tuple(map(fingerprint, value))
        if any(p is None and v is not None for p, v in zip(parts, value, strict=True)):
            return None
        return (list, parts)
    if kind is int or kind is float or kind is bool:
        return (kind, value)
    return None


def _copy(value: Any) -> Any:
    """``value`` with fresh lists and dicts all the way down, sharing the
    rest (strings and numbers are immutable)."""
    kind = type(value)
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    return value


@attrs.frozen(slots=True)
class _Last(Generic[S]):
    """The last request: each message as it came (copied), what it became,
    and the reader's state after it."""

    raws: list[Any]  # never changed once made
    messages: tuple[Message, ...]
    states: tuple[S, ...]


class ConversionCache:
    """One conversation's provider messages and what they became (see the
    module docs); ``size`` bounds the fingerprint table."""

    __slots__ = ("_last", "_lock", "_provider", "_table", "size")

    def __init__(self, size: int = DEFAULT_MEMO_SIZE) -> None:
        if not is_whole(size, 0):
            msg = f"size={size!r} must be a whole number of at least 0"
            raise ValueError(msg)
        self.size = size
        self._provider: str | None = None
        self._last: _Last[Any] = _Last([], (), ())
        self._table: BoundedTable[Any, Message] = BoundedTable(size)  # first in, first out
        self._lock = threading.Lock()

    def convert(
        self,
        provider: str,
        items: Sequence[Any],
        read: Reader[S],
        start: S,
        *,
        context_free: Callable[[Any], bool] = lambda raw: True,
    ) -> tuple[Message, ...]:
        """``items`` converted by ``read``, from ``start`` state, taking what
        the memo knows. ``context_free(raw)`` says whether a message
        converts the same wherever it stands (only those are looked up by
        fingerprint); a message known in place converted at that very index,
        after the same messages, so it is taken whatever it is."""
        if self._provider is None:
            self._provider = provider
        elif self._provider != provider:
            msg = f"this memo holds {self._provider} messages; use another for {provider}"
            raise ValueError(msg)
        last: _Last[S] = self._last
        known = _in_place(items, last.raws)
        if known == len(items) == len(last.raws):
            return last.messages  # the same messages again
        raws: list[Any] = []
        messages: list[Message] = []
        states: list[S] = []
        state = last.states[known - 1] if known else start
        table = self._table
        for index in range(known, len(items)):
            raw = items[index]
            key = fingerprint(raw) if context_free(raw) else None
            message = None if key is None else table.get(key)
            if message is None:
                message, state = read(raw, index, state)
                if key is not None and self.size:
                    self._keep(key, message)
            raws.append(_copy(raw))
            messages.append(message)
            states.append(state)
        out = last.messages[:known] + tuple(messages)
        self._last = _Last(last.raws[:known] + raws, out, last.states[:known] + tuple(states))
        return out

    def _keep(self, key: Any, message: Message) -> None:
        with self._lock:
            self._table.add(key, message)

    def __len__(self) -> int:
        """How many messages the fingerprint table holds."""
        return len(self._table)


def _in_place(items: Sequence[Any], raws: list[Any]) -> int:
    """How many leading ``items`` equal the remembered ``raws``."""
    size = min(len(items), len(raws))
    if not size:
        return 0
    head = items[:size] if type(items) is list else list(items[:size])
    if head == (raws if size == len(raws) else raws[:size]):
        return size
    differs = map(operator.ne, head, raws)
    return next(itertools.compress(itertools.count(), differs), size)
