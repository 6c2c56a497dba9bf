"""Choosing the block of units that ``offload``, ``summarize`` and
``drop_turns`` move (see :class:`memrules._core.conversation.Units`)."""

from __future__ import annotations

from collections.abc import Sequence

from memrules._core.conversation import movable_units
from memrules._core.messages import Conversation
from memrules._engine.contract import StrategyContext

__all__ = ["take_units"]


def take_units(
    conversation: Conversation,
    context: StrategyContext,
    *,
    units: int,
    keep_exchanges: int,
    fill: bool,
) -> tuple[range, ...]:
    """The oldest block of about ``units`` units to move out, never
    splitting a tool exchange. With ``fill`` and a budget, the block is
    larger when that is what it takes to bring the conversation under the
    budget: a store or a summary then holds what a later window would
    otherwise delete."""
    track = context.measure.track(conversation)
    found = movable_units(
        conversation, track.links(), keep_exchanges=keep_exchanges, held=frozenset(track.held())
    )
    if not found.units:
        return ()
    target = units
    if fill and not context.budget.is_unlimited:
        target = max(units, _needed(conversation, context, found.units))
    return found.pick(target)


def _needed(conversation: Conversation, context: StrategyContext, units: Sequence[range]) -> int:
    """How many of the oldest ``units`` must go for the rest to fit the budget
    (all of them when even that is not enough)."""
    sizes = context.sizes(conversation)
    messages, tokens = len(conversation), context.measure.total(conversation)
    for k, unit in enumerate(units, start=1):
        messages -= len(unit)
        tokens -= sum(sizes[unit.start : unit.stop])
        if not context.budget.is_over(messages=messages, tokens=tokens):
            return k
    return len(units)
