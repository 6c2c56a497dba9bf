"""One conversation tuple on a line of a
`Measure`: its first ``size`` messages,
and what they derive (counts, survivors, held messages, tool links, input
problems), each worked out once, when first asked.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Iterator, Sequence

from memrules._core.conversation import ToolLinks
from memrules._core.messages import Conversation, Message
from memrules._core.repair import InputProblem, input_problems
from memrules._core.survivors import DEFAULT_SURVIVORS, Picked, SurvivorRule
from memrules._counting.lines import Line, Shape
from memrules._counting.tokens import TokenCounter

__all__ = ["Track"]


class Track:
    """One conversation tuple on a line: its first ``size`` messages. What it
    derives is computed once, on first use, under the measure's lock; it is
    read-only for everyone else (see the module docs)."""

    __slots__ = (
        "_counter",
        "_held",
        "_line",
        "_links",
        "_lock",
        "_picked",
        "_problems",
        "_rule",
        "_sizes",
        "_source",
        "_total",
        "conversation",
        "kin",
        "per_request",
        "size",
    )

    def __init__(
        self,
        conversation: Conversation,
        line: Line | None,
        lock: threading.Lock,
        per_request: int,
        *,
        counter: TokenCounter | None = None,
        source: tuple[list[int], Sequence[int]] | None = None,
        total: int | None = None,
        rule: SurvivorRule = DEFAULT_SURVIVORS,
    ) -> None:
        self.conversation = conversation
        self._rule = rule
        self._picked: Picked | None = None
        self._counter = counter  # what counts the line's messages it has not counted
        self.size = len(conversation)
        self.per_request = per_request
        self._line = line
        self._source = source  # a derived track's: the source's counts, and origin
        self._total = total
        self._lock = lock
        self._held: tuple[int, ...] | None = None
        self._links: ToolLinks | None = None
        self._problems: tuple[InputProblem, ...] | None = None
        self._sizes: tuple[int, ...] | None = None
        # The remembered conversation this one was found to continue, and
        # the positions below its length where the two hold different
        # objects (see `Measure.moved`).
        self.kin: tuple[Conversation, list[int] | None] | None = None

    @property
    def line(self) -> Line:
        """The track's line; a derived track (a pipeline's output) makes its
        own on first use, from the counts of the conversation it came from."""
        line = self._line
        if line is None:
            assert self._source is not None
            counts, origin = self._source
            with self._lock:
                line = self._line
                if line is None:
                    line = Line(self.conversation)
                    line.sizes = list(map(counts.__getitem__, origin))
                    line.sums = list(itertools.accumulate(line.sizes, initial=0))
                    self._line = line
        return line

    # --- counts, taken when first asked for

    def counted(self) -> Line:
        """The line, its counts covering this track (counting what they do
        not cover yet, outside the lock: see `Line.count_to`)."""
        line = self.line
        if len(line.sizes) < self.size:
            assert self._counter is not None  # only a line of the measure's own misses counts
            line.count_to(self.size, self._counter, self._lock)
        return line

    @property
    def sums(self) -> list[int]:
        """Prefix sums of the counts: ``sums[i]`` is the tokens of the first
        ``i`` messages (valid for ``i <= size``)."""
        return self.counted().sums

    @property
    def total(self) -> int:
        """The conversation's tokens, with what the request pays once."""
        found = self._total
        if found is None:
            found = self._total = self.counted().sums[self.size] + self.per_request
        return found

    def sizes(self) -> tuple[int, ...]:
        found = self._sizes
        if found is None:
            found = self._sizes = tuple(self.counted().sizes[: self.size])
        return found

    # --- structure

    def _structure(self) -> Shape:
        line = self.line
        borrowed = line.borrowed
        if borrowed is not None and self.size <= borrowed[1]:
            line = borrowed[0]  # a rewrite that kept every role and tool id
        shape = line.shape
        if shape is None or shape.done < self.size:
            with self._lock:
                shape = line.shape
                if shape is None:
                    shape = line.shape = Shape(self._rule)
                shape.extend(line.messages, self.size)
        return shape

    @property
    def first_system(self) -> int | None:
        """The first system message's index, or None."""
        found = self._structure().first_system
        return found if found is not None and found < self.size else None

    @property
    def last_user(self) -> int | None:
        """The most recent user message's index, or None."""
        users = self._structure().users
        k = bisect.bisect_left(users, self.size)
        return users[k - 1] if k else None

    def picked(self) -> Picked:
        """The survivors (see `memrules._core.survivors`), by index."""
        found = self._picked
        if found is None:
            shape = self._structure()
            persons = shape.persons
            k = bisect.bisect_left(persons, self.size)
            found = self._picked = Picked(
                first_system=self.first_system,
                task=persons[0] if k and self._rule.task else None,
                question=persons[k - 1] if k else None,
                last_user=self.last_user,
                pinned=tuple(shape.pins[: bisect.bisect_left(shape.pins, self.size)]),
            )
        return found

    def survivors(self) -> frozenset[int]:
        """Every survivor's index: the first system message, the task, the
        question, the most recent user message and the pinned ones."""
        return self.picked().indices

    @property
    def leads_with_user(self) -> bool:
        """Whether the first message that is not a system message is a user
        message."""
        first = self._structure().first_other
        return first is not None and first < self.size and self.conversation[first].role == "user"

    @property
    def unique_calls(self) -> bool:
        """Whether no call id occurs in more than one place."""
        dup = self._structure().dup_at
        return dup is None or dup >= self.size

    def links(self) -> ToolLinks:
        """The conversation's `ToolLinks`."""
        found = self._links
        if found is None:
            shape = self._structure()
            p = bisect.bisect_left(shape.pair_hi, self.size)
            pairs = tuple(zip(shape.pair_call[:p], shape.pair_result[:p], strict=True))
            found = ToolLinks(pairs=pairs, unique_calls=self.unique_calls)
            self._links = found
        return found

    def crossing(self, cut: int) -> Iterator[tuple[int, int]]:
        """The tool pairs a cut before message ``cut`` would split: their
        (lower, higher) indices with ``lower < cut <= higher``.

        Pairs are kept in the order their later message arrived, with the
        widest gap between the two messages of any pair so far, so only the
        pairs whose later message lies within that gap past ``cut`` are
        looked at: a few, where results follow their calls closely (one late
        answer widens the look for the rest of the conversation).
        """
        shape = self._structure()
        pair_hi = shape.pair_hi
        count = bisect.bisect_left(pair_hi, self.size)
        if not count:
            return
        reach = cut + shape.pair_span[count - 1]
        first = bisect.bisect_left(pair_hi, cut, 0, count)
        last = bisect.bisect_right(pair_hi, reach, first, count)
        calls, results = shape.pair_call, shape.pair_result
        for p in range(first, last):
            a, b = calls[p], results[p]
            lo, hi = (a, b) if a < b else (b, a)
            if lo < cut:
                yield lo, hi

    def linked(self, index: int) -> Iterator[int]:
        """The messages a tool id ties to message ``index``."""
        found = self._structure().linked.get(index, ())
        return (j for j in tuple(found) if j < self.size)

    def held(self) -> tuple[int, ...]:
        """`held_indices`, ascending: the
        survivors, the calls their results answer, and the tool exchanges
        of those, transitively."""
        found = self._held
        if found is None:
            found = self._held = tuple(sorted(self._find_held()))
        return found

    def _find_held(self) -> set[int]:
        conversation = self.conversation
        survivors = set(self.survivors())
        if not survivors:
            return survivors
        pinned = set(survivors)
        top = max(survivors)
        shape = self._structure()
        for i in survivors:
            for r in conversation[i].result_ids:
                holders = shape.holders.get(r, ())
                k = bisect.bisect_right(holders, top)
                if k:
                    pinned.add(holders[k - 1])
        if not any(conversation[i].is_tool_carrier for i in pinned):
            return pinned
        held = set(pinned)
        todo = list(pinned)
        while todo:
            for j in self.linked(todo.pop()):
                if j not in held:
                    held.add(j)
                    todo.append(j)
        return held

    def splits(self, head: Sequence[int], start: int) -> bool:
        """Whether keeping ``head`` (ascending, all below ``start``) and every
        message from ``start`` on would keep one message of a tool pair and
        drop the other."""
        kept = set(head)
        for lo, _ in self.crossing(start):
            if lo not in kept:
                return True
        return any(j < start and j not in kept for h in head for j in self.linked(h))

    def closes_nothing(self, messages: Sequence[Message]) -> bool:
        """Whether pairing closure would drop nothing from ``messages``, an
        output for this conversation (see `memrules._core.invariants`): no
        result in it whose call this conversation holds and it does not, no
        call in it whose result this conversation holds and it does not, and
        no parallel call of this conversation kept without the others.
        False also when call ids repeat (the general closure decides).
        Costs what ``messages`` hold, not the conversation."""
        if not self.unique_calls:
            return False
        shape = self._structure()
        size, conversation = self.size, self.conversation
        holders, answered = shape.holders, shape.answered
        early = {r for i, r in shape.pending if i < size}
        carriers = [m for m in messages if m.is_tool_carrier]
        calls = set(itertools.chain.from_iterable(m.call_ids for m in carriers))
        results = set(itertools.chain.from_iterable(m.result_ids for m in carriers))
        for r in results:  # an orphaned result
            held = holders.get(r)
            if held is not None and held[0] < size and r not in calls:
                return False
        for c in calls:
            answer = answered.get(c)
            if c not in results and ((answer is not None and answer < size) or c in early):
                return False  # its result is dropped
            held = holders.get(c)
            if held is None or held[0] >= size:
                continue  # not a call of this conversation's
            unit = conversation[held[0]].call_ids
            if len(unit) > 1 and not calls.issuperset(unit):
                return False  # a parallel call kept without the others
        return True

    # --- input problems

    def problems(self) -> tuple[InputProblem, ...]:
        """`input_problems` of the conversation."""
        found = self._problems
        if found is None:
            shape = self._structure()
            with self._lock:
                found = self._tip_problems(shape) if shape.done == self.size else None
            if found is None:
                found = input_problems(self.conversation)
            self._problems = found
        return found

    def _tip_problems(self, shape: Shape) -> tuple[InputProblem, ...]:
        """The problems when the shape covers exactly this track (called
        under the lock)."""
        if not (shape.repeats or shape.pending or shape.calls_open):
            return ()
        problems = list(shape.repeats)
        for i, r in shape.pending:
            held = shape.holders.get(r)
            if held is not None:
                text = f"tool result {r!r} comes before its call (messages[{held[0]}])"
                problems.append(InputProblem(index=i, tool_id=r, kind="early_result", text=text))
            else:
                text = f"tool result {r!r} has no call"
                problems.append(InputProblem(index=i, tool_id=r, kind="orphan_result", text=text))
        if shape.calls_open:
            k = bisect.bisect_left(shape.talk, self.size)
            last_turn = shape.talk[k - 1] if k else -1
            for c, i in shape.calls_open.items():
                if i < last_turn:
                    text = f"tool call {c!r} has no result, and the conversation goes on after it"
                    problems.append(
                        InputProblem(index=i, tool_id=c, kind="unanswered_call", text=text)
                    )
        problems.sort(key=lambda p: (p.index, p.kind, p.tool_id))
        return tuple(problems)
