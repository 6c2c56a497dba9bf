"""The strategy contract.

A strategy is a plain callable ``(conversation, context) -> conversation``: it
takes a tuple of messages and returns a tuple of messages, the same tuple when
it changes nothing. It may instead return an `Outcome`, which also
carries a note for the report and the seam calls it made.

Strategies never enforce the survivor or tool-pairing invariants themselves:
the interpreter does that after every strategy (see `memrules._core.invariants`).
They may rely on reusing the input's message objects for what they keep: the
interpreter tells kept from new messages by identity.

A strategy is a value that keeps nothing between calls. One whose work per
message is dear may declare an incremental companion, which the interpreter
advances by what changed since the conversation's last request (see
`memrules._engine.incremental`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

import attrs

from memrules._core.budget import Budget
from memrules._core.conversation import ToolLinks
from memrules._core.messages import Conversation
from memrules._core.seam_protocols import SeamCall, Seams
from memrules._core.seam_records import DEFAULT_CONTEXT, IndexContext, Scope
from memrules._counting.measure import Measure
from memrules._counting.tokens import TokenCounter

DEFAULT_WARNING_MARKER = "memrules context warning:"

__all__ = [
    "DEFAULT_WARNING_MARKER",
    "Outcome",
    "Strategy",
    "StrategyContext",
    "StrategyFactory",
    "StrategyResult",
]


@attrs.frozen(kw_only=True, slots=True)
class StrategyContext:
    """What a strategy may read: the counter, the budget, the seams, the
    conversation's scope, the config's ``offload_turns``, the context
    warning's marker and the interpreter's settings. Read-only; strategies do no I/O but through the
    seams."""

    counter: TokenCounter
    budget: Budget = Budget.UNLIMITED
    seams: Seams = attrs.field(factory=Seams)
    offload_turns: int = 10
    warning_marker: str = DEFAULT_WARNING_MARKER
    user_first: bool = False
    """The interpreter keeps the first non-system message a user message
    when the input's was (the ``user_first`` setting)."""
    scope: Scope = attrs.field(factory=Scope)
    """Whose conversation this is (conversation, user, tenant): what
    ``offload`` files the messages it stores under."""
    index_context: IndexContext | None = DEFAULT_CONTEXT
    """What ``offload`` indexes a stored message by besides its own text
    (the config's ``index_context``; None: its own text only)."""
    measure: Measure = attrs.field(
        default=attrs.Factory(lambda self: Measure(self.counter), takes_self=True),
        eq=False,
        repr=False,
    )
    """Counts and tool links of the conversations the pipeline has seen
    (the pipeline's own, so that a strategy handed the tuple the interpreter
    just measured pays nothing more), and what the interpreter keeps there
    for warm requests (companions' states, memos); made for ``counter``
    when not given."""

    def sizes(self, conversation: Conversation) -> tuple[int, ...]:
        """The token count of each message of ``conversation``, in order."""
        return self.measure.sizes(conversation)

    def links(self, conversation: Conversation) -> ToolLinks:
        """Which messages of ``conversation`` tool ids tie together."""
        return self.measure.links(conversation)

    def survivors(self, conversation: Conversation) -> frozenset[int]:
        """The indices of the messages no strategy may remove or alter: the
        first system message, the task, the question, the latest user
        message and the pinned ones (the config's `survivors:` rule). A
        strategy keeps them; the interpreter discards an output that does
        not."""
        return self.measure.track(conversation).survivors()


@attrs.frozen(kw_only=True, slots=True)
class Outcome:
    """A strategy's result when it has more to say than the new messages."""

    messages: Conversation
    note: str = ""
    seam_calls: tuple[SeamCall, ...] = ()


StrategyResult: TypeAlias = Conversation | Outcome
Strategy: TypeAlias = Callable[[Conversation, StrategyContext], StrategyResult]
"""``(conversation, context) -> conversation | Outcome``."""

StrategyFactory: TypeAlias = Callable[..., Strategy]
"""Builds a strategy from its YAML parameters, given as keyword arguments.
Raises ``ValueError`` (naming ``param=value``) for parameters it cannot use."""
