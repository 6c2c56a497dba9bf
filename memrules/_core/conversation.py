"""Reading the structure of a conversation: survivors, turns, tool pairs.

Plain functions over message tuples, shared by strategies and the interpreter.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable

import attrs

from memrules._core.messages import Conversation, Message, ToolResult
from memrules._core.survivors import DEFAULT_SURVIVORS, SurvivorRule
from memrules._core.survivors import survivors as pick_survivors

__all__ = [
    "LinkState",
    "ToolLinks",
    "Units",
    "extends",
    "first_system_index",
    "held_indices",
    "is_turn_start",
    "last_user_index",
    "latest_turn_start",
    "link_state",
    "movable_units",
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


def survivor_indices(
    conversation: Conversation, rule: SurvivorRule = DEFAULT_SURVIVORS
) -> frozenset[int]:
    """The messages no strategy may remove or alter: the first system
    message, the task, the question, the most recent user message and the
    pinned ones (see `memrules._core.survivors`)."""
    return pick_survivors(conversation, rule).indices


def pinned_indices(
    conversation: Conversation, rule: SurvivorRule = DEFAULT_SURVIVORS
) -> frozenset[int]:
    """Survivors, plus the messages holding the tool calls that the survivors'
    tool results answer: dropping those would strip the most recent user
    message of its results (Anthropic's ``tool_result`` blocks), so the
    built-in strategies keep them."""
    survivors = survivor_indices(conversation, rule)
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


def latest_turn_start(conversation: Conversation) -> int | None:
    """Index of the user message that opens the latest turn (see
    `is_turn_start`), or None. In an agent loop it is the question the
    tool rounds after it work on, even where a later user message carries
    only their results."""
    for i in range(len(conversation) - 1, -1, -1):
        if is_turn_start(conversation[i]):
            return i
    return None


def turns(conversation: Conversation) -> tuple[range, ...]:
    """The turns, as index ranges. A turn runs from a user message (see
    `is_turn_start`) up to the next one; messages before the first user
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
class LinkState:
    """`ToolLinks` of a conversation of ``size`` messages, with what
    it takes to extend them to a conversation that appends to it. Immutable:
    extending makes new maps and leaves this one as it was."""

    size: int
    links: ToolLinks
    call_at: dict[str, int]  # call id → first message holding it
    unmatched: dict[str, tuple[int, ...]]  # result id → messages holding it, no call yet
    calls: int


_EMPTY_STATE = LinkState(0, _NO_LINKS, {}, {}, 0)


def extends(longer: Conversation, shorter: Conversation) -> bool:
    """Whether ``longer`` starts with the very message objects of ``shorter``."""
    return len(longer) >= len(shorter) and all(map(operator.is_, shorter, longer))


def link_state(conversation: Conversation, prefix: LinkState | None = None) -> LinkState:
    """The `LinkState` of ``conversation``, extending ``prefix`` (the
    state of its first ``prefix.size`` messages) when given. Pure."""
    base = _EMPTY_STATE if prefix is None else prefix
    start = base.size
    call_at = dict(base.call_at)
    unmatched = dict(base.unmatched)
    pairs = list(base.links.pairs)
    calls = base.calls
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
                unmatched[r] = (*unmatched.get(r, ()), i)
            elif j != i:
                pairs.append((j, i))
    links = (
        ToolLinks(pairs=tuple(pairs), unique_calls=calls == len(call_at))
        if pairs or calls
        else _NO_LINKS
    )
    return LinkState(len(conversation), links, call_at, unmatched, calls)


def tool_links(conversation: Conversation) -> ToolLinks:
    """The `ToolLinks` of ``conversation``, computed afresh (a
    pipeline's `Measure` remembers and extends them)."""
    return link_state(conversation).links


def held_indices(
    conversation: Conversation, links: ToolLinks, rule: SurvivorRule = DEFAULT_SURVIVORS
) -> frozenset[int]:
    """Pinned messages, plus every message tied to one by tool ``links``,
    transitively: the survivors' whole tool exchanges. Dropping any of them
    would make pairing closure strip a survivor (a parallel call whose
    sibling's result goes drops the whole call message, and with it the
    results the latest user message carries)."""
    pinned = pinned_indices(conversation, rule)
    if not links.pairs or not any(conversation[i].is_tool_carrier for i in pinned):
        return pinned
    linked: dict[int, list[int]] = {}
    for a, b in links.pairs:
        linked.setdefault(a, []).append(b)
        linked.setdefault(b, []).append(a)
    held = set(pinned)
    todo = [i for i in pinned if i in linked]
    while todo:
        for j in linked[todo.pop()]:
            if j not in held:
                held.add(j)
                todo.append(j)
    return frozenset(held)


@attrs.frozen(slots=True)
class Units:
    """What the turn-moving strategies (``offload``, ``summarize``,
    ``drop_turns``) may take, oldest first.

    A unit is a whole turn before the latest turn, or, inside the latest
    turn (an agent loop runs hundreds of tool rounds after one instruction),
    a tool exchange: an assistant message and everything up to the next
    assistant message (the results of its calls, observations). A turn
    before the latest that holds a survivor (the task opens the first turn
    of an agent loop whose harness added user messages since) gives its
    exchanges as units instead, the survivor staying where it is. The
    units stop before the first one that holds a survivor or part of a
    survivor's tool exchange, or a call nobody answered (a pending call),
    and the newest ``keep_exchanges`` completed exchanges (whose calls all
    have their results) stay, with everything after them.

    ``closed`` lists every ``k`` for which the first ``k`` units hold every
    message that a tool id ties to one of theirs: moving such a block never
    splits a call from its result (what pairing closure would then delete
    is neither stored nor summarized).
    """

    units: tuple[range, ...]
    closed: tuple[int, ...]

    def pick(self, target: int) -> tuple[range, ...]:
        """The block to move: the most units up to ``target`` that form a
        closed block; when none does, the fewest beyond it; else none."""
        fits = [k for k in self.closed if k <= target]
        if fits:
            return self.units[: fits[-1]]
        longer = [k for k in self.closed if k > target]
        return self.units[: longer[0]] if longer else ()


def _exchanges(conversation: Conversation, turn: range) -> list[range]:
    """The latest turn's exchanges: from each assistant message up to the next."""
    starts = [i for i in turn if conversation[i].role == "assistant"]
    if not starts:
        return []
    ends = [*starts[1:], turn.stop]
    return [range(a, b) for a, b in zip(starts, ends, strict=True)]


def movable_units(
    conversation: Conversation,
    links: ToolLinks,
    *,
    keep_exchanges: int,
    held: frozenset[int] | None = None,
) -> Units:
    """The `Units` of ``conversation`` (see there); ``held`` are the
    messages that must stay (`held_indices` under the default rule
    when not given)."""
    all_turns = turns(conversation)
    if not all_turns:
        return Units((), ())
    if held is None:
        held = held_indices(conversation, links)
    units: list[range] = []
    answered = {r for m in conversation if m.result_ids for r in m.result_ids}
    for turn in all_turns[:-1]:
        if not any(i in held for i in turn):
            units.append(turn)
            continue
        for exchange in _exchanges(conversation, turn):
            ids = [c for i in exchange for c in conversation[i].call_ids]
            if any(i in held for i in exchange) or not answered.issuperset(ids):
                return _closed(conversation, units)
            units.append(exchange)
    exchanges = _exchanges(conversation, all_turns[-1])
    calls = [[c for i in x for c in conversation[i].call_ids] for x in exchanges]
    calling = [k for k, ids in enumerate(calls) if ids and answered.issuperset(ids)]
    if keep_exchanges:
        exchanges = exchanges[: calling[-keep_exchanges]] if len(calling) >= keep_exchanges else []
    for exchange, ids in zip(exchanges, calls, strict=False):
        if any(i in held for i in exchange) or not answered.issuperset(ids):
            break
        units.append(exchange)
    return _closed(conversation, units)


def _closed(conversation: Conversation, units: list[range]) -> Units:
    """``units`` with the ``k`` for which the first ``k`` form a closed block.

    Block ``k`` holds the messages of units ``0..k-1``. A pair of messages
    tied by a tool id splits it when exactly one of them is inside: for a
    pair with both messages in units ``u < v``, every ``k`` in ``(u, v]``;
    for a pair with one message in unit ``u`` and the other in no unit,
    every ``k > u``.
    """
    if not units:
        return Units((), ())
    unit_of: dict[int, int] = {}
    for u, unit in enumerate(units):
        for i in unit:
            unit_of[i] = u
    count = len(units)
    bad = [0] * (count + 2)  # difference array over k = 1..count
    limit = count
    for a, b in _ties(conversation):
        ua, ub = unit_of.get(a), unit_of.get(b)
        if ua is None and ub is None:
            continue
        if ua is None or ub is None:
            inside = ub if ua is None else ua
            assert inside is not None
            limit = min(limit, inside)
            continue
        lo, hi = min(ua, ub), max(ua, ub)
        if lo != hi:
            bad[lo + 1] += 1
            bad[hi + 1] -= 1
    closed: list[int] = []
    running = 0
    for k in range(1, limit + 1):
        running += bad[k]
        if running == 0:
            closed.append(k)
    return Units(tuple(units), tuple(closed))


def _ties(conversation: Conversation) -> list[tuple[int, int]]:
    """Pairs of messages tied by a tool id: every message holding an id (as
    a call or a result) with the first message holding it."""
    first: dict[str, int] = {}
    ties: list[tuple[int, int]] = []
    for i, m in itertools.compress(enumerate(conversation), map(_CARRIES, conversation)):
        for key in {*m.call_ids, *m.result_ids}:
            j = first.setdefault(key, i)
            if j != i:
                ties.append((j, i))
    return ties


def without_indices(conversation: Conversation, drop: Iterable[int]) -> Conversation:
    """``conversation`` minus the messages at ``drop``; the same tuple if none."""
    gone = set(drop)
    if not gone:
        return conversation
    return tuple(m for i, m in enumerate(conversation) if i not in gone)
