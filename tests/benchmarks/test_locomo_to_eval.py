"""LoCoMo as a ``memrules eval`` dataset (benchmarks/locomo/to_eval.py), on
the tiny LoCoMo file of test_locomo_bench.py: the lines read as the eval's
format, with the sessions' dates, the speakers and the scored questions."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.locomo.to_eval import main
from memrules._cli.dataset import parse_conversation, read_dataset
from tests.benchmarks.test_locomo_bench import LOCOMO


def test_a_locomo_file_becomes_an_eval_dataset(tmp_path: Path) -> None:
    source = tmp_path / "locomo-tiny.json"
    source.write_text(json.dumps(LOCOMO), encoding="utf-8")
    out = tmp_path / "locomo.jsonl"
    assert main([str(source), str(out)]) == 0
    ((line, value),) = read_dataset(out)
    conversation = parse_conversation(value, f"{out}:{line}")
    assert conversation.id == conversation.user == "conv-t"
    assert len(conversation.messages) == 10
    first, sixth = conversation.messages[0], conversation.messages[5]
    assert (first.id, first.role, first.name) == ("D1:1", "user", "Ann")
    assert (sixth.id, sixth.role, sixth.name) == ("D2:1", "assistant", "Bob")
    assert first.metadata["time"] == "2023-05-08T13:56:00"
    assert sixth.metadata["time"] == "2023-06-20T09:00:00"
    # Categories 1-4 with a valid evidence turn, asked after the whole
    # conversation, evidence normalised (split, repaired).
    asked = {q.question: q for q in conversation.questions}
    assert sorted(asked) == sorted(
        [
            "parrot adopted shelter?",
            "violin learning?",
            "pottery class Tuesdays?",
            "favourite sport?",
            "zebra?",
        ]
    )
    assert asked["violin learning?"].evidence == ("D1:2", "D2:1")
    assert asked["pottery class Tuesdays?"].evidence == ("D2:2",)
    assert asked["zebra?"].category == "2"
    assert asked["zebra?"].answer == "Kenya"
    assert {q.after for q in conversation.questions} == {10}
