"""Choosing the block of units that ``offload``, ``summarize`` and
``drop_turns`` move (see :class:`memrules._core.conversation.Units`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memrules._core.conversation import movable_units
from memrules._core.messages import Conversation, Message
from memrules._engine.contract import StrategyContext

__all__ = ["Replacement", "take_units"]

Replacement = Callable[[tuple[range, ...]], Message]
"""The message that will stand in place of a block of units (a summary's
header, without the text the summarizer has yet to write): it counts
toward the budget the block is chosen for."""


def take_units(
    conversation: Conversation,
    context: StrategyContext,
    *,
    units: int,
    keep_exchanges: int,
    fill: bool,
    replacement: Replacement | None = None,
    free: Callable[[range], bool] | None = None,
) -> tuple[range, ...]:
    """The oldest block of about ``units`` units to move out, never
    splitting a tool exchange. With ``fill`` and a budget, the block is
    larger when that is what it takes to bring the conversation under the
    budget: a store or a summary then holds what a later window would
    otherwise delete. With ``replacement``, the block is chosen for the
    conversation with that message in its place (one message more, and its
    tokens). Units at the head of the block for which ``free`` holds (what
    an earlier summary already replaced) do not count toward ``units``."""
    track = context.measure.track(conversation)
    found = movable_units(
        conversation, track.links(), keep_exchanges=keep_exchanges, held=frozenset(track.held())
    )
    if not found.units:
        return ()
    target = units
    if free is not None:
        target += next((k for k, u in enumerate(found.units) if not free(u)), len(found.units))
    if fill and not context.budget.is_unlimited:
        target = max(target, _needed(conversation, context, found.units, replacement))
    return found.pick(target)


def _needed(
    conversation: Conversation,
    context: StrategyContext,
    units: Sequence[range],
    replacement: Replacement | None,
) -> int:
    """How many of the oldest ``units`` must go for the rest (and the
    ``replacement`` of those gone) to fit the budget (all of them when even
    that is not enough)."""
    sizes = context.sizes(conversation)
    added = 0 if replacement is None else 1
    messages, tokens = len(conversation) + added, context.measure.total(conversation)
    for k, unit in enumerate(units, start=1):
        messages -= len(unit)
        tokens -= sum(sizes[unit.start : unit.stop])
        if context.budget.is_over(messages=messages, tokens=tokens):
            continue  # over even before the replacement's tokens: no need to count them
        if replacement is None:
            return k
        cost = context.counter.count(replacement(tuple(units[:k])))
        if not context.budget.is_over(messages=messages, tokens=tokens + cost):
            return k
    return len(units)
