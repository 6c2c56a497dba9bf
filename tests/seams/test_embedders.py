"""The local embedder is the real all-MiniLM-L6-v2: its vectors agree with
the reference model's (sentence-transformers, float32), recorded in
tests/data/minilm_reference.json by tests/data/make_minilm_reference.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from memrules._core.errors import ConfigError
from memrules.seams import Embedder, local_embedder

REFERENCE = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "minilm_reference.json").read_text(
        encoding="utf-8"
    )
)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_match_the_reference_model(local_embedder: Embedder) -> None:
    vectors = local_embedder.embed(REFERENCE["texts"])
    assert len(vectors) == len(REFERENCE["texts"])
    for text, mine, theirs in zip(REFERENCE["texts"], vectors, REFERENCE["vectors"], strict=True):
        assert len(mine) == 384
        assert math.isclose(sum(x * x for x in mine), 1.0, rel_tol=1e-4)
        assert cosine(mine, theirs) > 0.99, text[:40]


def test_similar_texts_are_near_and_unrelated_ones_far(local_embedder: Embedder) -> None:
    a, b, c = local_embedder.embed(
        [
            "My sister moved to Porto last spring.",
            "Which city does my sister live in now?",
            "def total(items): return sum(i.price for i in items)",
        ]
    )
    assert cosine(a, b) > cosine(a, c) + 0.2


def test_a_vector_does_not_depend_on_its_batch(local_embedder: Embedder) -> None:
    alone = local_embedder.embed(["the vault is in Lisbon"])[0]
    batched = local_embedder.embed(["x " * 300, "the vault is in Lisbon", "hi"])[1]
    assert cosine(alone, batched) > 0.9999
    assert local_embedder.embed([]) == []


def test_identity_names_the_model_and_its_settings(local_embedder: Embedder) -> None:
    identity = local_embedder.identity
    assert identity["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert identity["dimension"] == local_embedder.dimension == 384
    assert identity["max_tokens"] == REFERENCE["max_seq_length"] == 256


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="batch_size=0"):
        local_embedder(batch_size=0)
    assert repr(local_embedder(threads=1)) == "local_embedder(batch_size=32, threads=1)"


def test_the_model_threads_wait_without_spinning(local_embedder: Embedder) -> None:
    """onnxruntime's threads sleep between the model's runs and steps
    instead of spinning on the cores the store's writes need (remembering
    the LoCoMo dev sessions into Milvus Lite: 2.3 to 2.7 times the turns
    per second on two loaded cores, the same vectors)."""
    options = local_embedder.load().session.get_session_options()  # type: ignore[attr-defined]
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.intra_op_num_threads >= 1
