"""Summaries you can trust: ``summarize`` takes what the budget needs in
one summarizer call, an empty or refused summary is an error that keeps the
turn, the summarizer's prompt can be set (and is in the trace), and the
summary takes the role of the first message it replaces."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memrules import load_pipeline, record_trace, replay_trace
from memrules._core.budget import Budget
from memrules._core.invariants import check_invariants, enforce
from memrules._core.messages import Conversation, Message, ToolCall, ToolResult, message
from memrules._engine.interpreter import NamedStrategy, run_once, run_pipeline
from memrules.seams import Seams, extractive_summarizer, openai_summarizer
from memrules.seams.summarizers import SUMMARY_PROMPT
from memrules.strategies import summarize
from memrules.strategies.seamed import SUMMARY_PREFIX
from tests.strategies.test_units import agent_loop
from tests.support.chat_server import ChatServer
from tests.support.strategies import context, terse_summary


def turn(k: int) -> tuple[Message, Message]:
    """One earlier turn with a path, an error and a decision in it."""
    return (
        message(
            "user",
            f"Question {k}: the build of service_{k} fails in src/service_{k}/main.py with "
            f"exit code {k + 1}. " + "Please look at it carefully and tell me what you see. " * 3,
        ),
        message(
            "assistant",
            f"Answer {k}: src/service_{k}/main.py imports a module that moved to "
            f"lib/common_{k}.py; we decided to pin version 1.{k}. "
            + "I checked the other places as well and found nothing else of note. "
            * 3,
        ),
    )


def chat(turns: int, *, system: bool = True) -> Conversation:
    head = (message("system", "You help with builds."),) if system else ()
    return (*head, *(m for k in range(turns) for m in turn(k)))


def summaries(conversation: Conversation) -> list[Message]:
    return [m for m in conversation if m.text.startswith(SUMMARY_PREFIX)]


# --- as many units as the budget needs, in one call -------------------------------------


@pytest.mark.parametrize(
    ("history", "max_messages"),
    [(chat(3, system=False)[:5], 4), (chat(4), 6), (chat(6), 8), (chat(6), 5)],
    ids=["5-messages-to-4", "9-messages-to-6", "13-messages-to-8", "13-messages-to-5"],
)
def test_summarize_meets_a_message_budget_in_one_call(
    history: Conversation, max_messages: int
) -> None:
    """``turns: 1`` under a ``max_messages`` budget: one summary of as many
    units as it takes, counting the summary itself; never a summary of a
    summary. Five messages to four is the peers' case: one unit a pass gave
    a summary of one message in place of one, then of itself, and five
    messages stayed. (The least these reach is the system message, the
    task, the summary and the latest turn.)"""
    pipeline = load_pipeline(
        f"{{max_messages: {max_messages}, strategies: [{{type: summarize, turns: 1}}]}}",
        seams=Seams(summarizer=extractive_summarizer(max_chars=300)),
    )
    result = pipeline.apply(history)
    report = result.report
    assert len(result.messages) <= max_messages, report.to_dict()
    assert report.stop_reason == "under_budget"
    changed = [a for a in report.actions if a.changed]
    assert len(changed) == 1, [a.note for a in report.actions]
    (action,) = changed
    assert len(action.seam_calls) == 1
    assert "to fit the budget" in action.note, action.note
    assert len(summaries(result.messages)) == 1
    assert report.errors == ()
    assert check_invariants(history, result.messages) == []


def test_a_lone_summary_is_not_summarized_again() -> None:
    """What an earlier request summarized is not summarized on its own
    again: the block takes it with the next units, or nothing."""
    history = chat(4)
    strategy = NamedStrategy(name="summarize", strategy=summarize(turns=2))
    first = run_once(history, (strategy,), context(summarizer=extractive_summarizer(max_chars=300)))
    (summary,) = summaries(first.messages)
    # Only the latest turn after the summary: nothing new to summarize.
    assert first.messages[2] is summary
    again = run_once(
        (*first.messages[:3], *first.messages[-2:]),
        (NamedStrategy(name="summarize", strategy=summarize(turns=1)),),
        context(summarizer=extractive_summarizer(max_chars=300), budget=Budget.messages(3)),
    )
    assert not again.report.actions[0].changed
    assert again.report.actions[0].seam_calls == ()
    # With one more turn after it, the old summary goes into the new one with that turn.
    later = (*first.messages[:-2], *turn(7), *first.messages[-2:])
    third = run_once(
        later,
        (NamedStrategy(name="summarize", strategy=summarize(turns=1)),),
        context(summarizer=extractive_summarizer(max_chars=600)),
    )
    assert third.report.actions[0].note.startswith("summarized 3 messages (2 units")
    assert summary not in third.messages


def test_under_a_token_budget_a_summary_is_folded_only_with_new_units() -> None:
    """Under a token budget the summary's header is counted when the block
    is chosen, but its text is not known before it is written: when the
    text leaves the conversation over budget, the next pass folds that
    summary into a new one with the next units, never on its own."""
    history = chat(6)
    tokens = sum(context().counter.count(m) for m in history)
    result = run_pipeline(
        history,
        (NamedStrategy(name="summarize", strategy=summarize(turns=1)),),
        context(budget=Budget.tokens(tokens // 2), summarizer=extractive_summarizer(max_chars=200)),
    )
    notes = [a.note for a in result.report.actions]
    assert result.report.stop_reason == "under_budget", notes
    assert len(notes) <= 2, notes
    for action in result.report.actions[1:]:
        assert action.changed
        gone = [history[i] for i in action.removed]
        assert gone, notes  # new units went with the earlier summary
    assert len(summaries(result.messages)) == 1


# --- an empty or refused summary is an error, and the turn stays ------------------------


class Answers:
    """A summarizer that answers ``text`` (a plain one: no request JSON)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def summarize(self, messages: Conversation) -> str:
        return self.text


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "   \n\t ",
        "I can't help with that.",
        "I cannot summarize this conversation.",
        "I'm sorry, but I can't assist with that request.",
        "Sorry, I am unable to provide a summary of these messages.",
    ],
    ids=["empty", "whitespace", "cant-help", "cannot-summarize", "sorry-cant", "unable"],
)
def test_an_empty_or_refused_summary_is_an_error_and_the_turn_stays(answer: str) -> None:
    history = chat(4)
    result = run_pipeline(
        history,
        (NamedStrategy(name="summarize", strategy=summarize(turns=1)),),
        context(budget=Budget.messages(5), summarizer=Answers(answer)),
    )
    assert result.messages is history
    assert len(result.report.errors) == 1, result.report.to_dict()
    (error,) = result.report.errors
    assert error.startswith("summarize: StrategyError: the summarizer answered ")
    assert "nothing was replaced" in error
    action = result.report.actions[0]
    assert not action.changed
    (call,) = action.seam_calls
    assert call.seam == "summarizer"
    assert call.error is not None
    assert not summaries(result.messages)


def test_a_summary_that_mentions_a_refusal_is_kept() -> None:
    """The rule is narrow: a short answer that opens with a refusal. A
    summary that reports one (or is long) is a summary."""
    text = (
        "The user asked for the build fix. The assistant said: I can't reproduce it locally, "
        "then found src/service_0/main.py imports lib/common_0.py; version 1.0 pinned."
    )
    history = chat(4)
    result = run_once(
        history,
        (NamedStrategy(name="summarize", strategy=summarize(turns=2)),),
        context(summarizer=Answers(text)),
    )
    assert result.report.errors == ()
    (summary,) = summaries(result.messages)
    assert summary.text.endswith(text)


# --- the prompt ------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(reply=terse_summary) as running:
        yield running


def test_the_summarizer_section_takes_a_prompt(server: ChatServer) -> None:
    pipeline = load_pipeline(
        f"""
max_messages: 5
summarizer: {{type: openai, base_url: "{server.url}", model: loopback-model,
             prompt: "Keep only file paths."}}
strategies:
  - type: summarize
    turns: 1
"""
    )
    result = pipeline.apply(chat(4))
    assert result.report.errors == ()
    (body,) = server.chat_requests
    assert body["messages"][0] == {"role": "system", "content": "Keep only file paths."}
    assert "prompt='Keep only file paths.'" in repr(pipeline.seams.summarizer)


def test_the_default_prompt_is_sent_without_a_prompt(server: ChatServer) -> None:
    summarizer = openai_summarizer(base_url=server.url, model="loopback-model", retries=0)
    run_once(
        chat(4),
        (NamedStrategy(name="summarize", strategy=summarize(turns=1)),),
        context(summarizer=summarizer),
    )
    (body,) = server.chat_requests
    assert body["messages"][0] == {"role": "system", "content": SUMMARY_PROMPT}
    assert "prompt" not in repr(summarizer)


def test_the_strategy_prompt_reaches_the_request_and_the_trace(
    server: ChatServer, tmp_path: Path
) -> None:
    """``prompt:`` on the strategy overrides the section's; the chat body
    holds it, the report's seam call and the trace record it, and the trace
    replays identically with no server."""
    config = f"""
max_messages: 5
summarizer: {{type: openai, base_url: "{server.url}", model: loopback-model,
             prompt: "Section prompt."}}
strategies:
  - type: summarize
    turns: 1
    prompt: "List the files touched, the errors seen and what is left."
"""
    pipeline = load_pipeline(config)
    assert "prompt='List the files touched" in repr(pipeline.config.strategies[0])
    trace = tmp_path / "prompt.jsonl"
    with record_trace(trace, pipeline, name="prompted") as traced:
        result = traced.apply(chat(4), conversation_id="c1")
    assert result.report.errors == ()
    (body,) = server.chat_requests
    wanted = {
        "role": "system",
        "content": "List the files touched, the errors seen and what is left.",
    }
    assert body["messages"][0] == wanted
    (action,) = [a for a in result.report.actions if a.changed]
    assert action.seam_calls[0].request == body  # the report's call is the body sent
    lines = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    (call,) = [c for c in lines[1]["calls"] if c["seam"] == "summarizer"]
    assert call["request"]["messages"][0] == wanted
    server.requests.clear()
    replayed = replay_trace(trace)
    assert replayed.identical, replayed.differences
    assert server.requests == []


def test_a_prompt_for_a_summarizer_that_takes_none_is_an_error() -> None:
    history = chat(4)
    result = run_pipeline(
        history,
        (NamedStrategy(name="summarize", strategy=summarize(turns=1, prompt="Be brief.")),),
        context(budget=Budget.messages(5), summarizer=Answers("a summary")),
    )
    assert result.messages is history
    (error,) = result.report.errors
    assert "takes no prompt" in error


def test_a_prompt_must_say_something() -> None:
    from memrules import ConfigError

    with pytest.raises(ConfigError, match="prompt"):
        summarize(prompt="  ")
    with pytest.raises(ConfigError, match="prompt"):
        openai_summarizer(base_url="http://127.0.0.1:1/v1", model="m", prompt="")


def test_the_default_prompt_asks_for_what_an_agent_needs_to_go_on() -> None:
    for section in ("task", "constraints", "files", "decisions", "errors", "left"):
        assert section in SUMMARY_PROMPT.lower(), section


def test_the_extractive_summary_keeps_paths_errors_and_commands() -> None:
    """Among lines of filler, the ones an agent needs: the command run, the
    error it printed, the file it edited."""
    filler = tuple(
        message("assistant", f"Looking at the overall structure of the project, step {k}.")
        for k in range(40)
    )
    call = ToolCall(id="c1", name="bash", arguments=json.dumps({"command": "pytest -x tests"}))
    history = (
        message("user", "Fix the failing parser test; do not change the public API."),
        *filler[:20],
        message("assistant", "Running the tests.", call),
        message(
            "tool",
            ToolResult(
                call_id="c1",
                content="collected 12 items\n" + "....\n" * 30 + "E   KeyError: 'sep'\n"
                "FAILED tests/test_parser.py::test_split - KeyError: 'sep'",
            ),
        ),
        *filler[20:],
        message("assistant", "I edited src/parser/split.py to default sep to a comma."),
    )
    text = extractive_summarizer(max_chars=500).summarize(history)
    assert "pytest -x tests" in text
    assert "FAILED tests/test_parser.py::test_split" in text
    assert "src/parser/split.py" in text
    assert "do not change the public API" in text


# --- the summary's role ------------------------------------------------------------------


def exchanges_after_the_task() -> Conversation:
    """The task's turn with tool rounds, then a harness user message that
    opens the latest turn: units of the task's turn are whole turns today."""
    loop = agent_loop(6)
    return (*loop[:-1], message("user", "Please always provide EXACTLY ONE action."))


def test_the_summary_takes_the_role_of_the_first_message_it_replaces() -> None:
    # Whole turns starting at a user message: a user summary. (The task's
    # turn holds the task alone, so the units are the turns after it.)
    history = (*chat(4)[:2], *chat(4)[3:])
    out = run_once(
        history,
        (NamedStrategy(name="summarize", strategy=summarize(turns=2)),),
        context(summarizer=extractive_summarizer(max_chars=300)),
    ).messages
    (summary,) = summaries(out)
    assert summary.role == "user"
    assert out[2] is summary
    # Tool rounds after the question, starting at an assistant message: an assistant summary.
    loop = agent_loop(10)
    out = run_once(
        loop,
        (NamedStrategy(name="summarize", strategy=summarize(turns=4)),),
        context(summarizer=extractive_summarizer(max_chars=300)),
    ).messages
    (summary,) = summaries(out)
    assert summary.role == "assistant"
    assert out[2] is summary
    assert check_invariants(loop, out) == []


def test_a_summary_of_exchanges_after_the_task_in_an_earlier_turn_is_the_assistants() -> None:
    """When units are the tool exchanges that follow the task inside an
    earlier turn (a harness user message opened the latest turn), the
    summary starts where an assistant message stood: it is the assistant's,
    so it neither splits the task's turn nor reads as a user's word, and the
    interpreter's check accepts it."""
    from memrules.strategies.seamed import summary_role

    history = exchanges_after_the_task()
    first = 2  # the assistant's first call, after the task (message 1)
    assert summary_role(history, first) == "assistant"
    assert summary_role(history, 1) == "user"
    summary = message("assistant", f"{SUMMARY_PREFIX} read m0.py to m3.py")
    output = (*history[:2], summary, *history[10:])
    enforced = enforce(history, output)
    assert enforced.violation is None
    assert check_invariants(history, output) == []


def test_summarize_writes_the_assistants_summary_of_the_tasks_exchanges() -> None:
    """The task's turn is an earlier one (a later user message opened the
    latest turn); the task stays, so its tool exchanges are the units, and
    their summary is the assistant's, right after the task."""
    history = exchanges_after_the_task()
    result = run_once(
        history,
        (NamedStrategy(name="summarize", strategy=summarize(turns=3, keep_exchanges=0)),),
        context(summarizer=extractive_summarizer(max_chars=300)),
    )
    out = result.messages
    assert result.report.errors == ()
    (summary,) = summaries(out)
    assert out[1] is history[1]  # the task
    assert out[2] is summary
    assert summary.role == "assistant"
    assert [m for m in out if m.role == "user"] == [history[1], history[-1]]
    assert check_invariants(history, out) == []


def test_a_prompt_with_the_extractive_summarizer_is_an_error_traced_or_not(
    tmp_path: Path,
) -> None:
    """The extractive summarizer has no prompt: a strategy's prompt with it
    is an error in the report, whether the run is traced or not, and the
    turns stay."""
    config = """
max_messages: 5
summarizer: {type: extractive, max_chars: 300}
strategies:
  - type: summarize
    turns: 1
    prompt: "Keep the file paths."
"""
    pipeline = load_pipeline(config)
    history = chat(4)
    plain = pipeline.apply(history)
    with record_trace(tmp_path / "t.jsonl", pipeline, name="p") as traced:
        logged = traced.apply(history, conversation_id="c1")
    for result in (plain, logged):
        assert result.messages == history
        (error,) = result.report.errors
        assert error.startswith("summarize: StrategyError: the summarizer extractive_summarizer(")
        assert "takes no prompt" in error


def test_frozen_counts_the_summaries_it_keeps() -> None:
    """With ``frozen: true`` the summary already there and what precedes it
    stay, so the block is chosen among the units after it: one call
    reaches the budget."""
    summary = Message(
        role="user",
        parts=(message("user", f"{SUMMARY_PREFIX} Earlier: src/a.py fixed.").parts[0],),
        metadata={"memrules": {"summary_of": 4, "replaced_ids": []}},
    )
    history = (*chat(1), summary, *(m for k in range(1, 6) for m in turn(k)))
    pipeline = load_pipeline(
        "{max_messages: 9, strategies: [{type: summarize, turns: 1, frozen: true}]}",
        seams=Seams(summarizer=extractive_summarizer(max_chars=300)),
    )
    result = pipeline.apply(history)
    assert len(result.messages) <= 9, [a.note for a in result.report.actions]
    assert result.messages[:4] == history[:4]  # the frozen prefix, as it was
    assert [a.changed for a in result.report.actions] == [True]
    assert result.report.actions[0].note == (
        "summarized 6 messages (3 units, 2 more than turns=1 takes, to fit the budget)"
    )
