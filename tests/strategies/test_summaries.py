"""Summaries never stand in for the user's question, and never grow the
conversation.

A summary of tool rounds inside the latest turn is the assistant's; the
interpreter rejects any strategy's output that puts a new user message
after the latest one (or opens a turn inside the latest turn), so no later
strategy can take it for the question and drop the real one. A summary
that costs as many tokens as what it replaces is refused.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memrules import load_pipeline
from memrules._core.budget import Budget
from memrules._core.invariants import check_invariants, enforce
from memrules._core.messages import Conversation, Message, Text, ToolCall, ToolResult, message
from memrules._core.survivors import SurvivorRule
from memrules._engine.contract import StrategyContext
from memrules._engine.interpreter import NamedStrategy, run_once, run_pipeline
from memrules.seams import Seams, Summarizer, extractive_summarizer, openai_summarizer
from memrules.strategies import drop_turns, sliding_window, summarize
from memrules.strategies.seamed import SUMMARY_PREFIX
from tests.strategies.test_units import agent_loop
from tests.support.chat_server import ChatServer
from tests.support.strategies import COUNTER, context, terse_summary, total

DEFAULT = Path(__file__).resolve().parents[2] / "configs" / "default.yaml"
SUMMARY = message("user", f"{SUMMARY_PREFIX} what the tool rounds found")


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    with ChatServer(reply=terse_summary) as running:
        yield running


def anthropic_loop(rounds: int) -> Conversation:
    """:func:`agent_loop` as Anthropic carries it: each result in a user
    message of ``tool_result`` blocks, the last of them the latest user
    message (the question is then only the latest turn's opening)."""
    out: list[Message] = [
        message("system", "You are a coding agent."),
        message("user", "Fix the failing test in the parser."),
    ]
    for r in range(rounds):
        call = ToolCall(
            id=f"call_{r}", name="read_file", arguments=json.dumps({"path": f"m{r}.py"})
        )
        out.append(message("assistant", f"Reading m{r}.py.", call))
        body = "\n".join(f"line {k}: value_{r}_{k} = compute({k})" for k in range(12))
        out.append(message("user", ToolResult(call_id=f"call_{r}", content=body)))
    return tuple(out)


# --- the interpreter rejects a user message that could pass for the latest -------------


def inserting(at: Callable[[Conversation], int], made: Message) -> NamedStrategy:
    """A misbehaving strategy: ``made`` inserted at ``at(conversation)``, in
    place of every assistant and tool message from there on up to the end
    but the last two (as a summary of tool rounds would)."""

    def strategy(conversation: Conversation, context: StrategyContext) -> Conversation:
        i = at(conversation)
        return (*conversation[:i], made, *conversation[-2:])

    return NamedStrategy(name="misplaced_summary", strategy=strategy)


def after_question(conversation: Conversation) -> int:
    return 2  # the question is message 1


def test_a_user_message_after_the_question_is_rejected_and_recorded() -> None:
    history = agent_loop(30)
    question = history[1]
    strategies = (
        inserting(after_question, SUMMARY),
        NamedStrategy(name="drop_turns", strategy=drop_turns()),
    )
    result = run_pipeline(history, strategies, context(budget=Budget.messages(8)))
    first = result.report.actions[0]
    assert first.strategy == "misplaced_summary"
    assert not first.changed
    assert first.error is not None
    assert "new user message after the most recent user message (index 1)" in first.error
    assert result.report.errors[0].startswith("misplaced_summary: output[2] is a new user message")
    # drop_turns found no older turn to take: the question is still the latest user message.
    users = [m for m in result.messages if m.role == "user"]
    assert users[-1] is question
    assert check_invariants(history, result.messages) == []


def test_a_tool_result_carrier_after_the_question_is_rejected_too() -> None:
    """Any user-role message after the latest user message would stand in
    for it, one holding only tool results included."""
    history = agent_loop(6)
    carrier = message("user", ToolResult(call_id="call_pending", content="2 passed"))
    output = (*history, carrier)
    enforced = enforce(history, output)
    assert enforced.messages is history
    assert enforced.violation is not None
    assert "new user message after the most recent user message" in enforced.violation
    assert "a new user message stands after the most recent user message" in check_invariants(
        history, output
    )


def test_a_turn_opened_inside_the_latest_turn_is_rejected() -> None:
    """Anthropic: the latest user message holds tool results, the question
    only opens the turn. A user message that says something, after the
    question, would open a turn of its own and leave the question's turn
    to be dropped whole as an older one."""
    history = anthropic_loop(8)
    strategies = (
        inserting(after_question, SUMMARY),
        NamedStrategy(name="drop_turns", strategy=drop_turns()),
    )
    result = run_pipeline(history, strategies, context(budget=Budget.messages(6)))
    first = result.report.actions[0]
    assert not first.changed
    assert first.error is not None
    assert "opens a turn inside the latest turn (which starts at index 1)" in first.error
    assert any(m is history[1] for m in result.messages)
    output = (*history[:2], SUMMARY, *history[-2:])
    assert "a new user message opens a turn inside the latest turn" in check_invariants(
        history, output
    )


def test_a_user_message_before_the_question_stands() -> None:
    """A summary of earlier turns is a user message before the question:
    the question is still the latest user message, so it stands."""
    earlier = (message("user", "Hello"), message("assistant", "Hi, what can I do?"))
    history = (message("system", "sys"), *earlier, *agent_loop(4)[1:])
    output = (history[0], SUMMARY, *history[3:])
    no_task = SurvivorRule(task=False)  # "Hello" is the task: here it is summarized away
    enforced = enforce(history, output, survivors=no_task)
    assert enforced.violation is None
    assert enforced.messages == output
    assert check_invariants(history, output, no_task) == []
    assert enforce(history, output).violation == "removed or altered the task (index 1)"


# --- the reproduction: the default config with a summarizer ---------------------------


def _summarizers(server: ChatServer) -> dict[str, Summarizer]:
    return {
        "extractive": extractive_summarizer(),
        "http": openai_summarizer(base_url=server.url, model="loopback-model", retries=0),
    }


@pytest.mark.parametrize("kind", ["extractive", "http"])
@pytest.mark.parametrize(
    "budget",
    [*(Budget.messages(n) for n in range(6, 11)), Budget.tokens(500)],
    ids=repr,
)
@pytest.mark.parametrize("shape", ["openai", "anthropic"])
def test_the_default_config_keeps_the_question_of_an_agent_turn(
    server: ChatServer, kind: str, budget: Budget, shape: str
) -> None:
    """configs/default.yaml with a summarizer, on one instruction followed
    by 30 tool rounds, under budgets that leave room for few of them: the
    rounds are summarized, and the question stays, the latest turn's
    opening and (OpenAI) the latest user message."""
    history = agent_loop(30) if shape == "openai" else anthropic_loop(30)
    question = history[1]
    pipeline = load_pipeline(DEFAULT, seams=Seams(summarizer=_summarizers(server)[kind]))
    result = pipeline.apply(history, budget=budget)
    out, report = result.messages, result.report
    assert any(m is question for m in out), report.to_dict()
    assert report.errors == ()
    assert check_invariants(history, out) == []
    (summarized,) = [a for a in report.actions if a.strategy == "summarize" and a.changed][:1]
    assert summarized.seam_calls[0].error is None
    # The summary stood where the first round stood, as the assistant's.
    turn_starts = [
        m for m in out if m.role == "user" and not all(isinstance(p, ToolResult) for p in m.parts)
    ]
    assert turn_starts == [question]
    if shape == "openai":
        assert [m for m in out if m.role == "user"] == [question]
    summaries = [m for m in out if m.text.startswith(SUMMARY_PREFIX)]
    assert all(m.role == "assistant" for m in summaries)
    assert total(out) < total(history)


def test_a_summary_of_earlier_turns_and_rounds_is_a_user_message_before_the_question() -> None:
    """When the units summarized begin with whole earlier turns, the summary
    stands where the first of them stood, a user message before the
    question (after the task, which is kept: here it is a turn of its own,
    with no exchange to summarize)."""
    earlier = tuple(
        m
        for k in range(3)
        for m in (
            message("user", f"Earlier question {k}: where is config_{k}.yaml kept?"),
            message("assistant", f"It is in etc/app/config_{k}.yaml, owned by team {k}."),
        )
    )
    loop = agent_loop(10)
    task = message("user", "Task: keep the app's configs in order.")
    history = (loop[0], task, *earlier, *loop[1:])
    strategy = summarize(turns=8, keep_exchanges=2)
    ctx = context(summarizer=extractive_summarizer(max_chars=300))
    result = run_once(history, (NamedStrategy(name="summarize", strategy=strategy),), ctx)
    out = result.messages
    assert result.report.actions[0].note == "summarized 16 messages (8 units)"
    assert out[1] is task
    assert out[2].role == "user"
    assert out[2].text.startswith(SUMMARY_PREFIX)
    assert out[3] is loop[1]  # the question follows its summary
    assert result.report.errors == ()


# --- a summary larger than what it replaces ---------------------------------------------


def test_a_huge_summary_is_refused_and_reported(server: ChatServer) -> None:
    """A loopback model answers a 20 MB "summary": it is refused uncounted,
    nothing is replaced, the report says so, and the conversation never
    grows."""
    huge = "The tests fail because of the parser. " * (20_000_000 // 38)
    history = agent_loop(30)
    budget = Budget.tokens(total(history) // 2)
    with ChatServer(reply=lambda messages: huge) as verbose:
        summarizer = openai_summarizer(base_url=verbose.url, model="loopback-model", retries=0)
        strategies = (NamedStrategy(name="summarize", strategy=summarize(turns=10)),)
        pipeline_context = context(budget=budget, summarizer=summarizer)
        started = time.perf_counter()
        result = run_pipeline(history, strategies, pipeline_context, max_passes=1)
        elapsed = time.perf_counter() - started
    assert result.messages is history
    (action,) = result.report.actions
    assert not action.changed
    refused = re.fullmatch(
        r"refused a summary of (\d+) characters for (\d+) messages of (\d+) tokens: "
        r"it saves none; nothing was replaced",
        action.note,
    )
    assert refused is not None, action.note
    chars, _, replaced = map(int, refused.groups())
    assert chars > len(huge)
    assert 0 < replaced < total(history)
    (call,) = action.seam_calls
    assert call.error == action.note
    assert call.response is None  # the 20 MB are not copied into the report
    assert result.report.tokens_after == result.report.tokens_before
    assert len(json.dumps(result.report.to_dict())) < 100_000
    assert elapsed < 30, elapsed


def _verbose(messages: list[dict[str, Any]]) -> str:
    """A model that answers with the whole transcript, twice."""
    transcript = str(messages[-1]["content"])
    return f"{transcript}\n{transcript}"


def test_a_summary_that_saves_no_tokens_is_refused_then_the_window_acts() -> None:
    """A summary of what it was sent, twice over, is counted and refused;
    the pipeline goes on to the window, with no error recorded."""
    history = agent_loop(30)
    budget = Budget.messages(12)
    with ChatServer(reply=_verbose) as verbose:
        summarizer = openai_summarizer(base_url=verbose.url, model="loopback-model", retries=0)
        strategies = (
            NamedStrategy(name="summarize", strategy=summarize(turns=10)),
            NamedStrategy(name="sliding_window", strategy=sliding_window(keep_messages=12)),
        )
        result = run_pipeline(history, strategies, context(budget=budget, summarizer=summarizer))
    first, second = result.report.actions[:2]
    assert not first.changed
    assert first.note.startswith("refused a summary of ")
    assert " tokens for " in first.note.split("messages of")[0]
    cost = int(first.note.split()[4])
    replaced = int(first.note.split("messages of ")[1].split()[0])
    assert cost >= replaced
    assert second.changed
    assert result.report.errors == ()
    assert len(result.messages) <= 12
    assert not any(m.text.startswith(SUMMARY_PREFIX) for m in result.messages)


def test_a_summary_that_saves_tokens_still_replaces() -> None:
    history = agent_loop(30)
    result = run_pipeline(
        history,
        (NamedStrategy(name="summarize", strategy=summarize(turns=10)),),
        context(budget=Budget.messages(12), summarizer=extractive_summarizer()),
    )
    (summary,) = [m for m in result.messages if m.text.startswith(SUMMARY_PREFIX)]
    assert summary.role == "assistant"
    assert isinstance(summary.parts[0], Text)
    (action,) = result.report.actions
    gone = [history[i] for i in action.removed] + [history[i] for i, _ in action.replaced]
    assert COUNTER.count(summary) < total(gone)
    assert total(result.messages) < total(history)
