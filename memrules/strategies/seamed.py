"""Strategies that move old turns out through a seam: offload and summarize.

Each does nothing when its seam is absent. A seam failure raises
:class:`~memrules._errors.StrategyError`, so the interpreter records it and
keeps the conversation as it was: offloading is all or nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import attrs

from memrules._conversation import without_indices
from memrules._errors import StrategyError
from memrules._messages import Conversation, Message, Text
from memrules._typing import Outcome, Strategy, StrategyContext, StrategyResult
from memrules.seams import SeamCall
from memrules.strategies._units import take_units
from memrules.strategies._util import check_positive
from memrules.strategies.registry import describe, register

__all__ = ["SUMMARY_PREFIX", "offload", "summarize"]

SUMMARY_PREFIX = "[memrules summary]"
T = TypeVar("T")


def _indices(block: tuple[range, ...]) -> list[int]:
    return [i for unit in block for i in unit]


def _call(
    seam: str, operation: str, batch: Conversation, send: Callable[[Conversation], T]
) -> tuple[T, SeamCall]:
    """``send(batch)`` through a seam, and the record of it for the report.
    A failure raises :class:`StrategyError` carrying that record, so the
    interpreter keeps the conversation as it was."""
    request = {"messages": len(batch)}
    try:
        response = send(batch)
    except Exception as exc:
        call = SeamCall(seam=seam, operation=operation, request=request, error=str(exc))
        msg = f"{seam} failed, {len(batch)} messages stay: {exc}"
        raise StrategyError(msg, seam_calls=(call,)) from exc
    return response, SeamCall(seam=seam, operation=operation, request=request, response=response)


@attrs.frozen(slots=True, repr=False)
class _Offload:
    turns: int
    keep_exchanges: int

    def __call__(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        store = context.seams.store
        if store is None:
            return conversation
        moved = take_units(
            conversation, context, units=self.turns, keep_exchanges=self.keep_exchanges, fill=True
        )
        if not moved:
            return conversation
        gone = _indices(moved)
        batch = tuple(conversation[i] for i in gone)
        _, call = _call("store", "add", batch, store.add)
        return Outcome(
            messages=without_indices(conversation, gone),
            note=f"offloaded {len(batch)} messages ({len(moved)} units)",
            seam_calls=(call,),
        )

    def __repr__(self) -> str:
        return describe("offload", self)


@register("offload")
def offload(*, turns: int = 10, keep_exchanges: int = 3) -> Strategy:
    """Move the oldest ``turns`` units into the vector store, or more when
    the budget needs more, all or nothing: when the store fails they stay
    where they were. Without a store it does nothing.

    A unit is a turn before the latest one or, inside the latest turn, a
    completed tool exchange older than the newest ``keep_exchanges`` (see
    :class:`memrules._conversation.Units`), so an agent loop that runs many
    tool rounds after one instruction offloads its old rounds. Never the
    latest user message, never a pending call, never half an exchange:
    everything that leaves the conversation is in the store.

    Keeps: survivors untouched (their exchanges never move), order, tool
    exchanges whole.
    """
    check_positive("turns", turns)
    check_positive("keep_exchanges", keep_exchanges, minimum=0)
    return _Offload(turns, keep_exchanges)


@attrs.frozen(slots=True, repr=False)
class _Summarize:
    turns: int
    keep_exchanges: int

    def __call__(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        summarizer = context.seams.summarizer
        if summarizer is None:
            return conversation
        moved = take_units(
            conversation, context, units=self.turns, keep_exchanges=self.keep_exchanges, fill=True
        )
        if not moved:
            return conversation
        gone = _indices(moved)
        batch = tuple(conversation[i] for i in gone)
        text, call = _call("summarizer", "summarize", batch, summarizer.summarize)
        summary = Message(
            role="user",
            parts=(
                Text(
                    text=f"{SUMMARY_PREFIX} A summary of {len(moved)} earlier turns or "
                    f"tool exchanges ({len(batch)} messages):\n{text}"
                ),
            ),
            metadata={"memrules": {"summary_of": len(batch)}},
        )
        first = gone[0]
        rest = without_indices(conversation, gone)
        return Outcome(
            messages=(*rest[:first], summary, *rest[first:]),
            note=f"summarized {len(batch)} messages ({len(moved)} units)",
            seam_calls=(call,),
        )

    def __repr__(self) -> str:
        return describe("summarize", self)


@register("summarize")
def summarize(*, turns: int = 10, keep_exchanges: int = 3) -> Strategy:
    """Replace the oldest ``turns`` units (or more when the budget needs
    more) with one user message from the summarizer that says it is a
    summary and of how much, where the first of them stood. Without a
    summarizer it does nothing. Units are chosen as ``offload`` chooses
    them, never splitting a tool exchange, so all that goes is summarized.

    Keeps: survivors untouched (their exchanges are never summarized),
    order, tool exchanges whole.
    """
    check_positive("turns", turns)
    check_positive("keep_exchanges", keep_exchanges, minimum=0)
    return _Summarize(turns, keep_exchanges)
