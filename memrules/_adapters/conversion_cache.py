"""Converting a conversation's provider messages once, not on every request.

A router converts the whole message list of every request, and a request
of a long conversation repeats every message the last one had.
`ConversionCache` remembers, for one conversation, what each message
object was converted to, so that `from_openai` and
`from_anthropic` handed the memo pay per message only for
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
between requests is seen to have changed it. That costs a comparison of
every earlier message with its copy on every request: 0.13 µs a message on
a 3,000-message agent history, up to 0.7 µs at 10,000 on a busy machine
(the comparison reads memory, and the history no longer fits in the
cache), so a request costs more the longer the conversation. No check that
sees every such edit can cost less than reading every message: an edit in
place leaves no trace anywhere but in the message. A caller that hands the
same dicts each turn can skip it with ``ConversionCache(edits_in_place=False)``:
it promises not to edit a message it has handed over (it replaces the dict
instead), and the memo keeps the objects themselves, so an unchanged
message costs a pointer comparison.

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
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import attrs

from memrules._core.bounded import BoundedTable
from memrules._core.checks import is_whole
from memrules._core.frozen import MAX_DEPTH
from memrules._core.messages import Message

__all__ = ["DEFAULT_MEMO_SIZE", "ConversionCache", "fingerprint"]

DEFAULT_MEMO_SIZE = 65_536

S = TypeVar("S")

Reader = Callable[[Any, int, S], tuple[Message, S]]
"""Converts message ``index`` given the state the messages before it left
(a reader's own: OpenAI's pending legacy call), and returns the new state."""

_UNSEEN = object()

Stepper = Callable[[Any, int, S], tuple[tuple[Message, ...], S]]
"""Reads item ``index`` given the state the items before it left, and
returns the messages it closes and the new state."""


def fingerprint(value: Any, _depth: int = 0) -> Any:
    """An exact, hashable stand-in for a parsed JSON value: objects keep
    their key order, and numbers and booleans their type, so two values
    with equal fingerprints convert to the same message. None for a value
    that is not plain JSON, or is nested more than
    `MAX_DEPTH` levels deep (it is then never
    looked up, and converting it says what is wrong)."""
    kind = type(value)
    if kind is str or value is None:
        return value
    if _depth >= MAX_DEPTH and (kind is dict or kind is list):
        return None
    if kind is dict:
        items = []
        for key, item in value.items():
            found = fingerprint(item, _depth + 1)
            if found is None and item is not None:
                return None
            items.append((key, found))
        return (dict, tuple(items))
    if kind is list:
        parts = []
        for item in value:
            found = fingerprint(item, _depth + 1)
            if found is None and item is not None:
                return None
            parts.append(found)
        return (list, tuple(parts))
    if kind is int or kind is float or kind is bool:
        return (kind, value)
    return None


def _copy(value: Any) -> Any:
    """``value`` with fresh containers all the way down, sharing the rest
    (strings and numbers are immutable). Any mapping or list is copied, not
    only ``dict`` and ``list`` themselves, so that an edit in place of a
    subclass (or of a mapping inside a tuple) is seen too."""
    kind = type(value)
    if kind is str or value is None:
        return value
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    if kind is tuple:
        return tuple(map(_copy, value))
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


@attrs.frozen(slots=True)
class _Last(Generic[S]):
    """The last request, of ``length`` messages: each message as the memo
    keeps it (``raws``: a copy, or the object itself when the caller does
    not edit in place), what it became, and the reader's state after it.
    The lists are never changed below ``length``; a request that extends
    this one appends to them (under the memo's lock, and only while nothing
    else has), so a conversation that grows by a turn pays for its new
    messages, not for copying the old ones."""

    length: int
    raws: list[Any]
    messages: tuple[Message, ...]
    states: list[S]
    ends: list[int] = attrs.Factory(list)  # grouped: messages closed by each prefix
    tail: tuple[Any, tuple[Message, ...]] = (_UNSEEN, ())  # grouped: a state and its finish


class ConversionCache:
    """One conversation's provider messages and what they became (see the
    module docs); ``size`` bounds the fingerprint table.

    ``edits_in_place`` says whether the caller may edit in place a message
    object it has handed over before. True (the default): the memo keeps a
    copy of each message and compares every earlier message with it on
    every request, so such an edit is seen; that is 0.13–0.7 µs a message a
    request (see the module docs), the part of a request that grows with the
    conversation. False: the caller promises not
    to, and the memo keeps the objects themselves, so a message that is the
    very object at its index (or equal to it) is taken at the cost of a
    pointer comparison, and a caller that hands its own list of dicts each
    turn pays for the turn's new dicts only. To change a message it then
    replaces the dict; replacing, inserting, removing and truncating are
    all seen, as with the frameworks' message objects.
    """

    __slots__ = ("_head", "_last", "_lock", "_provider", "_table", "edits_in_place", "size")

    def __init__(self, size: int = DEFAULT_MEMO_SIZE, *, edits_in_place: bool = True) -> None:
        if not is_whole(size, 0):
            msg = f"size={size!r} must be a whole number of at least 0"
            raise ValueError(msg)
        if not isinstance(edits_in_place, bool):
            msg = f"edits_in_place={edits_in_place!r} must be True or False"
            raise ValueError(msg)
        self.size = size
        self.edits_in_place = edits_in_place
        self._provider: str | None = None
        self._last: _Last[Any] = _Last(0, [], (), [])
        self._table: BoundedTable[Any, Message] = BoundedTable(size)  # first in, first out
        self._lock = threading.Lock()
        self._head: tuple[Any, Message] | None = None  # a value outside the list, read last

    def read_outside(self, value: Any, read: Callable[[Any], Message]) -> Message:
        """``read(value)`` for a value that stands outside the message list
        (Anthropic's ``system``), or what it made last time when ``value``
        has the same fingerprint as that one: a long system prompt is then
        not read again every request. A value that is not plain JSON is read
        every time."""
        key = fingerprint(value)
        kept = self._head
        if key is not None and kept is not None and kept[0] == key:
            return kept[1]
        message = read(value)
        if key is not None:
            self._head = (key, message)
        return message

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
        self._check(provider)
        last: _Last[S] = self._last
        known, grown = self._prefix(items, last)
        if known == len(items) == last.length:
            return last.messages  # the same messages again
        messages: list[Message] = []
        states: list[S] = []
        state = last.states[known - 1] if known else start
        table = self._table
        try:
            for index in range(known, len(items)):
                raw = items[index]
                key = fingerprint(raw) if context_free(raw) else None
                message = None if key is None else table.get(key)
                if message is None:
                    message, state = read(raw, index, state)
                    if key is not None and self.size:
                        self._keep(key, message)
                messages.append(message)
                states.append(state)
        except BaseException:
            if grown:
                self._drop(last)
            raise
        kept = last.messages if known == last.length else last.messages[:known]
        out = kept + tuple(messages)
        self._remember(last, known, out, self._kept(items, known, grown), states, grown)
        return out

    def convert_grouped(
        self,
        provider: str,
        items: Sequence[Any],
        step: Stepper[S],
        start: S,
        finish: Callable[[S], tuple[Message, ...]],
    ) -> tuple[Message, ...]:
        """``items`` converted by ``step``, from ``start`` state, where an
        item makes zero or more messages (the messages it closes) and the
        state after the last item is closed by ``finish``: a format that
        gathers several items into one message (the Responses API's). Only
        the items after the prefix this request shares with the last one are
        stepped; there is no lookup by fingerprint, since what an item makes
        depends on the items before it."""
        self._check(provider)
        last: _Last[S] = self._last
        known, grown = self._prefix(items, last)
        closed: list[Message] = []
        states: list[S] = []
        ends: list[int] = []
        state = last.states[known - 1] if known else start
        prefix = last.ends[known - 1] if known else 0
        try:
            for index in range(known, len(items)):
                made, state = step(items[index], index, state)
                closed.extend(made)
                states.append(state)
                ends.append(prefix + len(closed))
            kept = last.messages if prefix == len(last.messages) else last.messages[:prefix]
            messages = kept + tuple(closed) if closed else kept
            tail_state, tail = last.tail
            if tail_state is not state:
                tail = finish(state)
        except BaseException:
            if grown:
                self._drop(last)
            raise
        raws = self._kept(items, known, grown)
        with self._lock:
            if grown or known == len(last.raws):
                if raws is not None:
                    last.raws[known:] = raws
                last.states.extend(states)
                last.ends.extend(ends)
                raws, states, ends = last.raws, last.states, last.ends
            else:
                raws = last.raws[:known] + (raws or [])
                states = last.states[:known] + states
                ends = last.ends[:known] + ends
            self._last = _Last(len(items), raws, messages, states, ends, (state, tail))
        return messages + tail if tail else messages

    def _check(self, provider: str) -> None:
        if self._provider is None:
            self._provider = provider
        elif self._provider != provider:
            msg = f"this memo holds {self._provider} messages; use another for {provider}"
            raise ValueError(msg)

    def _prefix(self, items: Sequence[Any], last: _Last[S]) -> tuple[int, bool]:
        """How many leading ``items`` equal the last request's messages, and
        whether the items past them were appended to ``last.raws`` to
        compare the list whole. A list that grew is compared with one
        C-level comparison and no copy of it (a slice of a long history is
        the larger part of a turn that adds one message); that needs the
        same length, so the new items go on the end of the remembered list
        first, when nothing else has appended to it, and come off again if
        an earlier one differs. The caller then owns that tail: it goes
        through `_remember` (or `_drop` if converting fails)."""
        length = last.length
        raws = last.raws
        if length and type(items) is list and len(items) > length:
            with self._lock:
                grown = len(raws) == length
                if grown:
                    raws.extend(items[length:])
            if grown:
                try:
                    if items == raws:
                        return length, True
                    differs = map(operator.ne, items, raws)
                    found = next(itertools.compress(itertools.count(), differs), length)
                except BaseException:
                    self._drop(last)
                    raise
                self._drop(last)
                return min(found, length), False
        return _in_place(items, raws, length), False

    def _kept(self, items: Sequence[Any], known: int, grown: bool) -> list[Any] | None:
        """How the memo keeps ``items`` from ``known`` on: copies when the
        caller may edit them in place, else the objects themselves (None when
        they are already on the end of the remembered list)."""
        if self.edits_in_place:
            return [_copy(raw) for raw in items[known:]]
        return None if grown else list(items[known:])

    def _drop(self, last: _Last[S]) -> None:
        """Take off ``last.raws`` what `_prefix` appended past ``last.length``."""
        with self._lock:
            del last.raws[last.length :]

    def _remember(
        self,
        last: _Last[S],
        known: int,
        out: tuple[Message, ...],
        raws: list[Any] | None,
        states: list[S],
        grown: bool,
    ) -> None:
        """Make ``out`` the last request: ``last``'s first ``known``
        messages and the new ones, appended in place when nothing has been
        appended past ``known`` since (or ``grown``: `_prefix` appended the
        new items already; ``raws``, if any, replace them)."""
        with self._lock:
            if grown or known == len(last.raws):
                if raws is not None:
                    last.raws[known:] = raws
                last.states.extend(states)
                self._last = _Last(len(out), last.raws, out, last.states)
            else:
                self._last = _Last(
                    len(out), last.raws[:known] + (raws or []), out, last.states[:known] + states
                )

    def _keep(self, key: Any, message: Message) -> None:
        with self._lock:
            self._table.add(key, message)

    def __len__(self) -> int:
        """How many messages the fingerprint table holds."""
        return len(self._table)

    def __repr__(self) -> str:
        return f"ConversionCache(size={self.size!r}, edits_in_place={self.edits_in_place!r})"


def _in_place(items: Sequence[Any], raws: list[Any], length: int) -> int:
    """How many leading ``items`` equal the first ``length`` remembered
    ``raws`` (the same object is equal at the cost of a pointer
    comparison)."""
    size = min(len(items), length)
    if not size:
        return 0
    if type(items) is not list:
        head = list(items[:size])
    else:
        head = items if len(items) == size else items[:size]
    if head == (raws if len(raws) == size else raws[:size]):
        return size
    differs = map(operator.ne, head, raws)
    return next(itertools.compress(itertools.count(), differs), size)
