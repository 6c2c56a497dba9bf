"""Answer-level scoring against a real loopback chat server: the answer
model gets the compacted context, the judge grades with the pinned prompt,
and the trace replays without either model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memrules import ReplayMismatch, replay_trace
from memrules._cli.main import main
from memrules._replay.answers import JUDGE_PROMPT, verdict_score
from tests.cli.test_eval import VAULT, WINDOW, write
from tests.support.chat_server import ChatServer

WHOLE = "strategies:\n  - type: sliding_window\n    keep_messages: 3\n"  # no trigger


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def answer_model(messages: list[dict[str, Any]]) -> str:
    """Answers from what it was given: the vault's city and the key's
    colour if the context says them, else that it does not know."""
    context = " ".join(_text(m) for m in messages[:-1])
    question = _text(messages[-1])
    if "vault" in question:
        return "It is in Lisbon." if "Lisbon" in context else "I don't know."
    return "It is blue." if "blue" in context else "I don't know."


def judge_model(messages: list[dict[str, Any]]) -> str:
    """Grades as the pinned prompt asks: the reference in the candidate."""
    assert messages[0] == {"role": "system", "content": JUDGE_PROMPT}
    text = _text(messages[1])
    reference = text.split("Reference answer: ")[1].split("\n")[0]
    candidate = text.split("Candidate answer: ")[1]
    return "CORRECT" if reference.lower() in candidate.lower() else "WRONG"


def test_answers_are_scored_per_question_and_the_run_replays_without_the_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    window = tmp_path / "window.yaml"
    window.write_text(WINDOW, encoding="utf-8")
    whole = tmp_path / "whole.yaml"
    whole.write_text(WHOLE, encoding="utf-8")
    dataset = write(tmp_path / "d.jsonl", VAULT)
    trace, per_question = tmp_path / "t.jsonl", tmp_path / "pq.jsonl"
    with (
        ChatServer(answer_model, models=("answerer",)) as answers,
        ChatServer(judge_model, models=("judge",)) as judge,
    ):
        status = main([
            "eval", "--config", str(window), "--config", str(whole), str(dataset), "--json",
            "--answer-model", answers.url, "--judge-model", judge.url, "--bootstrap", "20",
            "--trace", str(trace), "--per-question", str(per_question),
        ])  # fmt: skip
        out = capsys.readouterr()
        assert status == 0, out.err
        sent = answers.chat_requests
    figures = json.loads(out.out)
    assert (figures["answer_model"], figures["judge_model"]) == ("answerer", "judge")
    by_name = {p["name"]: p["answers"] for p in figures["pipelines"]}
    # The window lost both facts from the context, so its answers are wrong;
    # the whole conversation answers both.
    assert by_name["window"] == {"answered": 2, "judged": 2, "correct": 0, "correct_share": 0.0}
    assert by_name["whole"] == {"answered": 2, "judged": 2, "correct": 2, "correct_share": 1.0}
    (paired,) = [c for c in figures["comparisons"] if c["rate"] == "answer_correct"]
    assert (paired["only_a"], paired["only_b"]) == (0, 2)
    # The answer model got the compacted context, the question last.
    first = sent[0]
    assert first["model"] == "answerer"
    assert first["temperature"] == 0
    assert [m["content"] for m in first["messages"]] == [
        "You are terse.", "Noted again.", "Where is the vault?",
    ]  # fmt: skip
    lines = [json.loads(line) for line in per_question.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["answer"] == {"answer": "I don't know.", "verdict": "WRONG", "score": 0}
    assert lines[1]["answer"] == {"answer": "It is in Lisbon.", "verdict": "CORRECT", "score": 1}
    written = trace.read_text(encoding="utf-8").splitlines()[1:]  # after the header
    kinds = [json.loads(line)["kind"] for line in written]
    assert kinds.count("answer") == 4
    # Both servers are gone: the replay answers every model call from the trace.
    summary = replay_trace(trace)
    assert summary.identical
    assert summary.requests == len(kinds)


def test_a_replay_of_an_answer_line_says_what_differs(tmp_path: Path) -> None:
    whole = tmp_path / "whole.yaml"
    whole.write_text(WHOLE, encoding="utf-8")
    dataset = write(tmp_path / "d.jsonl", VAULT)
    trace = tmp_path / "t.jsonl"
    with ChatServer(answer_model) as answers, ChatServer(judge_model) as judge:
        argv = ["eval", "--config", str(whole), str(dataset), "--no-progress", "--answer-model",
                answers.url, "--judge-model", judge.url, "--trace", str(trace)]  # fmt: skip
        assert main(argv) == 0
    lines = trace.read_text(encoding="utf-8").splitlines()
    edited = []
    for line in lines:
        data = json.loads(line)
        if data.get("kind") == "answer" and data["question"] == "q1":
            data["score"] = 0  # what the recorded verdict does not give
        edited.append(json.dumps(data))
    trace.write_text("\n".join(edited) + "\n", encoding="utf-8")
    with pytest.raises(ReplayMismatch, match="score"):
        replay_trace(trace)


def test_the_verdict_is_the_first_word() -> None:
    assert verdict_score("CORRECT") == 1
    assert verdict_score("correct.") == 1
    assert verdict_score("**WRONG**: it says Paris") == 0
    assert verdict_score("Incorrect") == 0
    assert verdict_score("The answer is correct") is None
    assert verdict_score("") is None
