"""The in-place reading of `enforce`: an
output that replaced some messages of its input where they stood, and
nothing else.

A warm request's check starts from the closest in-place rewrite it
accepted in the conversation's measure (the same strategy's on the last
request), so only the positions where the input or the output holds other
objects than then are looked at. The input may hold one object at several
places (a conversion cache hands back one object for equal messages): each
place still says what it holds, so that stays on this reading.
"""

from __future__ import annotations

import collections
import itertools
import operator
import threading
from collections.abc import Sequence

import attrs

from memrules._core.enforced import Enforced, Tracks, unchanged
from memrules._core.messages import Conversation, Message

__all__ = ["DIAGONAL", "in_place"]

_CALLS = operator.attrgetter("call_ids")
_RESULTS = operator.attrgetter("result_ids")
_ROLE = operator.attrgetter("role")


def in_place(
    before: Conversation,
    after: Conversation,
    survivors: Sequence[int | None],
    measure: Tracks | None = None,
) -> Enforced | None:
    """The result for ``after`` when it rewrote messages of ``before`` in
    place and nothing else: as many messages, every other one the very
    object it was, every new one where the one it replaces was, with its
    role, tool calls and tool results (so pairing closure has nothing to
    mend), not a survivor, not a user message (which could stand in for
    the most recent one) and not an empty assistant message, and no
    replacing message one of the input's. None for any other output (the
    general reading then decides).

    With ``measure`` (the conversation's), the check starts from the
    closest in-place rewrite it accepted there (the same strategy's on the
    last request): a position where both the input and the output hold the
    very objects they held then passed then, so only the other positions
    and the new messages are looked at. Costs pointer passes over the
    messages and C-level passes over the positions that changed."""
    if any(s is not None and after[s] is not before[s] for s in survivors):
        return None
    with _IDS_LOCK:
        notes = _rewrites_noted(measure)
        start = _closest_rewrite(notes, before, after, measure)
        if start is None:
            checked = _check_whole(before, after)
        else:
            note, differs = start
            if len(differs) <= len(before) // _CONTINUED:
                notes = tuple(n for n in notes if n is not note)  # continued: taken over
            else:  # another strategy's: it stays as it was
                note = attrs.evolve(
                    note, ids=collections.Counter(note.ids), new_ids=set(note.new_ids)
                )
            checked = _check_from(before, after, note, differs)
        if isinstance(checked, Enforced):
            return checked
        if checked is None:
            if measure is not None and start is not None:
                measure.note(_IDS, notes)
            return None
        if measure is not None:
            measure.note(_IDS, (checked, *notes[: _REWRITES_KEPT - 1]))
    changed = checked.changed
    return Enforced(
        messages=after, replaced=_diagonal(changed), origin=_holed(len(before), changed)
    )


def _replaceable(was: Sequence[Message], now: Sequence[Message]) -> bool:
    """Whether each of ``now`` may stand in place of the one of ``was``:
    the same role (not a user's), tool calls and tool results, and an
    assistant message with something in it (C-level passes)."""
    roles = list(map(_ROLE, now))
    if (
        "user" in roles
        or any(map(operator.ne, roles, map(_ROLE, was)))
        or any(map(operator.ne, map(_CALLS, now), map(_CALLS, was)))
        or any(map(operator.ne, map(_RESULTS, now), map(_RESULTS, was)))
    ):
        return False
    return "assistant" not in roles or all(
        m.parts for m in itertools.compress(now, map("assistant".__eq__, roles))
    )


def _check_whole(before: Conversation, after: Conversation) -> _Rewrite | Enforced | None:
    """The in-place check of every position: the accepted rewrite, the
    unchanged result when nothing changed, or None."""
    changed = list(itertools.compress(itertools.count(), map(operator.is_not, before, after)))
    if not changed:
        return unchanged(before)
    now = list(map(after.__getitem__, changed))
    if not _replaceable(list(map(before.__getitem__, changed)), now):
        return None
    # The input may hold one object at several places (a conversion cache
    # hands back one object for equal messages): each position still says
    # what it holds, so only a replacing object that is one of the input's
    # (a moved message) is left to the general matching.
    ids = collections.Counter(map(id, before))
    if not ids.keys().isdisjoint(map(id, now)):
        return None  # a moved object: the general matching places it
    new_ids = set(map(id, now))
    if len(new_ids) != len(now):  # one object replacing several: no note
        return _Rewrite(
            source=(), output=(), changed=changed, ids=collections.Counter(), new_ids=set()
        )
    return _Rewrite(source=before, output=after, changed=changed, ids=ids, new_ids=new_ids)


def _check_from(
    before: Conversation, after: Conversation, note: _Rewrite, differs: list[int]
) -> _Rewrite | Enforced | None:
    """The in-place check from ``note``, an accepted rewrite no longer
    than ``before``, at whose ``differs`` positions the input or the
    output holds another object than the note's (each later position is
    new). ``note``'s sets become the result's."""
    source, output, n = note.source, note.output, len(before)
    common = len(source)
    looked = differs + list(range(common, n)) if common < n else differs
    at_before = list(map(before.__getitem__, looked))
    at_after = list(map(after.__getitem__, looked))
    fresh = list(itertools.compress(looked, map(operator.is_not, at_before, at_after)))
    if differs:
        gone = set(differs)
        changed = sorted([*itertools.filterfalse(gone.__contains__, note.changed), *fresh])
    else:
        changed = [*note.changed, *fresh]
    if not changed:
        return unchanged(before)
    now = list(map(after.__getitem__, fresh))
    if not _replaceable(list(map(before.__getitem__, fresh)), now):
        return None
    ids, new_ids = note.ids, note.new_ids
    moved = list(
        itertools.compress(
            differs, map(operator.is_not, at_before, map(source.__getitem__, differs))
        )
    )
    left = itertools.compress(
        differs,
        map(operator.is_not, map(source.__getitem__, differs), map(output.__getitem__, differs)),
    )
    went = list(map(id, map(source.__getitem__, moved)))
    ids.subtract(went)
    for key in went:
        if ids[key] <= 0:
            del ids[key]
    entered = list(map(id, map(before.__getitem__, moved)))
    entered.extend(map(id, before[common:]))
    ids.update(entered)
    new_ids.difference_update(map(id, map(output.__getitem__, left)))
    replacing = list(map(id, now))
    new_ids.update(replacing)
    if not new_ids.isdisjoint(entered) or not ids.keys().isdisjoint(replacing):
        return None  # a moved object: the general matching places it
    if len(new_ids) != len(changed):  # one object replacing several: no note
        return _Rewrite(
            source=(), output=(), changed=changed, ids=collections.Counter(), new_ids=set()
        )
    return _Rewrite(source=before, output=after, changed=changed, ids=ids, new_ids=new_ids)


@attrs.frozen(slots=True, eq=False)
class _Rewrite:
    """An in-place rewrite the check accepted in a measure: its input and
    output (each kept, so no id the sets hold is reused), the positions it
    replaced (ascending), the ids of the input's messages (how many times
    each stands there) and of the
    replacing ones (each all distinct)."""

    source: Conversation
    output: Conversation
    changed: list[int]
    ids: collections.Counter[int]
    new_ids: set[int]


_IDS = object()
"""The key the in-place check keeps its notes under in a measure."""

_IDS_LOCK = threading.Lock()

_CONTINUED = 8
"""A note that differs from an input at no more than one position in this
many is the one that input continues (its sets are taken over, not copied)."""

_REWRITES_KEPT = 3
"""How many accepted rewrites the check keeps per measure: one per
strategy that rewrites in place in a pipeline (a note for each keeps the
one it continues on the next request)."""


def _rewrites_noted(measure: Tracks | None) -> tuple[_Rewrite, ...]:
    noted = None if measure is None else measure.noted(_IDS)
    if not isinstance(noted, tuple):
        return ()
    return tuple(n for n in noted if isinstance(n, _Rewrite) and n.source)


def _closest_rewrite(
    notes: tuple[_Rewrite, ...],
    before: Conversation,
    after: Conversation,
    measure: Tracks | None = None,
) -> tuple[_Rewrite, list[int]] | None:
    """The note no longer than ``before`` whose input and output differ
    from ``before`` and ``after`` at the fewest positions, and those
    positions (pointer passes); None without one. A note whose input
    ``before`` continues, as ``measure`` knows already, is taken when it
    differs at few positions, with one pass (the outputs') instead of the
    passes over every note: which note it is changes what the check costs,
    never what it gives."""
    if measure is not None:
        for note in notes:
            if len(note.source) > len(before):
                continue
            moved = measure.moved(before, note.source)
            if moved is None:
                continue
            changed = set(moved)
            changed.update(
                itertools.compress(itertools.count(), map(operator.is_not, after, note.output))
            )
            differs = sorted(changed)
            if len(differs) <= len(before) // _CONTINUED:
                return note, differs
            break
    best: tuple[_Rewrite, list[int]] | None = None
    for note in notes:
        if len(note.source) > len(before):
            continue
        differs = list(
            itertools.compress(
                itertools.count(),
                map(
                    operator.or_,
                    map(operator.is_not, before, note.source),
                    map(operator.is_not, after, note.output),
                ),
            )
        )
        if best is None or len(differs) < len(best[1]):
            best = (note, differs)
    return best


def _holed(size: int, holes: Sequence[int]) -> tuple[int | None, ...]:
    """``range(size)`` as a tuple with None at each of ``holes`` (C-level
    passes: no dict, no per-position look-up)."""
    origin: list[int | None] = list(range(size))
    collections.deque(map(origin.__setitem__, holes, itertools.repeat(None)), maxlen=0)
    return tuple(origin)


DIAGONAL = 1 << 17
"""How many ``(j, j)`` pairs `_diagonal` keeps made (the module owns
them): an in-place rewrite of a long conversation replaces thousands of
messages on every request, and making a pair for each anew costs the
garbage collector more than the rest of the check."""

_PAIRS: list[tuple[int, int]] = []
_PAIRS_LOCK = threading.Lock()


def _diagonal(changed: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """``(j, j)`` for each of ``changed`` (ascending)."""
    top = min(changed[-1] + 1, DIAGONAL)
    if len(_PAIRS) < top:
        with _PAIRS_LOCK:
            _PAIRS.extend((j, j) for j in range(len(_PAIRS), top))
    if changed[-1] < len(_PAIRS):
        return tuple(map(_PAIRS.__getitem__, changed))
    return tuple(_PAIRS[j] if j < len(_PAIRS) else (j, j) for j in changed)
