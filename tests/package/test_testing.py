"""Tests of :mod:`memrules.testing`: the generators keep their promises, and
``check_strategy`` catches each way a strategy can break the contract."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import InvalidArgument

from memrules._core.budget import Budget
from memrules._core.messages import Conversation, Message, Text, ToolCall, ToolResult, message
from memrules._counting.tokens import TiktokenCounter
from memrules._engine.contract import DEFAULT_WARNING_MARKER, StrategyContext
from memrules.strategies import sliding_window
from memrules.testing import (
    FILE_PATHS,
    FILE_TOOL,
    budgets,
    check_strategy,
    conversations,
    messages,
    parts,
    register_profiles,
    texts,
)
from tests.support.strategies import COUNTER, agent_histories

CTX = StrategyContext(counter=COUNTER)


def _calls(conversation: Conversation) -> list[tuple[int, str]]:
    return [(i, c) for i, m in enumerate(conversation) for c in m.call_ids]


def _results(conversation: Conversation) -> list[tuple[int, str]]:
    return [(i, r) for i, m in enumerate(conversation) for r in m.result_ids]


@given(conversations(min_size=3, max_size=12, orphan_results=True))
def test_conversations_are_well_formed(conversation: Conversation) -> None:
    assert 3 <= len(conversation) <= 12
    calls = _calls(conversation)
    ids = [c for _, c in calls]
    assert len(ids) == len(set(ids)), "call ids are unique"
    at = {c: i for i, c in calls}
    results = _results(conversation)
    assert len({r for _, r in results}) == len(results), "one result per call"
    for i, r in results:
        if r in at:
            assert at[r] < i, "a result comes after its call"
        else:
            assert r.startswith("orphan_")
    for m in conversation:
        if m.is_tool_carrier:
            assert m.role in ("assistant", "tool", "user")
            assert m.role != "assistant" or not m.result_ids
            assert m.role == "assistant" or not m.call_ids
        if m.role == "user" and m.result_ids:
            kinds = [isinstance(p, ToolResult) for p in m.parts]
            assert kinds == sorted(kinds, reverse=True), "tool_result blocks come first"


@given(
    conversations(max_size=16, unanswered_calls=False, orphan_results=False, anthropic_style=False)
)
def test_conversations_without_unanswered_calls_answer_every_call(
    conversation: Conversation,
) -> None:
    calls = {c for _, c in _calls(conversation)}
    results = {r for _, r in _results(conversation)}
    assert calls == results
    assert all(m.role != "user" or not m.result_ids for m in conversation)


@given(
    conversations(
        max_size=16,
        tool_calls=False,
        system_messages=False,
        context_warning=False,
        empty_parts=False,
        repeats=False,
    )
)
def test_knobs_turn_features_off(conversation: Conversation) -> None:
    assert not any(m.is_tool_carrier for m in conversation)
    assert [m.role for m in conversation].count("system") <= 1
    assert all(m.parts for m in conversation)
    assert len({id(m) for m in conversation}) == len(conversation)


def test_the_knobs_each_show_up() -> None:
    """Over many draws, every feature the docs promise appears."""
    seen: Counter[str] = Counter()

    @settings(max_examples=300, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(conversations(max_size=20, orphan_results=True))
    def look(conversation: Conversation) -> None:
        calls = _calls(conversation)
        results = {r for _, r in _results(conversation)}
        paths = []
        for m in conversation:
            for p in m.parts:
                if isinstance(p, ToolCall) and p.name == FILE_TOOL:
                    with contextlib.suppress(ValueError):
                        paths.append(json.loads(p.arguments).get("path"))
        seen["parallel"] += any(len(m.call_ids) > 1 for m in conversation)
        seen["anthropic"] += any(m.role == "user" and m.result_ids for m in conversation)
        seen["openai"] += any(m.role == "tool" and m.result_ids for m in conversation)
        seen["unanswered"] += any(c not in results for _, c in calls)
        seen["orphan"] += any(r.startswith("orphan_") for r in results)
        seen["observations"] += [m.role for m in conversation].count("system") > 1
        seen["warning"] += any(m.text.startswith(DEFAULT_WARNING_MARKER) for m in conversation)
        seen["empty"] += any(not m.parts for m in conversation)
        seen["repeated path"] += len(paths) > len(set(paths)) and set(paths) <= {
            *FILE_PATHS,
            None,
            7,
        }
        seen["repeated object"] += len({id(m) for m in conversation}) < len(conversation)
        seen["structured result"] += any(
            isinstance(p, ToolResult) and not isinstance(p.content, str)
            for m in conversation
            for p in m.parts
        )

    look()
    missing = {
        "parallel",
        "anthropic",
        "openai",
        "unanswered",
        "orphan",
        "observations",
        "warning",
        "empty",
        "repeated path",
        "repeated object",
        "structured result",
    } - {k for k, v in seen.items() if v}
    assert not missing


@given(texts(large=True))
def test_texts_are_strings(text: str) -> None:
    assert isinstance(text, str)


def test_texts_cover_the_scripts() -> None:
    found: set[str] = set()

    @settings(max_examples=300, derandomize=True)
    @given(texts())
    def look(text: str) -> None:
        if not text:
            found.add("empty")
        if any("\u4e00" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" for ch in text):
            found.add("cjk")
        if any(ord(ch) > 0x1F000 for ch in text):
            found.add("emoji")
        if text.isascii() and text.strip():
            found.add("ascii")

    look()
    assert found == {"empty", "cjk", "emoji", "ascii"}


@given(messages(roles=("user",), tool_parts=True), parts(), budgets(unlimited=False))
def test_single_generators(m: Message, part: object, budget: Budget) -> None:
    assert m.role == "user"
    assert len(m.parts) <= 3
    assert not isinstance(part, ToolCall | ToolResult)
    assert not budget.is_unlimited
    assert budget.limit >= 1


@pytest.mark.parametrize(
    "make",
    [
        lambda: conversations(min_size=3, max_size=2),
        lambda: conversations(min_size=-1),
        lambda: conversations(warning_marker=""),
        lambda: texts(max_size=-1),
        lambda: messages(roles=()),
        lambda: messages(roles=("robot",)),  # type: ignore[arg-type]
        lambda: budgets(max_messages=0),
    ],
)
def test_bad_arguments_raise_invalid_argument(make: object) -> None:
    with pytest.raises(InvalidArgument):
        make()  # type: ignore[operator]


def test_register_profiles() -> None:
    register_profiles()
    ci = settings.get_profile("ci")
    assert ci.derandomize
    assert ci.deadline is None
    assert ci.database is None
    assert settings.get_profile("dev").max_examples > ci.max_examples


# --- check_strategy catches broken strategies ------------------------------------------

HISTORY = (
    message("system", "sys"),
    message("user", "one"),
    message("assistant", "two"),
    message("user", "three"),
    message("assistant", "four"),
    message("user", "five"),
)


def reorder(conversation: Conversation, context: StrategyContext) -> Conversation:
    return (*conversation[:1], *reversed(conversation[1:-1]), *conversation[-1:])


def drop_latest_user(conversation: Conversation, context: StrategyContext) -> Conversation:
    return conversation[:-1]


def copy_on_no_op(conversation: Conversation, context: StrategyContext) -> Conversation:
    return tuple(m for m in conversation)


def rebuild_everything(conversation: Conversation, context: StrategyContext) -> Conversation:
    return tuple(m.evolve() for m in conversation)


def returns_a_list(conversation: Conversation, context: StrategyContext) -> Conversation:
    return list(conversation)  # type: ignore[return-value]


_runs = itertools.count()


def flaky(conversation: Conversation, context: StrategyContext) -> Conversation:
    """Drops message 2 on odd runs, message 4 on even ones (both droppable
    assistant messages: message 1 is the task, which every strategy keeps)."""
    gone = 2 + 2 * (next(_runs) % 2)
    return conversation[:gone] + conversation[gone + 1 :]


@pytest.mark.parametrize(
    ("strategy", "match"),
    [
        (reorder, "breaks an invariant"),
        (drop_latest_user, "most recent user message"),
        (copy_on_no_op, "returned a new tuple"),
        (rebuild_everything, "breaks an invariant"),
        (returns_a_list, "expected a tuple"),
        (flaky, "not deterministic"),
    ],
)
def test_check_strategy_catches(strategy: object, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        check_strategy(strategy, HISTORY, CTX)  # type: ignore[arg-type]


def test_check_strategy_passes_a_good_strategy_and_returns_the_diff(
    cl100k: TiktokenCounter,
) -> None:
    ctx = StrategyContext(counter=cl100k, budget=Budget.messages(3))
    enforced = check_strategy(sliding_window(keep_messages=3), HISTORY, ctx)
    # The task ("one") and the question ("five") are kept whatever the window.
    assert enforced.removed == (2, 3, 4)
    assert enforced.messages == (HISTORY[0], HISTORY[1], HISTORY[5])


def test_check_strategy_non_strict_tolerates_a_discarded_output() -> None:
    enforced = check_strategy(reorder, HISTORY, CTX, strict=False)
    assert enforced.violation is not None
    assert enforced.messages is HISTORY


@given(agent_histories())
def test_check_strategy_on_the_identity(conversation: Conversation) -> None:
    enforced = check_strategy(lambda c, _: c, conversation, CTX)
    assert enforced.messages is conversation


def test_closure_mended_tool_results_are_not_a_violation() -> None:
    """check_strategy accepts outputs that enforcement mends (closure)."""
    call = Message(role="assistant", parts=(ToolCall(id="c", name="search"),))
    history = (
        message("system", "sys"),
        message("user", "go"),
        call,
        Message(role="tool", parts=(ToolResult(call_id="c", content="x"),)),
        message("user", "next", Text(text="")),
    )

    def drop_call(conversation: Conversation, context: StrategyContext) -> Conversation:
        return tuple(m for m in conversation if m is not call)

    enforced = check_strategy(drop_call, history, CTX)
    assert len(enforced.messages) == 3
