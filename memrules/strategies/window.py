"""Windows: keep the newest messages, drop the oldest.

``sliding_window`` keeps a number of messages or tokens; ``trim_to_budget``
keeps as much as the pipeline's budget allows; ``drop_turns`` drops whole
turns. All three cut a prefix of the droppable messages, and snap the cut
forward so that it never splits a tool call from its results: a window
drops whole tool exchanges or none of them, so pairing closure finds
nothing to mend.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence

import attrs

from memrules._core.conversation import is_turn_start, without_indices
from memrules._core.messages import Conversation
from memrules._counting.measure import Track
from memrules._engine.contract import Strategy, StrategyContext
from memrules.strategies._units import take_units
from memrules.strategies._util import check_positive
from memrules.strategies.registry import describe, register

__all__ = ["drop_turns", "sliding_window", "trim", "trim_to_budget"]


def trim(
    conversation: Conversation,
    context: StrategyContext,
    *,
    max_messages: int | None = None,
    max_tokens: int | None = None,
) -> Conversation:
    """Drop the oldest droppable messages until at most ``max_messages``
    remain and the conversation totals at most ``max_tokens`` (as one
    request: what the counter adds per request counts too), keeping as many
    of the newest as fit; the same tuple when it fits already.

    Pinned messages (the survivors, and the calls the latest user message
    answers) and every message of a tool exchange that holds one are never
    dropped; they count toward both limits. When they alone exceed a limit,
    everything else goes. The cut is a prefix of the droppable messages,
    moved forward until no tool call is on one side of it and its result on
    the other.

    Cost: on the measure's remembered prefix sums and tool pairs (see
    `memrules._counting.measure`), a binary search for the cut and a look at the
    pairs that reach past it; then the kept messages are copied. Nothing
    here walks the history.
    """
    n = len(conversation)
    if max_messages is not None and max_tokens is None and n <= max_messages:
        return conversation
    track = context.measure.track(conversation)
    if (max_messages is None or n <= max_messages) and (
        max_tokens is None or track.total <= max_tokens
    ):
        return conversation

    held = track.held()
    sums = track.sums
    if context.user_first and track.leads_with_user:
        room = None if max_tokens is None else max_tokens - track.per_request
        held = _with_lead(conversation, held, sums, room)
    droppable = n - len(held)

    def position(k: int) -> int:
        """The index of the ``k``-th droppable message (``n`` past the last)."""
        x = k
        for h in held:
            if h > x:
                break
            x += 1
        return min(x, n)

    cut = 0
    if max_messages is not None:
        cut = max(cut, n - max_messages)
    if max_tokens is not None:
        need = sums[n] + track.per_request - max_tokens  # droppable tokens that must go
        cut = max(cut, _token_cut(sums, held, need, n))
    cut = min(cut, droppable)
    if 0 < cut < droppable:
        cut = _snap(track, held, cut, droppable, position)
    if cut == 0:
        return conversation
    if cut == droppable:
        return tuple(conversation[i] for i in held)
    first_kept = position(cut)
    head = [conversation[i] for i in held if i < first_kept]
    return (*head, *conversation[first_kept:])


def _with_lead(
    conversation: Conversation,
    held: tuple[int, ...],
    sums: Sequence[int],
    room: int | None,
) -> tuple[int, ...]:
    """``held`` and the user message that leads the output under
    ``user_first`` when the first non-system held message is not a user
    message (see `enforce`).

    The interpreter's choice is the latest turn start before it, else the
    latest user message before it. When that one and ``held`` exceed
    ``room`` (the tokens the messages may take), the latest turn start
    before it that fits with ``held`` leads instead: the window then stays
    within its budget whenever any user message can lead the held ones
    within it. Counting the lead here keeps the window within the budget
    with it."""
    first = next((h for h in held if conversation[h].role != "system"), None)
    if first is None or conversation[first].role == "user":
        return held
    lead = None
    for i in range(first - 1, -1, -1):
        m = conversation[i]
        if m.role == "user":
            if is_turn_start(m):
                lead = i
                break
            if lead is None:
                lead = i
    if lead is None:
        return held
    if room is not None and is_turn_start(conversation[lead]):
        left = room - sum(sums[h + 1] - sums[h] for h in held)
        if sums[lead + 1] - sums[lead] > left:
            fits = (
                i
                for i in range(lead - 1, -1, -1)
                if sums[i + 1] - sums[i] <= left and is_turn_start(conversation[i])
            )
            lead = next(fits, lead)
    if lead in held:
        return held
    return tuple(sorted((*held, lead)))


def _token_cut(sums: Sequence[int], held: tuple[int, ...], need: int, n: int) -> int:
    """The fewest droppable messages, from the front, whose tokens reach
    ``need``: a binary search on the prefix sums within each stretch
    between held messages (the held ones before it are subtracted)."""
    if need <= 0:
        return 0
    held_tokens = 0
    lower = 0
    for k, upper in enumerate((*held, n)):
        if sums[upper] - held_tokens >= need:
            return bisect.bisect_left(sums, need + held_tokens, lower, upper + 1) - k
        if upper < n:
            held_tokens += sums[upper + 1] - sums[upper]
            lower = upper + 1
    return n - len(held)


def _snap(
    track: Track,
    held: tuple[int, ...],
    cut: int,
    droppable: int,
    position: Callable[[int], int],
) -> int:
    """The first cut at or after ``cut`` with no tool pair on both sides of it.

    Cutting before message ``x`` splits a pair ``(lo, hi)`` whose ``lo`` is
    droppable when ``lo < x <= hi`` (the measure finds those without
    walking the pairs); the cut moves past the farthest such ``hi`` until
    none is left.
    """
    kept = set(held)
    while cut < droppable:
        x = position(cut)
        reach = max((hi for lo, hi in track.crossing(x) if lo not in kept), default=-1)
        if reach < x:
            return cut
        cut = reach + 1 - bisect.bisect_right(held, reach)
    return droppable


@attrs.frozen(slots=True, repr=False)
class _SlidingWindow:
    keep_messages: int | None
    keep_tokens: int | None

    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        return trim(
            conversation, context, max_messages=self.keep_messages, max_tokens=self.keep_tokens
        )

    def __repr__(self) -> str:
        return describe("sliding_window", self)


@register("sliding_window")
def sliding_window(*, keep_messages: int | None = None, keep_tokens: int | None = None) -> Strategy:
    """Drop messages from the front until ``keep_messages`` remain (40 when
    neither limit is given) and, with ``keep_tokens``, until they total at most
    that many tokens. The survivors count toward both limits.

    Keeps: survivors untouched, order, tool exchanges whole.
    """
    if keep_messages is None and keep_tokens is None:
        keep_messages = 40
    if keep_messages is not None:
        check_positive("keep_messages", keep_messages, minimum=0)
    if keep_tokens is not None:
        check_positive("keep_tokens", keep_tokens)
    return _SlidingWindow(keep_messages, keep_tokens)


@attrs.frozen(slots=True, repr=False)
class _TrimToBudget:
    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        budget = context.budget
        if budget.kind == "messages":
            return trim(conversation, context, max_messages=budget.limit)
        if budget.kind == "tokens":
            return trim(conversation, context, max_tokens=budget.limit - 1)
        return conversation

    def __repr__(self) -> str:
        return "trim_to_budget()"


@register("trim_to_budget")
def trim_to_budget() -> Strategy:
    """Drop the oldest messages until the conversation is under the
    pipeline's budget, keeping as many of the newest as fit. Does nothing
    without a budget (``compress``).

    Keeps: survivors untouched, order, tool exchanges whole.
    """
    return _TrimToBudget()


@attrs.frozen(slots=True, repr=False)
class _DropTurns:
    keep_exchanges: int

    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        dropped = take_units(
            conversation,
            context,
            units=context.offload_turns,
            keep_exchanges=self.keep_exchanges,
            fill=False,
        )
        return without_indices(conversation, (i for unit in dropped for i in unit))

    def __repr__(self) -> str:
        return describe("drop_turns", self)


@register("drop_turns")
def drop_turns(*, keep_exchanges: int = 3) -> Strategy:
    """Remove the oldest ``offload_turns`` units (a config setting) per pass:
    turns before the latest one, then completed tool exchanges of the latest
    turn older than the newest ``keep_exchanges`` (units as ``offload``
    takes them, see `Units`); never a
    survivor's exchange, never a pending call, never half an exchange.

    Keeps: survivors untouched, order, tool exchanges whole.
    """
    check_positive("keep_exchanges", keep_exchanges, minimum=0)
    return _DropTurns(keep_exchanges)
