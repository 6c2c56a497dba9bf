"""Shrinking tool traffic: stale file reads and old tool results.

Both strategies rewrite tool result content in place and keep every call and
result id, so pairing is never at stake; messages whose content changes are
reported as replaced.
"""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

import attrs

from memrules._core.messages import Conversation, Message, Part, ToolCall, ToolResult, part_text
from memrules._counting.measure import Measure, Track
from memrules._counting.notes import Scan, keep, notes_of
from memrules._engine.contract import Outcome, Strategy, StrategyContext, StrategyResult
from memrules.strategies._util import RewriteCache, check_positive
from memrules.strategies.registry import describe, register

__all__ = ["CLEARED", "clear_tool_results", "deduplicate_file_reads"]

CLEARED = "[memrules: tool result cleared to save context]"
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


_N = TypeVar("_N", "_ReadState", "_ClearState")

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


@attrs.frozen(slots=True, eq=False)
class _ReadState:
    """What :func:`deduplicate_file_reads` made of one input (call and
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
    # The key of this strategy's :class:`_ReadState` notes in each
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
        when a result id repeats (:meth:`_full` handles that)."""
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


@attrs.frozen(slots=True, eq=False)
class _ClearState:
    """What :func:`clear_tool_results` made of one input (result ids
    unique), kept in the conversation's measure so that the next request,
    which continues it, takes in only what is new: the input, the output,
    the counter and the rewrite cache's generation it was made under, the
    survivors, each result's message, each call's tool name (when some are
    excluded), the results that may be cleared in order and their ranks,
    and what each cleared message saves."""

    source: Conversation
    output: Conversation
    counter: object
    generation: int
    survivors: frozenset[int]
    holders: dict[str, int]
    names: dict[str, str]
    ids: list[str]
    rank: dict[str, int]
    gains: dict[int, int]


@attrs.frozen(slots=True, repr=False)
class _ClearToolResults:
    keep_pairs: int
    clear_at_least: int
    exclude_tools: tuple[str, ...]
    clear_tool_inputs: bool
    # What each cleared message became and saved: a warm request clears,
    # encodes and counts only new ones.
    _rewrites: RewriteCache = attrs.field(factory=RewriteCache, init=False, eq=False)
    # Each message's calls by name, per conversation: a warm request reads
    # only new ones.
    _scan: Scan[tuple[tuple[str, str], ...]] = attrs.field(factory=Scan, init=False, eq=False)
    # The key of this strategy's :class:`_ClearState` notes in each
    # conversation's measure.
    _tail: object = attrs.field(factory=object, init=False, eq=False)

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
        repeats (:meth:`_full` handles that)."""
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
        """Whether ``now`` holds the results and calls ``was`` held."""
        return (
            now.result_ids == was.result_ids
            and now.call_ids == was.call_ids
            and (not self.exclude_tools or _call_names(now) == _call_names(was))
        )

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
        ``moved``, which hold the same calls and results), with only the
        new messages taken in and only the messages whose results became
        old enough, ``moved`` and the survivors that changed visited again.
        Without a note (or when a new call names a result seen before):
        every message is new. None when a result id repeats."""
        n = len(conversation)
        excluded = set(self.exclude_tools)
        if note is None:
            m, out = 0, list(conversation)
            holders: dict[str, int] = {}
            names: dict[str, str] = {}
            ids: list[str] = []
            rank: dict[str, int] = {}
            gains: dict[int, int] = {}
            was_surviving: frozenset[int] = frozenset()
        else:
            m = start
            holders, names = dict(note.holders), dict(note.names)
            ids, rank, gains = list(note.ids), dict(note.rank), dict(note.gains)
            if m < len(note.source):
                gains = {i: gain for i, gain in gains.items() if i < m}
            was_surviving = note.survivors
        tail = conversation[m:]
        carriers = list(itertools.compress(range(m, n), map(_CARRIES, tail)))
        if excluded:
            # A result is excluded by the name of its call's last occurrence:
            # all of the new calls first, as the whole-conversation pass.
            for i in carriers:
                for cid, name in _call_names(conversation[i]):
                    if note is not None and (cid in holders or cid in names):
                        # A new call names a result or call seen before.
                        return self._advance(None, 0, (), conversation, context, track)
                    names[cid] = name
        fresh: list[int] = []
        for i in carriers:
            for cid in conversation[i].result_ids:
                if cid in holders:
                    return None
                holders[cid] = i
                if excluded and names.get(cid) in excluded:
                    continue
                rank[cid] = len(ids)
                ids.append(cid)
                fresh.append(i)
        if note is not None:
            out = list(note.output[:m])
            out.extend(tail)
        was_older = 0 if note is None else max(0, len(note.ids) - self.keep_pairs)
        older = max(0, len(ids) - self.keep_pairs)
        again = set(moved)
        again.update(map(holders.__getitem__, ids[was_older:older]))
        survivors = _survivors(track)
        again.update(i for i in survivors ^ was_surviving if i < n)

        def targeted(cid: str) -> bool:
            return rank.get(cid, older) < older

        def clear(part: Part) -> Part:
            if isinstance(part, ToolResult) and targeted(part.call_id):
                if _not_longer(part, CLEARED, context):
                    return part
                return attrs.evolve(part, content=CLEARED)
            return part

        def key(message: Message) -> tuple[str, ...]:
            return tuple(filter(targeted, message.result_ids))

        count = context.counter.count

        def saving(before: Message, after: Message) -> int:
            return count(before) - count(after)

        for i in again:
            message = conversation[i]
            after, gain = None, 0
            if i not in survivors and any(map(targeted, message.result_ids)):
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
            survivors=survivors,
            holders=holders,
            names=names,
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
        if excluded:
            # Each message's calls by name, kept per conversation: the last
            # call of an id names it, as in ``_calls``.
            names = self._scan.facts(conversation, context.measure, _call_names)
            name_of = dict(itertools.chain.from_iterable(names))
            kept = list(map(operator.not_, map(excluded.__contains__, map(name_of.get, ids))))
            at, ids = list(itertools.compress(at, kept)), list(itertools.compress(ids, kept))
        older = max(0, len(at) - self.keep_pairs)
        if not older:
            return conversation
        track = context.measure.track(conversation)
        survivors = track.survivors()
        older_at, older_ids = at[:older], ids[:older]
        at_survivor = map(survivors.__contains__, older_at)
        targets = set(itertools.compress(older_ids, map(operator.not_, at_survivor)))

        def clear(part: Part) -> Part:
            if isinstance(part, ToolResult) and part.call_id in targets:
                if _not_longer(part, CLEARED, context):
                    return part
                return attrs.evolve(part, content=CLEARED)
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
            touched = sorted({*touched, *(calls[c][0] for c in targets if c in calls)} - survivors)

        def key(message: Message) -> tuple[str, ...]:
            return tuple(cid for cid in (*message.result_ids, *message.call_ids) if cid in targets)

        count = context.counter.count
        cleared, saved = self._rewrites.rewrite_known(
            conversation,
            touched,
            clear,
            decisions=dict.fromkeys(targets, True),
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
) -> Strategy:
    """Replace the content of every tool result but the newest ``keep_pairs``
    with a placeholder that says it was cleared (a result that costs no more
    tokens than the placeholder stays as it is). Calls stay, and their
    arguments too unless ``clear_tool_inputs``. Results of ``exclude_tools``
    are never cleared. Does nothing unless at least ``clear_at_least`` tokens
    would go: clearing breaks the provider's prompt cache from the first
    cleared message on, so small clears cost more than they save.

    Keeps: survivors untouched, order, tool pairing (calls and ids stay).
    """
    check_positive("keep_pairs", keep_pairs, minimum=0)
    check_positive("clear_at_least", clear_at_least, minimum=0)
    return _ClearToolResults(keep_pairs, clear_at_least, tuple(exclude_tools), clear_tool_inputs)
