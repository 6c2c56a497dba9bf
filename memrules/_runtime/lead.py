"""A request that would start with something other than a user message.

Anthropic's and Gemini's APIs reject a request whose first message after
the system messages is not a user message (an assistant reply, a tool
call or its result), which a client that trims its own history sends, and
which compaction may leave when it drops the first turns. With ``repair``
on (the default), the pipeline's output is finished by `lead_with_user`:
the messages between the system messages and the first user message are
dropped (system messages among them stay), and with them the results of
the tool calls they held, wherever those results are. The report gets a
``repair`` action saying so. When no user message follows, nothing can
start the request: it is sent as it is, and ``input_problems`` says why a
provider may reject it.
"""

from __future__ import annotations

import attrs

from memrules._core.enforced import diff
from memrules._core.indices import IdsOf
from memrules._core.messages import Conversation, Message, ToolResult
from memrules._core.report import CompressionAction, CompressionResult
from memrules._engine.contract import StrategyContext

__all__ = ["LEAD_NOTE", "lead_with_user"]

LEAD_NOTE = (
    "dropped what came before the first user message after the system messages "
    "(Anthropic and Gemini reject a request that starts otherwise), with the results "
    "of the tool calls it held"
)


def _first_turn(messages: Conversation) -> int | None:
    return next((i for i, m in enumerate(messages) if m.role != "system"), None)


def _without_results(message: Message, calls: set[str]) -> Message | None:
    """``message`` without the results of ``calls`` (itself when it holds
    none of them; None when nothing is left)."""
    if not calls or not any(
        isinstance(p, ToolResult) and p.call_id in calls for p in message.parts
    ):
        return message
    parts = tuple(
        p for p in message.parts if not (isinstance(p, ToolResult) and p.call_id in calls)
    )
    return message.evolve(parts=parts) if parts else None


def lead_with_user(result: CompressionResult, context: StrategyContext) -> CompressionResult:
    """``result`` with its messages starting, after the system messages, with
    a user message (see the module docs); ``result`` itself when they do, or
    when no user message follows."""
    messages = result.messages
    first = _first_turn(messages)
    if first is None or messages[first].role == "user":
        return result
    user = next((i for i in range(first, len(messages)) if messages[i].role == "user"), None)
    report = result.report
    if user is None:
        problem = (
            f"messages[{first}]: the request starts with a {messages[first].role} message after "
            "the system messages and no user message follows; Anthropic and Gemini reject it"
        )
        if problem in report.input_problems:
            return result
        problems = (*report.input_problems, problem)
        return attrs.evolve(result, report=attrs.evolve(report, input_problems=problems))
    dropped = {i for i in range(first, user) if messages[i].role != "system"}
    calls = {c for i in dropped for c in messages[i].call_ids}
    kept: list[Message] = []
    origin: list[int | None] = []
    mended: dict[int, int] = {}
    for i, m in enumerate(messages):
        if i in dropped:
            continue
        left = _without_results(m, calls)
        if left is None:
            continue
        if left is not m:
            mended[len(kept)] = i
        origin.append(i if left is m else None)
        kept.append(left)
    after = tuple(kept)
    enforced = diff(messages, after, origin, tuple(sorted(calls)), mended)
    tokens = context.measure.total(context.measure.conversation(after))
    action = CompressionAction(
        strategy="repair",
        pass_number=report.passes,
        messages_before=len(messages),
        messages_after=len(after),
        tokens_before=report.tokens_after,
        tokens_after=tokens,
        removed=enforced.removed,
        replaced=enforced.replaced,
        inserted=enforced.inserted,
        removed_ids=IdsOf(messages, enforced.removed),
        closed_calls=enforced.closed_calls,
        note=LEAD_NOTE,
    )
    input_origin = report.origin
    report = attrs.evolve(
        report,
        messages_after=len(after),
        tokens_after=tokens,
        actions=(*report.actions, action),
        origin=tuple(
            None if j is None or j >= len(input_origin) else input_origin[j] for j in origin
        ),
    )
    return attrs.evolve(result, messages=after, report=report)
