"""The invariants every strategy's output is held to, enforced in one place.

After each strategy the interpreter calls :func:`enforce` with the strategy's
input and output:

1. **Survivors.** The first system message and the most recent user message
   of the input are in the output, unaltered (the same objects), and a first
   system message that led the input leads the output. The input's most
   recent user message stays the output's: no new user message stands
   after it, and none opens a turn inside the latest turn, or the next
   strategy would take that message for the one to keep (a summary of tool
   rounds after the question is the assistant's, not the user's).
2. **Tool pairing.** No tool result outlives its call, and no tool call
   outlives its result where the input had one. Pairing closure drops the
   orphaned half; parallel calls in one message are one unit, so losing the
   result of one drops them all. A message that closure leaves with no parts
   is removed. Closure may strip tool results from the most recent user
   message: that is the one change a survivor may undergo.
3. **Order.** Kept messages appear in the input's order; anything else in the
   output is new (a summary, a stub, a placeholder) and is reported as such.

An output that breaks 1 or 3 cannot be mended without guessing, so it is
discarded: the input stands and the violation is recorded as an error. An
output that breaks 2 is mended by closure.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections import Counter
from collections.abc import Container, Sequence
from typing import Protocol

import attrs

from memrules._core.conversation import (
    ToolLinks,
    first_system_index,
    is_turn_start,
    last_user_index,
    latest_turn_start,
    tool_links,
)
from memrules._core.indices import EMPTY, Indices, indices
from memrules._core.messages import Conversation, Message, ToolCall, ToolResult

__all__ = [
    "Enforced",
    "TrackView",
    "Tracks",
    "check_invariants",
    "diff",
    "enforce",
    "pairing_problems",
]


class TrackView(Protocol):
    """What :func:`enforce` reads of one conversation a pipeline has
    measured (:class:`memrules._counting.measure.Track` is one), instead of
    deriving it again from the messages."""

    @property
    def first_system(self) -> int | None:
        """The first system message's index, or None."""

    @property
    def last_user(self) -> int | None:
        """The most recent user message's index, or None."""

    @property
    def leads_with_user(self) -> bool:
        """Whether the first message that is not a system message is a user message."""

    @property
    def unique_calls(self) -> bool:
        """Whether no call id occurs in more than one place."""

    def splits(self, head: Sequence[int], start: int) -> bool:
        """Whether keeping ``head`` and every message from ``start`` on
        would keep one message of a tool pair and drop the other."""

    def held(self) -> tuple[int, ...]:
        """The indices that must survive (the survivors and the tool
        exchanges they need), ascending."""


class Tracks(Protocol):
    """Where :func:`enforce` finds a conversation's :class:`TrackView` and
    tool links (:class:`memrules._counting.measure.Measure` is one)."""

    def track(self, conversation: Conversation) -> TrackView:
        """The view of ``conversation``."""

    def links(self, conversation: Conversation) -> ToolLinks:
        """The tool links of ``conversation``."""


@attrs.frozen(kw_only=True, slots=True)
class Enforced:
    """The result of :func:`enforce`: the messages that stand, and the diff
    from the input. Indices in ``removed`` and the first of each ``replaced``
    pair are input indices; ``inserted`` and the second of each pair are
    output indices. ``origin[j]`` is the input index of output message ``j``,
    or None for a new one. ``removed`` is an :class:`~memrules._core.indices.Indices`,
    which reads as the tuple of indices it holds (a tuple given is taken
    as one)."""

    messages: Conversation
    removed: Indices = attrs.field(default=EMPTY, converter=indices)
    replaced: tuple[tuple[int, int], ...] = ()
    inserted: tuple[int, ...] = ()
    origin: tuple[int | None, ...] = ()
    closed_calls: tuple[str, ...] = ()
    violation: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.replaced or self.inserted)


def _unchanged(before: Conversation, violation: str | None = None) -> Enforced:
    return Enforced(messages=before, origin=tuple(range(len(before))), violation=violation)


def _match(
    before: Conversation, after: Conversation, anchors: Sequence[int | None] = ()
) -> list[int | None] | str:
    """Input index of each output message (None when new), or a violation.

    Kept messages are recognised by identity. The same object may occur more
    than once in the input (a caller reusing a canned reminder), so the
    output's objects are embedded in order: the ``anchors`` (input indices
    of the survivors) are matched wherever the output keeps their object,
    and everything else takes the latest input occurrence that keeps the
    order, since strategies drop the oldest messages.
    """
    position = dict(zip(map(id, before), range(len(before)), strict=True))
    if len(position) == len(before):
        # Every input object is distinct (the usual case): one lookup each.
        direct = list(map(position.get, map(id, after)))
        kept = [i for i in direct if i is not None]
        if kept == sorted(kept) and len(set(kept)) == len(kept):
            return direct
    positions: dict[int, list[int]] = {}
    for i, m in enumerate(before):
        positions.setdefault(id(m), []).append(i)
    pins = sorted({a for a in anchors if a is not None})
    options = [_occurrences(after, before[a]) for a in pins]
    failed = 0
    for size in range(len(pins), -1, -1):
        for chosen in itertools.combinations(range(len(pins)), size):
            for js in itertools.product(*(options[k] for k in chosen)):
                pinned = [(pins[k], j) for k, j in zip(chosen, js, strict=True)]
                origin = _embed(before, after, positions, pinned)
                if not isinstance(origin, int):
                    return origin
                failed = origin
    # The last try pinned nothing: no order-keeping reading exists.
    i = positions[id(after[failed])][0]
    return f"output[{failed}] moved or repeated the input message at index {i}; order must be kept"


def _occurrences(after: Conversation, target: Message, cap: int = 4) -> list[int]:
    """Output positions of ``target`` (the first and last few of them)."""
    found = [j for j, m in enumerate(after) if m is target]
    return found if len(found) <= 2 * cap else found[:cap] + found[-cap:]


def _embed(
    before: Conversation,
    after: Conversation,
    positions: dict[int, list[int]],
    pinned: Sequence[tuple[int, int]],
) -> list[int | None] | int:
    """Origins with ``after[j]`` at input ``i`` for each pinned ``(i, j)``,
    the rest at their latest order-keeping input occurrence; or, when that
    is impossible, the output index where it fails."""
    origin: list[int | None] = [None] * len(after)
    bounds = [(-1, -1), *pinned, (len(before), len(after))]
    for (lo_i, lo_j), (hi_i, hi_j) in itertools.pairwise(bounds):
        if hi_j <= lo_j:
            return hi_j if hi_j >= 0 else 0
        upper = hi_i
        for j in range(hi_j - 1, lo_j, -1):
            found = positions.get(id(after[j]))
            if found is None:
                continue
            k = bisect.bisect_left(found, upper) - 1
            if k < 0 or found[k] <= lo_i:
                return j
            origin[j] = upper = found[k]
        if hi_j < len(after):
            origin[hi_j] = hi_i
    return origin


_CALLS = operator.attrgetter("call_ids")
_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)
_RESULTS = operator.attrgetter("result_ids")


def _closure(before: Conversation, after: Conversation) -> tuple[frozenset[str], frozenset[str]]:
    """Call ids and result ids that pairing closure must drop from ``after``.

    A unit is the set of calls one message makes (parallel calls). Units
    are taken from ``before`` as well as ``after``: a strategy that rewrote
    an assistant message to drop one call of a parallel set has split the
    input's unit, so the rest of it goes too (a unit stays or goes whole).
    """
    tools_before = [m for m in before if m.is_tool_carrier]
    calls_before = set(itertools.chain.from_iterable(map(_CALLS, tools_before)))
    if not calls_before:
        return frozenset(), frozenset()
    results_before = set(itertools.chain.from_iterable(map(_RESULTS, tools_before)))
    tools_after = [m for m in after if m.is_tool_carrier]
    units_after = [frozenset(u) for u in map(_CALLS, tools_after) if u]
    alive_calls = set(itertools.chain.from_iterable(units_after))
    alive_results = set(itertools.chain.from_iterable(map(_RESULTS, tools_after)))
    units_before = [frozenset(u) for u in map(_CALLS, tools_before) if len(u) > 1]
    live_units = units_after + [u for u in units_before if not u.isdisjoint(alive_calls)]
    dead_calls: set[str] = set()
    dead_results: set[str] = set()
    while True:
        orphans = alive_results & (calls_before - alive_calls)
        alive_results -= orphans
        dead_results |= orphans
        unanswered = results_before - alive_results
        missing = calls_before - alive_calls
        killed = [
            u
            for u in live_units
            if not unanswered.isdisjoint(u) or (len(u) > 1 and not missing.isdisjoint(u))
        ]
        if not killed:
            break
        for u in killed:
            gone = u & alive_calls
            alive_calls.difference_update(gone)
            dead_calls.update(gone)
        live_units = [u for u in live_units if u not in killed]
    return frozenset(dead_calls), frozenset(dead_results)


def _no_pair_split(
    before: Conversation, origin: Sequence[int | None], measure: Tracks | None
) -> bool:
    """For an output that only deletes: True when every call/result pair of
    ``before`` is kept or dropped whole, so closure has nothing to do. False
    means "look closer" (also when call ids repeat)."""
    links = tool_links(before) if measure is None else measure.links(before)
    if not links.unique_calls:
        return False
    kept = set(origin).__contains__
    calls = map(kept, map(_FIRST, links.pairs))
    results = map(kept, map(_SECOND, links.pairs))
    return not any(map(operator.ne, calls, results))


def _close_message(
    m: Message, dead_calls: frozenset[str], dead_results: frozenset[str]
) -> Message | None:
    """``m`` without the dead pairing parts; ``m`` itself if none; None if empty."""
    if not (dead_calls.intersection(m.call_ids) or dead_results.intersection(m.result_ids)):
        return m
    parts = tuple(
        p
        for p in m.parts
        if not (
            (isinstance(p, ToolCall) and p.id in dead_calls)
            or (isinstance(p, ToolResult) and p.call_id in dead_results)
        )
    )
    return m.evolve(parts=parts) if parts else None


def enforce(
    before: Conversation,
    after: Conversation,
    *,
    measure: Tracks | None = None,
    user_first: bool = False,
) -> Enforced:
    """Hold ``after``, a strategy's output for ``before``, to the invariants.

    Returns the messages that stand and the diff from ``before``. When the
    output cannot stand, ``messages is before`` and ``violation`` says why.
    ``measure`` (the pipeline's) saves recomputing the tool links of
    ``before``. With ``user_first``, when the first message of ``before``
    after its system messages is a user message, the output's is too: a
    leading run of other messages is dropped, with the tool exchanges it
    opens (see the module docs).
    """
    if after is before:
        return _unchanged(before)
    track = None if measure is None else measure.track(before)
    if track is None:
        first_system, last_user = first_system_index(before), last_user_index(before)
    else:
        first_system, last_user = track.first_system, track.last_user
    window = None if track is None else _window(before, after, track)
    removed: Indices | None = None
    origin: list[int | None]
    if window is not None:
        head, start = window
        origin = [*head, *range(start, len(before))]
        removed = Indices.gaps(head, start)
    else:
        matched = _match(before, after, (first_system, last_user))
        if isinstance(matched, str):
            return _unchanged(before, matched)
        origin = matched
    if window is not None:
        head, start = window
        kept: Container[int | None] = _WindowKept(frozenset(head), start)
    else:
        kept = {i for i in origin if i is not None}
    if first_system is not None and first_system not in kept:
        return _unchanged(
            before, f"removed or altered the first system message (index {first_system})"
        )
    if last_user is not None and last_user not in kept:
        return _unchanged(
            before, f"removed or altered the most recent user message (index {last_user})"
        )
    if first_system == 0 and origin[0] != 0:
        return _unchanged(before, "put a message before the first system message")
    leads = _leads_with_user(before) if track is None else track.leads_with_user
    if (
        window is not None
        and removed is not None
        and track is not None
        and track.unique_calls
        and not track.splits(*window)
        and not (user_first and leads)
    ):
        # A window that splits no tool pair: it stands as it is.
        return Enforced(messages=after, removed=removed, origin=tuple(origin))

    if None in origin:
        # A new assistant message with nothing in it says nothing, and
        # providers reject it: it is dropped, as closure drops emptied ones.
        empty = [j for j, i in enumerate(origin) if i is None and _is_empty_assistant(after[j])]
        if empty:
            gone = set(empty)
            after = tuple(m for j, m in enumerate(after) if j not in gone)
            origin = [i for j, i in enumerate(origin) if j not in gone]
    messages = list(after)
    sources: list[int | None] = [None] * len(messages)  # what a mended message was made from
    dead: set[str] = set()
    if window is not None and track is not None and track.unique_calls:
        split = track.splits(*window)
    else:
        split = None in origin or not _no_pair_split(before, origin, measure)
    if split:
        removed = None
        closed = _close(before, messages, origin, sources, first_system, last_user, dead)
        if closed is not None:
            return _unchanged(before, closed)
    if user_first and leads:
        window_origin = list(origin)
        led = _lead_with_user(before, messages, origin, sources, first_system, last_user, dead)
        if led is not None:
            return _unchanged(before, led)
        if origin != window_origin:
            removed = None
    if None in origin:
        misplaced = _misplaced(before, messages, origin, sources, last_user)
        if misplaced is not None:
            return _unchanged(before, misplaced)
    mended = (
        {j: i for j, i in enumerate(sources) if i is not None}
        if sources.count(None) != len(sources)
        else {}
    )
    return diff(before, tuple(messages), origin, tuple(sorted(dead)), mended, removed=removed)


def _misplaced(
    before: Conversation,
    messages: Sequence[Message],
    origin: Sequence[int | None],
    sources: Sequence[int | None],
    last_user: int | None,
) -> str | None:
    """A violation when a new user message of the output stands after the
    input's most recent user message, or opens a turn inside the input's
    latest turn: the next strategy would take it for the latest user
    message (or the latest turn) and be free to drop the real one. A new
    message stands where the kept or mended message before it came from."""
    start = latest_turn_start(before)
    after = -1  # the input index of the last kept or mended message so far
    for j, m in enumerate(messages):
        i = origin[j] if origin[j] is not None else sources[j]
        if i is not None:
            after = i
            continue
        if m.role != "user":
            continue
        if last_user is not None and after >= last_user:
            return (
                f"output[{j}] is a new user message after the most recent user message "
                f"(index {last_user}), which it would stand in for"
            )
        if start is not None and after >= start and is_turn_start(m):
            return (
                f"output[{j}] is a new user message that opens a turn inside the latest "
                f"turn (which starts at index {start})"
            )
    return None


@attrs.frozen(slots=True)
class _WindowKept:
    """The input indices a window keeps: ``head``, and all from ``start``."""

    head: frozenset[int]
    start: int

    def __contains__(self, index: object) -> bool:
        return index in self.head or (isinstance(index, int) and index >= self.start)


def _window(
    before: Conversation, after: Conversation, track: TrackView
) -> tuple[tuple[int, ...], int] | None:
    """``(head, start)`` when ``after`` is a window of ``before``: the held
    messages (:meth:`TrackView.held`) below ``start``, then every message from
    ``start`` on, the very objects, in order. None for any other output (the
    general matching then reads it). Costs what ``after`` holds."""
    n, w = len(before), len(after)
    if not 0 < w < n:
        return None
    held = track.held()
    for j in range(min(len(held), w - 1) + 1):
        start = n - w + j
        if after[j] is not before[start]:
            continue
        head = tuple(h for h in held if h < start)
        if len(head) != j or not all(map(operator.is_, after, map(before.__getitem__, head))):
            continue
        tail = itertools.islice(before, start, None)
        if all(map(operator.is_, itertools.islice(after, j, None), tail)):
            return head, start
        return None
    return None


def _lead_with_user(
    before: Conversation,
    messages: list[Message],
    origin: list[int | None],
    sources: list[int | None],
    first_system: int | None,
    last_user: int | None,
    dead: set[str],
) -> str | None:
    """Make the first non-system message of ``messages`` a user message, in
    place: drop a leading message of another role (closure then drops the
    results of its calls, and a message left empty), again until a user
    message leads. When that would strip the most recent user message, hold
    instead the latest user message of ``before`` that came before the
    leading one (a window dropped it). A violation when neither works."""
    while True:
        j = next((k for k, m in enumerate(messages) if m.role != "system"), None)
        if j is None or messages[j].role == "user":
            return None
        trial = (list(messages), list(origin), list(sources), set(dead))
        del trial[0][j], trial[1][j], trial[2][j]
        if _close(before, *trial[:3], first_system, last_user, trial[3]) is None:
            messages[:], origin[:], sources[:] = trial[:3]
            dead.update(trial[3])
            continue
        at = origin[j] if origin[j] is not None else sources[j]
        held = [i for i in range(at or 0) if before[i].role == "user"] if at is not None else []
        if not held:
            return "no user message can lead the output (user_first)"
        starts = [i for i in held if is_turn_start(before[i])]
        i = (starts or held)[-1]
        known = (o if o is not None else src for o, src in zip(origin, sources, strict=True))
        p = next((k for k, o in enumerate(known) if o is not None and o > i), j)
        j = min(j, p)
        messages.insert(j, before[i])
        origin.insert(j, i)
        sources.insert(j, None)
        closed = _close(before, messages, origin, sources, first_system, last_user, dead)
        if closed is not None:
            return closed
        if not (j < len(messages) and messages[j].role == "user"):
            return "no user message can lead the output (user_first)"


def _is_empty_assistant(message: Message) -> bool:
    return message.role == "assistant" and not message.parts


def _leads_with_user(conversation: Conversation) -> bool:
    first = next((m for m in conversation if m.role != "system"), None)
    return first is not None and first.role == "user"


def _close(
    before: Conversation,
    messages: list[Message],
    origin: list[int | None],
    sources: list[int | None],
    first_system: int | None,
    last_user: int | None,
    dead: set[str],
) -> str | None:
    """Apply pairing closure to ``messages`` in place (with their ``origin``
    and ``sources``, adding the closed call ids to ``dead``); a violation
    when closure would alter a survivor beyond what it may."""
    dead_calls, dead_results = _closure(before, tuple(messages))
    if not (dead_calls or dead_results):
        return None
    dead.update(dead_calls)
    j = 0
    while j < len(messages):
        m, i = messages[j], origin[j]
        closed = _close_message(m, dead_calls, dead_results)
        if closed is m:
            j += 1
            continue
        source = i if i is not None else sources[j]
        if source == first_system and source is not None:
            return "tool pairing would alter the first system message"
        if closed is None:
            if source == last_user and source is not None:
                return "dropped the tool calls that the most recent user message answers"
            del messages[j], origin[j], sources[j]
            continue
        messages[j], origin[j], sources[j] = closed, None, source
        j += 1
    return None


def diff(
    before: Conversation,
    messages: Conversation,
    origin: Sequence[int | None],
    closed_calls: tuple[str, ...],
    mended: dict[int, int] | None = None,
    *,
    removed: Indices | None = None,
) -> Enforced:
    """Removed, replaced and inserted messages between kept anchors.

    A message that pairing closure mended replaces the message it was made
    from (``mended`` maps its output index to that input index). Within each
    gap between two kept messages, the other removed input messages and new
    output messages pair up in order as replacements; any surplus is plainly
    removed or inserted. ``removed``, when the caller knows it already (a
    window), is taken as it is for an output that only deletes.
    """
    if not mended and None not in origin:
        # Only deletions: everything not kept was removed.
        if removed is None:
            removed = Indices.gaps(origin, len(before))  # type: ignore[arg-type]
        if not removed:
            return _unchanged(before)
        return Enforced(
            messages=messages,
            removed=removed,
            origin=tuple(origin),
            closed_calls=closed_calls,
        )
    sources = mended or {}
    gone_all: list[int] = []
    replaced: list[tuple[int, int]] = []
    inserted: list[int] = []
    prev = -1
    new: list[int] = []

    def settle(upto: int) -> None:
        known = [(sources[j], j) for j in new if j in sources]
        taken = {i for i, _ in known}
        gone = [i for i in range(prev + 1, upto) if i not in taken]
        made = [j for j in new if j not in sources]
        pairs = min(len(gone), len(made))
        replaced.extend(sorted([*known, *zip(gone[:pairs], made[:pairs], strict=True)]))
        gone_all.extend(gone[pairs:])
        inserted.extend(made[pairs:])

    for j, i in enumerate(origin):
        if i is None:
            new.append(j)
            continue
        settle(i)
        prev = i
        new = []
    settle(len(before))
    if not (gone_all or replaced or inserted):
        return _unchanged(before)
    return Enforced(
        messages=messages,
        removed=Indices.of(gone_all),
        replaced=tuple(replaced),
        inserted=tuple(inserted),
        origin=tuple(origin),
        closed_calls=closed_calls,
    )


def pairing_problems(before: Conversation, after: Conversation) -> list[str]:
    """Ways ``after`` breaks tool pairing relative to ``before``: a result whose
    call was in ``before`` but is gone, or a call whose result was in
    ``before`` but is gone. Empty when pairing holds."""
    calls_before = {c for m in before for c in m.call_ids}
    results_before = {r for m in before for r in m.result_ids}
    calls_after = {c for m in after for c in m.call_ids}
    results_after = {r for m in after for r in m.result_ids}
    problems = [
        f"tool result {r!r} outlives its call"
        for m in after
        for r in m.result_ids
        if r in calls_before and r not in calls_after
    ]
    problems += [
        f"tool call {c!r} outlives its result"
        for m in after
        for c in m.call_ids
        if c in results_before and c not in results_after
    ]
    return problems


def check_invariants(before: Conversation, after: Conversation) -> list[str]:
    """Every way ``after`` breaks the invariants relative to ``before``.

    Kept messages are matched by value in order (a subsequence check), so this
    works on any two conversations, including ones read back from JSON.
    The most recent user message may have lost tool results to closure.
    """
    problems: list[str] = []
    first_system = first_system_index(before)
    last_user = last_user_index(before)
    if first_system is not None:
        s = before[first_system]
        if s not in after:
            problems.append("the first system message is gone or altered")
        elif first_system == 0 and (not after or after[0] != s):
            problems.append("the first system message is no longer first")
    if last_user is not None:
        u = before[last_user]
        kept_forms = [m for m in after if m.role == "user"]
        if not any(_same_but_results(u, m) for m in kept_forms):
            problems.append("the most recent user message is gone or altered")
        elif not _same_but_results(u, kept_forms[-1]):
            problems.append("a new user message stands after the most recent user message")
    start = latest_turn_start(before)
    if start is not None:
        opening = before[start]
        found = [j for j, m in enumerate(after) if m == opening]
        if found and any(is_turn_start(m) for m in after[found[-1] + 1 :]):
            problems.append("a new user message opens a turn inside the latest turn")
    problems += pairing_problems(before, after)
    for j, m in enumerate(after):
        if (
            m.role == "assistant"
            and not m.parts
            and not any(b.role == "assistant" and not b.parts for b in before)
        ):
            problems.append(f"output[{j}] is an empty assistant message")
    if not _is_subsequence_of_kept(before, after):
        problems.append("kept messages are out of order")
    return problems


def _same_but_results(original: Message, candidate: Message) -> bool:
    if original == candidate:
        return True
    if candidate.role != original.role or candidate.id != original.id:
        return False
    kept = tuple(p for p in original.parts if not isinstance(p, ToolResult))
    rest = tuple(p for p in candidate.parts if not isinstance(p, ToolResult))
    results = [p for p in candidate.parts if isinstance(p, ToolResult)]
    return rest == kept and all(p in original.parts for p in results)


def _is_subsequence_of_kept(before: Conversation, after: Conversation) -> bool:
    """Messages of ``after`` that occur in ``before`` occur in the same order.

    Matching is by value, and an output message equal to an input message may
    still be a new one, so only unambiguous messages are taken as kept: those
    whose value occurs exactly once in ``before`` and once in ``after``, and
    that are not what pairing closure could have made of another input
    message (the same message with fewer tool parts).
    """
    once_before = _once(before)
    once_after = _once(after)
    position = {m: i for i, m in enumerate(before) if m in once_before}
    carriers: dict[tuple[object, ...], list[Message]] = {}
    for m in before:
        if m.is_tool_carrier:
            carriers.setdefault(_without_tool_parts(m), []).append(m)
    kept = [
        position[m]
        for m in after
        if m in once_after
        and m in position
        and not any(c != m for c in carriers.get(_without_tool_parts(m), ()))
    ]
    return all(a < b for a, b in itertools.pairwise(kept))


def _without_tool_parts(m: Message) -> tuple[object, ...]:
    rest = tuple(p for p in m.parts if not isinstance(p, ToolCall | ToolResult))
    return (m.role, m.id, m.name, m.metadata, rest)


def _once(conversation: Conversation) -> set[Message]:
    counts = Counter(conversation)
    return {m for m, n in counts.items() if n == 1}
