"""The pipeline interpreter: runs strategies in order until the budget is met.

Pure: it takes a conversation, named strategies and a context, and returns
the new conversation and a report. With a trigger it re-measures after each
strategy that acted and stops once under budget; it runs at most
``max_passes`` passes and stops early when a whole pass changes nothing. A
strategy that raises, returns something that is not a conversation, or
breaks an invariant has its output discarded and the error recorded; the
pipeline goes on.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import attrs

from memrules._budget import Budget
from memrules._errors import StrategyError
from memrules._invariants import Enforced, enforce
from memrules._messages import Conversation, Message
from memrules._report import CompressionAction, CompressionReport, CompressionResult, StopReason
from memrules._typing import Outcome, Strategy, StrategyContext
from memrules.seams import SeamCall

__all__ = ["MAX_PASSES", "NamedStrategy", "run_once", "run_pipeline"]

MAX_PASSES = 4


@attrs.frozen(kw_only=True, slots=True)
class NamedStrategy:
    """A strategy and the name the report gives it (its YAML ``type``)."""

    name: str
    strategy: Strategy


@attrs.frozen(kw_only=True, slots=True)
class _Step:
    action: CompressionAction
    enforced: Enforced
    tokens: int


def _total(conversation: Conversation, context: StrategyContext) -> int:
    return context.measure.total(conversation)


def _as_conversation(result: object) -> tuple[Conversation, str, tuple[SeamCall, ...]] | str:
    note = ""
    seam_calls: tuple[SeamCall, ...] = ()
    if isinstance(result, Outcome):
        note, seam_calls, result = result.note, result.seam_calls, result.messages
    if isinstance(result, list):
        result = tuple(result)
    if not isinstance(result, tuple):
        return f"returned {type(result).__name__}, expected a tuple of messages"
    for j, m in enumerate(result):
        if not isinstance(m, Message):
            return f"returned {type(m).__name__} at index {j}, expected Message"
    return result, note, seam_calls


def _step(
    named: NamedStrategy,
    conversation: Conversation,
    tokens: int,
    context: StrategyContext,
    pass_number: int,
) -> _Step:
    """Run one strategy, hold its output to the invariants, and describe it."""
    error: str | None = None
    note = ""
    seam_calls: tuple[SeamCall, ...] = ()
    enforced: Enforced
    try:
        result = named.strategy(conversation, context)
    except Exception as exc:  # a strategy error never fails the pipeline
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, StrategyError):
            seam_calls = exc.seam_calls
        enforced = enforce(conversation, conversation)
    else:
        checked = _as_conversation(result)
        if isinstance(checked, str):
            error = checked
            enforced = enforce(conversation, conversation)
        else:
            output, note, seam_calls = checked
            enforced = enforce(conversation, output, measure=context.measure)
            error = enforced.violation

    # Measured on the new tuple itself, which the next strategy is handed:
    # the counter remembers its sizes, so that strategy pays nothing more.
    after = tokens
    if enforced.changed:
        if None not in enforced.origin:
            sizes = context.measure.sizes(conversation)
            kept = tuple(map(sizes.__getitem__, enforced.origin))  # type: ignore[arg-type]
            context.measure.remember(enforced.messages, kept)
        after = _total(enforced.messages, context)
    action = CompressionAction(
        strategy=named.name,
        pass_number=pass_number,
        messages_before=len(conversation),
        messages_after=len(enforced.messages),
        tokens_before=tokens,
        tokens_after=after,
        removed=enforced.removed,
        replaced=enforced.replaced,
        inserted=enforced.inserted,
        removed_ids=_ids(conversation, enforced.removed),
        replaced_ids=_ids(conversation, [i for i, _ in enforced.replaced]),
        closed_calls=enforced.closed_calls,
        note=note,
        error=error,
        seam_calls=seam_calls,
    )
    return _Step(action=action, enforced=enforced, tokens=after)


_ID = operator.attrgetter("id")


def _ids(conversation: Conversation, indices: Sequence[int]) -> tuple[str, ...]:
    ids = map(_ID, map(conversation.__getitem__, indices))
    return tuple(i for i in ids if i is not None)


def _compose(origin: tuple[int | None, ...], step: Enforced) -> tuple[int | None, ...]:
    if None not in step.origin:
        return tuple(map(origin.__getitem__, step.origin))  # type: ignore[arg-type]
    return tuple(None if i is None else origin[i] for i in step.origin)


def _report(
    conversation: Conversation,
    final: Conversation,
    *,
    budget: Budget,
    stop: StopReason,
    tokens_before: int,
    tokens_after: int,
    passes: int,
    actions: Sequence[CompressionAction],
    origin: tuple[int | None, ...],
) -> CompressionResult:
    report = CompressionReport(
        budget=budget,
        stop_reason=stop,
        messages_before=len(conversation),
        messages_after=len(final),
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        passes=passes,
        actions=tuple(actions),
        origin=origin,
    )
    return CompressionResult(messages=final, report=report)


def run_pipeline(
    conversation: Conversation,
    strategies: Sequence[NamedStrategy],
    context: StrategyContext,
    *,
    max_passes: int = MAX_PASSES,
) -> CompressionResult:
    """Compact ``conversation`` until it fits ``context.budget``.

    Nothing happens when the budget is unlimited (``no_trigger``) or already
    met (``under_budget`` with no passes). Otherwise passes run the
    strategies in order, re-measuring after each one that acted.
    """
    budget = context.budget
    tokens = _total(conversation, context)
    current = conversation
    origin: tuple[int | None, ...] = tuple(range(len(conversation)))
    actions: list[CompressionAction] = []

    def done(stop: StopReason, passes: int) -> CompressionResult:
        return _report(
            conversation,
            current,
            budget=budget,
            stop=stop,
            tokens_before=tokens_before,
            tokens_after=tokens,
            passes=passes,
            actions=actions,
            origin=origin,
        )

    tokens_before = tokens
    if budget.is_unlimited:
        return done(StopReason.NO_TRIGGER, 0)
    if not budget.is_over(messages=len(current), tokens=tokens):
        return done(StopReason.UNDER_BUDGET, 0)
    for pass_number in range(1, max_passes + 1):
        progressed = False
        for named in strategies:
            step = _step(named, current, tokens, context, pass_number)
            actions.append(step.action)
            if not step.enforced.changed:
                continue
            progressed = True
            current, tokens = step.enforced.messages, step.tokens
            origin = _compose(origin, step.enforced)
            if not budget.is_over(messages=len(current), tokens=tokens):
                return done(StopReason.UNDER_BUDGET, pass_number)
        if not progressed:
            return done(StopReason.NO_PROGRESS, pass_number)
    return done(StopReason.PASS_LIMIT, max_passes)


def run_once(
    conversation: Conversation,
    strategies: Sequence[NamedStrategy],
    context: StrategyContext,
) -> CompressionResult:
    """Run every strategy once, in order, with no budget (``compress``)."""
    context = attrs.evolve(context, budget=Budget.UNLIMITED)
    tokens_before = tokens = _total(conversation, context)
    current = conversation
    origin: tuple[int | None, ...] = tuple(range(len(conversation)))
    actions: list[CompressionAction] = []
    for named in strategies:
        step = _step(named, current, tokens, context, 1)
        actions.append(step.action)
        if step.enforced.changed:
            current, tokens = step.enforced.messages, step.tokens
            origin = _compose(origin, step.enforced)
    return _report(
        conversation,
        current,
        budget=Budget.UNLIMITED,
        stop=StopReason.SINGLE_PASS,
        tokens_before=tokens_before,
        tokens_after=tokens,
        passes=1,
        actions=actions,
        origin=origin,
    )
