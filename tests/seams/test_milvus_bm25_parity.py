"""A Milvus Lite file (the default store) ranks lexical search with the
same BM25 as Qdrant's local mode: the same term weights (k1, b and the
stand-in average length of :mod:`memrules.seams._lexical`), the same
inverse document frequency, so the same records score the same and the
default store ranks a chat as Qdrant does."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrules import IndexContext, Message, Text
from memrules._core.seam_records import build_records
from memrules.seams import Embedder, Scope, milvus_store, qdrant_store
from tests.support.seams import HAS_MILVUS, HAS_QDRANT, needs_local

pytestmark = [
    needs_local,
    pytest.mark.skipif(not (HAS_MILVUS and HAS_QDRANT), reason="needs milvus and qdrant"),
]

SCOPE = Scope(conversation_id="c", user="u")
LINES = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "Wow, that sounds amazing. What happened at the support group?"),
    (
        "Caroline",
        "The transgender stories were so inspiring, I was so happy and thankful for all the "
        "support, and afterwards we walked along the river and talked about the group for "
        "hours, about the stories, the courage, the people and the support they give.",
    ),
    ("Melanie", "I took my kids to the museum, they loved the dinosaur bones."),
    ("Caroline", "Group hikes are my favourite, the river trail especially."),
    ("Melanie", "Painting is my outlet: I painted the lake at sunrise last week."),
]
SAID = tuple(
    Message(role="user" if i % 2 == 0 else "assistant", parts=(Text(text=t),), name=n)
    for i, (n, t) in enumerate(LINES)
)
QUERIES = [
    "When did Caroline go to the LGBTQ support group?",
    "What did the support group talk about?",
    "Where did Melanie take her kids?",
    "What does Caroline like about the river group?",
    "What did Melanie paint?",
]


@pytest.mark.parametrize("context", [None, IndexContext()], ids=["own text", "with context"])
def test_milvus_lite_scores_lexical_search_as_qdrant_does(
    tmp_path: Path, local_embedder: Embedder, context: IndexContext | None
) -> None:
    stores = [
        milvus_store(uri=str(tmp_path / "m.db"), embedder=local_embedder, search="lexical"),
        qdrant_store(path=str(tmp_path / "q"), embedder=local_embedder, search="lexical"),
    ]
    try:
        for store in stores:
            store.add(build_records(SAID, scope=SCOPE, context=context))
        for query in QUERIES:
            milvus, qdrant = (store.search(query, k=6, scope=SCOPE) for store in stores)
            assert [h.id for h in milvus] == [h.id for h in qdrant], query
            assert [h.score for h in milvus] == pytest.approx([h.score for h in qdrant], rel=1e-5)
    finally:
        for store in stores:
            store.close()
