"""What the tool-result strategies (`clear_tool_results`,
`deduplicate_file_reads`) share: finding calls and results, and the
warm request's view of what is new since the last one."""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

from memrules._core.messages import Conversation, Message, ToolCall, ToolResult, part_text
from memrules._counting.measure import Measure, Track
from memrules._counting.notes import keep, notes_of
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


class _Noted(Protocol):
    """A strategy's note of one input (its ``_ReadState`` or ``_ClearState``)."""

    @property
    def source(self) -> Conversation: ...

    @property
    def counter(self) -> object: ...

    @property
    def generation(self) -> int: ...


_N = TypeVar("_N", bound=_Noted)

_MOVED = 8
"""A note is taken up, past the measure's knowledge, only when no more
than one position in this many holds another object than it had."""


def _continued(
    notes: list[_N],
    conversation: Conversation,
    measure: Measure,
    same: Callable[[Message, Message], bool],
) -> tuple[_N, int, list[int]] | None:
    """The note to advance from, how many of its first messages
    ``conversation`` continues, and the positions below that which hold
    other objects, each with the same tool facts by ``same``: a note whose
    input the measure knows ``conversation`` continues; else the newest,
    by one pass of identity checks, up to the first position whose tool
    facts differ when the note's input holds no tool message from there on
    (a message the hook added to the last request only, such as its
    one-shot warning); else None."""
    n = len(conversation)
    for note in notes:
        if len(note.source) <= n:
            moved = measure.moved(conversation, note.source)
            if moved is not None and all(same(conversation[i], note.source[i]) for i in moved):
                return note, len(note.source), list(moved)
    if not notes:
        return None
    note = notes[0]
    source = note.source
    start = min(len(source), n)
    moved = list(itertools.compress(itertools.count(), map(operator.is_not, conversation, source)))
    if len(moved) > start // _MOVED:
        return None
    kept: list[int] = []
    for i in moved:
        if not same(conversation[i], source[i]):
            start = i
            break
        kept.append(i)
    if any(map(_CARRIES, source[start:])):
        return None
    return note, start, kept


def _tail_state(
    kind: type[_N],
    tail: object,
    generation: int,
    conversation: Conversation,
    context: StrategyContext,
    track: Track,
    same: Callable[[Message, Message], bool],
    advance: Callable[
        [_N | None, int, Iterable[int], Conversation, StrategyContext, Track], _N | None
    ],
) -> _N | None:
    """A tool-result strategy's state of ``conversation``: advanced by
    ``advance`` from the newest of its ``kind`` notes (under ``tail`` in the
    conversation's measure, made with this counter and rewrite-cache
    ``generation``) that the conversation continues, else worked out whole;
    kept as a note. None when ``advance`` declines (a result id repeats)."""
    measure, counter = context.measure, context.counter
    notes = notes_of(measure, tail)
    eligible = [
        n
        for n in notes
        if isinstance(n, kind) and n.counter is counter and n.generation == generation
    ]
    found = _continued(eligible, conversation, measure, same)
    state = None
    if found is not None:
        note, start, moved = found
        state = advance(note, start, moved, conversation, context, track)
    if state is None:
        state = advance(None, 0, (), conversation, context, track)
    if state is not None:
        keep(measure, tail, notes, state)
    return state


def _survivors(track: Track) -> frozenset[int]:
    """The survivors' positions (see `memrules._core.survivors`)."""
    return track.survivors()


def _call_names(message: Message) -> tuple[tuple[str, str], ...]:
    """(call id, tool name) of each of the message's calls, in order."""
    if not message.call_ids:
        return ()
    return tuple((p.id, p.name) for p in message.parts if isinstance(p, ToolCall))
