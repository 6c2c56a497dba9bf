"""Budgets: when a conversation is too big, and how they are resolved.

The trigger rules: ``max_messages`` wins over a token budget; a token
budget is ``max_tokens`` or ``max_fraction`` × the context window (never both);
with no trigger the budget is :attr:`Budget.UNLIMITED` and nothing is compacted.
``safety_margin`` keeps a fraction of a token budget free: the budget is
``floor((1 - safety_margin) × limit)`` (at least 1), so counts that may fall
short of the provider's by a little still fit.
A message budget is exceeded by *more* messages than the limit; a token budget
is reached when usage is *at or above* the limit.
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal, Protocol

import attrs

__all__ = ["Budget", "ContextWindowResolver", "Trigger", "resolve_budget"]

BudgetKind = Literal["unlimited", "messages", "tokens"]


@attrs.frozen(kw_only=True, slots=True)
class Budget:
    """A size limit on a conversation, in messages or tokens, or none."""

    kind: BudgetKind
    limit: int = 0

    UNLIMITED: ClassVar[Budget]

    @classmethod
    def messages(cls, limit: int) -> Budget:
        """Over budget when there are more than ``limit`` messages."""
        return cls(kind="messages", limit=limit)

    @classmethod
    def tokens(cls, limit: int) -> Budget:
        """Over budget when usage reaches ``limit`` tokens."""
        return cls(kind="tokens", limit=limit)

    @property
    def is_unlimited(self) -> bool:
        return self.kind == "unlimited"

    def is_over(self, *, messages: int, tokens: int) -> bool:
        """Whether a conversation of this size must be compacted."""
        if self.kind == "messages":
            return messages > self.limit
        if self.kind == "tokens":
            return tokens >= self.limit
        return False

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "limit": None if self.is_unlimited else self.limit}

    def __repr__(self) -> str:
        if self.is_unlimited:
            return "Budget.UNLIMITED"
        return f"Budget.{self.kind}({self.limit})"


Budget.UNLIMITED = Budget(kind="unlimited")


class ContextWindowResolver(Protocol):
    """Tells the context window of the model a request goes to, when it knows."""

    def __call__(self, model: str | None, /) -> int | None: ...


@attrs.frozen(kw_only=True, slots=True)
class Trigger:
    """The trigger settings of a config, validated when the config is built."""

    max_messages: int | None = None
    max_tokens: int | None = None
    max_fraction: float | None = 0.8
    context_window_tokens: int = 128_000
    safety_margin: float = 0.0


def resolve_budget(trigger: Trigger, *, window: int | None = None) -> Budget:
    """The budget ``trigger`` sets, for a context ``window`` (the resolver's
    answer) or, when that is None, ``trigger.context_window_tokens``, less
    its ``safety_margin``."""
    if trigger.max_messages is not None:
        return Budget.messages(trigger.max_messages)
    if trigger.max_tokens is not None:
        limit = trigger.max_tokens
    elif trigger.max_fraction is not None:
        base = trigger.context_window_tokens if window is None else window
        limit = max(1, math.floor(trigger.max_fraction * base))
    else:
        return Budget.UNLIMITED
    if trigger.safety_margin:
        limit = max(1, math.floor((1 - trigger.safety_margin) * limit))
    return Budget.tokens(limit)
