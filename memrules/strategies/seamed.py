"""Strategies that move old turns out through a seam: offload and summarize.

Each does nothing when its seam is absent. A seam failure raises
:class:`~memrules._errors.StrategyError`, so the interpreter records it and
keeps the conversation as it was: offloading is all or nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import attrs

from memrules._conversation import droppable_turns
from memrules._errors import StrategyError
from memrules._messages import Conversation, Message, Text
from memrules._typing import Outcome, Strategy, StrategyContext, StrategyResult
from memrules.seams import SeamCall
from memrules.strategies._util import check_positive
from memrules.strategies.registry import describe, register

__all__ = ["SUMMARY_PREFIX", "offload", "summarize"]

SUMMARY_PREFIX = "[memrules summary]"
T = TypeVar("T")


def _oldest(conversation: Conversation, turns: int) -> tuple[range, ...]:
    return droppable_turns(conversation, turns)


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

    def __call__(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        store = context.seams.store
        if store is None:
            return conversation
        moved = _oldest(conversation, self.turns)
        if not moved:
            return conversation
        first, end = moved[0].start, moved[-1].stop
        batch = conversation[first:end]
        _, call = _call("store", "add", batch, store.add)
        return Outcome(
            messages=conversation[:first] + conversation[end:],
            note=f"offloaded {len(batch)} messages",
            seam_calls=(call,),
        )

    def __repr__(self) -> str:
        return describe("offload", self)


@register("offload")
def offload(*, turns: int = 10) -> Strategy:
    """Move the oldest ``turns`` turns into the vector store, all or nothing:
    when the store fails the turns stay where they were. Without a store it
    does nothing. A tool exchange is never split: when a call is answered in
    the next turn, the turns move together (see
    :func:`memrules._conversation.droppable_turns`), so everything that
    leaves the conversation is in the store.

    Keeps: survivors untouched (their turns never move), order, tool
    exchanges whole.
    """
    check_positive("turns", turns)
    return _Offload(turns)


@attrs.frozen(slots=True, repr=False)
class _Summarize:
    turns: int

    def __call__(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        summarizer = context.seams.summarizer
        if summarizer is None:
            return conversation
        moved = _oldest(conversation, self.turns)
        if not moved:
            return conversation
        first, end = moved[0].start, moved[-1].stop
        batch = conversation[first:end]
        text, call = _call("summarizer", "summarize", batch, summarizer.summarize)
        summary = Message(
            role="user",
            parts=(
                Text(
                    text=f"{SUMMARY_PREFIX} A summary of {len(moved)} earlier turns "
                    f"({len(batch)} messages):\n{text}"
                ),
            ),
            metadata={"memrules": {"summary_of": len(batch)}},
        )
        return Outcome(
            messages=(*conversation[:first], summary, *conversation[end:]),
            note=f"summarized {len(batch)} messages",
            seam_calls=(call,),
        )

    def __repr__(self) -> str:
        return describe("summarize", self)


@register("summarize")
def summarize(*, turns: int = 10) -> Strategy:
    """Replace the oldest ``turns`` turns with one user message from the
    summarizer that says it is a summary and of how much. Without a
    summarizer it does nothing. Turns are chosen as ``offload`` chooses
    them, never splitting a tool exchange, so all that goes is summarized.

    Keeps: survivors untouched (their turns are never summarized), order,
    tool exchanges whole.
    """
    check_positive("turns", turns)
    return _Summarize(turns)
