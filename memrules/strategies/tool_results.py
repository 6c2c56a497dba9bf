"""Shrinking tool traffic: `clear_tool_results` replaces old tool results
with stubs (`deduplicate_file_reads`, in `file_reads`, stale file reads).

Both strategies rewrite tool result content in place and keep every call and
result id, so pairing is never at stake; messages whose content changes are
reported as replaced.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable

import attrs

from memrules._core.messages import Conversation, Message, Part, ToolCall, ToolResult, part_text
from memrules._counting.measure import Track
from memrules._counting.notes import Scan
from memrules._engine.contract import Outcome, Strategy, StrategyContext, StrategyResult
from memrules.strategies._keep import (
    ErrorCheck,
    cleared_stub,
    error_check,
    first_kept,
    holds_error,
    is_cleared,
    recent_start,
)
from memrules.strategies._tool_common import (
    _CARRIES,
    CLEARED_INPUT,
    _call_names,
    _calls,
    _not_longer,
    _results,
    _survivors,
    _tail_state,
)
from memrules.strategies._util import RewriteCache, check_positive
from memrules.strategies.registry import describe, register

__all__ = ["CLEARED_INPUT", "clear_tool_results"]


@attrs.frozen(slots=True, eq=False)
class _ClearState:
    """What `clear_tool_results` made of one input (result ids
    unique), kept in the conversation's measure so that the next request,
    which continues it, takes in only what is new: the input, the output,
    the counter and the rewrite cache's generation it was made under, the
    messages kept whole (survivors and the first few) and where the recent
    ones began, each result's message, each call's tool name, the latest
    result that reads as an error, the results that may be cleared in
    order and their ranks, and what each cleared message saves."""

    source: Conversation
    output: Conversation
    counter: object
    generation: int
    kept: frozenset[int]
    cut: int
    holders: dict[str, int]
    names: dict[str, str]
    error: str | None
    ids: list[str]
    rank: dict[str, int]
    gains: dict[int, int]


@attrs.frozen(slots=True, repr=False)
class _ClearToolResults:
    keep_pairs: int
    clear_at_least: int
    exclude_tools: tuple[str, ...]
    clear_tool_inputs: bool
    preview_chars: int
    recent_turns: int
    keep_first: int
    error_tail_chars: int
    error_pattern: str | None
    _check: ErrorCheck = attrs.field(init=False, eq=False)
    # What each cleared message became and saved: a warm request clears,
    # encodes and counts only new ones.
    _rewrites: RewriteCache = attrs.field(factory=RewriteCache, init=False, eq=False)
    # Each message's calls by name, per conversation: a warm request reads
    # only new ones.
    _scan: Scan[tuple[tuple[str, str], ...]] = attrs.field(factory=Scan, init=False, eq=False)
    # Each message's results that read as errors, likewise.
    _error_scan: Scan[tuple[str, ...]] = attrs.field(factory=Scan, init=False, eq=False)
    # The key of this strategy's `_ClearState` notes in each
    # conversation's measure.
    _tail: object = attrs.field(factory=object, init=False, eq=False)

    @_check.default
    def _compiled(self) -> ErrorCheck:
        return error_check(self.error_pattern)

    def __call__(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        if not self.clear_tool_inputs:
            state = self._state(conversation, context)
            if state is not None:
                if not state.gains:
                    return conversation
                saved = sum(state.gains.values())
                if saved < self.clear_at_least:
                    return conversation
                return Outcome(messages=state.output, note=f"cleared {saved} tokens")
        return self._full(conversation, context)

    def _state(self, conversation: Conversation, context: StrategyContext) -> _ClearState | None:
        """The state of ``conversation``, advanced from the note about an
        input it continues, or worked out whole; None when a result id
        repeats (`_full` handles that)."""
        return _tail_state(
            _ClearState,
            self._tail,
            self._rewrites.generation,
            conversation,
            context,
            context.measure.track(conversation),
            self._same_tools,
            self._advance,
        )

    def _same_tools(self, now: Message, was: Message) -> bool:
        """Whether ``now`` holds the results, calls and errors ``was`` held."""
        return (
            now.result_ids == was.result_ids
            and now.call_ids == was.call_ids
            and _call_names(now) == _call_names(was)
            and self._errors(now) == self._errors(was)
        )

    def _errors(self, message: Message) -> tuple[str, ...]:
        """The call ids of the message's results that read as errors."""
        if not message.result_ids or not self.error_tail_chars:
            return ()
        check = self._check
        return tuple(p.call_id for p in message.parts if holds_error(p, check))

    def _stub(self, part: ToolResult, tool: str, error: bool, context: StrategyContext) -> str:
        """What ``part`` (a result of ``tool``; the latest error when
        ``error``) leaves when cleared."""
        text = part_text(part)
        if is_cleared(text):
            return text
        head = self.preview_chars // 2
        tail = self.preview_chars - head
        if error:
            tail = max(tail, self.error_tail_chars)
        return cleared_stub(tool, context.counter.count_text(text), text, head, tail)

    def _advance(
        self,
        note: _ClearState | None,
        start: int,
        moved: Iterable[int],
        conversation: Conversation,
        context: StrategyContext,
        track: Track,
    ) -> _ClearState | None:
        """The state of ``conversation``: ``note``'s (about a conversation
        that ``conversation`` continues, holding the same objects but at
        ``moved``, which hold the same calls, results and errors), with
        only the new messages taken in and only the messages whose results
        became old enough, ``moved``, the kept messages that changed, those
        that left or joined the recent ones and the latest error's, new and
        old, visited again. Without a note (or when a new call names a
        result seen before): every message is new. None when a result id
        repeats."""
        n = len(conversation)
        excluded = set(self.exclude_tools)
        if note is None:
            m, out = 0, list(conversation)
            holders: dict[str, int] = {}
            names: dict[str, str] = {}
            ids: list[str] = []
            rank: dict[str, int] = {}
            gains: dict[int, int] = {}
            error = was_error = None
            was_kept: frozenset[int] = frozenset()
            was_cut = None
        else:
            m = start
            holders, names = dict(note.holders), dict(note.names)
            ids, rank, gains = list(note.ids), dict(note.rank), dict(note.gains)
            if m < len(note.source):
                gains = {i: gain for i, gain in gains.items() if i < m}
            error = was_error = note.error
            was_kept, was_cut = note.kept, note.cut
        tail = conversation[m:]
        carriers = list(itertools.compress(range(m, n), map(_CARRIES, tail)))
        # A result is named (and excluded) by its call's last occurrence:
        # all of the new calls first, as the whole-conversation pass.
        for i in carriers:
            for cid, name in _call_names(tail[i - m]):
                if note is not None and (cid in holders or cid in names):
                    # A new call names a result or call seen before.
                    return self._advance(None, 0, (), conversation, context, track)
                names[cid] = name
        for i in carriers:
            message = tail[i - m]
            for cid in message.result_ids:
                if cid in holders:
                    return None
                holders[cid] = i
                if excluded and names.get(cid) in excluded:
                    continue
                rank[cid] = len(ids)
                ids.append(cid)
            errors = self._errors(message)
            if errors:
                error = errors[-1]
        if note is not None:
            out = list(note.output[:m])
            out.extend(tail)
        was_older = 0 if note is None else max(0, len(note.ids) - self.keep_pairs)
        older = max(0, len(ids) - self.keep_pairs)
        again = set(moved)
        again.update(map(holders.__getitem__, ids[was_older:older]))
        kept = _survivors(track) | first_kept(conversation, self.keep_first)
        again.update(i for i in kept ^ was_kept if i < n)
        cut = recent_start(conversation, self.recent_turns)
        if was_cut is not None and was_cut != cut:
            again.update(range(min(was_cut, cut), min(max(was_cut, cut), n)))
        if error != was_error:
            again.update(holders[c] for c in (error, was_error) if c is not None and c in holders)

        def targeted(cid: str) -> bool:
            return rank.get(cid, older) < older

        def clear(part: Part) -> Part:
            if isinstance(part, ToolResult) and targeted(part.call_id):
                cid = part.call_id
                stub = self._stub(part, names.get(cid, "tool"), cid == error, context)
                if _not_longer(part, stub, context):
                    return part
                return attrs.evolve(part, content=stub)
            return part

        def key(message: Message) -> tuple[tuple[str, str | None, bool], ...]:
            return tuple((c, names.get(c), c == error) for c in message.result_ids if targeted(c))

        count = context.counter.count

        def saving(before: Message, after: Message) -> int:
            return count(before) - count(after)

        for i in again:
            message = conversation[i]
            after, gain = None, 0
            if i not in kept and i < cut and any(map(targeted, message.result_ids)):
                after, gain = self._rewrites.one(message, clear, key, context.counter, saving)
            if after is None:
                out[i] = message
                gains.pop(i, None)
            else:
                out[i] = after
                gains[i] = gain
        return _ClearState(
            source=conversation,
            output=tuple(out) if gains else conversation,
            counter=context.counter,
            generation=self._rewrites.generation,
            kept=kept,
            cut=cut,
            holders=holders,
            names=names,
            error=error,
            ids=ids,
            rank=rank,
            gains=gains,
        )

    def _full(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        """The whole conversation looked at again (repeated result ids, or
        ``clear_tool_inputs``)."""
        if self.clear_tool_inputs:
            calls = _calls(conversation)
        excluded = set(self.exclude_tools)
        at, ids = _results(conversation)
        # Each message's calls by name, kept per conversation: the last
        # call of an id names it, as in ``_calls``.
        names = self._scan.facts(conversation, context.measure, _call_names)
        name_of = dict(itertools.chain.from_iterable(names))
        if excluded:
            kept = list(map(operator.not_, map(excluded.__contains__, map(name_of.get, ids))))
            at, ids = list(itertools.compress(at, kept)), list(itertools.compress(ids, kept))
        older = max(0, len(at) - self.keep_pairs)
        if not older:
            return conversation
        track = context.measure.track(conversation)
        cut = recent_start(conversation, self.recent_turns)
        protected = track.survivors() | first_kept(conversation, self.keep_first)
        older_at, older_ids = at[:older], ids[:older]
        open_ = [i not in protected and i < cut for i in older_at]
        targets = set(itertools.compress(older_ids, open_))
        error = None
        if self.error_tail_chars:
            found = self._error_scan.facts(conversation, context.measure, self._errors)
            error = next((e[-1] for e in reversed(found) if e), None)

        def clear(part: Part) -> Part:
            if isinstance(part, ToolResult) and part.call_id in targets:
                cid = part.call_id
                stub = self._stub(part, name_of.get(cid, "tool"), cid == error, context)
                if _not_longer(part, stub, context):
                    return part
                return attrs.evolve(part, content=stub)
            if (
                self.clear_tool_inputs
                and isinstance(part, ToolCall)
                and part.id in targets
                and part.arguments != CLEARED_INPUT
            ):
                return attrs.evolve(part, arguments=CLEARED_INPUT)
            return part

        targeted = map(targets.__contains__, older_ids)
        touched = sorted(set(itertools.compress(older_at, targeted)))
        if self.clear_tool_inputs:
            calling = {calls[c][0] for c in targets if c in calls}
            touched = sorted({*touched, *(i for i in calling if i < cut)} - protected)

        def key(message: Message) -> tuple[tuple[str, str | None, bool], ...]:
            return tuple(
                (cid, name_of.get(cid), cid == error)
                for cid in (*message.result_ids, *message.call_ids)
                if cid in targets
            )

        count = context.counter.count
        cleared, saved = self._rewrites.rewrite_known(
            conversation,
            touched,
            clear,
            decisions={c: (name_of.get(c), c == error) for c in targets},
            key=key,
            counter=context.counter,
            measure=context.measure,
            saving=lambda before, after: count(before) - count(after),
        )
        if cleared is conversation:
            return conversation
        if saved < self.clear_at_least:
            return conversation
        return Outcome(messages=cleared, note=f"cleared {saved} tokens")

    def __repr__(self) -> str:
        return describe("clear_tool_results", self)


@register("clear_tool_results")
def clear_tool_results(
    *,
    keep_pairs: int = 3,
    clear_at_least: int = 0,
    exclude_tools: tuple[str, ...] = (),
    clear_tool_inputs: bool = False,
    preview_chars: int = 200,
    recent_turns: int = 1,
    keep_first: int = 0,
    error_tail_chars: int = 2000,
    error_pattern: str | None = None,
) -> Strategy:
    """Replace the content of every tool result but the newest ``keep_pairs``
    with a stub that names the tool, says how many tokens the result had,
    and keeps its first and last characters, ``preview_chars`` in all (a
    result that costs no more tokens than the stub stays as it is). Calls
    stay, and their arguments too unless ``clear_tool_inputs``. Results of
    ``exclude_tools`` are never cleared. Does nothing unless at least
    ``clear_at_least`` tokens would go: clearing breaks the provider's
    prompt cache from the first cleared message on, so small clears cost
    more than they save.

    Left whole: the latest ``recent_turns`` units (tool exchanges of the
    latest turn, then whole earlier turns: the work in progress) and the
    first ``keep_first`` messages after the system messages. The latest
    result that reads as an error (``is_error``, a non-zero exit code, a
    traceback, a pytest failure, an ``error:`` line, or ``error_pattern``)
    keeps up to ``error_tail_chars`` characters of its tail.

    Keeps: survivors untouched, order, tool pairing (calls and ids stay).
    """
    check_positive("keep_pairs", keep_pairs, minimum=0)
    check_positive("clear_at_least", clear_at_least, minimum=0)
    check_positive("preview_chars", preview_chars, minimum=0)
    check_positive("recent_turns", recent_turns, minimum=0)
    check_positive("keep_first", keep_first, minimum=0)
    check_positive("error_tail_chars", error_tail_chars, minimum=0)
    return _ClearToolResults(
        keep_pairs,
        clear_at_least,
        tuple(exclude_tools),
        clear_tool_inputs,
        preview_chars,
        recent_turns,
        keep_first,
        error_tail_chars,
        error_pattern,
    )
