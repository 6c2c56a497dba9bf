"""The evaluation dataset format: what it reads, and what it refuses, saying where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memrules._cli.dataset import DatasetError, parse_conversation, read_dataset
from memrules._core.messages import ToolCall

ROOT = Path(__file__).resolve().parents[2]

CHAT = {
    "id": "chat-7",
    "user": "ana",
    "sessions": [
        {"id": "s1", "time": "2024-03-01T09:00:00Z", "messages": [
            {"id": "m1", "role": "user", "speaker": "Ana", "content": "The vault is in Lisbon."},
            {"id": "m2", "role": "assistant", "content": "Noted."}]},
        {"id": "s2", "time": "2024-03-09T17:30:00Z", "messages": [
            {"id": "m3", "role": "user", "speaker": "Ana", "content": "Hi again.",
             "time": "2024-03-09T17:31:00Z"},
            {"id": "m4", "role": "assistant", "content": "Hello!"}]},
    ],
    "questions": [
        {"id": "q2", "question": "Where is the vault?", "answer": "Lisbon", "evidence": ["m1"]},
        {"id": "q1", "question": "Where is it?", "evidence": ["m1"], "after": "m2"},
    ],
}  # fmt: skip

AGENT = {
    "id": "agent-1",
    "messages": [
        {"id": "a0", "role": "system", "content": "You are a coding agent."},
        {"id": "a1", "role": "user", "content": "Why does the build fail?"},
        {"id": "a2", "role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"path\": \"setup.cfg\"}"}}]},
        {"id": "a3", "role": "tool", "tool_call_id": "c1", "content": "python_requires = >=3.13"},
    ],
    "questions": [{"id": "q", "question": "Which Python does setup.cfg require?",
                   "answer": ">=3.13", "evidence": ["a3"]}],
}  # fmt: skip


def test_a_multi_session_chat_reads_with_speakers_times_and_ordered_questions() -> None:
    chat = parse_conversation(CHAT, "d.jsonl:1")
    assert chat.id == "chat-7"
    assert chat.user == "ana"
    assert [m.id for m in chat.messages] == ["m1", "m2", "m3", "m4"]
    first, _, third, _ = chat.messages
    assert (first.role, first.name, first.text) == ("user", "Ana", "The vault is in Lisbon.")
    assert dict(first.metadata) == {"time": "2024-03-01T09:00:00Z", "session": "s1"}
    assert third.metadata["time"] == "2024-03-09T17:31:00Z"  # the message's own time wins
    assert [(q.id, q.after) for q in chat.questions] == [("q1", 2), ("q2", 4)]
    assert chat.questions[1].answer == "Lisbon"
    assert chat.questions[0].answer is None


def test_an_agent_history_reads_as_openai_messages() -> None:
    agent = parse_conversation(AGENT, "d.jsonl:2")
    assert [m.role for m in agent.messages] == ["system", "user", "assistant", "tool"]
    (call,) = agent.messages[2].parts
    assert isinstance(call, ToolCall)
    assert call.name == "read_file"
    assert agent.messages[3].result_ids == ("c1",)
    assert agent.user is None
    assert agent.questions[0].evidence == ("a3",)


def _with(base: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(base))
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        (("id",), "", "d.jsonl:3: id: expected a non-empty string"),
        (("sessions",), KeyError, "d.jsonl:3: give either sessions or messages"),
        (("messages",), [], "d.jsonl:3: give either sessions or messages"),
        (
            ("sessions", 0, "messages", 0, "id"),
            KeyError,
            "d.jsonl:3: sessions[0].messages[0].id: expected",
        ),
        (("sessions", 1, "messages", 0, "id"), "m1", 'two messages have id "m1"'),
        (("sessions", 0, "messages", 0, "role"), "robot", "sessions[0].messages[0]"),
        (("sessions", 0, "messages", 0, "name"), "Bo", "speaker and name differ"),
        (("questions", 0, "evidence"), [], "questions[0].evidence: expected a non-empty list"),
        (("questions", 0, "evidence"), ["m9"], 'questions[0].evidence[0]: no message has id "m9"'),
        (("questions", 1, "after"), "m0", 'questions[1].after: no message has id "m0"'),
        (("questions", 1, "evidence"), ["m3"], "questions[1].evidence: m3 comes after"),
        (("questions", 1, "id"), "q2", 'two questions have id "q2"'),
        (("questions",), {}, "questions: expected a list"),
    ],
)
def test_each_problem_names_its_place(path: tuple[Any, ...], value: Any, words: str) -> None:
    with pytest.raises(DatasetError) as caught:
        parse_conversation(_with(CHAT, path, value), "d.jsonl:3")
    assert words in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_read_dataset_streams_lines_and_names_bad_ones(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(CHAT) + "\n\n" + json.dumps(AGENT) + "\n{oops\n", encoding="utf-8")
    found = read_dataset(path)
    assert next(found)[0] == 1
    assert next(found)[0] == 3
    with pytest.raises(DatasetError, match=r"d\.jsonl:4: not JSON"):
        next(found)
    with pytest.raises(DatasetError, match="cannot read the dataset"):
        next(read_dataset(tmp_path / "missing.jsonl"))


def test_the_shipped_dataset_reads_and_is_what_its_generator_writes(tmp_path: Path) -> None:
    from benchmarks.eval.generate import generate

    shipped = ROOT / "benchmarks" / "eval" / "dataset.jsonl"
    expected = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in generate(seed=0))
    assert shipped.read_text(encoding="utf-8") == expected
    conversations = [
        parse_conversation(data, f"{shipped}:{n}") for n, data in read_dataset(shipped)
    ]
    kinds = {c.id.split("-")[0] for c in conversations}
    assert kinds == {"chat", "agent"}
    for c in conversations:
        assert c.questions
        for q in c.questions:  # every answer is where the evidence says, and only there
            assert q.answer is not None
            holders = [m.id for m in c.messages[: q.after] if q.answer in m.countable_text]
            assert set(q.evidence) <= set(holders)
            assert q.answer not in q.question
