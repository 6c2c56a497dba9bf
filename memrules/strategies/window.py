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
import itertools
import operator

import attrs

from memrules._conversation import (
    held_indices,
    without_indices,
)
from memrules._messages import Conversation
from memrules._typing import Strategy, StrategyContext
from memrules.strategies._units import take_units
from memrules.strategies._util import check_positive
from memrules.strategies.registry import describe, register

__all__ = ["drop_turns", "sliding_window", "trim", "trim_to_budget"]


def _pairs(conversation: Conversation, context: StrategyContext) -> list[tuple[int, int]]:
    """Every pair of messages tied by a call and its result, as (lower,
    higher) indices sorted by the lower."""
    pairs = [(a, b) if a < b else (b, a) for a, b in context.links(conversation).pairs]
    pairs.sort()
    return pairs


def trim(
    conversation: Conversation,
    context: StrategyContext,
    *,
    max_messages: int | None = None,
    max_tokens: int | None = None,
) -> Conversation:
    """Drop the oldest droppable messages until at most ``max_messages``
    remain and their tokens total at most ``max_tokens``, keeping as many of
    the newest as fit; the same tuple when it fits already.

    Pinned messages (the survivors, and the calls the latest user message
    answers) and every message of a tool exchange that holds one are never
    dropped; they count toward both limits. When they alone exceed a limit,
    everything else goes. The cut is a prefix of the droppable messages,
    moved forward until no tool call is on one side of it and its result on
    the other. Linear in the conversation, on cached counts.
    """
    n = len(conversation)
    if max_messages is not None and max_tokens is None and n <= max_messages:
        return conversation
    if max_tokens is not None:  # what the request pays once leaves less for messages
        max_tokens -= context.measure.per_request
    sizes = context.sizes(conversation)
    if (max_messages is None or n <= max_messages) and (
        max_tokens is None or sum(sizes) <= max_tokens
    ):
        return conversation

    pairs = _pairs(conversation, context)
    pinned = held_indices(conversation, context.links(conversation))
    if pairs:
        pairs = [(a, b) for a, b in pairs if a not in pinned]
    order = [i for i in range(n) if i not in pinned]

    cut = 0
    if max_messages is not None:
        cut = max(cut, n - max_messages)
    if max_tokens is not None:
        fixed = sum(sizes[i] for i in pinned)
        prefix = list(itertools.accumulate(map(sizes.__getitem__, order), initial=0))
        cut = max(cut, bisect.bisect_left(prefix, fixed + prefix[-1] - max_tokens))
    cut = min(cut, len(order))
    if pairs and 0 < cut < len(order):
        cut = _snap(order, pairs, cut)
    if cut == 0:
        return conversation
    if cut == len(order):
        return tuple(conversation[i] for i in sorted(pinned))
    first_kept = order[cut]
    held = [conversation[i] for i in sorted(pinned) if i < first_kept]
    return (*held, *conversation[first_kept:])


def _snap(order: list[int], pairs: list[tuple[int, int]], cut: int) -> int:
    """The first cut at or after ``cut`` with no pair on both sides of it.

    Cutting before ``order[k]`` splits a pair ``(lo, hi)`` when
    ``lo < order[k] <= hi``; ``reach[p]`` is the highest ``hi`` among the
    first ``p`` pairs (by ``lo``), so each try is two binary searches.
    """
    lows = list(map(operator.itemgetter(0), pairs))
    reach = list(itertools.accumulate(map(operator.itemgetter(1), pairs), max))
    while cut < len(order):
        first_kept = order[cut]
        p = bisect.bisect_left(lows, first_kept)
        if p == 0 or reach[p - 1] < first_kept:
            return cut
        cut = bisect.bisect_right(order, reach[p - 1])
    return cut


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
    takes them, see :class:`memrules._conversation.Units`); never a
    survivor's exchange, never a pending call, never half an exchange.

    Keeps: survivors untouched, order, tool exchanges whole.
    """
    check_positive("keep_exchanges", keep_exchanges, minimum=0)
    return _DropTurns(keep_exchanges)
