"""Clamping oversized parts to their head and tail."""

from __future__ import annotations

import itertools

import attrs

from memrules._core.messages import Conversation, Opaque, Part, Text, ToolResult, part_text
from memrules._counting.tokens import TokenCounter
from memrules._engine.contract import Strategy, StrategyContext
from memrules.strategies._util import check_positive, rewrite_parts
from memrules.strategies.registry import describe, register

__all__ = ["clamp_oversized_messages", "clamp_text"]

MIN_PART_TOKENS = 32
"""Room for the clamp marker and a little text on each side of it."""


_EDGE_SLACK = 8


def _marker(removed: int) -> str:
    return f"\n[memrules: clamped {removed} tokens]\n"


def clamp_text(text: str, limit: int, counter: TokenCounter) -> str:
    """``text`` itself when it fits ``limit`` tokens; otherwise its head and
    tail joined by a marker that says how much was cut, fitting the limit."""
    total = counter.count_text(text)
    if total <= limit:
        return text
    room = limit - counter.count_text(_marker(total))
    chars_per_token = len(text) / total
    keep = max(0, int(room * chars_per_token))
    while True:
        head = text[: (keep + 1) // 2]
        tail = text[len(text) - keep // 2 :] if keep // 2 else ""
        kept = counter.count_text(head + tail)
        clamped = head + _marker(total - kept) + tail
        if keep == 0 or counter.count_text(clamped) <= limit:
            return clamped
        keep = keep * 9 // 10


def _clamp_blocks(
    part: ToolResult, content: tuple[Text | Opaque, ...], limit: int, counter: TokenCounter
) -> ToolResult:
    """A structured tool result is one part and must fit as a whole: when its
    text blocks together are over the limit, they are joined (as counting
    joins them) and clamped into the first one; other blocks stay in place."""
    joined = part_text(part)
    clamped = clamp_text(joined, limit, counter)
    if clamped is joined:
        return part
    blocks: list[Text | Opaque] = []
    for block in content:
        if not isinstance(block, Text):
            blocks.append(block)
        elif clamped:
            blocks.append(attrs.evolve(block, text=clamped))
            clamped = ""
    return attrs.evolve(part, content=tuple(blocks))


@attrs.frozen(slots=True, repr=False)
class _Clamp:
    max_part_tokens: int

    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        limit = self.max_part_tokens
        counter = context.counter

        def clamp_part(part: Part) -> Part:
            if isinstance(part, Text):
                text = clamp_text(part.text, limit, counter)
                return part if text is part.text else attrs.evolve(part, text=text)
            if isinstance(part, ToolResult):
                if isinstance(part.content, str):
                    content = clamp_text(part.content, limit, counter)
                    return part if content is part.content else attrs.evolve(part, content=content)
                return _clamp_blocks(part, part.content, limit, counter)
            return part  # call arguments are JSON: cutting them would break them

        track = context.measure.track(conversation)
        survivors = track.survivors()
        # A part alone counts at most a few tokens more than inside its message
        # (only the pre-tokens at its edges differ), so messages well under the
        # limit are skipped on their count, which the measure has (the
        # pipeline's counter counted them).
        threshold = limit - _EDGE_SLACK
        mine = context.measure.counter is counter
        sizes = track.sizes() if mine else counter.counts(conversation)
        over = itertools.compress(itertools.count(), map(threshold.__lt__, sizes))
        candidates = (i for i in over if i not in survivors)
        return rewrite_parts(conversation, candidates, clamp_part)

    def __repr__(self) -> str:
        return describe("clamp_oversized_messages", self)


@register("clamp_oversized_messages")
def clamp_oversized_messages(*, max_part_tokens: int = 4096) -> Strategy:
    """Cut every text part and tool result over ``max_part_tokens`` to its
    head and tail joined by a marker, so the part fits the limit. A tool
    result with several text blocks counts as one part: when over, its text
    is joined and clamped into its first text block, and its other blocks
    (images) stay. Tool call arguments are left whole (cut JSON is no longer
    JSON).

    Keeps: survivors untouched, order, tool pairing (ids are untouched).
    """
    check_positive("max_part_tokens", max_part_tokens, minimum=MIN_PART_TOKENS)
    return _Clamp(max_part_tokens)
