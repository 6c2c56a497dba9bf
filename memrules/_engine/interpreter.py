"""The pipeline interpreter: runs strategies in order until the budget is met.

Pure: it takes a conversation, named strategies and a context, and returns
the new conversation and a report. With a trigger it re-measures after each
strategy that acted and stops once under budget; it runs at most
``max_passes`` passes and stops early when a whole pass changes nothing. A
strategy that raises, returns something that is not a conversation, or
breaks an invariant has its output discarded and the error recorded; the
pipeline goes on. Every strategy is called through `run_strategy`, which
advances a strategy's declared incremental companion from what it made of
the conversation's last request (see `memrules._engine.incremental`).
Observers (`memrules._engine.observe`) are called around the run and each
strategy run; without any, the interpreter pays nothing.
"""

from __future__ import annotations

import collections
import functools
import itertools
import operator
from collections.abc import Callable, Sequence

import attrs

from memrules._core.budget import Budget
from memrules._core.errors import StrategyError
from memrules._core.indices import IdsOf
from memrules._core.invariants import Enforced, enforce
from memrules._core.messages import Conversation, Message
from memrules._core.repair import InputProblem
from memrules._core.repair import repair as repair_input
from memrules._core.report import (
    CompressionAction,
    CompressionReport,
    CompressionResult,
    StopReason,
)
from memrules._core.seam_protocols import SeamCall
from memrules._engine.contract import Outcome, Strategy, StrategyContext
from memrules._engine.incremental import run_strategy
from memrules._engine.observe import PipelineObserver, RunInfo, StepInfo, observe

__all__ = ["MAX_PASSES", "Aim", "NamedStrategy", "run_once", "run_pipeline"]

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
    if set(map(type, result)) <= {Message}:
        return result, note, seam_calls
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
        result = run_strategy(named.strategy, conversation, context)
    except Exception as exc:  # a strategy error never fails the pipeline
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, StrategyError):
            seam_calls = exc.seam_calls
        enforced = enforce(conversation, conversation)
    else:
        # the input itself (or an outcome of it) was checked when it was made
        checked = (conversation, "", ()) if result is conversation else _as_conversation(result)
        if isinstance(checked, str):
            error = checked
            enforced = enforce(conversation, conversation)
        else:
            output, note, seam_calls = checked
            enforced = enforce(
                conversation,
                output,
                measure=context.measure,
                user_first=context.user_first,
            )
            error = enforced.violation

    # Measured on the new tuple itself, which the next strategy is handed:
    # the measure remembers its counts, so that strategy pays nothing more.
    after = tokens
    if enforced.changed:
        if None not in enforced.origin:
            origin: tuple[int, ...] = enforced.origin  # type: ignore[assignment]
            context.measure.derive(enforced.messages, conversation, origin)
        else:
            changed = _in_place(conversation, enforced)
            if changed is not None:
                context.measure.rewrite(enforced.messages, conversation, changed)
        after = _total(enforced.messages, context)
    action = _action(
        named.name,
        pass_number,
        conversation,
        tokens,
        enforced,
        after,
        note=note,
        error=error,
        seam_calls=seam_calls,
    )
    return _Step(action=action, enforced=enforced, tokens=after)


def _in_place(conversation: Conversation, enforced: Enforced) -> list[int] | None:
    """The positions an output that replaced messages in place (as many,
    each where the one it replaced was) replaced; None for any other."""
    if len(enforced.messages) != len(conversation) or enforced.removed or enforced.inserted:
        return None
    replaced = enforced.replaced
    if not all(map(operator.eq, map(_FIRST, replaced), map(_SECOND, replaced))):
        return None
    return list(map(_FIRST, replaced))


_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)


def _action(
    name: str,
    pass_number: int,
    conversation: Conversation,
    tokens: int,
    enforced: Enforced,
    after: int,
    *,
    note: str = "",
    error: str | None = None,
    seam_calls: tuple[SeamCall, ...] = (),
) -> CompressionAction:
    return CompressionAction(
        strategy=name,
        pass_number=pass_number,
        messages_before=len(conversation),
        messages_after=len(enforced.messages),
        tokens_before=tokens,
        tokens_after=after,
        removed=enforced.removed,
        replaced=enforced.replaced,
        inserted=enforced.inserted,
        removed_ids=IdsOf(conversation, enforced.removed),
        replaced_ids=_ids(conversation, list(map(_FIRST, enforced.replaced))),
        closed_calls=enforced.closed_calls,
        note=note,
        error=error,
        seam_calls=seam_calls,
    )


_ID = operator.attrgetter("id")


def _ids(conversation: Conversation, indices: Sequence[int]) -> tuple[str, ...]:
    ids = map(_ID, map(conversation.__getitem__, indices))
    return tuple(filter(_GIVEN, ids))


_GIVEN = functools.partial(operator.is_not, None)


def _compose(origin: Sequence[int | None], step: Enforced) -> Sequence[int | None]:
    if isinstance(origin, range) and origin.start == 0 and origin.step == 1:
        return step.origin  # the input's own indices: nothing to map
    if None not in step.origin:
        return tuple(map(origin.__getitem__, step.origin))  # type: ignore[arg-type]
    replaced = step.replaced
    if (
        len(step.origin) == len(origin)
        and not step.removed
        and not step.inserted
        and all(map(operator.eq, map(_FIRST, replaced), map(_SECOND, replaced)))
    ):
        # Replaced in place: the origin as it was, the replaced ones new.
        composed = list(origin)
        collections.deque(
            map(composed.__setitem__, map(_FIRST, replaced), itertools.repeat(None)), maxlen=0
        )
        return tuple(composed)
    where = dict(enumerate(origin))  # a new message (None) stays new
    return tuple(map(where.get, step.origin))  # type: ignore[arg-type]


@attrs.define
class _Run:
    """One run's progress: the current messages, their tokens, where each
    came from, and the actions so far. Local to one run, never shared."""

    conversation: Conversation
    current: Conversation
    tokens: int
    origin: Sequence[int | None]  # a range until something changes
    problems: tuple[str, ...]
    counter: str
    actions: list[CompressionAction] = attrs.Factory(list)

    def take(self, step: _Step) -> bool:
        """Record ``step``; True when it changed the messages."""
        self.actions.append(step.action)
        if not step.enforced.changed:
            return False
        self.current, self.tokens = step.enforced.messages, step.tokens
        self.origin = _compose(self.origin, step.enforced)
        return True

    def done(
        self, budget: Budget, stop: StopReason, passes: int, tokens_before: int
    ) -> CompressionResult:
        report = CompressionReport(
            budget=budget,
            stop_reason=stop,
            messages_before=len(self.conversation),
            messages_after=len(self.current),
            tokens_before=tokens_before,
            tokens_after=self.tokens,
            passes=passes,
            actions=tuple(self.actions),
            origin=tuple(self.origin),
            input_problems=self.problems,
            counter=self.counter,
        )
        return CompressionResult(messages=self.current, report=report)


def _repair_step(
    conversation: Conversation,
    tokens: int,
    context: StrategyContext,
    problems: tuple[InputProblem, ...],
) -> _Step:
    enforced = repair_input(conversation, problems)
    after = _total(enforced.messages, context) if enforced.changed else tokens
    note = f"removed what {len(problems)} input problems named"
    return _Step(
        action=_action("repair", 0, conversation, tokens, enforced, after, note=note),
        enforced=enforced,
        tokens=after,
    )


def _carry_step(
    conversation: Conversation, tokens: int, context: StrategyContext, carry: Enforced
) -> _Step:
    if None not in carry.origin:
        origin: tuple[int, ...] = carry.origin  # type: ignore[assignment]
        context.measure.derive(carry.messages, conversation, origin)
    after = _total(carry.messages, context)
    note = "sent what the previous request sent, then the new messages"
    return _Step(
        action=_action("previous", 0, conversation, tokens, carry, after, note=note),
        enforced=carry,
        tokens=after,
    )


def _begin(
    conversation: Conversation,
    context: StrategyContext,
    *,
    repair: bool,
    watch: _Watch | None = None,
    carry: Enforced | None = None,
) -> _Run:
    """A run of ``conversation``: with ``carry``, first what the previous
    request sent plus the new messages (a ``previous`` action, pass 0);
    then its input problems found and, with ``repair``, removed (a
    ``repair`` action, pass 0)."""
    tokens = _total(conversation, context)
    problems = context.measure.problems(conversation)
    run = _Run(
        conversation=conversation,
        current=conversation,
        tokens=tokens,
        origin=range(len(conversation)),
        problems=tuple(map(str, problems)),
        counter=context.counter.name,
    )
    if carry is not None:

        def carried() -> _Step:
            return _carry_step(conversation, tokens, context, carry)

        run.take(carried() if watch is None else watch.step("previous", 0, -1, run, carried))
        if problems:
            problems = context.measure.problems(run.current)
            conversation, tokens = run.current, run.tokens
    if repair and problems:

        def work() -> _Step:
            return _repair_step(conversation, tokens, context, problems)

        step = work() if watch is None else watch.step("repair", 0, -1, run, work)
        run.take(step)
    return run


@attrs.frozen(slots=True)
class _Watch:
    """The observers of one run, and what they are told about it."""

    observers: Sequence[PipelineObserver]
    info: RunInfo

    def step(
        self, name: str, pass_number: int, index: int, run: _Run, work: Callable[[], _Step]
    ) -> _Step:
        info = StepInfo(
            strategy=name,
            pass_number=pass_number,
            index=index,
            messages=len(run.current),
            tokens=run.tokens,
            run=self.info,
        )
        steps: list[_Step] = []

        def proceed() -> CompressionAction:
            steps.append(work())
            return steps[0].action

        observe(self.observers, "observe_step", info, proceed)
        return steps[0]


def _watch(
    observers: Sequence[PipelineObserver],
    operation: str,
    conversation: Conversation,
    strategies: Sequence[NamedStrategy],
    context: StrategyContext,
    max_passes: int,
    conversation_id: str | None,
) -> _Watch | None:
    if not observers:
        return None
    info = RunInfo(
        operation=operation,
        counter=context.counter.name,
        budget=context.budget,
        messages=len(conversation),
        strategies=tuple(s.name for s in strategies),
        max_passes=max_passes,
        conversation_id=conversation_id,
        conversation=conversation,
    )
    return _Watch(tuple(observers), info)


def _run_step(
    watch: _Watch | None,
    named: NamedStrategy,
    index: int,
    run: _Run,
    context: StrategyContext,
    pass_number: int,
) -> _Step:
    if watch is None:
        return _step(named, run.current, run.tokens, context, pass_number)
    current, tokens = run.current, run.tokens
    return watch.step(
        named.name,
        pass_number,
        index,
        run,
        lambda: _step(named, current, tokens, context, pass_number),
    )


def run_pipeline(
    conversation: Conversation,
    strategies: Sequence[NamedStrategy],
    context: StrategyContext,
    *,
    max_passes: int = MAX_PASSES,
    repair: bool = False,
    observers: Sequence[PipelineObserver] = (),
    conversation_id: str | None = None,
    aim: Aim | None = None,
) -> CompressionResult:
    """Compact ``conversation`` until it fits ``context.budget``.

    Nothing happens when the budget is unlimited (``no_trigger``) or already
    met (``under_budget`` with no passes). Otherwise passes run the
    strategies in order, re-measuring after each one that acted. With
    ``repair``, broken input is removed first (see `memrules._core.repair`).
    ``aim`` (a ``cache:`` section's) starts from what the previous request
    sent, may fire the trigger early, compacts down to a lower target and
    finishes the result (the cache measure) before observers see it.
    ``observers`` watch the run and each strategy run; ``conversation_id``
    is only told to them.
    """
    aim = _NO_AIM if aim is None else aim
    watch = _watch(
        observers, "apply", conversation, strategies, context, max_passes, conversation_id
    )

    def work() -> CompressionResult:
        result = _apply(conversation, strategies, context, max_passes, repair, watch, aim)
        return result if aim.finish is None else aim.finish(result)

    if watch is None:
        return work()
    return observe(watch.observers, "observe_run", watch.info, work)


@attrs.frozen(kw_only=True, slots=True)
class Aim:
    """What a ``cache:`` section changes in a run: ``carry``, the input
    with what the previous request sent in place of its old messages (the
    invariants held); ``trigger``, a token count that fires the trigger
    before the budget does (the cache has expired anyway); ``target``, the
    token count compaction aims below once it fires (strategies see it as
    their budget); ``finish``, applied to the result inside the run."""

    carry: Enforced | None = None
    trigger: int | None = None
    target: int | None = None
    finish: Callable[[CompressionResult], CompressionResult] | None = None


_NO_AIM = Aim()


def _apply(
    conversation: Conversation,
    strategies: Sequence[NamedStrategy],
    context: StrategyContext,
    max_passes: int,
    repair: bool,
    watch: _Watch | None,
    aim: Aim = _NO_AIM,
) -> CompressionResult:
    budget = context.budget
    run = _begin(conversation, context, repair=repair, watch=watch, carry=aim.carry)
    tokens_before = run.actions[0].tokens_before if run.actions else run.tokens
    if budget.is_unlimited:
        return run.done(budget, StopReason.NO_TRIGGER, 0, tokens_before)
    over = budget.is_over(messages=len(run.current), tokens=run.tokens)
    early = aim.trigger is not None and budget.kind == "tokens" and run.tokens >= aim.trigger
    if not (over or early):
        return run.done(budget, StopReason.UNDER_BUDGET, 0, tokens_before)
    goal = budget
    if budget.kind == "tokens" and (aim.target is not None or early):
        limits = [budget.limit]
        if aim.target is not None:
            limits.append(aim.target)
        if early and aim.trigger is not None:
            limits.append(aim.trigger)
        goal = Budget.tokens(min(limits))
        context = attrs.evolve(context, budget=goal)
    for pass_number in range(1, max_passes + 1):
        progressed = False
        for index, named in enumerate(strategies):
            if not run.take(_run_step(watch, named, index, run, context, pass_number)):
                continue
            progressed = True
            if not goal.is_over(messages=len(run.current), tokens=run.tokens):
                return run.done(budget, StopReason.UNDER_BUDGET, pass_number, tokens_before)
        if not progressed:
            stop = StopReason.NO_PROGRESS
            if not budget.is_over(messages=len(run.current), tokens=run.tokens):
                stop = StopReason.UNDER_BUDGET
            return run.done(budget, stop, pass_number, tokens_before)
    if not budget.is_over(messages=len(run.current), tokens=run.tokens):
        return run.done(budget, StopReason.UNDER_BUDGET, max_passes, tokens_before)
    return run.done(budget, StopReason.PASS_LIMIT, max_passes, tokens_before)


def run_once(
    conversation: Conversation,
    strategies: Sequence[NamedStrategy],
    context: StrategyContext,
    *,
    repair: bool = False,
    observers: Sequence[PipelineObserver] = (),
    conversation_id: str | None = None,
) -> CompressionResult:
    """Run every strategy once, in order, with no budget (``compress``)."""
    context = attrs.evolve(context, budget=Budget.UNLIMITED)
    watch = _watch(observers, "compress", conversation, strategies, context, 1, conversation_id)

    def work() -> CompressionResult:
        run = _begin(conversation, context, repair=repair, watch=watch)
        tokens_before = run.actions[0].tokens_before if run.actions else run.tokens
        for index, named in enumerate(strategies):
            run.take(_run_step(watch, named, index, run, context, 1))
        return run.done(Budget.UNLIMITED, StopReason.SINGLE_PASS, 1, tokens_before)

    if watch is None:
        return work()
    return observe(watch.observers, "observe_run", watch.info, work)
