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

import attrs

from memrules.conversation import droppable_turns, pinned_indices, without_indices
from memrules.messages import Conversation
from memrules.strategies._util import check_positive
from memrules.strategies.registry import describe, register
from memrules.typing import Strategy, StrategyContext

__all__ = ["drop_turns", "sliding_window", "trim", "trim_to_budget"]


def _exchanges(conversation: Conversation) -> dict[int, int]:
    """Tool-carrying messages → a representative of their exchange (the
    messages linked by call and result ids, transitively)."""
    parent: dict[int, int] = {}

    def find(i: int) -> int:
        root = i
        while parent[root] != root:
            root = parent[root]
        while parent[i] != root:
            parent[i], i = root, parent[i]
        return root

    call_at: dict[str, int] = {}
    for i, m in enumerate(conversation):
        if m.call_ids:
            parent[i] = i
            for c in m.call_ids:
                call_at.setdefault(c, i)
    for i, m in enumerate(conversation):
        if not m.result_ids:
            continue
        parent.setdefault(i, i)
        for r in m.result_ids:
            j = call_at.get(r)
            if j is not None:
                a, b = find(i), find(j)
                if a != b:
                    parent[a] = b
    return {i: find(i) for i in parent}


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
    everything else goes. Linear in the conversation, on cached counts.
    """
    n = len(conversation)
    counts = context.counter.count
    if max_messages is not None and max_tokens is None and n <= max_messages:
        return conversation
    sizes = [counts(m) for m in conversation]
    if (max_messages is None or n <= max_messages) and (
        max_tokens is None or sum(sizes) <= max_tokens
    ):
        return conversation

    exchange = _exchanges(conversation)
    pinned = set(pinned_indices(conversation))
    if exchange:
        held = {exchange[i] for i in pinned if i in exchange}
        if held:
            pinned.update(i for i, root in exchange.items() if root in held)
    order = [i for i in range(n) if i not in pinned]
    fixed = sum(sizes[i] for i in pinned)

    cut = 0
    if max_messages is not None:
        cut = max(cut, n - max_messages)
    if max_tokens is not None:
        prefix = list(itertools.accumulate((sizes[i] for i in order), initial=0))
        need = fixed + prefix[-1] - max_tokens
        cut = max(cut, bisect.bisect_left(prefix, need))
    cut = min(cut, len(order))
    if exchange and 0 < cut < len(order):
        cut = _snap(order, exchange, cut)
    return without_indices(conversation, order[:cut])


def _snap(order: list[int], exchange: dict[int, int], cut: int) -> int:
    """The first cut at or after ``cut`` that splits no tool exchange."""
    last_of: dict[int, int] = {}
    for t, i in enumerate(order):
        root = exchange.get(i)
        if root is not None:
            last_of[root] = t
    reach = -1
    for t, i in enumerate(order):
        if t >= cut and reach < t:
            return t
        root = exchange.get(i)
        reach = max(reach, t if root is None else last_of[root])
    return len(order)


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
    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        dropped = droppable_turns(conversation, context.offload_turns)
        return without_indices(conversation, (i for turn in dropped for i in turn))

    def __repr__(self) -> str:
        return "drop_turns()"


@register("drop_turns")
def drop_turns() -> Strategy:
    """Remove the oldest ``offload_turns`` turns (a config setting) per pass,
    never the latest turn nor one holding a survivor.

    Keeps: survivors untouched, order.
    """
    return _DropTurns()
