"""`deduplicate_file_reads`: only the newest read of each file keeps its content."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

import attrs

from memrules._core.messages import Conversation, Message, Part, ToolCall, ToolResult
from memrules._engine.contract import Strategy, StrategyContext
from memrules._engine.incremental import NEW, Change, Incremental, facts, memo
from memrules.strategies._tool_common import (
    _CARRIES,
    _RESULT_IDS,
    _argument,
    _calls,
    _not_longer,
    _results,
    _rewritten,
    _survivors,
)
from memrules.strategies.registry import describe, register

__all__ = ["deduplicate_file_reads"]


@attrs.frozen(slots=True, eq=False)
class _ReadState:
    """What `deduplicate_file_reads` made of one input (call and
    result ids unique), which the interpreter keeps so that the next
    request, which continues it, takes in only what is new: the output and
    where it differs from the input, the survivors, and the reads: each
    result's message, each read's order and path, each path's newest
    answered read and its stale ones. The next `advance` grows its tables
    in place (the interpreter hands a state over once)."""

    output: Conversation
    rewritten: set[int]
    survivors: frozenset[int]
    holders: dict[str, int]
    reads: dict[str, tuple[int, str]]
    newest: dict[str, str]
    older: dict[str, tuple[str, ...]]


@attrs.frozen(slots=True)
class _Reads:
    """A message's calls of ``tool_name`` whose ``path_key`` argument is a
    string: (call id, path), in order."""

    tool_name: str
    path_key: str

    def __call__(self, message: Message) -> tuple[tuple[str, str], ...]:
        if not message.call_ids:
            return ()
        found = []
        for p in message.parts:
            if isinstance(p, ToolCall) and p.name == self.tool_name:
                path = _argument(p.arguments, self.path_key)
                if path is not None:
                    found.append((p.id, path))
        return tuple(found)


@attrs.frozen(slots=True, cache_hash=True, repr=False)
class _DeduplicateFileReads:
    tool_name: str
    path_key: str

    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        state = self.advance(None, NEW, conversation, context)
        if state is None:
            return self._full(conversation, context)
        return self.result(state, conversation, context)

    @property
    def incremental(self) -> Incremental[_ReadState]:
        """The strategy itself: `advance` takes in what a request adds."""
        return self

    def result(
        self, state: _ReadState, conversation: Conversation, context: StrategyContext
    ) -> Conversation:
        """``state``'s output."""
        return state.output if state.rewritten else conversation

    def same(self, now: Message, was: Message) -> bool:
        """Whether ``now`` holds the results and the reads ``was`` held."""
        reads = _Reads(self.tool_name, self.path_key)
        return now.result_ids == was.result_ids and reads(now) == reads(was)

    def advance(
        self,
        state: _ReadState | None,
        change: Change,
        conversation: Conversation,
        context: StrategyContext,
    ) -> _ReadState | None:
        """The state of ``conversation``: ``state``'s (made of an input
        ``conversation`` continues, see `Change`), with only the new
        messages taken in and only the messages whose stub changed, the
        moved ones and the survivors that changed visited again. Without a
        state, every message is new. None (the cold call looks at the
        whole conversation) when a call or result id repeats."""
        track = context.measure.track(conversation)
        if not track.unique_calls:
            return None
        n = len(conversation)
        if state is None:
            m, out = 0, list(conversation)
            rewritten: set[int] = set()
            holders: dict[str, int] = {}
            reads: dict[str, tuple[int, str]] = {}
            newest: dict[str, str] = {}
            older: dict[str, tuple[str, ...]] = {}
            was_surviving: frozenset[int] = frozenset()
        else:
            # The state is this request's to build on (see `Incremental`):
            # its tables grow in place, by what is new.
            m = change.start
            out = list(state.output[:m])
            out.extend(conversation[m:])
            rewritten = state.rewritten
            if m < change.was:
                rewritten.difference_update([i for i in rewritten if i >= m])
            holders, reads = state.holders, state.reads
            newest, older = state.newest, state.older
            was_surviving = state.survivors
        tail = conversation[m:]
        carriers = list(itertools.compress(range(m, n), map(_CARRIES, tail)))
        fresh_results: list[str] = []
        fresh_reads: list[str] = []
        of = _Reads(self.tool_name, self.path_key)
        for i in carriers:
            message = conversation[i]
            for cid in message.result_ids:
                if cid in holders:
                    return None
                holders[cid] = i
                fresh_results.append(cid)
            for cid, path in of(message):
                reads[cid] = (len(reads), path)
                fresh_reads.append(cid)
        # The reads answered now that were not: a new result of a read, or
        # a new read whose result came first.
        became = [c for c in fresh_results if c in reads]
        became.extend(c for c in fresh_reads if c in holders)
        again = set(change.moved)
        for cid in dict.fromkeys(became):
            order, path = reads[cid]
            current = newest.get(path)
            if current is None:
                newest[path] = cid
            elif order > reads[current][0]:
                newest[path] = cid
                older[path] = (*older.get(path, ()), current)
                # Every stale read of the path names the newest one.
                again.update(map(holders.__getitem__, older[path]))
            else:
                older[path] = (*older.get(path, ()), cid)
                again.add(holders[cid])
        survivors = _survivors(track)
        again.update(i for i in survivors ^ was_surviving if i < n)

        def stale_read(cid: str) -> bool:
            found = reads.get(cid)
            return found is not None and cid in holders and newest[found[1]] != cid

        stub = functools.partial(
            self._stub, stale_read, lambda cid: reads[cid][1], newest.__getitem__, context
        )
        rewrites = memo(self, context)
        for i in again:
            message = conversation[i]
            after = None
            if i not in survivors and any(map(stale_read, message.result_ids)):
                key = tuple(
                    (p.call_id, reads[p.call_id][1], newest[reads[p.call_id][1]])
                    for p in message.parts
                    if isinstance(p, ToolResult) and stale_read(p.call_id)
                )
                after, _ = rewrites.of((message, key), functools.partial(_rewritten, message, stub))
            if after is None:
                out[i] = message
                rewritten.discard(i)
            else:
                out[i] = after
                rewritten.add(i)
        return _ReadState(
            output=tuple(out) if rewritten else conversation,
            rewritten=rewritten,
            survivors=survivors,
            holders=holders,
            reads=reads,
            newest=newest,
            older=older,
        )

    def _stub(
        self,
        stale: Callable[[str], bool],
        path_of: Callable[[str], str],
        newest: Callable[[str], str],
        context: StrategyContext,
        part: Part,
    ) -> Part:
        """``part``, or its stub when it is a ``stale`` read's result (of
        the path ``path_of`` its call id, whose ``newest`` read is another)."""
        if not isinstance(part, ToolResult) or not stale(part.call_id):
            return part
        path = path_of(part.call_id)
        text = (
            f"[memrules: stale read of {path}; the later {self.tool_name} call "
            f"{newest(path)} has its current content]"
        )
        return part if _not_longer(part, text, context) else attrs.evolve(part, content=text)

    def _full(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        """The whole conversation looked at (repeated ids)."""
        # Only reads that have their result count: a newer read still waiting
        # for its result has no content to stand in for the older one.
        answered = set(itertools.chain.from_iterable(map(_RESULT_IDS, conversation)))
        track = context.measure.track(conversation)
        if track.unique_calls:
            # Each message's reads, in message order, as ``_calls`` would give them.
            reads = facts(_Reads(self.tool_name, self.path_key), conversation, context.measure)
            path_of = {
                cid: path for cid, path in itertools.chain.from_iterable(reads) if cid in answered
            }
            newest = dict(zip(path_of.values(), path_of.keys(), strict=True))  # the last wins
        else:
            newest, path_of = {}, {}
            for call_id, (_, call) in _calls(conversation).items():
                if call.name != self.tool_name or call_id not in answered:
                    continue
                path = _argument(call.arguments, self.path_key)
                if path is not None:
                    path_of[call_id] = path
                    newest[path] = call_id  # dict order is message order: the last wins
        stale = {cid: path for cid, path in path_of.items() if newest[path] != cid}
        if not stale:
            return conversation
        stub = functools.partial(
            self._stub, stale.__contains__, stale.__getitem__, newest.__getitem__, context
        )
        # Only a message that holds a stale result can change.
        survivors = track.survivors()
        at, ids = _results(conversation)
        is_stale = map(stale.__contains__, ids)
        rewrites = memo(self, context)
        out: list[Message] | None = None
        for i in sorted(set(itertools.compress(at, is_stale)) - survivors):
            message = conversation[i]
            key = tuple(
                (p.call_id, stale[p.call_id], newest[stale[p.call_id]])
                for p in message.parts
                if isinstance(p, ToolResult) and p.call_id in stale
            )
            after, _ = rewrites.of((message, key), functools.partial(_rewritten, message, stub))
            if after is not None:
                if out is None:
                    out = list(conversation)
                out[i] = after
        return conversation if out is None else tuple(out)

    def __repr__(self) -> str:
        return describe("deduplicate_file_reads", self)


@register("deduplicate_file_reads")
def deduplicate_file_reads(*, tool_name: str = "read_file", path_key: str = "path") -> Strategy:
    """Keyed on the tool name and the call's ``path_key`` argument: replace
    every result but the newest read of a path with a short stub that names
    the later read (a result that costs no more tokens than the stub stays
    as it is).
    Only answered reads count: a read still waiting for its result leaves
    the last answered one alone. Calls whose arguments are not
    a JSON object with that key are left alone.

    Keeps: survivors untouched, order, tool pairing (calls and ids stay).
    """
    if not tool_name:
        msg = "tool_name='' names no tool"
        raise ValueError(msg)
    if not path_key:
        msg = "path_key='' names no argument"
        raise ValueError(msg)
    return _DeduplicateFileReads(tool_name, path_key)
