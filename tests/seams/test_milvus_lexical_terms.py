"""Lexical search on a Milvus Lite file (the default store) reads the same
terms as Qdrant's: English stop words left out, a light stem, so the two
stores rank a chat alike and "what did ..." matches nothing by itself."""

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
SAID = tuple(
    Message(role="user" if i % 2 == 0 else "assistant", parts=(Text(text=t),), name=n)
    for i, (n, t) in enumerate(
        [
            ("Caroline", "I painted a sunrise over the lake."),
            ("Melanie", "What did you do at the weekend?"),
            ("Caroline", "We went to the beach with the kids."),
            ("Melanie", "The kids loved the stories about the sea."),
        ]
    )
)


@pytest.fixture
def stores(tmp_path: Path, local_embedder: Embedder):  # type: ignore[no-untyped-def]
    made = [
        milvus_store(uri=str(tmp_path / "m.db"), embedder=local_embedder, search="lexical"),
        qdrant_store(path=str(tmp_path / "q"), embedder=local_embedder, search="lexical"),
    ]
    for store in made:
        store.add(build_records(SAID, scope=SCOPE))
    yield made
    for store in made:
        store.close()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("paintings", [SAID[0]]),  # "painted": one stem
        ("story", [SAID[3]]),  # "stories"
        ("what did you do", []),  # stop words alone match nothing
        ("What did Caroline paint?", [SAID[0]]),
    ],
)
def test_milvus_lite_finds_by_the_same_terms_as_qdrant(
    stores: list, query: str, expected: list[Message]
) -> None:
    milvus, qdrant = stores
    found = [[h.message for h in s.search(query, k=1, scope=SCOPE)] for s in (milvus, qdrant)]
    assert found == [expected, expected]


CHATTER = (
    "We spent the whole morning sorting boxes in the garage, then drove across town twice "
    "because the hardware shop had closed early and the second one had no ladders left."
)
DAY = tuple(
    Message(role="user" if i % 2 == 0 else "assistant", parts=(Text(text=t),), name=n)
    for i, (n, t) in enumerate(
        [
            ("Caroline", CHATTER),
            ("Melanie", "I went to a pottery class."),
            ("Caroline", "Wow!"),
        ]
    )
)


@pytest.mark.parametrize("backend", ["milvus", "qdrant"])
def test_a_message_ranks_above_the_reply_that_quotes_it(
    tmp_path: Path, local_embedder: Embedder, backend: str
) -> None:
    """Indexed with the message before it, the short reply "Wow!" holds
    "pottery class" too; the message that said it ranks first, because a
    neighbour's terms weigh less than a message's own."""
    made = (
        milvus_store(uri=str(tmp_path / "m.db"), embedder=local_embedder, search="lexical")
        if backend == "milvus"
        else qdrant_store(path=str(tmp_path / "q"), embedder=local_embedder, search="lexical")
    )
    with made as store:
        store.add(build_records(DAY, scope=SCOPE, context=IndexContext()))
        hits = store.search("pottery class", k=2, scope=SCOPE)
    assert [h.message for h in hits] == [DAY[1], DAY[2]]
