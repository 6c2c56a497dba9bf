"""Choosing the block of units that ``offload``, ``summarize`` and
``drop_turns`` move (see `Units`)."""

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
    stays: Callable[[range], bool] | None = None,
) -> tuple[range, ...]:
    """The oldest block of about ``units`` units to move out, never
    splitting a tool exchange. With ``fill`` and a budget, the block is
    larger when that is what it takes to bring the conversation under the
    budget: a store or a summary then holds what a later window would
    otherwise delete. With ``replacement``, the block is chosen for the
    conversation with that message in its place (one message more, and its
    tokens). Units at the head of the block for which ``free`` holds (what
    an earlier summary already replaced) do not count toward ``units``;
    nor do those for which ``stays`` holds, which the caller then leaves
    where they are (a frozen summary and what precedes it): they are
    counted as staying."""
    track = context.measure.track(conversation)
    found = movable_units(
        conversation, track.links(), keep_exchanges=keep_exchanges, held=frozenset(track.held())
    )
    if not found.units:
        return ()
    target = units
    for skipped in (free, stays):
        if skipped is not None:
            target += next(
                (k for k, u in enumerate(found.units) if not skipped(u)), len(found.units)
            )
    if fill and not context.budget.is_unlimited:
        needed = _needed(conversation, context, found.units, replacement, stays)
        target = max(target, needed)
    return found.pick(target)


def _needed(
    conversation: Conversation,
    context: StrategyContext,
    units: Sequence[range],
    replacement: Replacement | None,
    stays: Callable[[range], bool] | None = None,
) -> int:
    """How many of the oldest ``units`` must go for the rest (and the
    ``replacement`` of those gone) to fit the budget (all of them when even
    that is not enough); the units for which ``stays`` holds do not go."""
    sizes = context.sizes(conversation)
    added = 0 if replacement is None else 1
    messages, tokens = len(conversation) + added, context.measure.total(conversation)
    first = 0  # the first unit that goes
    for k, unit in enumerate(units, start=1):
        if stays is not None and first == k - 1 and stays(unit):
            first = k
            continue
        messages -= len(unit)
        tokens -= sum(sizes[unit.start : unit.stop])
        if context.budget.is_over(messages=messages, tokens=tokens):
            continue  # over even before the replacement's tokens: no need to count them
        if replacement is None:
            return k
        cost = context.counter.count(replacement(tuple(units[first:k])))
        if not context.budget.is_over(messages=messages, tokens=tokens + cost):
            return k
    return len(units)
