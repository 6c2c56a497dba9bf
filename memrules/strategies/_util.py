"""Small helpers the built-in strategies share."""

from __future__ import annotations

import bisect
import itertools
import operator
import threading
from collections.abc import Callable, Hashable, Iterable

import attrs

from memrules._core.bounded import BoundedTable
from memrules._core.errors import ConfigError
from memrules._core.messages import Conversation, Message, Part
from memrules._counting.measure import Measure
from memrules._counting.notes import closest, keep, notes_of


def check_positive(name: str, value: int, *, minimum: int = 1) -> None:
    """Raise `ConfigError` naming ``name=value`` when ``value`` is
    under ``minimum``. Types are checked before a factory runs (see
    `checked_factory`); minimums here."""
    if value < minimum:
        msg = f"{name}={value!r} must be at least {minimum}"
        raise ConfigError.single(msg, yaml_path=name)


def rewrite_parts(
    conversation: Conversation,
    indices: Iterable[int],
    rewrite: Callable[[Part], Part],
) -> Conversation:
    """``conversation`` with ``rewrite`` applied to every part of the messages
    at ``indices``. Messages whose parts all come back unchanged (the same
    objects) are kept as they were; the same tuple when nothing changed."""
    out: list[Message] | None = None
    for i in indices:
        m = conversation[i]
        parts = tuple(rewrite(p) for p in m.parts)
        if all(a is b for a, b in zip(parts, m.parts, strict=True)):
            continue
        if out is None:
            out = list(conversation)
        out[i] = m.evolve(parts=parts)
    return conversation if out is None else tuple(out)


REWRITE_CACHE_SIZE = 65_536


class RewriteCache:
    """What a strategy's part rewrite made of each message it saw, so that a
    warm request (a hook's conversation grown by a turn hands the strategy the
    same messages again) rewrites, re-encodes and re-counts only the messages
    it has not seen.

    Owner: one strategy instance, shared by every conversation its pipeline
    runs. Bound: ``size`` entries, first in, first out (a
    `BoundedTable` under the cache's lock).
    An entry is keyed by the message's value and the rewrite's ``key`` (what
    the rewrite of that message depends on besides the message: the ids it
    targets, the stub it writes) and holds the counter it was made with; it
    is used only for that very counter, so a strategy shared by pipelines
    with different counters stays exact. Entries hold their messages: at
    most ``size`` of them stay alive for the cache.
    """

    __slots__ = ("_generation", "_lock", "_table")

    def __init__(self, size: int = REWRITE_CACHE_SIZE) -> None:
        self._table: BoundedTable[tuple[Message, Hashable], tuple[object, Message | None, int]] = (
            BoundedTable(size)
        )
        self._lock = threading.Lock()
        self._generation = 0  # what `clear` forgot: notes made before it are not used

    def rewrite_parts(
        self,
        conversation: Conversation,
        indices: Iterable[int],
        rewrite: Callable[[Part], Part],
        *,
        key: Callable[[Message], Hashable],
        counter: object,
        saving: Callable[[Message, Message], int] | None = None,
    ) -> tuple[Conversation, int]:
        """`rewrite_parts`, taking what the cache knows, and the tokens
        the changed messages save by ``saving(before, after)`` (0 without it).
        ``rewrite`` and ``saving`` must depend only on the message, its
        ``key`` and ``counter``."""
        out: list[Message] | None = None
        saved = 0
        for i in indices:
            m = conversation[i]
            after, gain = self._one(m, rewrite, key, counter, saving)
            if after is None:
                continue
            saved += gain
            if out is None:
                out = list(conversation)
            out[i] = after
        return (conversation if out is None else tuple(out)), saved

    @property
    def generation(self) -> int:
        """How many times `clear` ran: a note made under another
        generation is not to be used."""
        return self._generation

    def one(
        self,
        m: Message,
        rewrite: Callable[[Part], Part],
        key: Callable[[Message], Hashable],
        counter: object,
        saving: Callable[[Message, Message], int] | None = None,
    ) -> tuple[Message | None, int]:
        """What ``m`` becomes under ``rewrite`` (None: it stays as it is)
        and what that saves, from the cache when it has them (see
        `rewrite_parts` for what ``rewrite`` may depend on)."""
        return self._one(m, rewrite, key, counter, saving)

    def _one(
        self,
        m: Message,
        rewrite: Callable[[Part], Part],
        key: Callable[[Message], Hashable],
        counter: object,
        saving: Callable[[Message, Message], int] | None,
    ) -> tuple[Message | None, int]:
        """What ``m`` becomes (None: it stays as it is) and what that saves."""
        entry_key = (m, key(m))
        entry = self._table.get(entry_key)
        if entry is not None and entry[0] is counter:
            return entry[1], entry[2]
        made = rewrite_parts((m,), (0,), rewrite)[0]
        after = None if made is m else made
        gain = 0 if after is None or saving is None else saving(m, after)
        with self._lock:
            self._table.put(entry_key, (counter, after, gain))
        return after, gain

    def rewrite_known(
        self,
        conversation: Conversation,
        indices: Iterable[int],
        rewrite: Callable[[Part], Part],
        *,
        decisions: dict[str, Hashable],
        key: Callable[[Message], Hashable],
        counter: object,
        measure: Measure,
        saving: Callable[[Message, Message], int] | None = None,
    ) -> tuple[Conversation, int]:
        """`rewrite_parts`, starting from what it gave for the
        conversation's last input (a note in ``measure``, the
        conversation's): only the messages at ``indices`` that are new,
        changed (not the very object at that position last time), or hold
        an id whose decision changed are looked up or rewritten; the rest
        are what they became last time.

        ``decisions`` maps each tool id to everything the rewrite of a
        message holding it depends on besides the message and ``counter``
        (whether it is cleared, the stub it gets): the rewrite of a message
        must depend on nothing else. ``indices`` ascend."""
        chosen = list(indices)
        generation = self._generation
        notes = tuple(
            n
            for n in notes_of(measure, self)
            if isinstance(n, _Rewritten) and n.counter is counter and n.generation == generation
        )
        noted = closest(notes, conversation)
        now = frozenset(chosen)
        if noted is None:
            gains: dict[int, int] = {}
            out = list(conversation)
            for i in chosen:
                after, gain = self._one(conversation[i], rewrite, key, counter, saving)
                if after is not None:
                    out[i], gains[i] = after, gain
        else:
            n = len(conversation)
            common = min(n, len(noted.source))
            moved = set(
                itertools.compress(
                    itertools.count(), map(operator.is_not, conversation, noted.source)
                )
            )
            was = noted.chosen
            flipped = _flipped(decisions, noted.decisions)
            again = set(now - was)
            again.update(now & moved)
            again.update(chosen[bisect.bisect_left(chosen, common) :])
            if flipped:  # the messages holding an id whose decision changed
                held = list(map(conversation.__getitem__, chosen))
                for ids in (_RESULT_IDS, _CALL_IDS):
                    clear = map(flipped.isdisjoint, map(ids, held))
                    again.update(itertools.compress(chosen, map(operator.not_, clear)))
            out = list(noted.output[:common])
            out.extend(itertools.islice(conversation, common, None))
            for i in (was | moved) - now:
                if i < n:
                    out[i] = conversation[i]  # no longer rewritten, or another message
            gains = dict(noted.gains)
            for i in gains.keys() - (now - again):
                del gains[i]
            for i in again:
                after, gain = self._one(conversation[i], rewrite, key, counter, saving)
                if after is None:
                    out[i] = conversation[i]
                else:
                    out[i], gains[i] = after, gain
        rewritten = tuple(out)
        keep(
            measure,
            self,
            notes,
            _Rewritten(conversation, rewritten, now, gains, decisions, counter, generation),
        )
        if not gains:
            return conversation, 0
        return rewritten, sum(gains.values())

    def clear(self) -> None:
        """Forget every entry, and what each conversation's note says (the
        next request computes them again)."""
        with self._lock:
            self._table.clear()
            self._generation += 1

    def __len__(self) -> int:
        """How many messages' rewrites the cache holds."""
        return len(self._table)

    def __reduce__(self) -> tuple[type[RewriteCache], tuple[()]]:
        """A copy or an unpickled cache starts empty (the lock does not copy)."""
        return (RewriteCache, ())


def _flipped(decisions: dict[str, Hashable], noted: dict[str, Hashable]) -> set[str]:
    """The ids whose decision is not what ``noted`` had: in one of the two
    only, or in both with another value (C-level passes, no pair made per
    id)."""
    flipped = decisions.keys() ^ noted.keys()
    values = map(operator.ne, decisions.values(), map(noted.get, decisions))
    flipped.update(itertools.compress(decisions, values))
    return flipped


@attrs.frozen(slots=True, eq=False)
class _Rewritten:
    """A `RewriteCache`'s note for one conversation: its last input,
    what it became, the positions asked about, what each rewritten one
    saved, the decisions it was made under and the counter."""

    source: Conversation
    output: Conversation
    chosen: frozenset[int]
    gains: dict[int, int]
    decisions: dict[str, Hashable]
    counter: object
    generation: int


_RESULT_IDS = operator.attrgetter("result_ids")
_CALL_IDS = operator.attrgetter("call_ids")
