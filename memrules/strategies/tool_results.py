"""Shrinking tool traffic: `clear_tool_results` replaces old tool results
with stubs (`deduplicate_file_reads`, in `file_reads`, stale file reads).

Both strategies rewrite tool result content in place and keep every call and
result id, so pairing is never at stake; messages whose content changes are
reported as replaced.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable

import attrs

from memrules._core.messages import Conversation, Message, Part, ToolCall, ToolResult, part_text
from memrules._engine.contract import Outcome, Strategy, StrategyContext, StrategyResult
from memrules._engine.incremental import NEW, Change, Incremental, facts, memo
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
    _rewritten,
    _survivors,
)
from memrules.strategies._util import check_positive
from memrules.strategies.registry import describe, register

__all__ = ["CLEARED_INPUT", "clear_tool_results"]


@attrs.frozen(slots=True, eq=False)
class _ClearState:
    """What `clear_tool_results` made of one input (result ids unique),
    which the interpreter keeps so that the next request, which continues
    it, takes in only what is new: the output, the messages kept whole
    (survivors and the first few) and where the recent ones began, each
    result's message, each call's tool name, the latest result that reads
    as an error, the results that may be cleared in order and their ranks,
    what each cleared message saves, and their sum. The next `advance`
    grows its tables in place (the interpreter hands a state over once)."""

    output: Conversation
    kept: frozenset[int]
    cut: int
    holders: dict[str, int]
    names: dict[str, str]
    error: str | None
    ids: list[str]
    rank: dict[str, int]
    gains: dict[int, int]
    saved: int


@attrs.frozen(slots=True)
class _ErrorIds:
    """The call ids of a message's results that read as errors (marked
    ``is_error``, or text the error check with ``pattern`` finds)."""

    pattern: str | None
    _check: ErrorCheck = attrs.field(init=False, eq=False, repr=False)

    @_check.default
    def _compiled(self) -> ErrorCheck:
        return error_check(self.pattern)

    def __call__(self, message: Message) -> tuple[str, ...]:
        if not message.result_ids:
            return ()
        check = self._check
        return tuple(p.call_id for p in message.parts if holds_error(p, check))


def _no_errors(message: Message) -> tuple[str, ...]:
    return ()


@attrs.frozen(slots=True, cache_hash=True, repr=False)
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

    def __call__(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        state = self.advance(None, NEW, conversation, context)
        if state is None:
            return self._full(conversation, context)
        return self.result(state, conversation, context)

    @property
    def incremental(self) -> Incremental[_ClearState]:
        """The strategy itself: `advance` takes in what a request adds."""
        return self

    def result(
        self, state: _ClearState, conversation: Conversation, context: StrategyContext
    ) -> StrategyResult:
        """``state``'s output, when it clears enough."""
        if not state.gains or state.saved < self.clear_at_least:
            return conversation
        return Outcome(messages=state.output, note=f"cleared {state.saved} tokens")

    def same(self, now: Message, was: Message) -> bool:
        """Whether ``now`` holds the results, calls and errors ``was`` held."""
        if now.result_ids != was.result_ids or now.call_ids != was.call_ids:
            return False
        if _call_names(now) != _call_names(was):
            return False
        errors = self._errors()
        return errors(now) == errors(was)

    def _errors(self) -> Callable[[Message], tuple[str, ...]]:
        """The call ids of a message's results that read as errors (none
        without ``error_tail_chars``)."""
        return _ErrorIds(self.error_pattern) if self.error_tail_chars else _no_errors

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

    def advance(
        self,
        state: _ClearState | None,
        change: Change,
        conversation: Conversation,
        context: StrategyContext,
    ) -> _ClearState | None:
        """The state of ``conversation``: ``state``'s (made of an input
        ``conversation`` continues, see `Change`), with only the new
        messages taken in and only the messages whose results became old
        enough, the moved ones, the kept messages that changed, those that
        left or joined the recent ones and the latest error's, new and
        old, visited again. Without a state, every message is new. None
        (the cold call looks at the whole conversation) when a result id
        repeats, a new call names a result seen before, or with
        ``clear_tool_inputs``."""
        if self.clear_tool_inputs:
            return None
        n = len(conversation)
        excluded = set(self.exclude_tools)
        if state is None:
            m, out = 0, list(conversation)
            holders: dict[str, int] = {}
            names: dict[str, str] = {}
            ids: list[str] = []
            rank: dict[str, int] = {}
            gains: dict[int, int] = {}
            saved = 0
            error = was_error = None
            was_kept: frozenset[int] = frozenset()
            was_cut = None
        else:
            # The state is this request's to build on (see `Incremental`):
            # its tables grow in place, by what is new.
            m = change.start
            holders, names = state.holders, state.names
            ids, rank, gains = state.ids, state.rank, state.gains
            saved = state.saved
            if m < change.was:
                for i in [i for i in gains if i >= m]:
                    saved -= gains.pop(i)
            error = was_error = state.error
            was_kept, was_cut = state.kept, state.cut
        was_older = max(0, len(ids) - self.keep_pairs) if state is not None else 0
        tail = conversation[m:]
        carriers = list(itertools.compress(range(m, n), map(_CARRIES, tail)))
        errors_of = self._errors()
        # A result is named (and excluded) by its call's last occurrence:
        # all of the new calls first, as the whole-conversation pass.
        for i in carriers:
            for cid, name in _call_names(tail[i - m]):
                if state is not None and (cid in holders or cid in names):
                    return None  # a new call names a result or call seen before
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
            errors = errors_of(message)
            if errors:
                error = errors[-1]
        if state is not None:
            out = list(state.output[:m])
            out.extend(tail)
        older = max(0, len(ids) - self.keep_pairs)
        again = set(change.moved)
        again.update(map(holders.__getitem__, ids[was_older:older]))
        track = context.measure.track(conversation)
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

        count = context.counter.count

        def saving(before: Message, after: Message) -> int:
            return count(before) - count(after)

        rewrites = memo(self, context)
        for i in again:
            message = conversation[i]
            after, gain = None, 0
            if i not in kept and i < cut and any(map(targeted, message.result_ids)):
                key = tuple(
                    (c, names.get(c), c == error) for c in message.result_ids if targeted(c)
                )
                made = functools.partial(_rewritten, message, clear, saving)
                after, gain = rewrites.of((message, key), made)
            saved -= gains.pop(i, 0)
            if after is None:
                out[i] = message
            else:
                out[i] = after
                gains[i] = gain
                saved += gain
        return _ClearState(
            output=tuple(out) if gains else conversation,
            kept=kept,
            cut=cut,
            holders=holders,
            names=names,
            error=error,
            ids=ids,
            rank=rank,
            gains=gains,
            saved=saved,
        )

    def _full(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        """The whole conversation looked at (repeated result ids, or
        ``clear_tool_inputs``)."""
        if self.clear_tool_inputs:
            calls = _calls(conversation)
        excluded = set(self.exclude_tools)
        at, ids = _results(conversation)
        # The last call of an id names it, as in ``_calls``.
        names = facts(_call_names, conversation, context.measure)
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
            found = facts(_ErrorIds(self.error_pattern), conversation, context.measure)
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

        count = context.counter.count

        def saving(before: Message, after: Message) -> int:
            return count(before) - count(after)

        rewrites = memo(self, context)
        out: list[Message] | None = None
        saved = 0
        for i in touched:
            message = conversation[i]
            key = tuple(
                (cid, name_of.get(cid), cid == error)
                for cid in (*message.result_ids, *message.call_ids)
                if cid in targets
            )
            made = functools.partial(_rewritten, message, clear, saving)
            after, gain = rewrites.of((message, key), made)
            if after is None:
                continue
            if out is None:
                out = list(conversation)
            out[i] = after
            saved += gain
        if out is None or saved < self.clear_at_least:
            return conversation
        return Outcome(messages=tuple(out), note=f"cleared {saved} tokens")

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
    error_check(error_pattern)  # raises for a pattern that does not compile
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
