"""The lexical terms: stop words left out, light stems, queries that still
find records indexed by words as written."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memrules._core.messages import message
from memrules._core.seam_records import Scope, build_records
from memrules.seams import Embedder, qdrant_store
from memrules.seams._lexical import (
    STOP_WORDS,
    document_vector,
    query_vector,
    stem,
    terms,
    tokens,
)
from tests.support.seams import needs_local


def test_stop_words_are_not_terms_and_forms_of_a_word_are_one() -> None:
    assert terms("What did Melanie paint in the paintings she painted?") == [
        "melanie", "paint", "paint", "paint",
    ]  # fmt: skip
    assert terms("東京 invoice_7 2023") == ["東", "京", "invoice_7", "2023"]
    assert len(STOP_WORDS) == 127
    assert document_vector("the of and") == ([], [])


def test_a_query_searches_its_words_as_written_and_their_stems() -> None:
    written = query_vector("paintings")[0]
    assert set(document_vector("paint")[0]) < set(written)
    assert set(written) == set(query_vector("paintings paint")[0])
    assert query_vector("what did you") == ([], [])


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=15))
def test_a_stem_is_a_prefix_or_a_y_ending_and_stable(word: str) -> None:
    cut = stem(word)
    assert cut
    assert word.startswith(cut) or (word.startswith(cut[:-1]) and cut.endswith("y"))
    assert len(cut) >= min(len(word), 3)
    assert stem(word) == cut


@given(st.text(max_size=80))
def test_terms_are_stemmed_tokens_less_stop_words(text: str) -> None:
    assert terms(text) == [stem(t) for t in tokens(text) if t not in STOP_WORDS]


@needs_local
def test_qdrant_finds_a_turn_by_another_form_of_its_words(
    tmp_path: Path, local_embedder: Embedder
) -> None:
    scope = Scope(conversation_id="c1", user="u1")
    said = (
        message("user", "What have you been up to?"),
        message("assistant", "I painted a sunrise over the lake with my kids."),
        message("user", "What did you do last weekend?"),
        message("assistant", "We went camping at the beach."),
    )
    store = qdrant_store(path=str(tmp_path / "q"), embedder=local_embedder, search="lexical")
    try:
        store.add(build_records(said, scope=scope))
        (hit,) = store.search("What did she paint? Any paintings?", k=1, scope=scope)
        assert hit.message == said[1]
        (hit,) = store.search("camp", k=1, scope=scope)
        assert hit.message == said[3]
    finally:
        store.close()
