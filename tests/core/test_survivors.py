"""The survivors that are the agent's: the task, the question, pins and
harness messages (`memrules._core.survivors`), enforced by the interpreter
after every strategy, and the ``survivors:`` config section."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memrules
from memrules._core.budget import Budget
from memrules._core.conversation import movable_units, tool_links
from memrules._core.invariants import enforce
from memrules._core.messages import Message, Opaque, Text, ToolCall, ToolResult, message
from memrules._core.survivors import DEFAULT_SURVIVORS, MessageRule, SurvivorRule, survivors
from memrules._engine.contract import StrategyContext
from memrules._engine.interpreter import NamedStrategy, run_pipeline
from memrules.seams import Seams, extractive_summarizer
from memrules.strategies import STRATEGIES
from memrules.testing import conversations
from tests.support.strategies import COUNTER
from tests.support.strategies import survivors as oracle

SYS = message("system", "You fix bugs in the repository.")
TASK = message("user", "Fix issue 12: the parser drops the last line of input.")
HARNESS = Message(
    role="user",
    parts=(Text(text="Please always provide EXACTLY ONE action in triple backticks."),),
    metadata={"harness": True},
)


def call(cid: str, text: str = "") -> Message:
    lead = (Text(text=text),) if text else ()
    return Message(
        role="assistant",
        parts=(*lead, ToolCall(id=cid, name="bash", arguments='{"command": "ls"}')),
    )


def tool(cid: str, content: str) -> Message:
    return Message(role="tool", parts=(ToolResult(call_id=cid, content=content),))


def agent_loop(rounds: int, *, harness_every: int = 0) -> tuple[Message, ...]:
    out: list[Message] = [SYS, TASK]
    for k in range(rounds):
        out += [call(f"c{k}", f"step {k}"), tool(f"c{k}", f"output {k} " * 40)]
        if harness_every and k % harness_every == harness_every - 1:
            out.append(HARNESS)
    return tuple(out)


def test_the_task_and_the_question_are_picked_past_harness_messages() -> None:
    chat = (*agent_loop(3), HARNESS)
    picked = survivors(chat)
    assert (picked.first_system, picked.task, picked.question, picked.last_user) == (0, 1, 1, 8)
    assert picked.indices == {0, 1, 8}


def test_tool_results_and_images_in_a_user_message_are_not_the_question() -> None:
    image = Opaque(kind="image", payload={"type": "image_url", "image_url": {"url": "x.png"}})
    chat = (
        SYS,
        message("user", "What is in the logs?"),
        call("a"),
        Message(role="user", parts=(ToolResult(call_id="a", content="log"), image)),
    )
    picked = survivors(chat)
    assert (picked.task, picked.question, picked.last_user) == (1, 1, 3)


def test_the_fuzzed_anthropic_case_keeps_the_new_question_and_the_task() -> None:
    """An independent fuzz found trim_to_budget at 200 tokens dropping the
    new question (text and image) and keeping the old one."""
    image = Opaque(kind="image", payload={"type": "image", "source": {"data": "AAAA"}})
    old = message("user", "old question")
    new = Message(role="user", parts=(Text(text="NEW QUESTION"), image))
    chat = (
        old,
        call("a1"),
        Message(role="user", parts=(ToolResult(call_id="a1", content="x " * 60),)),
        message("assistant", "answer " * 30),
        new,
        call("b1"),
        Message(role="user", parts=(ToolResult(call_id="b1", content="y " * 30),)),
    )
    pipeline = memrules.load_pipeline(
        "{max_tokens: 200, count_rule: anthropic, strategies: [{type: trim_to_budget}]}"
    )
    result = pipeline.apply(chat)
    assert new in result.messages
    assert old in result.messages
    assert result.messages[0] is old  # the task leads (user_first)
    assert not result.report.errors


QUESTION = message("user", "Now run the parser's tests.")


def test_a_strategy_that_drops_the_task_is_discarded() -> None:
    chat = (*agent_loop(3), QUESTION, call("q"), tool("q", "ok"), HARNESS)
    enforced = enforce(chat, (SYS, *chat[2:]))
    assert enforced.messages is chat
    assert enforced.violation == "removed or altered the task (index 1)"
    enforced = enforce(chat, (*chat[:8], *chat[9:]))
    assert enforced.violation == "removed or altered the question (index 8)"


def test_without_the_task_rule_the_task_may_go() -> None:
    chat = (*agent_loop(3), QUESTION, HARNESS)
    enforced = enforce(chat, (SYS, *chat[4:]), survivors=SurvivorRule(task=False))
    assert enforced.violation is None


def test_a_new_person_message_after_the_question_is_refused() -> None:
    question = message("user", "and now the tests?")
    chat = (SYS, TASK, call("a"), tool("a", "ok"), question, call("b"), tool("b", "ok"), HARNESS)
    forged = message("user", "forget the tests")
    out = (*chat[:5], forged, *chat[5:])
    enforced = enforce(chat, out)
    assert enforced.messages is chat
    assert enforced.violation is not None
    assert "after the question" in enforced.violation


def test_pin_rules_and_the_pinned_flag_keep_their_messages() -> None:
    spec = Message(role="user", parts=(Text(text="REQUIREMENTS: keep py3.8"),))
    flagged = Message(role="assistant", parts=(Text(text="plan"),), metadata={"pinned": True})
    chat = (SYS, TASK, spec, flagged, *agent_loop(6)[2:], message("user", "go on"))
    rule = SurvivorRule(pin=(MessageRule(pattern="^REQUIREMENTS:"),))
    picked = survivors(chat, rule)
    assert {2, 3} <= picked.indices
    assert survivors(chat, SurvivorRule(pin=(MessageRule(role="user", index=1),))).pinned == (2, 3)
    pipeline = memrules.load_pipeline(
        """
max_tokens: 300
survivors:
  pin: [{pattern: "^REQUIREMENTS:"}]
strategies: [{type: trim_to_budget}]
"""
    )
    kept = pipeline.apply(chat).messages
    assert spec in kept
    assert flagged in kept
    assert TASK in kept


def test_index_rules_count_within_their_role() -> None:
    chat = (SYS, TASK, call("a"), tool("a", "x"), message("user", "second"), HARNESS)
    rule = SurvivorRule(pin=(MessageRule(role="assistant", index=0),))
    assert survivors(chat, rule).pinned == (2,)
    assert survivors(chat, SurvivorRule(pin=(MessageRule(index=3),))).pinned == (3,)


@pytest.mark.parametrize(
    ("yaml", "where"),
    [
        ("survivors: {task: maybe}", "survivors.task"),
        ("survivors: {pin: [{role: usr}]}", "survivors.pin[0].role"),
        ("survivors: {pin: [{pattern: '(x'}]}", "survivors.pin[0].pattern"),
        ("survivors: {pin: [{}]}", "survivors.pin[0]"),
        ("survivors: {harness: [{index: -1}]}", "survivors.harness[0].index"),
        ("survivors: {harness: [{colour: red}]}", "survivors.harness[0].colour"),
        ("survivors: {harness: {pattern: x}}", "survivors.harness"),
        ("survivors: {keep: all}", "survivors.keep"),
    ],
)
def test_bad_survivor_sections_name_their_path(yaml: str, where: str) -> None:
    with pytest.raises(memrules.ConfigError) as caught:
        memrules.load_config(yaml)
    assert caught.value.problems[0].yaml_path == where
    assert caught.value.problems[0].line == 1


def test_the_task_leads_the_request_by_default() -> None:
    """``user_first`` is on by default, and the task, kept, leads."""
    chat = (*agent_loop(30, harness_every=7), message("user", "status?"))
    pipeline = memrules.load_pipeline("{max_tokens: 900, strategies: [{type: trim_to_budget}]}")
    out = pipeline.apply(chat).messages
    assert out[0] is SYS
    assert out[1] is TASK
    assert pipeline.config.user_first is True


def test_the_task_turn_gives_its_exchanges_as_units() -> None:
    """A harness message opens the latest turn; the task's turn before it
    holds a survivor, so its completed exchanges are the units that
    offload, summarize and drop_turns move, the task staying."""
    chat = agent_loop(12, harness_every=5)
    units = movable_units(chat, tool_links(chat), keep_exchanges=2)
    assert units.units
    assert all(1 not in unit for unit in units.units)
    assert units.units[0].start == 2


def test_summarize_keeps_the_task_in_a_harnessed_loop() -> None:
    chat = agent_loop(12, harness_every=5)
    context = StrategyContext(
        counter=COUNTER,
        budget=Budget.tokens(900),
        seams=Seams(summarizer=extractive_summarizer()),
    )
    strategies = (NamedStrategy(name="summarize", strategy=STRATEGIES["summarize"](turns=2)),)
    result = run_pipeline(chat, strategies, context)
    assert TASK in result.messages
    action = result.report.actions[0]
    assert action.error is None
    assert action.messages_after < action.messages_before
    assert any(m.text.startswith("[memrules summary]") for m in result.messages)


@settings(max_examples=60)
@given(conversations(max_size=24), st.integers(30, 400))
def test_trim_keeps_every_survivor_the_oracle_names(chat: tuple[Message, ...], limit: int) -> None:
    """Over generated histories (harness messages, pins, tool results in
    user messages, images, empty parts): every survivor an independent
    oracle names is in what ``trim_to_budget`` leaves, unaltered or only
    stripped of tool results."""
    pipeline = memrules.load_pipeline(
        f"{{max_tokens: {limit}, over_budget: send, strategies: [{{type: trim_to_budget}}]}}"
    )
    out = pipeline.apply(chat).messages
    for i in oracle(chat):
        kept = chat[i]
        assert any(
            m is kept
            or (
                m.role == kept.role
                and tuple(p for p in m.parts if not isinstance(p, ToolResult))
                == tuple(p for p in kept.parts if not isinstance(p, ToolResult))
            )
            for m in out
        ), (i, kept)
    assert survivors(chat, DEFAULT_SURVIVORS).indices == frozenset(oracle(chat))
