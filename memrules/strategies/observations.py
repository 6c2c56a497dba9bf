"""Dropping injected observations: system messages after the first."""

from __future__ import annotations

import attrs

from memrules._core.conversation import first_system_index
from memrules._core.messages import Conversation
from memrules._engine.contract import Strategy, StrategyContext
from memrules.strategies._util import check_positive
from memrules.strategies.registry import describe, register

__all__ = ["drop_observations"]


@attrs.frozen(slots=True, repr=False)
class _DropObservations:
    max_drop: int

    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        first = first_system_index(conversation)
        if first is None:
            return conversation
        marker = context.warning_marker
        pinned = context.survivors(conversation)
        drop: list[int] = []
        for i in range(first + 1, len(conversation)):
            m = conversation[i]
            if m.role == "system" and i not in pinned and not m.text.startswith(marker):
                drop.append(i)
                if len(drop) == self.max_drop:
                    break
        if not drop:
            return conversation
        gone = set(drop)
        return tuple(m for i, m in enumerate(conversation) if i not in gone)

    def __repr__(self) -> str:
        return describe("drop_observations", self)


@register("drop_observations")
def drop_observations(*, max_drop: int = 3) -> Strategy:
    """Remove up to ``max_drop`` system messages after the first, oldest
    first: observations injected into the conversation. Never the first
    system message, never a pinned one, never the context warning (the
    message that starts with the warning marker).

    Keeps: survivors untouched, order.
    """
    check_positive("max_drop", max_drop)
    return _DropObservations(max_drop)
