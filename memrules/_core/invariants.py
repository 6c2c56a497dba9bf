"""The invariants every strategy's output is held to, enforced in one place.

After each strategy the interpreter calls `enforce` with the strategy's
input and output:

1. **Survivors.** The input's survivors (`memrules._core.survivors`: the
   first system message, the task, the question, the most recent user
   message and the pinned messages) are in the output, unaltered (the same
   objects), and a first system message that led the input leads the
   output. Each keeps its place: no new user message stands after the most
   recent one, none opens a turn inside the latest turn, no new message
   from the person stands after the question or before the task, or the
   next strategy would take that message for the one to keep (a summary
   of tool rounds after the question is the assistant's, not the user's).
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
import math
import operator
from collections.abc import Container, Sequence

import attrs

from memrules._core.conversation import (
    is_turn_start,
    latest_turn_start,
    tool_links,
)
from memrules._core.enforced import Enforced, Tracks, TrackView, diff, unchanged
from memrules._core.in_place import in_place as _in_place
from memrules._core.indices import Indices
from memrules._core.invariant_checks import check_invariants, pairing_problems
from memrules._core.messages import Conversation, Message, ToolCall, ToolResult
from memrules._core.survivors import DEFAULT_SURVIVORS, Picked, SurvivorRule, is_person
from memrules._core.survivors import survivors as pick_survivors

__all__ = [
    "Enforced",
    "TrackView",
    "Tracks",
    "check_invariants",
    "diff",
    "enforce",
    "pairing_problems",
]
# Enforced, TrackView, Tracks and diff live in memrules._core.enforced, the
# after-the-fact checks in memrules._core.invariant_checks; they are named
# here too, where the invariants are.


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
            if math.prod(len(options[k]) for k in chosen) > _READINGS:
                continue  # survivors repeated many times over: fewer of them pinned
            for js in itertools.product(*(options[k] for k in chosen)):
                pinned = [(pins[k], j) for k, j in zip(chosen, js, strict=True)]
                origin = _embed(before, after, positions, pinned)
                if not isinstance(origin, int):
                    return origin
                failed = origin
    # The last try pinned nothing: no order-keeping reading exists.
    i = positions[id(after[failed])][0]
    return f"output[{failed}] moved or repeated the input message at index {i}; order must be kept"


_READINGS = 64
"""The most placements of the pinned survivors `_match` tries for
one choice of them (each survivor's object may stand several times in an
output that reuses it): the readings grow as a product, so a choice with
more is left for one that pins fewer."""


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
    survivors: SurvivorRule = DEFAULT_SURVIVORS,
    claimed: Sequence[int | None] | None = None,
) -> Enforced:
    """Hold ``after``, a strategy's output for ``before``, to the invariants.

    Returns the messages that stand and the diff from ``before``. When the
    output cannot stand, ``messages is before`` and ``violation`` says why.
    ``measure`` (the pipeline's) saves recomputing the tool links of
    ``before``. With ``user_first``, when the first message of ``before``
    after its system messages is a user message, the output's is too: a
    leading run of other messages is dropped, with the tool exchanges it
    opens (see the module docs). ``survivors`` is the rule that picks the
    survivors when there is no ``measure`` (a measure has its own).

    ``claimed``, from a caller that made ``after`` from ``before`` (a
    carried request: what the previous request sent, then the new
    messages), is where each output message came from (None: a message
    that is none of ``before``'s objects): taken instead of matching
    objects, which costs the whole input, once it is checked that each
    kept message is the very object at its index, in order. (Where the
    input holds one object at several places, the claim, not the general
    reading's guess, says which of them was kept.)
    """
    if after is before:
        return unchanged(before)
    track = None if measure is None else measure.track(before)
    picked = pick_survivors(before, survivors) if track is None else track.picked()
    first_system = picked.first_system
    anchors = tuple(sorted(picked.indices))
    if len(after) == len(before):
        rewritten = _in_place(before, after, anchors, measure)
        if rewritten is not None:
            return rewritten
    window = None if track is None else _window(before, after, track)
    removed: Indices | None = None
    origin: list[int | None]
    if window is not None:
        head, start = window
        origin = [*head, *range(start, len(before))]
        removed = Indices.gaps(head, start)
    elif claimed is not None and _holds(before, after, claimed):
        origin = list(claimed)
    else:
        matched = _match(before, after, anchors)
        if isinstance(matched, str):
            return unchanged(before, matched)
        origin = matched
    if window is not None:
        head, start = window
        kept: Container[int | None] = _WindowKept(frozenset(head), start)
    else:
        kept = {i for i in origin if i is not None}
    for s in anchors:
        if s not in kept:
            return unchanged(before, f"removed or altered {picked.name(s)}")
    if first_system == 0 and origin[0] != 0:
        return unchanged(before, "put a message before the first system message")
    leads = _leads_with_user(before) if track is None else track.leads_with_user
    if (
        window is not None
        and removed is not None
        and track is not None
        and track.unique_calls
        and not track.splits(*window)
        and not (user_first and leads and not _leads_with_user(after))
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
    elif track is not None and track.closes_nothing(after):
        split = False  # read from the output's tool ids and the measure's
    else:
        split = None in origin or not _no_pair_split(before, origin, measure)
    if split:
        removed = None
        closed = _close(before, messages, origin, sources, picked, dead)
        if closed is not None:
            return unchanged(before, closed)
    if user_first and leads:
        window_origin = list(origin)
        led = _lead_with_user(before, messages, origin, sources, picked, dead)
        if led is not None:
            return unchanged(before, led)
        if origin != window_origin:
            removed = None
    if None in origin:
        misplaced = _misplaced(before, messages, origin, sources, picked, survivors)
        if misplaced is not None:
            return unchanged(before, misplaced)
    mended = (
        {j: i for j, i in enumerate(sources) if i is not None}
        if sources.count(None) != len(sources)
        else {}
    )
    return diff(before, tuple(messages), origin, tuple(sorted(dead)), mended, removed=removed)


_ROLE = operator.attrgetter("role")


def _misplaced(
    before: Conversation,
    messages: Sequence[Message],
    origin: Sequence[int | None],
    sources: Sequence[int | None],
    picked: Picked,
    rule: SurvivorRule,
) -> str | None:
    """A violation when a new user message of the output stands after the
    input's most recent user message, or opens a turn inside the input's
    latest turn, or is from the person (a summary is not) and stands after
    the question or before the task: the next strategy would take it for
    the one to keep and be free to drop the real one. A new message stands
    where the kept or mended message before it came from."""
    last_user, question, task = picked.last_user, picked.question, picked.task
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
        late = question is not None and after >= question
        early = task is not None and after < task
        if (late or early) and is_person(m, rule):
            where = "after the question" if late else "before the task"
            return (
                f"output[{j}] is a new message from the person {where}, which it would stand in for"
            )
    return None


def _holds(before: Conversation, after: Conversation, origin: Sequence[int | None]) -> bool:
    """Whether ``origin`` (one entry per message of ``after``) maps each
    kept message to the very object at that index of ``before``, in
    ascending order (C-level passes over ``after``)."""
    if len(origin) != len(after):
        return False
    kept = [i for i in origin if i is not None]
    if any(i < 0 or i >= len(before) for i in kept[:1] + kept[-1:]):
        return False
    if any(map(operator.ge, kept, kept[1:])):
        return False
    at = itertools.compress(after, map(operator.is_not, origin, itertools.repeat(None)))
    return all(map(operator.is_, at, map(before.__getitem__, kept)))


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
    messages (`TrackView.held`) below ``start``, then every message from
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
        # Slices, not an islice (which would step through the first
        # ``start`` messages to reach the tail): C-level copies of the window.
        if all(map(operator.is_, after[j:], before[start:])):
            return head, start
        # an object the input holds at several places: another start may fit
    return None


def _lead_with_user(
    before: Conversation,
    messages: list[Message],
    origin: list[int | None],
    sources: list[int | None],
    picked: Picked,
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
        if _close(before, *trial[:3], picked, trial[3]) is None:
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
        closed = _close(before, messages, origin, sources, picked, dead)
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
    picked: Picked,
    dead: set[str],
) -> str | None:
    """Apply pairing closure to ``messages`` in place (with their ``origin``
    and ``sources``, adding the closed call ids to ``dead``); a violation
    when closure would alter a survivor beyond what it may (a user-role
    survivor may lose tool results; nothing else of a survivor may go)."""
    survivors = picked.indices
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
        if source is not None and source in survivors:
            if source == picked.first_system:
                return "tool pairing would alter the first system message"
            if closed is None:
                return f"dropped the tool calls that {picked.name(source)} answers"
            if m.role != "user":
                return f"tool pairing would alter {picked.name(source)}"
        if closed is None:
            del messages[j], origin[j], sources[j]
            continue
        messages[j], origin[j], sources[j] = closed, None, source
        j += 1
    return None
