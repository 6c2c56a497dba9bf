"""Dropping injected observations: system messages after the first."""

from __future__ import annotations

import attrs

from memrules._core.messages import Conversation, Message
from memrules._engine.contract import Strategy, StrategyContext
from memrules._engine.incremental import facts
from memrules.strategies._util import check_positive
from memrules.strategies.registry import describe, register

__all__ = ["drop_observations"]


def _is_system(message: Message) -> bool:
    return message.role == "system"


@attrs.frozen(slots=True, repr=False)
class _DropObservations:
    max_drop: int

    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        # which messages are system ones, worked out once per message (the
        # interpreter keeps the facts of the conversation's last input)
        system = facts(_is_system, conversation, context.measure)
        try:
            first = system.index(True)
        except ValueError:
            return conversation
        marker = context.warning_marker
        pinned = context.survivors(conversation)
        drop: list[int] = []
        i = first
        while len(drop) < self.max_drop:
            try:
                i = system.index(True, i + 1)
            except ValueError:
                break
            if i not in pinned and not conversation[i].text.startswith(marker):
                drop.append(i)
        if not drop:
            return conversation
        kept: list[Message] = []
        start = 0
        for i in drop:  # ascending: the slices between them, copied in C
            kept.extend(conversation[start:i])
            start = i + 1
        kept.extend(conversation[start:])
        return tuple(kept)

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
