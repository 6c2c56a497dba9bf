"""Auto-store as values (memrules.memory.autostore, .classify): what a
completed turn leaves in memory, and what it does not."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules._core.messages import Message, Opaque, Text, ToolCall, message
from memrules._core.seam_records import decode_message
from memrules.memory import StoreOutcome
from memrules.memory.autostore import memory_id, memory_record, memory_text, plan_store
from memrules.memory.classify import is_refusal, is_small_talk, strip_reasoning
from memrules.memory.retrieve import stored_at

NOW = 1_750_000_000.0
ASK = (message("system", "be brief"), message("user", "Where does my sister live now?"))


def plan(reply: Message | str, messages: tuple[Message, ...] = ASK, **options: object):  # type: ignore[no-untyped-def]
    arguments: dict = {  # type: ignore[type-arg]
        "user": "ana",
        "tenant": "acme",
        "conversation_id": "c1",
        "max_chars": 4000,
        "now": NOW,
        **options,
    }
    return plan_store(messages, reply, **arguments)


def test_a_turn_is_stored_as_question_and_answer() -> None:
    record = plan(message("assistant", "In Porto, since last spring."))
    assert not isinstance(record, StoreOutcome)
    assert record.text == "Q: Where does my sister live now?\nA: In Porto, since last spring."
    assert record.message.text == record.text
    assert (record.scope.user, record.scope.tenant, record.scope.conversation_id) == (
        "ana",
        "acme",
        "c1",
    )
    assert stored_at(record.message) == NOW
    assert decode_message(record.payload) == record.message


def test_reasoning_is_stripped() -> None:
    reply = Message(
        role="assistant",
        parts=(
            Opaque(kind="thinking", payload={"thinking": "the user asked about Priya"}),
            Text(text="<think>she said Porto earlier</think>Porto."),
        ),
    )
    record = plan(reply)
    assert not isinstance(record, StoreOutcome)
    assert record.text.endswith("A: Porto.")
    assert "Priya" not in record.text
    assert strip_reasoning("chain of thought...</think>The answer is 4.") == "The answer is 4."
    assert strip_reasoning("Sure. <thinking>unfinished") == "Sure."
    assert strip_reasoning("<REASONING a=1>x</reasoning> done") == "done"


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("I'm sorry, but I can't help with that.", "refusal"),
        ("Sorry, I cannot share that.", "refusal"),
        ("As an AI, I do not have personal opinions.", "refusal"),
        ("抱歉，我无法回答这个问题。", "refusal"),
        ("<think>nothing to say</think>", "no text"),
        ("   ", "no text"),
    ],
)
def test_refusals_and_empty_replies_are_not_stored(reply: str, why: str) -> None:
    outcome = plan(reply)
    assert isinstance(outcome, StoreOutcome)
    assert outcome.status == "skipped"
    assert why in (outcome.reason or "")


def test_a_long_reply_that_starts_with_an_apology_is_stored() -> None:
    reply = "I'm sorry, but I can't be certain. " + "Here is what the logs show. " * 20
    assert not is_refusal(reply)
    assert not isinstance(plan(reply), StoreOutcome)


@pytest.mark.parametrize(
    "said",
    [
        "hi",
        "Hello there!",
        "thanks!!",
        "ok, thanks 🙏",
        "Thank you so much",
        "你好",
        "谢谢！",
        "ありがとうございます",
        "안녕하세요",
        "감사합니다",
        "merci",
        "  ",
        "👍",
    ],
)
def test_small_talk_is_not_stored(said: str) -> None:
    assert is_small_talk(said)
    outcome = plan("You're welcome!", (message("user", said),))
    assert isinstance(outcome, StoreOutcome)
    assert outcome.status == "skipped"


@pytest.mark.parametrize(
    "said",
    [
        "hi, where is my deploy key?",
        "thanks, now rotate the key",
        "好的，部署到东京",
        "no way, really?",
    ],
)
def test_questions_are_not_small_talk(said: str) -> None:
    assert not is_small_talk(said)


def test_a_reply_that_calls_tools_has_not_finished_the_turn() -> None:
    calling = Message(role="assistant", parts=(ToolCall(id="t1", name="search", arguments="{}"),))
    outcome = plan(calling)
    assert isinstance(outcome, StoreOutcome)
    assert "tools" in (outcome.reason or "")


def test_the_question_is_the_turns_not_a_tool_result() -> None:
    from memrules._core.messages import ToolResult

    messages = (
        message("user", "What is in src/app.py?"),
        Message(role="assistant", parts=(ToolCall(id="t1", name="read_file", arguments="{}"),)),
        Message(role="user", parts=(ToolResult(call_id="t1", content="print(1)"),)),
    )
    record = plan("It prints 1.", messages)
    assert not isinstance(record, StoreOutcome)
    assert record.text == "Q: What is in src/app.py?\nA: It prints 1."


def test_dedup_is_by_content_whatever_the_spacing() -> None:
    one = memory_id("Q: a  b\nA: c", user="ana", tenant="acme")
    assert one == memory_id("Q: a b A: c", user="ana", tenant="acme")
    assert one != memory_id("Q: a b A: c", user="bob", tenant="acme")
    assert one != memory_id("Q: a b A: c", user="ana", tenant="other")
    # The id is the content's, not the time's nor the conversation's.
    first = memory_record("Q: x\nA: y", user="u", tenant="t", conversation_id="c1", now=1.0)
    again = memory_record("Q: x\nA: y", user="u", tenant="t", conversation_id="c2", now=2.0)
    assert first.id == again.id


def test_ids_with_separators_do_not_collide() -> None:
    assert memory_id("Q: x", user="a\x1fb", tenant="c") != memory_id(
        "Q: x", user="a", tenant="b\x1fc"
    )


@given(
    asked=st.text(min_size=1, max_size=3000),
    answer=st.text(min_size=1, max_size=9000),
    cap=st.integers(min_value=64, max_value=4000),
)
def test_a_memory_is_capped_valid_utf8_without_control_characters(
    asked: str, answer: str, cap: int
) -> None:
    text = memory_text(asked, answer, cap)
    assert len(text) <= cap
    text.encode("utf-8")  # no lone surrogate survives
    assert not any(c < " " and c not in "\n\t" for c in text)
    assert text.startswith("Q: ")
    assert "\nA: " in text


def test_a_lone_surrogate_becomes_the_replacement_character() -> None:
    assert memory_text("broken \ud800 text", "ok\x00", 200) == "Q: broken \ufffd text\nA: ok"


def test_a_long_answer_is_cut_and_the_question_kept() -> None:
    text = memory_text("What did the audit find?", "finding " * 2000, 500)
    assert text.startswith("Q: What did the audit find?\nA: finding")
    assert text.endswith(" […]")
    assert len(text) <= 500
