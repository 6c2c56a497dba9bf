"""Reading the structure of a conversation: survivors, turns, tool pairs.

Plain functions over message tuples, shared by strategies and the interpreter.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Iterable

import attrs

from memrules._messages import Conversation, Message, ToolResult

__all__ = [
    "ToolLinks",
    "droppable_turns",
    "first_system_index",
    "held_indices",
    "is_turn_start",
    "last_user_index",
    "pinned_indices",
    "survivor_indices",
    "tool_links",
    "turns",
]


def first_system_index(conversation: Conversation) -> int | None:
    """Index of the first system message, or None."""
    for i, m in enumerate(conversation):
        if m.role == "system":
            return i
    return None


def last_user_index(conversation: Conversation) -> int | None:
    """Index of the most recent user message, or None."""
    for i in range(len(conversation) - 1, -1, -1):
        if conversation[i].role == "user":
            return i
    return None


def survivor_indices(conversation: Conversation) -> frozenset[int]:
    """The messages no strategy may remove or alter: the first system message
    and the most recent user message."""
    found = (first_system_index(conversation), last_user_index(conversation))
    return frozenset(i for i in found if i is not None)


def pinned_indices(conversation: Conversation) -> frozenset[int]:
    """Survivors, plus the messages holding the tool calls that the survivors'
    tool results answer: dropping those would strip the most recent user
    message of its results (Anthropic's ``tool_result`` blocks), so the
    built-in strategies keep them."""
    survivors = survivor_indices(conversation)
    answered = {cid for i in survivors for cid in conversation[i].result_ids}
    if not answered:
        return survivors
    pinned = set(survivors)
    for i in range(max(survivors), -1, -1):
        ids = conversation[i].call_ids
        if ids and answered.intersection(ids):
            pinned.add(i)
            answered.difference_update(ids)
            if not answered:
                break
    return frozenset(pinned)


def is_turn_start(message: Message) -> bool:
    """A turn starts at a user message that says something: one whose parts
    are not all tool results (Anthropic carries tool results in user messages,
    and those continue the turn rather than start one)."""
    if message.role != "user":
        return False
    return not message.parts or not all(isinstance(p, ToolResult) for p in message.parts)


def turns(conversation: Conversation) -> tuple[range, ...]:
    """The turns, as index ranges. A turn runs from a user message (see
    :func:`is_turn_start`) up to the next one; messages before the first user
    message belong to no turn."""
    starts = [i for i, m in enumerate(conversation) if is_turn_start(m)]
    if not starts:
        return ()
    ends = [*starts[1:], len(conversation)]
    return tuple(range(s, e) for s, e in zip(starts, ends, strict=True))


@attrs.frozen(kw_only=True, slots=True)
class ToolLinks:
    """Which messages are tied by tool ids: ``pairs`` of (message holding a
    call, message holding its result) indices, in no particular order. ``unique_calls`` is
    False when some call id occurs in more than one place (then a call id
    does not name one message, and callers take their general path)."""

    pairs: tuple[tuple[int, int], ...]
    unique_calls: bool


_NO_LINKS = ToolLinks(pairs=(), unique_calls=True)
_CARRIES = operator.attrgetter("is_tool_carrier")


@attrs.frozen(slots=True)
class _LinkMemo:
    """The last conversation :func:`tool_links` answered for, with what it
    takes to extend the answer to a conversation that only appends to it."""

    conversation: Conversation
    links: ToolLinks
    call_at: dict[str, int]  # call id → first message holding it
    unmatched: dict[str, list[int]]  # result id → messages holding it, no call yet
    calls: int


_memo: _LinkMemo | None = None


def extends(longer: Conversation, shorter: Conversation) -> bool:
    """Whether ``longer`` starts with the very message objects of ``shorter``."""
    return len(longer) >= len(shorter) and all(map(operator.is_, shorter, longer))


def tool_links(conversation: Conversation) -> ToolLinks:
    """The :class:`ToolLinks` of ``conversation``.

    A window and the interpreter's invariant check ask this of the same
    tuple in turn, and an agent loop asks it of a conversation that grew by a
    message, so the answer for the last tuple asked about is kept (with the
    tuple: it is immutable, so the answer cannot go stale) and extended when
    the next tuple only appends to it.
    """
    global _memo
    memo = _memo
    if memo is not None and memo.conversation is conversation:
        return memo.links
    if memo is not None and extends(conversation, memo.conversation):
        start = len(memo.conversation)
        call_at = dict(memo.call_at)
        unmatched = {r: list(ix) for r, ix in memo.unmatched.items()}
        pairs = list(memo.links.pairs)
        calls = memo.calls
    else:
        start, call_at, unmatched, pairs, calls = 0, {}, {}, [], 0
    tail = itertools.compress(
        enumerate(conversation[start:], start), map(_CARRIES, conversation[start:])
    )
    for i, m in tail:
        for c in m.call_ids:
            calls += 1
            if c not in call_at:
                call_at[c] = i
                pairs.extend((i, r) for r in unmatched.pop(c, ()) if r != i)
        for r in m.result_ids:
            j = call_at.get(r)
            if j is None:
                unmatched.setdefault(r, []).append(i)
            elif j != i:
                pairs.append((j, i))
    links = (
        ToolLinks(pairs=tuple(pairs), unique_calls=calls == len(call_at))
        if pairs or calls
        else _NO_LINKS
    )
    _memo = _LinkMemo(conversation, links, call_at, unmatched, calls)
    return links


def held_indices(conversation: Conversation) -> frozenset[int]:
    """Pinned messages, plus every message tied to one by tool ids,
    transitively: the survivors' whole tool exchanges. Dropping any of them
    would make pairing closure strip a survivor (a parallel call whose
    sibling's result goes drops the whole call message, and with it the
    results the latest user message carries)."""
    pinned = pinned_indices(conversation)
    if not any(conversation[i].is_tool_carrier for i in pinned):
        return pinned
    at: dict[str, list[int]] = {}
    for i, m in enumerate(conversation):
        if m.is_tool_carrier:
            for key in (*m.call_ids, *m.result_ids):
                at.setdefault(key, []).append(i)
    held = set(pinned)
    todo = [i for i in pinned if conversation[i].is_tool_carrier]
    while todo:
        m = conversation[todo.pop()]
        for key in (*m.call_ids, *m.result_ids):
            for j in at[key]:
                if j not in held:
                    held.add(j)
                    todo.append(j)
    return frozenset(held)


def droppable_turns(conversation: Conversation, limit: int) -> tuple[range, ...]:
    """The oldest turns a strategy may move out whole, ``limit`` of them if
    it can: never the latest turn, nor a turn holding a survivor or part of
    a survivor's tool exchange (see :func:`held_indices`; such an exchange
    may begin before the first turn).

    The turns moved never split a tool exchange: a call made in one turn and
    answered in the next (Anthropic's ``tool_result`` blocks open the user's
    next message) would otherwise be half moved and half deleted by pairing
    closure, and what closure deletes is neither stored nor summarized. So
    the block is the longest run of at most ``limit`` oldest turns that no
    exchange leaves; when there is none, the shortest longer run; when no
    run of the movable turns is closed, nothing.
    """
    held = held_indices(conversation)
    movable: list[range] = []
    for turn in turns(conversation)[:-1]:
        if any(i in held for i in turn):
            break
        movable.append(turn)
    if not movable:
        return ()
    closed = _closed_runs(conversation, movable)
    fits = [k for k in closed if k <= limit]
    longer = [k for k in closed if k > limit]
    k = max(fits) if fits else min(longer, default=0)
    return tuple(movable[:k])


def _closed_runs(conversation: Conversation, movable: list[range]) -> list[int]:
    """The ``k`` for which the first ``k`` movable turns hold every message
    tied by tool ids to one of theirs (and no message outside them is).

    The run is ``[start, end)``. An exchange (the messages sharing a tool id)
    that begins before ``start`` must have none of its messages inside, so
    ``end`` may not pass its first message at or after ``start``; any other
    exchange must lie wholly inside or wholly after, so ``end`` may not fall
    in ``(first, last]``. One sweep over the run ends, sorted, checks both.
    """
    at: dict[str, list[int]] = {}
    for i, m in itertools.compress(enumerate(conversation), map(_CARRIES, conversation)):
        for key in {*m.call_ids, *m.result_ids}:
            at.setdefault(key, []).append(i)
    start = movable[0].start
    limit = len(conversation) + 1  # ends beyond this are never reached
    spans: list[tuple[int, int]] = []
    for ix in at.values():
        if len(ix) < 2:
            continue
        if ix[0] < start:
            later = bisect.bisect_left(ix, start)
            if later < len(ix):
                limit = min(limit, ix[later])
        else:
            spans.append((ix[0], ix[-1]))
    spans.sort()
    closed: list[int] = []
    reach = -1
    p = 0
    for k, turn in enumerate(movable, start=1):
        end = turn.stop
        while p < len(spans) and spans[p][0] < end:
            reach = max(reach, spans[p][1])
            p += 1
        if end <= limit and reach < end:
            closed.append(k)
    return closed


def without_indices(conversation: Conversation, drop: Iterable[int]) -> Conversation:
    """``conversation`` minus the messages at ``drop``; the same tuple if none."""
    gone = set(drop)
    if not gone:
        return conversation
    return tuple(m for i, m in enumerate(conversation) if i not in gone)
