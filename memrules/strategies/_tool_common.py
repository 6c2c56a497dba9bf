"""What the tool-result strategies (`clear_tool_results`,
`deduplicate_file_reads`) share: finding calls and results, and
rewriting one message."""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Callable

from memrules._core.messages import Conversation, Message, Part, ToolCall, ToolResult, part_text
from memrules._counting.measure import Track
from memrules._engine.contract import StrategyContext

__all__ = ["CLEARED_INPUT"]

CLEARED_INPUT = "{}"


def _calls(conversation: Conversation) -> dict[str, tuple[int, ToolCall]]:
    """Call id → (message index, call), for every tool call."""
    return {
        p.id: (i, p)
        for i, m in enumerate(conversation)
        if m.call_ids
        for p in m.parts
        if isinstance(p, ToolCall)
    }


def _argument(arguments: str, key: str) -> str | None:
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, str) else None


def _not_longer(result: ToolResult, replacement: str, context: StrategyContext) -> bool:
    """Whether ``result`` already costs no more tokens than ``replacement``
    would: a stub or placeholder that would grow the result is not used."""
    text = part_text(result)
    if len(text) > _SURELY_LONGER * len(replacement):
        # Not worth encoding: text this long is more tokens than the
        # replacement unless it is nearly all whitespace or one repeated
        # character, and then the replacement costs a few tokens at most.
        return False
    count = context.counter.count_text
    return count(text) <= count(replacement)


_SURELY_LONGER = 16


_RESULT_IDS = operator.attrgetter("result_ids")
_CARRIES = operator.attrgetter("is_tool_carrier")
_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)


def _results(conversation: Conversation) -> tuple[list[int], list[str]]:
    """The message index and the call id of every tool result, in order, as
    two lists (C-level passes when each message holds at most one)."""
    at = list(itertools.compress(itertools.count(), map(_RESULT_IDS, conversation)))
    ids = list(map(_RESULT_IDS, map(conversation.__getitem__, at)))
    if max(map(len, ids), default=0) <= 1:
        return at, list(map(_FIRST, ids))
    pairs = [(i, cid) for i, held in zip(at, ids, strict=True) for cid in held]
    return list(map(_FIRST, pairs)), list(map(_SECOND, pairs))


def _rewritten(
    message: Message,
    rewrite: Callable[[Part], Part],
    saving: Callable[[Message, Message], int] | None = None,
) -> tuple[Message | None, int]:
    """What ``message`` becomes with ``rewrite`` applied to each of its
    parts (None: every part came back the same object, it stays as it is),
    and what that saves by ``saving(before, after)`` (0 without it)."""
    parts = tuple(map(rewrite, message.parts))
    if all(map(operator.is_, parts, message.parts)):
        return None, 0
    after = message.evolve(parts=parts)
    return after, 0 if saving is None else saving(message, after)


def _survivors(track: Track) -> frozenset[int]:
    """The survivors' positions (see `memrules._core.survivors`)."""
    return track.survivors()


def _call_names(message: Message) -> tuple[tuple[str, str], ...]:
    """(call id, tool name) of each of the message's calls, in order."""
    if not message.call_ids:
        return ()
    return tuple((p.id, p.name) for p in message.parts if isinstance(p, ToolCall))
