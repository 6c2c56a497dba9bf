"""What makes a warm request cheap, in the one place the interpreter owns.

A strategy is a value: ``strategy(conversation, context)`` is its whole,
cold computation, and two equal strategies compute the same thing. An
agent loop hands a pipeline the same conversation again and again, a turn
longer each time, so a strategy that reads the whole history would redo it
on every request. What lets a warm request do only what changed lives
here, kept in the conversation's `Measure` (the plugin keeps one per
conversation, a pipeline one for its direct callers) under the strategy's
**value**, never in the strategy:

- the **incremental companion** a strategy may declare (`Incremental`, its
  ``incremental`` attribute): `run_strategy`, how the interpreter calls
  every strategy, keeps the state the companion made of the conversation's
  last inputs, works out what changed since (`Change`), and has the
  companion advance that state by it; it falls back to the cold call when
  there is nothing to continue or the companion declines;
- a **memo** (`memo`) of what a strategy made of one message, keyed by the
  message's value and what the result depends on besides it;
- **facts** (`facts`): one fact per message (a hashable function of the
  message alone), worked out only for the messages that are new or
  replaced since the conversation's last input.

Each gives what the cold computation gives:
`memrules.testing.check_warm_equals_cold` holds any strategy to that.
Which state a request continues changes what it costs, never what it
gives.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, Protocol, TypeVar, cast

import attrs

from memrules._core.bounded import BoundedTable
from memrules._core.messages import Conversation, Message
from memrules._counting.measure import Measure
from memrules._engine.contract import Strategy, StrategyContext, StrategyResult

__all__ = [
    "KEPT",
    "MEMO_SIZE",
    "NEW",
    "Change",
    "Incremental",
    "Memo",
    "facts",
    "memo",
    "run_strategy",
]

S = TypeVar("S")
T = TypeVar("T")

KEPT = 3
"""How many states (or fact lists) the interpreter keeps per strategy in
each conversation's measure: a request's input, and the shorter
conversations later passes of the same run hand the strategy, so that
those never displace the input the next request continues."""

MEMO_SIZE = 65_536
"""How many messages one `Memo` holds what a strategy made of."""


@attrs.frozen(kw_only=True, slots=True)
class Change:
    """What is new in a conversation to the state a companion made of an
    earlier input (``was`` messages long).

    Below ``start``, every position holds the very message object the
    earlier input held, except those in ``moved``: each of those holds
    another object, for which the companion's ``same`` said its facts are
    those of the message it replaced (an earlier strategy rewrote it, or
    the caller rebuilt it). From ``start`` on, every message is new. When
    ``start < was``, the earlier input went on differently or was longer
    (a message only the last request had, such as the hook's one-shot
    warning); none of its messages from ``start`` on carries a tool call
    or result, and the state must forget them.
    """

    start: int
    moved: Sequence[int] = ()
    was: int = 0


NEW = Change(start=0)
"""Everything is new: what ``advance`` is given with no state."""


class Incremental(Protocol[S]):
    """A strategy's incremental companion: the same computation as the
    strategy's cold call, split so that a warm request pays for what
    changed.

    The state ``S`` is any value; the interpreter keeps it (never the
    strategy) and hands it back only with the strategy that made it (an
    equal value), the same counter, and a conversation that continues its
    input. It hands a state to ``advance`` once at most, and forgets it:
    ``advance`` may change it in place and build the new state on it (a
    warm request then costs what it adds, not a copy of the history's
    state), or leave it and make another.
    """

    def same(self, now: Message, was: Message) -> bool:
        """Whether what the state knows of ``was`` holds for ``now``,
        which stands where ``was`` stood (another object). When it does
        not, the interpreter does not hand ``advance`` that state."""
        ...

    def advance(
        self, state: S | None, change: Change, conversation: Conversation, context: StrategyContext
    ) -> S | None:
        """The state of ``conversation``: ``state`` (made of an earlier
        input) advanced by ``change``; with ``state`` None (``change`` is
        `NEW`), made from nothing, as the cold call does. None declines:
        the interpreter makes the state from nothing, and when that
        declines too, calls the strategy."""
        ...

    def result(
        self, state: S, conversation: Conversation, context: StrategyContext
    ) -> StrategyResult:
        """What the strategy gives ``conversation``, whose state is ``state``."""
        ...


@attrs.frozen(slots=True)
class _States:
    """The key of a strategy's states in a measure: its value."""

    strategy: object


@attrs.frozen(slots=True)
class _MemoOf:
    """The key of a strategy's `Memo` in a measure: its value."""

    strategy: object


@attrs.frozen(slots=True)
class _FactsOf:
    """The key of a fact's notes in a measure: the fact's value."""

    fact: object


@attrs.frozen(slots=True, eq=False)
class _Kept(Generic[S]):
    """A state the interpreter keeps: the input it was made of, with which
    counter, and the companion's state. ``lease`` holds one item until the
    state is handed to ``advance`` (``list.pop`` is atomic: one thread
    takes it), and never again."""

    source: Conversation
    counter: object
    state: S
    lease: list[bool] = attrs.field(factory=lambda: [True])


@attrs.frozen(slots=True, eq=False)
class _Noted(Generic[T]):
    """A `facts` note: the input it saw and one fact per message."""

    source: Conversation
    facts: list[T]


def run_strategy(
    strategy: Strategy, conversation: Conversation, context: StrategyContext
) -> StrategyResult:
    """What ``strategy`` gives ``conversation``: how the interpreter (and a
    strategy that runs another) calls every strategy. A strategy with an
    ``incremental`` companion is advanced from the state it made of the
    last input this conversation continues (kept in ``context.measure``);
    any other is called. The same result either way."""
    companion: Incremental[Any] | None = getattr(strategy, "incremental", None)
    if companion is None:
        return strategy(conversation, context)
    key = _States(strategy)
    try:
        hash(key)
    except TypeError:  # an unhashable strategy has no value to keep states under
        return strategy(conversation, context)
    measure, counter = context.measure, context.counter
    notes = _notes_of(measure, key)
    kept = [n for n in notes if isinstance(n, _Kept) and n.counter is counter and n.lease]
    state = None
    found = _continued(kept, conversation, measure, companion.same)
    if found is not None:
        note, change = found
        try:
            note.lease.pop()  # the state is the companion's now, to change or build on
        except IndexError:  # another thread took it first
            pass
        else:
            notes = tuple(n for n in notes if n is not note)
            state = companion.advance(note.state, change, conversation, context)
    if state is None:
        state = companion.advance(None, NEW, conversation, context)
    if state is None:
        return strategy(conversation, context)
    _keep(measure, key, notes, _Kept(conversation, counter, state))
    return companion.result(state, conversation, context)


_MOVED = 8
"""A state is continued, past the measure's knowledge, only when no more
than one position in this many holds another object than its input had."""

_CARRIES = operator.attrgetter("is_tool_carrier")


def _continued(
    notes: list[_Kept[S]],
    conversation: Conversation,
    measure: Measure,
    same: Callable[[Message, Message], bool],
) -> tuple[_Kept[S], Change] | None:
    """The kept state to advance and what changed since its input: one
    whose input the measure knows ``conversation`` continues; else the
    newest, by one pass of identity checks, up to the first replaced
    message whose facts differ by ``same`` (when its input holds no tool
    message from there on); else None."""
    n = len(conversation)
    for note in notes:
        m = len(note.source)
        if m <= n:
            moved = measure.moved(conversation, note.source)
            if moved is not None and all(same(conversation[i], note.source[i]) for i in moved):
                return note, Change(start=m, moved=moved, was=m)
    if not notes:
        return None
    note = notes[0]
    source = note.source
    start = min(len(source), n)
    moved = list(itertools.compress(itertools.count(), map(operator.is_not, conversation, source)))
    if len(moved) > start // _MOVED:
        return None
    taken: list[int] = []
    for i in moved:
        if not same(conversation[i], source[i]):
            start = i
            break
        taken.append(i)
    if any(map(_CARRIES, source[start:])):
        return None
    return note, Change(start=start, moved=taken, was=len(source))


class Memo:
    """What one strategy made of single messages, keyed by the message's
    value and what the result depends on besides it (the ids it targets,
    the stub it writes), so that a request that meets the message again (a
    rebuilt conversation, a state that could not be continued) looks it up.

    Owner: the interpreter, one per strategy value and counter in each
    conversation's `Measure` (`memo` finds or makes it); a strategy only
    asks it. Bound: `MEMO_SIZE` entries, first in, first out; entries hold
    their messages. Thread-safe: a lookup reads, an insert takes the memo's
    lock.
    """

    __slots__ = ("_lock", "_table", "counter")

    def __init__(self, counter: object, size: int = MEMO_SIZE) -> None:
        self.counter = counter
        self._table: BoundedTable[Hashable, object] = BoundedTable(size)
        self._lock = threading.Lock()

    def of(self, key: Hashable, make: Callable[[], T]) -> T:
        """What ``make()`` gives, made once per ``key``: ``make`` must
        depend on nothing but what ``key`` holds and the counter."""
        found = self._table.get(key, _MISSING)
        if found is not _MISSING:
            return cast(T, found)
        made = make()
        with self._lock:
            self._table.add(key, made)
        return made

    def __len__(self) -> int:
        """How many entries the memo holds."""
        return len(self._table)


_MISSING = object()


def memo(strategy: Hashable, context: StrategyContext) -> Memo:
    """The `Memo` of ``strategy`` (by value) for the context's counter, in
    the conversation's measure: found, or made empty."""
    key = _MemoOf(strategy)
    measure = context.measure
    found = measure.noted(key)
    if isinstance(found, Memo) and found.counter is context.counter:
        return found
    made = Memo(context.counter)
    measure.note(key, made)
    return made


def facts(fact: Callable[[Message], T], conversation: Conversation, measure: Measure) -> list[T]:
    """``fact`` of every message of ``conversation``, in order: what the
    note in ``measure`` (the conversation's) has for the messages that are
    the same objects at the same positions as in an input seen before,
    ``fact`` called on the rest. ``fact`` must depend on the message only
    and be a value (a function, or a frozen attrs class with ``__call__``):
    notes are kept under it."""
    key = _FactsOf(fact)
    notes = _notes_of(measure, key)
    noted = _closest([n for n in notes if isinstance(n, _Noted)], len(conversation))
    if noted is not None:
        old = noted.source
        common = min(len(old), len(conversation))
        found: list[T] = noted.facts[:common]
        for i in itertools.compress(itertools.count(), map(operator.is_not, conversation, old)):
            found[i] = fact(conversation[i])
        found.extend(map(fact, itertools.islice(conversation, common, None)))
    else:
        found = list(map(fact, conversation))
    _keep(measure, key, notes, _Noted(conversation, found))
    return found


def _notes_of(measure: Measure, key: object) -> tuple[object, ...]:
    """The notes kept under ``key`` in ``measure``, newest first."""
    found = measure.noted(key)
    return found if isinstance(found, tuple) else ()


def _keep(measure: Measure, key: object, notes: tuple[object, ...], note: object) -> None:
    """Keep ``note`` first, then the newest others, `KEPT` in all."""
    measure.note(key, (note, *notes[: KEPT - 1]))


def _closest(notes: list[_Noted[T]], n: int) -> _Noted[T] | None:
    """The note to start from for a conversation of ``n`` messages: the
    newest of those whose input is the longest not longer than ``n`` (the
    last request of a growing conversation, or the same pass of the last
    run), else the one with the shortest input; None without a note."""
    best: _Noted[T] | None = None
    for note in notes:  # newest first
        size = len(note.source)
        if best is None:
            best = note
            continue
        known = len(best.source)
        if (size <= n and (known > n or size > known)) or (size > n and known > n and size < known):
            best = note
    return best
