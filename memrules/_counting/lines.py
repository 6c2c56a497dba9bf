"""What a `Measure` knows about one
sequence of message values: a **line** (the messages, their counts and the
counts' prefix sums, in append-only lists) and its **shape** (where the
system, user and assistant messages are, the tool calls and the pairs they
form, the input problems), each extended by the new messages only. See
`memrules._counting.measure` for how lines are found and shared.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections.abc import Iterable, Sequence

from memrules._core.messages import Message
from memrules._core.repair import InputProblem
from memrules._core.survivors import DEFAULT_SURVIVORS, PERSON, PIN, SurvivorRule
from memrules._counting.tokens import TokenCounter

__all__ = ["Line", "Shape"]

_CARRIES = operator.attrgetter("is_tool_carrier")


class Line:
    """What is known about one sequence of message values (see the module
    docs): the messages, their counts and the counts' prefix sums, and,
    once a question needs it, their `Shape`. The lists only grow,
    and only under the owning measure's lock; entries below a track's size
    never change."""

    __slots__ = ("borrowed", "estimated", "looked", "messages", "shape", "sizes", "sums")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self.messages: list[Message] = list(messages)
        self.sizes: list[int] = []
        self.sums: list[int] = [0]
        self.shape: Shape | None = None
        # The counter's stated estimates of the first ``looked`` messages,
        # by index (those with none are left out).
        self.estimated: dict[int, tuple[str, ...]] = {}
        self.looked = 0
        # A rewrite's line: the line whose shape is this one's for the
        # first ``size`` messages (the same roles and tool ids there).
        self.borrowed: tuple[Line, int] | None = None

    def count_to(self, size: int, counter: TokenCounter, lock: threading.Lock) -> None:
        """Extend the counts to the first ``size`` messages. Counting runs
        outside ``lock``; appending under it.

        Readers check ``len(sizes)`` without the lock, then read ``sums``:
        so ``sums`` grows first, and ``sizes`` only once the sums for it
        are there."""
        start = len(self.sizes)
        if start >= size:
            return
        counts = counter.counts(self.messages[start:size])
        with lock:
            start_now = len(self.sizes)
            if start_now >= size:
                return
            fresh = counts[start_now - start :]
            running = itertools.accumulate(fresh, initial=self.sums[-1])
            self.sums.extend(list(itertools.islice(running, 1, None)))
            self.sizes.extend(fresh)


class Shape:
    """A line's structure: where the system, user and assistant messages
    are, the tool calls and the pairs they form, and the input problems,
    for its first ``done`` messages. Its lists only grow (``unmatched``
    and the problem state are valid at ``done`` only), under the owning
    measure's lock."""

    __slots__ = (
        "answered",
        "calls_open",
        "done",
        "dup_at",
        "first_other",
        "first_system",
        "holders",
        "kinds",
        "linked",
        "pair_call",
        "pair_hi",
        "pair_result",
        "pair_span",
        "pending",
        "persons",
        "pins",
        "repeats",
        "rule",
        "talk",
        "unmatched",
        "users",
    )

    def __init__(self, rule: SurvivorRule = DEFAULT_SURVIVORS) -> None:
        self.rule = rule
        self.done = 0
        self.persons: list[int] = []  # messages from the person (see memrules._core.survivors)
        self.pins: list[int] = []  # messages a pin rule or flag pins
        self.kinds: dict[str, int] = {}  # messages seen per role ("" for all), for index rules
        self.first_system: int | None = None
        self.first_other: int | None = None
        self.users: list[int] = []  # user messages
        self.talk: list[int] = []  # user and assistant messages
        self.holders: dict[str, list[int]] = {}  # call id → messages holding it
        self.dup_at: int | None = None  # the first message that repeats a call id
        # results whose call has not come yet: valid at `done` only, since
        # entries leave when their call arrives
        self.unmatched: dict[str, list[int]] = {}
        self.pair_call: list[int] = []  # tool links: (call, result) messages,
        self.pair_result: list[int] = []  # appended as the later one arrives
        self.pair_hi: list[int] = []  # ... so the later index never decreases
        self.pair_span: list[int] = []  # the widest pair so far
        self.linked: dict[int, list[int]] = {}
        # input problems (see memrules._core.repair)
        self.answered: dict[str, int] = {}  # call id → its first result
        self.calls_open: dict[str, int] = {}  # call id → first holder, no result yet
        self.pending: list[tuple[int, str]] = []  # results with no call before them
        self.repeats: list[InputProblem] = []  # repeated results and call ids

    def extend(self, messages: Sequence[Message], size: int) -> None:
        """Take in ``messages[done:size]``; the caller holds the owning
        measure's lock."""
        start = self.done
        if start >= size:
            return
        rule = self.rule
        positional = rule.positional
        for i in range(start, size):
            m = messages[i]
            role = m.role
            if m.metadata or role == "user" or rule.pin:
                kind = rule.kind(m, self.kinds if positional else None)
                if kind & PERSON:
                    self.persons.append(i)
                if kind & PIN:
                    self.pins.append(i)
            if positional:
                self.kinds[role] = self.kinds.get(role, 0) + 1
                self.kinds[""] = self.kinds.get("", 0) + 1
            if role == "system":
                if self.first_system is None:
                    self.first_system = i
                continue
            if self.first_other is None:
                self.first_other = i
            if role == "user":
                self.users.append(i)
                self.talk.append(i)
            elif role == "assistant":
                self.talk.append(i)
        carriers = itertools.compress(
            zip(itertools.count(start), messages[start:size]), map(_CARRIES, messages[start:size])
        )
        for i, m in carriers:
            self._tool_message(i, m)
        self.done = size

    def _tool_message(self, i: int, m: Message) -> None:
        """Take in message ``i``'s tool calls and results: its links (as
        `link_state` finds them) and its input
        problems (as `input_problems` does)."""
        holders = self.holders
        for r in m.result_ids:  # problems see the calls of earlier messages only
            held = holders.get(r)
            if held is None:
                self.pending.append((i, r))
            elif r in self.answered:
                first = self.answered[r]
                text = f"a second result for tool call {r!r} (the first is messages[{first}])"
                self.repeats.append(
                    InputProblem(index=i, tool_id=r, kind="repeated_result", text=text)
                )
            else:
                self.answered[r] = i
                self.calls_open.pop(r, None)
        for c in m.call_ids:
            held = holders.get(c)
            if held is None:
                holders[c] = [i]
                self.calls_open[c] = i
                for early in self.unmatched.pop(c, ()):
                    if early != i:
                        self._pair(i, early, i)
                continue
            text = f"tool call id {c!r} is used again (first in messages[{held[0]}])"
            self.repeats.append(
                InputProblem(index=i, tool_id=c, kind="repeated_call", text=text, removable=False)
            )
            if self.dup_at is None:
                self.dup_at = i
            if held[-1] != i:
                held.append(i)
        for r in m.result_ids:
            held = holders.get(r)
            if held is None:
                self.unmatched.setdefault(r, []).append(i)
            elif held[0] != i:
                self._pair(held[0], i, i)

    def _pair(self, call: int, result: int, later: int) -> None:
        span = later - min(call, result)
        self.pair_span.append(max(span, self.pair_span[-1]) if self.pair_span else span)
        self.pair_call.append(call)
        self.pair_result.append(result)
        self.pair_hi.append(later)
        self.linked.setdefault(call, []).append(result)
        self.linked.setdefault(result, []).append(call)
