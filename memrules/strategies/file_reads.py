"""`deduplicate_file_reads`: only the newest read of each file keeps its content."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable

import attrs

from memrules._core.messages import Conversation, Message, Part, ToolCall, ToolResult
from memrules._counting.measure import Track
from memrules._counting.notes import Scan
from memrules._engine.contract import Strategy, StrategyContext
from memrules.strategies._tool_common import (
    _CARRIES,
    _RESULT_IDS,
    _argument,
    _calls,
    _not_longer,
    _results,
    _survivors,
    _tail_state,
)
from memrules.strategies._util import RewriteCache
from memrules.strategies.registry import describe, register

__all__ = ["deduplicate_file_reads"]


@attrs.frozen(slots=True, eq=False)
class _ReadState:
    """What `deduplicate_file_reads` made of one input (call and
    result ids unique), kept in the conversation's measure so that the next
    request, which continues it, takes in only what is new: the input, the
    output and where they differ, the counter and the rewrite cache's
    generation it was made under, the survivors, and the reads: each
    result's message, each read's order and path, each path's newest
    answered read and its stale ones."""

    source: Conversation
    output: Conversation
    rewritten: frozenset[int]
    counter: object
    generation: int
    survivors: frozenset[int]
    holders: dict[str, int]
    reads: dict[str, tuple[int, str]]
    newest: dict[str, str]
    older: dict[str, tuple[str, ...]]


@attrs.frozen(slots=True, repr=False)
class _DeduplicateFileReads:
    tool_name: str
    path_key: str
    # What each stale read became: a warm request stubs only new ones.
    _rewrites: RewriteCache = attrs.field(factory=RewriteCache, init=False, eq=False)
    # Each message's reads, per conversation: a warm request parses only new ones.
    _scan: Scan[tuple[tuple[str, str], ...]] = attrs.field(factory=Scan, init=False, eq=False)
    # The key of this strategy's `_ReadState` notes in each
    # conversation's measure.
    _tail: object = attrs.field(factory=object, init=False, eq=False)

    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        track = context.measure.track(conversation)
        if track.unique_calls:
            state = self._state(conversation, context, track)
            if state is not None:
                return conversation if not state.rewritten else state.output
        return self._full(conversation, context, track)

    def _state(
        self, conversation: Conversation, context: StrategyContext, track: Track
    ) -> _ReadState | None:
        """The state of ``conversation`` (call ids unique), advanced from
        the note about an input it continues, or worked out whole; None
        when a result id repeats (`_full` handles that)."""
        return _tail_state(
            _ReadState,
            self._tail,
            self._rewrites.generation,
            conversation,
            context,
            track,
            self._same_reads,
            self._advance,
        )

    def _same_reads(self, now: Message, was: Message) -> bool:
        """Whether ``now`` holds the results and the reads ``was`` held."""
        return now.result_ids == was.result_ids and self._reads(now) == self._reads(was)

    def _advance(
        self,
        note: _ReadState | None,
        start: int,
        moved: Iterable[int],
        conversation: Conversation,
        context: StrategyContext,
        track: Track,
    ) -> _ReadState | None:
        """The state of ``conversation``: ``note``'s (about a conversation
        that ``conversation`` continues, holding the same objects but at
        ``moved``, which hold the same reads and results), with only the
        new messages taken in and only the messages whose stub changed,
        ``moved`` and the survivors that changed visited again. Without a
        note: every message is new. None when a result id repeats."""
        n = len(conversation)
        if note is None:
            m, out, rewritten = 0, list(conversation), set()
            holders: dict[str, int] = {}
            reads: dict[str, tuple[int, str]] = {}
            newest: dict[str, str] = {}
            older: dict[str, tuple[str, ...]] = {}
            was_surviving: frozenset[int] = frozenset()
        else:
            m = start
            out = list(note.output[:m])
            out.extend(conversation[m:])
            rewritten = set(note.rewritten)
            if m < len(note.source):
                rewritten = {i for i in rewritten if i < m}
            holders, reads = dict(note.holders), dict(note.reads)
            newest, older = dict(note.newest), dict(note.older)
            was_surviving = note.survivors
        tail = conversation[m:]
        carriers = list(itertools.compress(range(m, n), map(_CARRIES, tail)))
        fresh_results: list[str] = []
        fresh_reads: list[str] = []
        for i in carriers:
            message = conversation[i]
            for cid in message.result_ids:
                if cid in holders:
                    return None
                holders[cid] = i
                fresh_results.append(cid)
            for cid, path in self._reads(message):
                reads[cid] = (len(reads), path)
                fresh_reads.append(cid)
        # The reads answered now that were not: a new result of a read, or
        # a new read whose result came first.
        became = [c for c in fresh_results if c in reads]
        became.extend(c for c in fresh_reads if c in holders)
        again = set(moved)
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

        def stub(part: Part) -> Part:
            if not isinstance(part, ToolResult) or not stale_read(part.call_id):
                return part
            path = reads[part.call_id][1]
            text = (
                f"[memrules: stale read of {path}; the later {self.tool_name} call "
                f"{newest[path]} has its current content]"
            )
            return part if _not_longer(part, text, context) else attrs.evolve(part, content=text)

        def key(message: Message) -> tuple[tuple[str, str, str], ...]:
            return tuple(
                (p.call_id, reads[p.call_id][1], newest[reads[p.call_id][1]])
                for p in message.parts
                if isinstance(p, ToolResult) and stale_read(p.call_id)
            )

        for i in again:
            message = conversation[i]
            after = None
            if i not in survivors and any(map(stale_read, message.result_ids)):
                after, _ = self._rewrites.one(message, stub, key, context.counter)
            if after is None:
                out[i] = message
                rewritten.discard(i)
            else:
                out[i] = after
                rewritten.add(i)
        return _ReadState(
            source=conversation,
            output=tuple(out) if rewritten else conversation,
            rewritten=frozenset(rewritten),
            counter=context.counter,
            generation=self._rewrites.generation,
            survivors=survivors,
            holders=holders,
            reads=reads,
            newest=newest,
            older=older,
        )

    def _full(
        self, conversation: Conversation, context: StrategyContext, track: Track
    ) -> Conversation:
        """The whole conversation looked at again (repeated ids)."""
        # Only reads that have their result count: a newer read still waiting
        # for its result has no content to stand in for the older one.
        answered = set(itertools.chain.from_iterable(map(_RESULT_IDS, conversation)))
        if track.unique_calls:
            # Each message's reads, parsed once per conversation (the scan
            # keeps them); in message order, as ``_calls`` would give them.
            reads = self._scan.facts(conversation, context.measure, self._reads)
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

        def stub(part: Part) -> Part:
            if not isinstance(part, ToolResult) or part.call_id not in stale:
                return part
            path = stale[part.call_id]
            text = (
                f"[memrules: stale read of {path}; the later {self.tool_name} call "
                f"{newest[path]} has its current content]"
            )
            return part if _not_longer(part, text, context) else attrs.evolve(part, content=text)

        def key(message: Message) -> tuple[tuple[str, str, str], ...]:
            return tuple(
                (p.call_id, stale[p.call_id], newest[stale[p.call_id]])
                for p in message.parts
                if isinstance(p, ToolResult) and p.call_id in stale
            )

        # Only a message that holds a stale result can change.
        survivors = track.survivors()
        at, ids = _results(conversation)
        is_stale = map(stale.__contains__, ids)
        candidates = sorted(set(itertools.compress(at, is_stale)) - survivors)
        # What a stub says: the path and the later read (as one string).
        paths = list(stale.values())
        later = map("{}:{}{}".format, map(len, paths), paths, map(newest.__getitem__, paths))
        decisions: dict[str, Hashable] = dict(zip(stale.keys(), later, strict=True))
        rewritten, _ = self._rewrites.rewrite_known(
            conversation,
            candidates,
            stub,
            decisions=decisions,
            key=key,
            counter=context.counter,
            measure=context.measure,
        )
        return rewritten

    def _reads(self, message: Message) -> tuple[tuple[str, str], ...]:
        """The message's calls of ``tool_name`` whose ``path_key`` argument
        is a string: (call id, path), in order."""
        if not message.call_ids:
            return ()
        found = []
        for p in message.parts:
            if isinstance(p, ToolCall) and p.name == self.tool_name:
                path = _argument(p.arguments, self.path_key)
                if path is not None:
                    found.append((p.id, path))
        return tuple(found)

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
