"""A minimum step for any strategy: act once on a large block, or not at all.

Every change to old messages costs the provider's prompt cache everything
after it, so a strategy that saves a few hundred tokens each turn costs
more than it saves. ``min_step: N`` on any entry of ``strategies:`` (the
YAML reader wraps the strategy in `min_step`) keeps its output only
when it saves at least ``N`` tokens; otherwise the conversation stays as it
was and the action's note says what was saved. ``clear_tool_results``'s
``clear_at_least`` is the same rule inside one strategy.

>>> from memrules.strategies import trim_to_budget
>>> min_step(trim_to_budget(), 4000)
trim_to_budget(min_step=4000)
"""

from __future__ import annotations

import attrs

from memrules._core.messages import Conversation, Message
from memrules._engine.contract import Outcome, Strategy, StrategyContext, StrategyResult
from memrules._engine.incremental import run_strategy
from memrules.strategies._util import check_positive

__all__ = ["MinStep", "min_step"]


@attrs.frozen(slots=True, repr=False)
class MinStep:
    """``strategy``, its output kept only when it saves ``tokens`` tokens or more."""

    strategy: Strategy
    tokens: int

    def __call__(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        result = run_strategy(self.strategy, conversation, context)  # warm when it can be
        messages = result.messages if isinstance(result, Outcome) else result
        if messages is conversation or not isinstance(messages, tuple):
            return result  # nothing done, or not a conversation: the interpreter says so
        if not all(isinstance(m, Message) for m in messages):
            return result
        saved = context.measure.total(conversation) - context.measure.total(messages)
        if saved >= self.tokens:
            return result
        note = f"saved {saved} tokens, below min_step={self.tokens}; nothing was changed"
        calls = result.seam_calls if isinstance(result, Outcome) else ()
        return Outcome(messages=conversation, note=note, seam_calls=calls)

    def __repr__(self) -> str:
        inner = repr(self.strategy)
        if inner.endswith(")") and "(" in inner:
            head = inner[:-1]
            sep = "" if head.endswith("(") else ", "
            return f"{head}{sep}min_step={self.tokens})"
        return f"min_step({inner}, {self.tokens})"


def min_step(strategy: Strategy, tokens: int) -> Strategy:
    """``strategy``, acting only when it saves at least ``tokens`` tokens
    (``tokens=0``: always, ``strategy`` itself).

    Keeps: whatever ``strategy`` keeps; a step it refuses leaves the
    conversation as it was (the same tuple)."""
    check_positive("min_step", tokens, minimum=0)
    if tokens == 0:
        return strategy
    return MinStep(strategy, tokens)
