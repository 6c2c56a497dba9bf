"""Clamping oversized parts to their head and tail."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator

import attrs

from memrules._core.messages import (
    Conversation,
    Message,
    Opaque,
    Part,
    Text,
    ToolCall,
    ToolResult,
    part_text,
)
from memrules._counting.measure import Track
from memrules._counting.tokens import TokenCounter
from memrules._engine.contract import Strategy, StrategyContext
from memrules._engine.incremental import facts, memo
from memrules.strategies._keep import ErrorCheck, error_check, first_kept, recent_start
from memrules.strategies._util import check_positive
from memrules.strategies.registry import describe, register

__all__ = ["clamp_oversized_messages", "clamp_text"]

MIN_PART_TOKENS = 32
"""Room for the clamp marker and a little text on each side of it."""


_EDGE_SLACK = 8


def _marker(removed: int, total: int, tool: str) -> str:
    of = f" of this {tool} result" if tool else ""
    return f"\n[memrules: clamped {removed} of {total} tokens{of}]\n"


def clamp_text(
    text: str, limit: int, counter: TokenCounter, *, tool: str = "", tail_chars: int = 0
) -> str:
    """``text`` itself when it fits ``limit`` tokens; otherwise its head and
    tail joined by a marker that says how much was cut of how much (and of
    which ``tool``'s result, when given), fitting the limit. The head and
    the tail share the room evenly, but the tail takes up to
    ``tail_chars`` characters (leaving the head an eighth at least): the
    end of an error output says what failed."""
    total = counter.count_text(text)
    if total <= limit:
        return text
    room = limit - counter.count_text(_marker(total, total, tool))
    chars_per_token = len(text) / total
    keep = max(0, int(room * chars_per_token))
    while True:
        back = min(keep - keep // 8, max(keep // 2, tail_chars))
        head = text[: keep - back]
        tail = text[len(text) - back :] if back else ""
        kept = counter.count_text(head + tail)
        clamped = head + _marker(total - kept, total, tool) + tail
        if keep == 0 or counter.count_text(clamped) <= limit:
            return clamped
        keep = keep * 9 // 10


def _clamp_blocks(
    part: ToolResult,
    content: tuple[Text | Opaque, ...],
    limit: int,
    counter: TokenCounter,
    tool: str,
    tail_chars: int,
) -> ToolResult:
    """A structured tool result is one part and must fit as a whole: when its
    text blocks together are over the limit, they are joined (as counting
    joins them) and clamped into the first one; other blocks stay in place."""
    joined = part_text(part)
    clamped = clamp_text(joined, limit, counter, tool=tool, tail_chars=tail_chars)
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


def _tool_names(conversation: Conversation, track: Track, index: int) -> dict[str, str]:
    """Call id → tool name, for the calls that message ``index``'s results
    answer (the messages a tool id ties to it)."""
    return {
        p.id: p.name
        for j in track.linked(index)
        for p in conversation[j].parts
        if isinstance(p, ToolCall)
    }


def _recent_fit(
    context: StrategyContext, sizes: tuple[int, ...], cut: int, kept: frozenset[int]
) -> bool:
    """Whether the messages from ``cut`` on may stay whole: always, but
    under a token budget that they and the ``kept`` messages before them
    already reach (whole, they would leave the later strategies nothing
    to keep but themselves, or nothing that fits)."""
    budget = context.budget
    if budget.kind != "tokens" or cut >= len(sizes):
        return True
    need = sum(sizes[cut:]) + sum(sizes[i] for i in kept if i < cut)
    return need < budget.limit


@attrs.frozen(slots=True)
class _IsError:
    """Whether a message is tool or user output that reads as an error: a
    tool result marked ``is_error``, or text the error check with
    ``pattern`` finds."""

    pattern: str | None
    _check: ErrorCheck = attrs.field(init=False, eq=False, repr=False)

    @_check.default
    def _compiled(self) -> ErrorCheck:
        return error_check(self.pattern)

    def __call__(self, message: Message) -> bool:
        if message.role in ("system", "assistant"):
            return False
        check = self._check
        for p in message.parts:
            if isinstance(p, ToolResult):
                if p.is_error or check(part_text(p)):
                    return True
            elif isinstance(p, Text) and check(p.text):
                return True
        return False


@attrs.frozen(slots=True, cache_hash=True, repr=False)
class _Clamp:
    max_part_tokens: int
    recent_turns: int
    keep_first: int
    error_tail_chars: int
    error_pattern: str | None

    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        limit = self.max_part_tokens
        counter = context.counter
        track = context.measure.track(conversation)
        # A part alone counts at most a few tokens more than inside its message
        # (only the pre-tokens at its edges differ), so messages well under the
        # limit are skipped on their count, which the measure has (the
        # pipeline's counter counted them).
        threshold = limit - _EDGE_SLACK
        mine = context.measure.counter is counter
        sizes = track.sizes() if mine else counter.counts(conversation)
        over: Iterator[int] = itertools.compress(itertools.count(), map(threshold.__lt__, sizes))
        cut = recent_start(conversation, self.recent_turns)
        kept = track.survivors() | first_kept(conversation, self.keep_first)
        if _recent_fit(context, sizes, cut, kept):
            over = itertools.takewhile(cut.__gt__, over)
        candidates = [i for i in over if i not in kept]
        if not candidates:
            return conversation
        latest_error = None
        if self.error_tail_chars:
            # Worked out for the messages new since the conversation's last input only.
            errors = facts(_IsError(self.error_pattern), conversation, context.measure)
            if True in errors:
                latest_error = len(errors) - 1 - errors[::-1].index(True)
        # What a message clamps to depends on it, its tail and its tools' names only.
        clamped = memo(self, context)
        out: list[Message] | None = None
        for i in candidates:
            m = conversation[i]
            tail = self.error_tail_chars if i == latest_error else 0
            names = _tool_names(conversation, track, i) if m.result_ids else {}
            key = (m, tail, tuple(names.items()))
            made = clamped.of(key, functools.partial(self._clamp, m, limit, counter, names, tail))
            if made is None:
                continue
            if out is None:
                out = list(conversation)
            out[i] = made
        return conversation if out is None else tuple(out)

    @classmethod
    def _clamp(
        cls, m: Message, limit: int, counter: TokenCounter, names: dict[str, str], tail: int
    ) -> Message | None:
        """What ``m`` becomes with every part clamped; None when no part changes."""
        parts = tuple(cls._clamp_part(p, limit, counter, names, tail) for p in m.parts)
        if all(a is b for a, b in zip(parts, m.parts, strict=True)):
            return None
        return m.evolve(parts=parts)

    @staticmethod
    def _clamp_part(
        part: Part, limit: int, counter: TokenCounter, names: dict[str, str], tail: int
    ) -> Part:
        if isinstance(part, Text):
            text = clamp_text(part.text, limit, counter, tail_chars=tail)
            return part if text is part.text else attrs.evolve(part, text=text)
        if isinstance(part, ToolResult):
            tool = names.get(part.call_id, "tool")
            if isinstance(part.content, str):
                content = clamp_text(part.content, limit, counter, tool=tool, tail_chars=tail)
                return part if content is part.content else attrs.evolve(part, content=content)
            return _clamp_blocks(part, part.content, limit, counter, tool, tail)
        return part  # call arguments are JSON: cutting them would break them

    def __repr__(self) -> str:
        return describe("clamp_oversized_messages", self)


@register("clamp_oversized_messages")
def clamp_oversized_messages(
    *,
    max_part_tokens: int = 4096,
    recent_turns: int = 1,
    keep_first: int = 0,
    error_tail_chars: int = 2000,
    error_pattern: str | None = None,
) -> Strategy:
    """Cut every text part and tool result over ``max_part_tokens`` to its
    head and tail joined by a marker that says how many of how many tokens
    were cut, and of which tool's result, so the part fits the limit. A
    tool result with several text blocks counts as one part: when over,
    its text is joined and clamped into its first text block, and its
    other blocks (images) stay. Tool call arguments are left whole (cut
    JSON is no longer JSON).

    Left whole: the latest ``recent_turns`` units (tool exchanges of the
    latest turn, then whole earlier turns: the work in progress), unless
    they and the survivors alone reach a token budget (whole, they would
    crowd out everything else), and the first ``keep_first`` messages
    after the system messages. The latest
    output that reads as an error (a tool result's ``is_error``, a
    non-zero exit code, a traceback, a pytest failure, an ``error:`` line,
    or ``error_pattern``) keeps up to ``error_tail_chars`` characters of
    its tail.

    Keeps: survivors untouched, order, tool pairing (ids are untouched).
    """
    check_positive("max_part_tokens", max_part_tokens, minimum=MIN_PART_TOKENS)
    check_positive("recent_turns", recent_turns, minimum=0)
    check_positive("keep_first", keep_first, minimum=0)
    check_positive("error_tail_chars", error_tail_chars, minimum=0)
    error_check(error_pattern)  # raises for a pattern that does not compile
    return _Clamp(max_part_tokens, recent_turns, keep_first, error_tail_chars, error_pattern)
