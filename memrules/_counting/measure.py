"""What a pipeline remembers about the conversations it measured.

The interpreter, the strategies and the invariant check all ask the same
questions of the same conversation: each message's count and their running
total, which messages tool ids tie together, where the survivors are, what
is already broken. An agent loop asks them on every turn of a history that
only grew since the last one. A `Measure` answers them and keeps the
answers, so that a turn costs what it added, not what came before:

- a **line** is what is known about a sequence of message values, in
  append-only arrays (counts and their prefix sums, user and system
  positions, tool calls and the pairs they form, input problems). A
  conversation that continues a line extends its arrays by its new
  messages; one that does not starts a new line.
- a **track** is one conversation tuple on a line: its first ``size``
  entries. What a track derives (its held messages, its tool links, its
  problems) is worked out once, when first asked.

A conversation continues a remembered one when it starts with the same
message **values**, position by position: the very objects (a long-lived
tuple or list that the caller appends to) or equal ones (a caller that
rebuilds its messages on every request). Comparing by value in place of a
hash fingerprint costs less (a fresh message would have to be hashed whole,
every string of it, to be fingerprinted; compared to the remembered one, it
stops at the first difference and shares the identity short-cut of equal
strings) and cannot collide. An object equal to a remembered message is
taken as that message. A conversation that starts with a remembered one
but goes on differently (a retried last message) starts a new line that
copies the counts of the part they share; one that is a prefix of a line is
a track of it.

The cost of a turn: C-level passes over the prefix (identity or equality of
the remembered part; a tuple made of a list), plus Python-level work for
the new messages only, plus what the window keeps. The arrays grow with the
conversation they describe and nothing else; a measure keeps the last
`TRACKS` conversations asked about and the last `TRACKS` that a
pipeline made of them (strategies' outputs, which take their counts and,
for a rewrite in place that keeps every role and tool id, their structure
from their input), so one
per conversation (the plugin keeps one per conversation, a
`Pipeline` one for its direct callers) is bounded by that
conversation.

A measure also keeps the request a pipeline sent last with it (a result's
``sent``, by reference): what `Measure.previous` hands the next request of
the conversation, for the prompt cache, when it continues that one.

Thread safety: a measure may be shared between threads. Lines only grow,
under the measure's lock, and a track reads only its first ``size``
entries, which never change once written; tracks are replaced whole, so a
reader sees the old set or the new one. Counting new messages runs outside
the lock (the counter is thread-safe), so one thread's cold encode never
holds another up.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import threading
from collections.abc import Iterable, Mapping, Sequence

from memrules._core.bounded import BoundedTable
from memrules._core.conversation import ToolLinks
from memrules._core.messages import (
    Conversation,
    Message,
    as_messages,
    check_messages,
    starts_with,
)
from memrules._core.prompt_cache import SentRequest
from memrules._core.repair import InputProblem
from memrules._core.survivors import DEFAULT_SURVIVORS, SurvivorRule
from memrules._counting.framing import per_request_tokens
from memrules._counting.lines import Line as _Line
from memrules._counting.tokens import TokenCounter
from memrules._counting.track import Track

__all__ = ["NOTES", "TRACKS", "Measure", "Track"]

TRACKS = 4
"""How many conversations a `Measure` remembers of each kind, the
most recently asked about first: those asked about (a request's input, the
previous request's), and the outputs a pipeline made of them."""

NOTES = 64
"""How many strategies a `Measure` keeps notes for (see
`Measure.note`): a pipeline's, several times over."""


class Measure:
    """Counts, tool links, held messages and input problems of the
    conversations asked about, remembered and extended (see the module
    docs). ``counter`` counts the messages; its ``per_request`` tokens are
    added to every total."""

    __slots__ = (
        "_lock",
        "_notes",
        "_outputs",
        "_sent",
        "_tracks",
        "counter",
        "per_request",
        "survivors",
    )

    def __init__(self, counter: TokenCounter, survivors: SurvivorRule = DEFAULT_SURVIVORS) -> None:
        self.counter = counter
        self.survivors = survivors
        self.per_request = per_request_tokens(counter)
        self._tracks: tuple[Track, ...] = ()
        # What the pipeline made of them (a strategy's output, whose counts
        # and structure come from its input), kept apart so that a run's
        # outputs never push its input out before the next request extends it.
        self._outputs: tuple[Track, ...] = ()
        self._notes: BoundedTable[object, object] = BoundedTable(NOTES)
        self._sent: SentRequest | None = None
        self._lock = threading.Lock()

    # --- finding the track of a conversation

    def conversation(self, messages: Iterable[Message]) -> Conversation:
        """``messages`` as a tuple whose every item is a
        `Message` (raising
        `MessageFormatError` naming the first that
        is not), remembered: the messages that continue a remembered
        conversation are the only ones looked at one by one."""
        conversation = as_messages(messages)
        self.track(conversation)
        return conversation

    def track(self, conversation: Conversation) -> Track:
        """The `Track` of ``conversation``: found, extended from a
        remembered one, or new. Its counts are taken when first asked for
        (so recognising a conversation never counts; a counter that fails
        fails where the count is needed)."""
        tracks = self._tracks
        for t in tracks:
            if t.conversation is conversation:
                if t is not tracks[0]:  # the most recently asked about stays longest
                    self._tracks = (t, *(x for x in tracks if x is not t))
                return t
        outputs = self._outputs
        for t in outputs:
            if t.conversation is conversation:
                return t
        line, shared, donor, kin = self._continued(conversation, (*tracks, *outputs))
        check_messages(conversation, shared)
        if line is None:
            line = _Line(conversation)
            if donor is not None:
                counted = min(shared, len(donor.sizes))
                line.sizes = donor.sizes[:counted]
                line.sums = donor.sums[: counted + 1]
        elif len(line.messages) < len(conversation):
            with self._lock:
                if len(line.messages) == shared:
                    line.messages.extend(conversation[shared:])
                else:  # another thread extended it differently: start afresh
                    line = _Line(conversation)
        track = Track(
            conversation,
            line,
            self._lock,
            self.per_request,
            counter=self.counter,
            rule=self.survivors,
        )
        track.kin = kin
        self._tracks = (track, *tracks[: TRACKS - 1])
        return track

    def _continued(
        self, conversation: Conversation, tracks: tuple[Track, ...]
    ) -> tuple[_Line | None, int, _Line | None, tuple[Conversation, list[int] | None] | None]:
        """The line ``conversation`` lies on (None for a new one), how many of
        its first messages are known already, and the line that knows them:
        the remembered track it continues, or a line it is a prefix of; else
        the line that shares the longest prefix with it (a new line copies
        that prefix's counts). Last, the kin of `moved` when it
        continues a remembered track's very objects."""
        n = len(conversation)
        # The usual case first: the very objects of a remembered track, grown.
        for t in tracks:
            m = t.size
            if 0 < m <= n and conversation[m - 1] is t.conversation[m - 1]:
                # One C-level pass, short-cut by identity, no copy: the
                # positions that hold other (equal) objects are found when
                # asked for.
                if not starts_with(conversation, t.conversation):
                    continue
                found = self._along(conversation, t, checked=True)
                if found is not None:
                    return found, _found_size(found, n), found, (t.conversation, None)
        best, donor = 0, None
        for t in tracks:
            m = t.size
            if m >= n:
                if starts_with(t.conversation, conversation):
                    return t.line, n, t.line, None
                k = _common(conversation, t.conversation)
            elif not starts_with(conversation, t.conversation):
                k = _common(conversation, t.conversation)
            else:
                found = self._along(conversation, t)
                if found is not None:
                    return found, _found_size(found, n), found, None
                k = m + _common(conversation[m:], t.line.messages[m:n])
            if k > best:
                best, donor = k, t
        return None, best, None if donor is None else donor.line, None

    @staticmethod
    def _along(conversation: Conversation, track: Track, *, checked: bool = False) -> _Line | None:
        """``track``'s line when ``conversation`` continues it: it starts
        with ``track``'s messages (``checked``: the caller knows it does)
        and goes on as the line does (up to where the line ends or
        ``conversation`` does)."""
        line, m, n = track.line, track.size, len(conversation)
        if not checked and not starts_with(conversation, track.conversation):
            return None
        known = line.messages
        end = min(n, len(known))
        if m < end and _common(conversation[m:end], known[m:end]) < end - m:
            return None
        return line

    # --- the questions

    def sizes(self, conversation: Conversation) -> tuple[int, ...]:
        """The count of each message of ``conversation``, in order."""
        return self.track(conversation).sizes()

    def total(self, conversation: Conversation) -> int:
        """The tokens of ``conversation`` as one request: its messages, and
        the counter's ``per_request`` tokens."""
        return self.track(conversation).total

    def links(self, conversation: Conversation) -> ToolLinks:
        """The tool links of ``conversation``."""
        return self.track(conversation).links()

    def problems(self, conversation: Conversation) -> tuple[InputProblem, ...]:
        """What is already broken in ``conversation`` (see `memrules._core.repair`)."""
        return self.track(conversation).problems()

    def remember(self, conversation: Conversation, sizes: Sequence[int]) -> None:
        """Take ``sizes`` as the counts of ``conversation``: for a tuple made
        from a measured one by deleting messages, whose counts the caller
        already has (the pipeline's output)."""
        if self._known(conversation):
            return
        line = _Line(conversation)
        line.sizes = list(sizes)
        line.sums = list(itertools.accumulate(line.sizes, initial=0))
        self._output(Track(conversation, line, self._lock, self.per_request, rule=self.survivors))

    def rewrite(self, output: Conversation, source: Conversation, changed: Sequence[int]) -> None:
        """Remember ``output``, which is ``source`` (as long) with the
        messages at ``changed`` (ascending) replaced: the counts ``source``
        has, the replaced messages counted; and, when every replaced message
        keeps its role, tool calls and tool results, ``source``'s structure
        (tool links, held messages, problems) for its own, not worked out
        again. Costs a copy of the counts and what the replaced messages
        cost to count."""
        if self._known(output):
            return
        n = len(output)
        found = self.track(source)
        if self._extend_rewrite(output, source, found, changed):
            return
        line = _Line(output)
        news = list(map(output.__getitem__, changed))
        fresh = dict(zip(changed, self.counter.counts(news), strict=True))
        sizes = list(map(fresh.get, range(n), found.counted().sizes[:n]))
        line.sizes = sizes
        line.sums = list(itertools.accumulate(sizes, initial=0))
        was = list(map(source.__getitem__, changed))
        if _same_structure(was, news, self.survivors):
            root = found.line
            borrowed = root.borrowed
            line.borrowed = borrowed if borrowed is not None and n <= borrowed[1] else (root, n)
        self._output(
            Track(
                output,
                line,
                self._lock,
                self.per_request,
                counter=self.counter,
                rule=self.survivors,
            )
        )

    def _extend_rewrite(
        self, output: Conversation, source: Conversation, found: Track, changed: Sequence[int]
    ) -> bool:
        """Remember ``output`` (see `rewrite`) from an earlier rewrite
        whose structure came from the same line as ``source``'s (the last
        request's rewrite by the same strategy): its counts are taken for
        the messages that are the very objects it had at the same position,
        and only the other replaced messages are counted and compared. The
        earlier line is extended when ``output`` continues it whole. False
        (nothing done) when there is no such rewrite."""
        n = len(output)
        root = found.line
        borrowed = root.borrowed
        if borrowed is not None and n <= borrowed[1]:
            root = borrowed[0]
        best: Track | None = None
        differ: list[int] = []
        for t in self._outputs:
            line, m = t._line, t.size
            lent = None if line is None else line.borrowed
            if lent is None or lent[0] is not root or lent[1] != m or not 0 < m <= n:
                continue
            if len(line.sizes) < m:  # type: ignore[union-attr]  # a line is given
                continue
            moved = list(
                itertools.compress(itertools.count(), map(operator.is_not, output, t.conversation))
            )
            if best is None or len(moved) + n - m < len(differ) + n - best.size:
                best, differ = t, moved
        if best is None:
            return False
        m = best.size
        wanted = set(changed)
        recount = [i for i in differ if i in wanted]
        recount.extend(changed[bisect.bisect_left(changed, m) :])
        news = list(map(output.__getitem__, recount))
        if not _same_structure(list(map(source.__getitem__, recount)), news, self.survivors):
            return False
        counts = found.counted().sizes
        earlier = best.line
        sizes = earlier.sizes[:m]
        sizes.extend(counts[m:n])
        for i in differ:
            sizes[i] = counts[i]  # the source's message, unless replaced (below)
        for i, size in zip(recount, self.counter.counts(news), strict=True):
            sizes[i] = size
        with self._lock:
            if not differ and m == len(earlier.messages) == len(earlier.sizes):
                line = earlier  # continued whole: the same line, grown
                line.messages.extend(output[m:])
                running = itertools.accumulate(sizes[m:], initial=line.sums[-1])
                line.sums.extend(itertools.islice(running, 1, None))
                line.sizes.extend(sizes[m:])
            else:
                line = _Line(output)
                line.sums = list(itertools.accumulate(sizes, initial=0))
                line.sizes = sizes
            line.borrowed = (root, n)
        made = Track(
            output, line, self._lock, self.per_request, counter=self.counter, rule=self.survivors
        )
        made.kin = (best.conversation, differ)
        self._output(made)
        return True

    def derive(self, output: Conversation, source: Conversation, origin: Sequence[int]) -> None:
        """Remember ``output``, whose message ``j`` is message ``origin[j]`` of
        ``source`` (a window of it), with the counts ``source`` has: its
        total now, the rest when first asked (most outputs are only ever
        totalled)."""
        if self._known(output):
            return
        counts = self.track(source).counted().sizes
        total = sum(map(counts.__getitem__, origin)) + self.per_request
        self._output(
            Track(
                output,
                None,
                self._lock,
                self.per_request,
                source=(counts, origin),
                total=total,
                rule=self.survivors,
            )
        )

    def moved(self, conversation: Conversation, source: Conversation) -> Sequence[int] | None:
        """Where ``conversation`` holds other objects than ``source`` does,
        among ``source``'s positions, when the measure already knows it
        (``conversation`` was found to continue ``source``, or is the
        rewrite that continues ``source``, the same strategy's rewrite on
        the last request); None when it does not. Every other position
        below ``len(source)`` holds the very object ``source`` holds. Costs
        nothing: a strategy that kept a note about ``source`` visits only
        these positions and what is new."""
        if conversation is source:
            return ()
        track = self.track(conversation)
        kin = track.kin
        if kin is None or kin[0] is not source:
            return None
        moved = kin[1]
        if moved is None:  # found to continue ``source`` by value: where, by identity
            moved = list(
                itertools.compress(itertools.count(), map(operator.is_not, conversation, source))
            )
            track.kin = (source, moved)
        return moved

    def estimated(self, conversation: Conversation) -> Mapping[int, tuple[str, ...]]:
        """The counter's ``estimates`` (what of a message's count is a stated
        estimate, ``"parts[i]: ..."`` lines) of each message of
        ``conversation`` that has any, by index. Each message of a line is
        asked about once, when first needed; a warm request of a growing
        conversation asks about its new messages only. Empty when the
        counter states no estimates."""
        find = getattr(self.counter, "estimates", None)
        if find is None:
            return {}
        line = self.track(conversation).line
        size = len(conversation)
        if line.looked < size:
            with self._lock:
                start = line.looked
                if start < size:
                    many = getattr(self.counter, "estimates_many", None)
                    news = line.messages[start:size]
                    found = many(news) if many is not None else tuple(map(find, news))
                    for k in itertools.compress(itertools.count(start), found):
                        line.estimated[k] = found[k - start]
                    line.looked = size
        estimated = line.estimated
        if not estimated or max(estimated) < size:
            return estimated
        return {i: lines for i, lines in estimated.items() if i < size}

    # --- the request sent last, for the prompt cache

    def sent(self, request: SentRequest | None) -> None:
        """Keep ``request`` (a pipeline result's ``sent``, by reference) as
        the request this conversation sent last; None keeps what was kept."""
        if request is not None:
            self._sent = request

    def previous(self, conversation: Sequence[Message]) -> SentRequest | None:
        """The request kept with `sent`, when ``conversation`` continues
        what it was given (starts with those messages, the very objects or
        equal ones, in order); else None. One C-level pass over that prefix,
        short-cut by identity."""
        found = self._sent
        if found is None:
            return None
        if not starts_with(conversation, found.received):
            return None
        return found

    # --- what strategies keep about the conversation

    def noted(self, owner: object) -> object | None:
        """What ``owner`` (a strategy's own key) kept with `note`, or
        None."""
        return self._notes.get(owner)

    def note(self, owner: object, value: object) -> None:
        """Keep ``value`` for ``owner``: what a strategy worked out for this
        conversation's last input, so that its next request works out only
        what changed. At most `NOTES` owners, the oldest out first; a
        value is only ever read back by its owner, which checks it against
        the input it is handed."""
        with self._lock:
            self._notes.put(owner, value)

    def _known(self, conversation: Conversation) -> bool:
        """Whether ``conversation`` has a track already (the very tuple)."""
        return any(t.conversation is conversation for t in (*self._tracks, *self._outputs))

    def _output(self, track: Track) -> None:
        self._outputs = (track, *self._outputs[: TRACKS - 1])


def _same_structure(was: Sequence[Message], now: Sequence[Message], rule: SurvivorRule) -> bool:
    """Whether each of ``now`` stands where the one of ``was`` did in every
    question a shape answers: the role, the tool calls, the tool results
    (C-level passes), and, for a user message or one with metadata, what
    it is to the survivor rule (from the person, pinned)."""
    if any(
        any(map(operator.ne, map(get, was), map(get, now)))
        for get in (_ROLE, _CALL_IDS, _RESULT_IDS)
    ):
        return False
    if rule.positional:
        return not any(
            w.role == "user" or w.metadata or n.metadata for w, n in zip(was, now, strict=True)
        )
    return all(
        rule.kind(w) == rule.kind(n)
        for w, n in zip(was, now, strict=True)
        if w.role == "user" or w.metadata or n.metadata or rule.pin
    )


_ROLE = operator.attrgetter("role")
_CALL_IDS = operator.attrgetter("call_ids")
_RESULT_IDS = operator.attrgetter("result_ids")


def _found_size(line: _Line, n: int) -> int:
    """How many of a conversation of ``n`` messages that continues ``line``
    the line knows already."""
    return min(n, len(line.messages))


def _common(a: Sequence[Message], b: Sequence[Message]) -> int:
    """How many leading messages ``a`` and ``b`` share (by value)."""
    size = min(len(a), len(b))
    if tuple(a[:size]) == tuple(b[:size]):
        return size
    differs = map(operator.ne, a[:size], b[:size])
    return next(itertools.compress(itertools.count(), differs), size)
