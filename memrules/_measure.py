"""What a pipeline remembers about the conversations it measured.

The interpreter, the strategies it runs and the invariant check all ask the
same questions of the same tuples (each message's count, which messages a
tool id ties together), and an agent loop asks them of a tuple that grew by
a message since the last request. A :class:`Measure` answers them and keeps
the answers for the last few tuples, so that asking again costs nothing and
a tuple that only appends costs only what it adds.

A :class:`Measure` is owned by one :class:`~memrules.Pipeline` (and handed
to strategies in their context). It is safe to share between threads: every
memo is an immutable value that a call replaces whole, so a thread sees
either the old memo or the new one; a race costs a recomputation, never a
wrong answer. Tuples are remembered by identity, which is safe because the
memo holds them (an identity cannot be reused while it does) and they are
immutable.
"""

from __future__ import annotations

from memrules._conversation import LinkState, ToolLinks, extends, link_state
from memrules._framing import per_request_tokens
from memrules._messages import Conversation
from memrules._repair import InputProblem, input_problems
from memrules._tokens import TokenCounter

__all__ = ["Measure"]

_KEPT = 2  # a request's input and the pipeline's output


class Measure:
    """Each message's count and the tool links of conversations, remembered
    for the last tuples asked about (see the module docs)."""

    __slots__ = ("_links", "_problems", "_sizes", "counter", "per_request")

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.per_request = per_request_tokens(counter)
        self._sizes: tuple[tuple[Conversation, tuple[int, ...]], ...] = ()
        self._links: tuple[Conversation, LinkState] | None = None
        self._problems: tuple[Conversation, tuple[InputProblem, ...]] | None = None

    def problems(self, conversation: Conversation) -> tuple[InputProblem, ...]:
        """What is already broken in ``conversation`` (see :mod:`memrules._repair`)."""
        memo = self._problems
        if memo is not None and memo[0] is conversation:
            return memo[1]
        found = input_problems(conversation)
        self._problems = (conversation, found)
        return found

    def sizes(self, conversation: Conversation) -> tuple[int, ...]:
        """The count of each message of ``conversation``, in order."""
        remembered = self._sizes
        for seen, sizes in remembered:
            if seen is conversation:
                return sizes
        for seen, sizes in remembered:
            if extends(conversation, seen):
                sizes = sizes + self.counter.counts(conversation[len(seen) :])
                break
        else:
            sizes = self.counter.counts(conversation)
        self.remember(conversation, sizes)
        return sizes

    def total(self, conversation: Conversation) -> int:
        """The tokens of ``conversation`` as one request: its messages, and
        the counter's ``per_request`` tokens (the reply's priming)."""
        return sum(self.sizes(conversation)) + self.per_request

    def remember(self, conversation: Conversation, sizes: tuple[int, ...]) -> None:
        """Take ``sizes`` as the counts of ``conversation`` for the next
        :meth:`sizes` call: for a tuple made from a measured one by deleting
        messages, whose counts the caller already has."""
        self._sizes = ((conversation, sizes), *self._sizes[: _KEPT - 1])

    def links(self, conversation: Conversation) -> ToolLinks:
        """The tool links of ``conversation``, extended from the last tuple
        asked about when ``conversation`` appends to it."""
        memo = self._links
        if memo is not None:
            seen, state = memo
            if seen is conversation:
                return state.links
            state = link_state(conversation, state if extends(conversation, seen) else None)
        else:
            state = link_state(conversation)
        self._links = (conversation, state)
        return state.links
