"""The committed recall dataset is what its seeded generator makes."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.recall.generate import generate
from memrules._core.seam_records import decode_message

DATASET = Path(__file__).resolve().parents[2] / "benchmarks" / "recall" / "dataset.json"


def test_the_generator_makes_the_committed_dataset() -> None:
    committed = json.loads(DATASET.read_text(encoding="utf-8"))
    assert generate(seed=committed["seed"], sessions=len(committed["conversations"])) == committed


def test_every_question_has_evidence_in_an_earlier_session_message() -> None:
    data = json.loads(DATASET.read_text(encoding="utf-8"))
    ids = {
        decode_message(json.dumps(m)).id: c["id"]
        for c in data["conversations"]
        for m in c["messages"]
    }
    kinds = {q["kind"] for q in data["questions"]}
    assert kinds == {"paraphrase", "exact"}
    for q in data["questions"]:
        assert q["evidence"]
        assert all(ids[e] == q["session"] for e in q["evidence"])
