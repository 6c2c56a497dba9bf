"""The LoCoMo benchmark (benchmarks/locomo): its loader's evidence
normalisation and its any@k scoring, on tiny files in LoCoMo's and
LongMemEval's published formats written here (never the real data), with
the figures worked out by hand."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.locomo.load import (
    load_locomo,
    load_longmemeval,
    normalise_evidence,
    parse_locomo_date,
)
from benchmarks.locomo.run import BM25, any_at, first_rank, main, paired_bootstrap, tokenize


def _turn(dia_id: str, speaker: str, text: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


# Ten turns in two sessions. Three hold "zebra", the evidence of the last
# question being the longest of them, so BM25 ranks it third.
LOCOMO = [
    {
        "sample_id": "conv-t",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("D1:1", "Ann", "Hello there, how are things going lately?"),
                _turn("D1:2", "Bob", "Pretty good, my garden tomatoes finally ripened."),
                _turn("D1:3", "Ann", "I adopted a parrot named Kiwi from the shelter."),
                _turn("D1:4", "Bob", "A zebra crossing sign fell near my office."),
                _turn(
                    "D1:5",
                    "Ann",
                    "Saw a zebra painting at the gallery downtown with friends yesterday evening.",
                ),
            ],
            "session_2_date_time": "9:00 am on 20 June, 2023",
            "session_2": [
                _turn("D2:1", "Bob", "I started learning the violin this spring."),
                _turn("D2:2", "Ann", "Lovely. I signed up for a pottery class on Tuesdays."),
                _turn("D2:3", "Bob", "My brother moved to Lisbon for work."),
                _turn(
                    "D2:4",
                    "Ann",
                    "We watched a long documentary about a zebra herd migrating across the "
                    "dry savanna plains of Kenya during the summer season.",
                ),
                _turn("D2:5", "Bob", "Sounds great, see you soon."),
            ],
        },
        "qa": [
            {
                "question": "parrot adopted shelter?",
                "answer": "Kiwi",
                "evidence": ["D1:3"],
                "category": 4,
            },
            # Two ids in one string: split; D2:1 answers.
            {
                "question": "violin learning?",
                "answer": "spring",
                "evidence": ["D1:2; D2:1"],
                "category": 1,
            },
            # A stray colon: repaired to D2:2.
            {
                "question": "pottery class Tuesdays?",
                "answer": "Tuesdays",
                "evidence": ["D:2:2"],
                "category": 2,
            },
            # A turn that does not exist: dropped, so the question is not scored.
            {
                "question": "Lisbon brother?",
                "answer": "Lisbon",
                "evidence": ["D9:9"],
                "category": 3,
            },
            # Not an id: dropped, not scored.
            {"question": "tomatoes garden?", "answer": "ripened", "evidence": ["D"], "category": 4},
            # Category 5 (adversarial): not scored by default.
            {
                "question": "parrot?",
                "adversarial_answer": "none",
                "evidence": ["D1:3"],
                "category": 5,
            },
            # No word of it is in any turn: never found.
            {"question": "favourite sport?", "answer": "none", "evidence": ["D1:1"], "category": 1},
            {"question": "zebra?", "answer": "Kenya", "evidence": ["D2:4"], "category": 2},
        ],
    }
]

# By hand: five questions scored (categories 1-4 with a valid evidence
# turn): parrot, violin and pottery at rank 1, zebra at rank 3, sport never.
EXPECTED_ANY = {"@1": 3 / 5, "@5": 4 / 5, "@10": 4 / 5}
EXPECTED_CATEGORIES = {
    "1": {"questions": 2, "@1": 0.5, "@5": 0.5, "@10": 0.5},
    "2": {"questions": 2, "@1": 0.5, "@5": 1.0, "@10": 1.0},
    "4": {"questions": 1, "@1": 1.0, "@5": 1.0, "@10": 1.0},
}
EXPECTED_RANKS = [1, 1, 1, None, 3]


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-tiny.json"
    path.write_text(json.dumps(LOCOMO), encoding="utf-8")
    return path


def _needs(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: pip install -e '.[local-embed,qdrant]'")


def test_malformed_evidence_is_split_repaired_or_dropped_and_counted() -> None:
    ids = {"D1:2", "D2:1", "D11:26", "D4:4"}
    got, done = normalise_evidence(
        ["D1:2; D2:1", "D:11:26", "D", "D10:19", "D4:4", "D9:1 D4:4", "D04:004"], ids
    )
    assert got == ("D1:2", "D2:1", "D11:26", "D4:4")
    assert (done.entries, done.well_formed, done.split, done.repaired) == (7, 1, 2, 2)
    assert (done.malformed, done.missing, done.dropped) == (1, 2, 3)


def test_the_loader_reads_sessions_in_order_with_their_dates(locomo_file: Path) -> None:
    (sample,), done = load_locomo(locomo_file)
    assert [t.id for t in sample.turns][:6] == ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5", "D2:1"]
    assert sample.turns[5].session == 2
    assert parse_locomo_date(sample.turns[5].date).isoformat() == "2023-06-20T09:00:00"
    assert [q.evidence for q in sample.questions][:5] == [
        ("D1:3",),
        ("D1:2", "D2:1"),
        ("D2:2",),
        (),
        (),
    ]
    assert done.to_dict() | {"examples": []} == {
        "entries": 8,
        "well_formed": 4,
        "split": 1,
        "repaired": 1,
        "malformed": 1,
        "missing": 1,
        "dropped": 2,
        "examples": [],
    }


def test_scoring_helpers() -> None:
    assert first_rank([["a"], ["b", "c"], ["d"]], ["c", "d"]) == 2
    assert first_rank([["a"]], ["z"]) is None
    assert any_at([1, 3, None, 10, 11], 5) == 2 / 5
    assert any_at([1, 3, None, 10, 11], 10) == 3 / 5
    assert paired_bootstrap([1, None], [1, None], 5, rounds=200, seed=0) == (0.0, 0.0, 0.0)
    diff, lo, hi = paired_bootstrap([1, 1, 1, 1], [None, None, 1, 1], 1, rounds=500, seed=3)
    assert diff == 0.5
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0
    assert paired_bootstrap([1, 1], [None, 1], 1, rounds=50, seed=1) == paired_bootstrap(
        [1, 1], [None, 1], 1, rounds=50, seed=1
    )


def test_bm25_ranks_by_idf_and_length() -> None:
    assert tokenize("What did Ann's cat eat?") == ["ann", "cat", "eat"]
    index = BM25(["zebra one two three four", "zebra", "nothing here", "zebra one"])
    assert index.rank("zebra", 10) == [1, 3, 0]
    assert index.rank("missing words", 10) == []


def test_bm25_any_at_k_on_a_tiny_locomo_file(locomo_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "bm25.json"
    results = main([str(locomo_file), "--backends", "--bootstrap", "100", "--json", str(out)])
    bm25 = results["systems"]["bm25"]
    assert bm25["ranks"] == EXPECTED_RANKS
    assert bm25["summary"]["any"] == EXPECTED_ANY
    assert bm25["summary"]["categories"] == EXPECTED_CATEGORIES
    assert results["normalisation"]["dropped"] == 2
    assert results["normalisation"]["split"] == 1
    assert json.loads(out.read_text(encoding="utf-8"))["questions"] == 5


def test_lexical_recall_through_the_store_scores_as_by_hand(locomo_file: Path) -> None:
    _needs("qdrant_client", "onnxruntime")
    results = main(
        [
            str(locomo_file),
            "--backends",
            "qdrant",
            "--modes",
            "lexical",
            "dense",
            "--context",
            "none",
            "--bootstrap",
            "100",
        ]
    )
    lexical = results["systems"]["lexical (qdrant)"]
    assert lexical["ranks"] == EXPECTED_RANKS
    assert lexical["summary"]["any"] == EXPECTED_ANY
    assert lexical["summary"]["vs_bm25"]["@5"] == {"diff": 0.0, "lo": 0.0, "hi": 0.0}
    dense = results["systems"]["dense (qdrant)"]
    # Dense ranks every turn: with ten turns, every evidence turn is in its top 10.
    assert dense["summary"]["any"]["@10"] == 1.0
    assert dense["remember_turns_per_s"] > 0


def test_the_memory_route_path_scores_the_injected_memories(locomo_file: Path) -> None:
    _needs("qdrant_client", "onnxruntime")
    results = main(
        [
            str(locomo_file),
            "--backends",
            "--route",
            "--route-search",
            "lexical",
            "--bootstrap",
            "100",
        ]
    )
    route = results["systems"]["route lexical (qdrant)"]
    # Pairs (D1:1, D1:2), (D1:3, D1:4), (D1:5), (D2:1, D2:2), (D2:3, D2:4), (D2:5):
    # a lone last turn has no reply, so it is not kept.
    assert route["store"]["pairs"] == 6
    assert route["store"]["outcomes"].get("stored", 0) >= 4
    ranks: list[Any] = route["ranks"]
    assert ranks[0] == 1  # the parrot: in the memory (D1:3, D1:4)
    assert ranks[2] == 1  # pottery: in (D2:1, D2:2)


def test_a_longmemeval_file_loads_and_scores(tmp_path: Path) -> None:
    data = [
        {
            "question_id": "q1",
            "question_type": "single-session-user",
            "question": "Which breed is my dog?",
            "answer": "a beagle",
            "question_date": "2023/05/30 (Tue) 23:40",
            "haystack_session_ids": ["s1", "s2"],
            "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/25 (Thu) 10:00"],
            "haystack_sessions": [
                [
                    {"role": "user", "content": "My beagle dog loves the park."},
                    {"role": "assistant", "content": "Beagles are energetic!", "has_answer": False},
                ],
                [
                    {"role": "user", "content": "Recommend a pasta recipe."},
                    {"role": "assistant", "content": "Try carbonara."},
                    {
                        "role": "user",
                        "content": "I adopted the dog, a beagle breed, in May.",
                        "has_answer": True,
                    },
                ],
            ],
            "answer_session_ids": ["s2"],
        },
        {
            "question_id": "q2_abs",
            "question_type": "temporal-reasoning",
            "question": "When did I buy a boat?",
            "answer": "You did not mention it.",
            "question_date": "2023/05/30 (Tue) 23:40",
            "haystack_session_ids": ["s9"],
            "haystack_dates": ["2023/05/20 (Sat) 02:21"],
            "haystack_sessions": [[{"role": "user", "content": "Hi"}]],
            "answer_session_ids": [],
        },
    ]
    path = tmp_path / "longmemeval-tiny.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    samples, _ = load_longmemeval(path)
    assert [t.id for t in samples[0].turns] == ["s1:1", "s1:2", "s2:1", "s2:2", "s2:3"]
    assert samples[0].questions[0].evidence == ("s2:3",)
    assert samples[0].turns[2].date == "2023/05/25 (Thu) 10:00"
    assert samples[1].questions[0].evidence == ()
    results = main([str(path), "--format", "longmemeval", "--backends", "--bootstrap", "50"])
    bm25 = results["systems"]["bm25"]
    # "breed" is only in s2:3 (and "dog" in s1:1 too): rank 1; the abstention is not scored.
    assert bm25["ranks"] == [1]
    assert bm25["summary"]["categories"] == {
        "single-session-user": {"questions": 1, "@1": 1.0, "@5": 1.0, "@10": 1.0}
    }


def test_turns_are_remembered_one_session_at_a_time_with_its_day(locomo_file: Path) -> None:
    from benchmarks.locomo.run import context_named, contextual_texts, sessions

    (sample,), _ = load_locomo(locomo_file)
    days = [when.date().isoformat() for when, _ in sessions(sample)]
    assert days == ["2023-05-08", "2023-06-20"]
    texts = contextual_texts(sample, context_named("default"))
    assert texts[4] == (
        "Ann: Saw a zebra painting at the gallery downtown with friends yesterday evening.\n"
        "(8 May 2023; yesterday: 7 May 2023)\n"
        "(before) Bob: A zebra crossing sign fell near my office."
    )
    assert texts[5] == "Bob: I started learning the violin this spring.\n(20 June 2023)"
    assert contextual_texts(sample, context_named("none"))[5] == (
        "Bob: I started learning the violin this spring."
    )
    assert context_named("before=2,after=1").after == 1
