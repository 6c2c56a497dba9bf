"""Input that is already broken, parallel units, empty assistant messages,
and ``user_first``: the interpreter's rules beyond the strategies' own."""

from __future__ import annotations

import attrs
from hypothesis import assume, given
from hypothesis import strategies as st

from memrules import MemoryConfig, Pipeline
from memrules._core.budget import Budget
from memrules._core.invariants import enforce
from memrules._core.messages import Conversation, Message, ToolCall, ToolResult, message
from memrules._core.repair import input_problems, repair
from memrules._core.survivors import SurvivorRule
from memrules._counting.measure import Measure
from memrules._engine.interpreter import NamedStrategy, run_pipeline
from memrules.strategies import sliding_window, trim_to_budget
from memrules.testing import assert_invariants, check_strategy, conversations
from tests.support.strategies import COUNTER, agent_histories, budgets_for, context


def result_positions(conversation: Conversation) -> list[tuple[int, int]]:
    """(message index, part index) of every tool result."""
    return [
        (i, k)
        for i, m in enumerate(conversation)
        for k, p in enumerate(m.parts)
        if isinstance(p, ToolResult)
    ]


@st.composite
def broken(draw: st.DrawFn) -> tuple[Conversation, str]:
    """A conversation with one injected problem, and its kind."""
    conversation = draw(conversations(min_size=3, max_size=16))
    calls = [(i, c) for i, m in enumerate(conversation) for c in m.call_ids]
    answered = {r for m in conversation for r in m.result_ids}
    kind = draw(st.sampled_from(["orphan_result", "repeated_result", "early_result"]))
    out = list(conversation)
    if kind == "orphan_result":
        at = draw(st.integers(0, len(out)))
        out.insert(at, message("tool", ToolResult(call_id="ghost", content="?")))
        return tuple(out), kind
    done = [(i, c) for i, c in calls if c in answered]
    assume(done)
    i, c = draw(st.sampled_from(done))
    extra = message("tool", ToolResult(call_id=c, content="again"))
    if kind == "repeated_result":
        last = max(j for j, m in enumerate(out) if c in m.result_ids)
        out.insert(draw(st.integers(last + 1, len(out))), extra)
    else:
        out.insert(draw(st.integers(0, i)), extra)
    return tuple(out), kind


@given(broken())
def test_injected_problems_are_named(case: tuple[Conversation, str]) -> None:
    conversation, kind = case
    kinds = {p.kind for p in input_problems(conversation)}
    assert kind in kinds


@given(st.one_of(broken().map(lambda case: case[0]), agent_histories()))
def test_repair_leaves_nothing_removable_and_keeps_the_rest(conversation: Conversation) -> None:
    problems = input_problems(conversation)
    fixed = repair(conversation, problems)
    assert not [p for p in input_problems(fixed.messages) if p.removable]
    if not [p for p in problems if p.removable]:
        assert fixed.messages is conversation
        return
    touched = {p.index for p in problems}
    for i, m in enumerate(conversation):
        if i not in touched and not m.is_tool_carrier:
            assert any(m is kept for kept in fixed.messages)  # only tool traffic is repaired


def test_a_pipeline_reports_input_problems_and_repairs_on_request() -> None:
    history = (
        message("system", "s"),
        message("user", "go"),
        message("tool", ToolResult(call_id="nobody", content="stray")),
        message("assistant", "a", ToolCall(id="c1", name="t")),
        message("tool", ToolResult(call_id="c1", content="one")),
        message("tool", ToolResult(call_id="c1", content="two")),
        message("assistant", "b", ToolCall(id="c2", name="t")),
        message("user", "next"),
    )
    as_is = Pipeline.from_config(MemoryConfig(max_fraction=None), counter=COUNTER)
    result = as_is.apply(history)
    assert result.messages is history
    assert result.report.input_problems == (
        "messages[2]: tool result 'nobody' has no call",
        "messages[5]: a second result for tool call 'c1' (the first is messages[4])",
        "messages[6]: tool call 'c2' has no result, and the conversation goes on after it",
    )
    fixing = Pipeline.from_config(MemoryConfig(max_fraction=None, repair=True), counter=COUNTER)
    fixed = fixing.apply(history)
    assert [m.text or m.parts[0] for m in fixed.messages] == [
        "s",
        "go",
        "a",
        ToolResult(call_id="c1", content="one"),
        "b",
        "next",
    ]
    (action,) = fixed.report.actions
    assert (action.strategy, action.pass_number, action.removed) == ("repair", 0, (2, 5))
    assert action.replaced == ((6, 4),)
    assert fixed.report.input_problems == result.report.input_problems


def drop_one_call(conversation: Conversation, _: object) -> Conversation:
    """A custom strategy that rewrites the first parallel-call message to
    keep only its first call (what the interpreter must not let stand)."""
    for i, m in enumerate(conversation):
        if len(m.call_ids) > 1:
            first = next(p for p in m.parts if isinstance(p, ToolCall))
            parts = tuple(p for p in m.parts if not isinstance(p, ToolCall) or p is first)
            return (*conversation[:i], m.evolve(parts=parts), *conversation[i + 1 :])
    return conversation


@given(conversations(max_size=20))
def test_a_parallel_unit_stays_whole_or_goes_whole(conversation: Conversation) -> None:
    units = [set(m.call_ids) for m in conversation if len(m.call_ids) > 1]
    assume(units)
    enforced = enforce(conversation, drop_one_call(conversation, None))
    calls_after = {c for m in enforced.messages for c in m.call_ids}
    results_after = {r for m in enforced.messages for r in m.result_ids}
    for unit in units:
        assert unit <= calls_after or not (unit & calls_after), unit
        assert unit <= results_after or not (unit & results_after) or unit <= calls_after


def test_a_new_empty_assistant_message_is_dropped_and_check_strategy_agrees() -> None:
    def empty_reply(conversation: Conversation, _: object) -> Conversation:
        return (*conversation[:-1], Message(role="assistant"), conversation[-1])

    history = (message("system", "s"), message("user", "hi"))
    enforced = enforce(history, empty_reply(history, None))
    assert enforced.messages == history
    check_strategy(empty_reply, history, context(), strict=False)


@given(data=st.data())
def test_user_first_keeps_a_user_message_first(data: st.DataObject) -> None:
    conversation = data.draw(agent_histories(max_size=24), label="conversation")
    leads = next((m.role for m in conversation if m.role != "system"), None)
    budget = data.draw(budgets_for(conversation, unlimited=False), label="budget")
    keep = data.draw(st.integers(1, 8), label="keep_messages")
    strategies = MemoryConfig(
        strategies=[sliding_window(keep_messages=keep), trim_to_budget()]
    ).strategies
    ctx = attrs.evolve(context(budget=budget), user_first=True)
    result = run_pipeline(conversation, strategies, ctx)
    assert_invariants(conversation, result.messages)
    first = next((m.role for m in result.messages if m.role != "system"), None)
    if leads == "user":
        assert first in ("user", None)
    assert not result.report.errors


def test_user_first_drops_a_leading_assistant_run_with_its_exchange() -> None:
    history = (
        message("system", "s"),
        message("user", "old question"),
        message("assistant", "let me look", ToolCall(id="c1", name="t")),
        message("user", ToolResult(call_id="c1", content="found"), "and?"),
        message("assistant", "answer"),
        message("user", "new question"),
    )
    window = NamedStrategy(name="drop_first_user", strategy=lambda c, _: (c[0], *c[2:]))
    base = context(budget=Budget.messages(4))
    no_task = Measure(base.counter, SurvivorRule(task=False))  # this case drops the task
    result = run_pipeline(history, (window,), attrs.evolve(base, user_first=True, measure=no_task))
    assert [m.role for m in result.messages] == ["system", "user", "assistant", "user"]
    assert result.messages[1].parts == (history[3].parts[1],)  # its result went with the call
