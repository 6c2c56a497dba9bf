"""Budgets: when a conversation is too big, and how they are resolved.

The trigger rules: ``max_messages`` wins over a token budget; a token
budget is ``max_tokens`` or ``max_fraction`` × the context window (never both);
with no trigger the budget is `UNLIMITED` and nothing is compacted.
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

from memrules._core.errors import ConfigError, ConfigProblem

__all__ = ["Budget", "CachePolicy", "ContextWindowResolver", "Trigger", "resolve_budget"]

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


_PROVIDERS = ("openai", "anthropic")


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@attrs.frozen(kw_only=True, slots=True)
class CachePolicy:
    """How a pipeline keeps the provider's prompt cache (the ``cache:``
    section), validated on construction.

    ``compact_to``: when the trigger fires, compact down to this target (a
    fraction of the budget below 1, or a whole number of tokens) rather
    than to just under the budget, so that the requests that follow only
    append until the trigger fires again. Given the conversation's previous
    request, a pipeline with a ``cache:`` section sends what it sent then,
    plus the new messages, for as long as that stays under the budget.
    ``cold_trigger``: a fraction of the budget at which compaction runs
    when the cache has expired anyway (the previous request is older than
    the provider's lifetime); while it is warm, compaction waits for the
    budget itself. ``provider`` (``openai`` or ``anthropic``) and
    ``model`` (the request's when None) choose the rule the plugin measures
    the cache by.

    >>> CachePolicy(compact_to=0.5).target(Budget.tokens(32000))
    16000
    """

    compact_to: float | int | None = None
    cold_trigger: float | None = None
    provider: str = "openai"
    model: str | None = None

    def __attrs_post_init__(self) -> None:
        problems = []
        to = self.compact_to
        fraction = isinstance(to, float) and 0 < to < 1
        tokens = isinstance(to, int) and not isinstance(to, bool) and to >= 1
        if to is not None and not (fraction or tokens):
            message = (
                f"compact_to={to!r} must be a fraction of the budget above 0 and below 1, "
                "a whole number of tokens of at least 1, or null"
            )
            problems.append(ConfigProblem(message=message, yaml_path="cache.compact_to"))
        cold = self.cold_trigger
        if cold is not None and not (_number(cold) and 0 < cold <= 1):
            message = f"cold_trigger={cold!r} must be a number above 0 and at most 1, or null"
            problems.append(ConfigProblem(message=message, yaml_path="cache.cold_trigger"))
        if self.provider not in _PROVIDERS:
            message = f"provider={self.provider!r} must be one of {', '.join(_PROVIDERS)}"
            problems.append(ConfigProblem(message=message, yaml_path="cache.provider"))
        if self.model is not None and not (isinstance(self.model, str) and self.model):
            message = f"model={self.model!r} must be a model name or null"
            problems.append(ConfigProblem(message=message, yaml_path="cache.model"))
        if problems:
            raise ConfigError(problems)

    def target(self, budget: Budget) -> int | None:
        """The token count compaction aims below once ``budget`` is reached
        (never above the budget); None without ``compact_to`` or a token
        budget."""
        if self.compact_to is None or budget.kind != "tokens":
            return None
        if isinstance(self.compact_to, float):
            return max(1, math.floor(self.compact_to * budget.limit))
        return min(self.compact_to, budget.limit)

    def cold_limit(self, budget: Budget) -> int | None:
        """The token count at which compaction runs when the cache has
        expired; None without ``cold_trigger`` or a token budget."""
        if self.cold_trigger is None or budget.kind != "tokens":
            return None
        return max(1, math.floor(self.cold_trigger * budget.limit))
