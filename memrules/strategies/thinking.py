"""Old thinking out: ``clear_thinking`` removes the thinking and reasoning
of all but the newest assistant turns.

A model's thinking is read once, by the model, in the turn it was made;
sent back on every later request it is tokens that change nothing
(Anthropic drops previous turns' thinking from its own count for that
reason, but a client that resends it still pays to send it, and other
providers bill it). One thing must not be cleared: the assistant turns of
a tool-use loop still in progress. Anthropic rejects a request whose
latest assistant turn of a tool-use loop lost its thinking blocks (with
thinking enabled, the assistant message whose ``tool_use`` the request
answers must keep them, as sent), and OpenAI rejects a function call
whose reasoning item went missing while its loop runs; so every
assistant message after the latest turn start keeps its thinking, byte
for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from memrules._core.conversation import latest_turn_start
from memrules._core.messages import Conversation, Message, Opaque, Part, Text
from memrules._engine.contract import Outcome, Strategy, StrategyContext, StrategyResult
from memrules.strategies._util import check_positive
from memrules.strategies.registry import describe, register

__all__ = ["THINKING_CLEARED", "clear_thinking", "is_thinking"]

THINKING_CLEARED = "[memrules: thinking cleared to save context]"
"""What an assistant message that held only thinking says once it is cleared
(providers refuse an empty message)."""

_THINKING_TYPES = frozenset(("thinking", "redacted_thinking", "reasoning"))


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def is_thinking(part: Part) -> bool:
    """Whether ``part`` is a model's thinking or reasoning: Anthropic's
    ``thinking`` and ``redacted_thinking`` blocks, an OpenAI ``reasoning``
    item, or a part of no provider of those kinds."""
    if type(part) is not Opaque:
        return False
    kind = _get(part.payload, "type")
    if not isinstance(kind, str):
        kind = part.kind.rpartition(":")[2]
    return kind in _THINKING_TYPES


def _holds_thinking(message: Message) -> bool:
    return message.role == "assistant" and any(is_thinking(p) for p in message.parts)


@attrs.frozen(slots=True, repr=False)
class _ClearThinking:
    keep_turns: int

    def __call__(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        holding = [i for i, m in enumerate(conversation) if _holds_thinking(m)]
        if not holding:
            return conversation
        start = latest_turn_start(conversation)
        if start is None:  # no turn has started: all of it is the loop in progress
            return conversation
        newest = set(holding[-self.keep_turns :]) if self.keep_turns else set()
        cleared_ones = [i for i in holding if i < start and i not in newest]
        if not cleared_ones:
            return conversation
        count = context.counter.count
        out = list(conversation)
        n = saved = 0
        for i in cleared_ones:
            cleared_message = _cleared(conversation[i])
            gain = count(conversation[i]) - count(cleared_message)
            if gain < 0:  # the placeholder costs more than the thinking did
                continue
            out[i] = cleared_message
            n += 1
            saved += gain
        if not n:
            return conversation
        cleared = tuple(out)
        note = f"cleared the thinking of {n} assistant turns, {saved} tokens"
        return Outcome(messages=cleared, note=note)

    def __repr__(self) -> str:
        return describe("clear_thinking", self)


def _cleared(message: Message) -> Message:
    parts = tuple(p for p in message.parts if not is_thinking(p))
    return message.evolve(parts=parts or (Text(text=THINKING_CLEARED),))


@register("clear_thinking")
def clear_thinking(*, keep_turns: int = 1) -> Strategy:
    """Remove the thinking and reasoning parts of every assistant message
    but the newest ``keep_turns`` that hold some; an assistant message of
    thinking alone keeps a one-line placeholder. The assistant messages of
    the tool-use loop in progress (after the latest turn start, see
    `latest_turn_start`) always keep
    theirs, whatever ``keep_turns`` is: the provider rejects a loop whose
    thinking went missing. A message whose placeholder would cost more than
    its thinking (by the pipeline's counter) is left as it is.

    Keeps: survivors untouched, order, every message and tool id, the
    kept thinking byte for byte, the same tuple when nothing is cleared.
    """
    check_positive("keep_turns", keep_turns, minimum=0)
    return _ClearThinking(keep_turns)
