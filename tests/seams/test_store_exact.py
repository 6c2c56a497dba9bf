"""Search on the embedded engines is exact and cheap: dense search answers
the numpy scan's top k under the scope mask, lexical search the BM25 of the
whole collection, and neither checks a filter record by record.

Oracles: a numpy cosine scan of the vectors the embedder made, and BM25
written out here (Qdrant's engine scoring its own sparse vectors is a second
oracle for Qdrant)."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memrules._core.seam_records import StoredMessage
from memrules.memory.autostore import memory_record
from memrules.seams import Embedder, MessageStore, Scope
from tests.support.seams import BACKENDS, maker

USERS = [f"u{i}" for i in range(6)]
TENANTS = ["t1", "t2"]
CITIES = ["Porto", "Lyon", "Oslo", "Kyoto", "Lima", "Austin", "Quito", "Hanoi"]
THINGS = ["deploy key", "budget", "VPN host", "rota", "invoice", "release"]


class Recording:
    """The real embedder, keeping every vector it made by text."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.vectors: dict[str, list[float]] = {}

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    @property
    def identity(self) -> dict[str, Any]:
        return self.embedder.identity

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self.embedder.embed(texts)
        self.vectors.update(zip(texts, vectors, strict=True))
        return vectors


def records(count: int, seed: int = 0) -> list[StoredMessage]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        text = (
            f"Q: where is the {rng.choice(THINGS)} for {rng.choice(CITIES)}?\n"
            f"A: {rng.choice(CITIES)} has it, {rng.choice(THINGS)} {i % 7}"
        )
        out.append(
            memory_record(
                text,
                user=rng.choice(USERS),
                tenant=rng.choice(TENANTS),
                conversation_id=f"c{i % 5}",
                now=float(i),
            )
        )
    return out


QUERIES = [
    "where is the budget for Porto",
    "VPN host Lyon",
    "who has the invoice",
    "Kyoto release rota",
    "deploy key 3",
    "hanoi",
]


@pytest.fixture(params=BACKENDS)
def filled(
    request: pytest.FixtureRequest, tmp_path: Path, local_embedder: Embedder
) -> Iterator[tuple[MessageStore, Recording, list[StoredMessage]]]:
    recording = Recording(local_embedder)
    store = maker(request.param, tmp_path, recording)()
    held = records(240)
    store.add(held[:120])
    store.add(held[120:])
    yield store, recording, held
    store.close()


def in_scope(held: list[StoredMessage], scope: Scope) -> list[StoredMessage]:
    return [
        r
        for r in held
        if r.scope.user == scope.user
        and r.scope.tenant == scope.tenant
        and (scope.conversation_id is None or r.scope.conversation_id == scope.conversation_id)
    ]


def scopes() -> list[Scope]:
    return [
        Scope(user="u1", tenant="t1"),
        Scope(user="u4", tenant="t2"),
        Scope(user="u2", tenant="t1", conversation_id="c3"),
        Scope(user="nobody", tenant="t1"),
    ]


def same_ranking(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    """Equal rankings: the same scores in order, and the same ids but for
    the order of records whose scores tie (and which of them the last place
    takes)."""
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=2e-5), (got, want)
    if not want:
        return
    edge = want[-1][1]
    assert {i for i, s in got if s > edge + 2e-5} == {i for i, s in want if s > edge + 2e-5}


def test_dense_search_is_the_exact_scan(
    filled: tuple[MessageStore, Recording, list[StoredMessage]],
) -> None:
    store, recording, held = filled
    for query in QUERIES:
        for scope in scopes():
            got = store.search(query, k=10, scope=scope, mode="dense")
            vector = np.asarray(recording.vectors[query], dtype=np.float64)
            candidates = in_scope(held, scope)
            scored = sorted(
                ((r.id, float(np.asarray(recording.vectors[r.text]) @ vector)) for r in candidates),
                key=lambda pair: -pair[1],
            )[:10]
            same_ranking([(h.id, h.score) for h in got], scored)
            assert all(h.user == scope.user and h.tenant == scope.tenant for h in got)


def bm25(held: list[StoredMessage], query: str, scope: Scope) -> list[tuple[str, float]]:
    """BM25 over every record held, ranked within ``scope``: memrules' term
    weights (a Milvus Lite file's local index and Qdrant's points hold the
    same, :func:`~memrules.seams._lexical.document_vector`), the query's
    distinct terms once, IDF over the collection."""
    from memrules.seams._lexical import document_vector, query_vector

    docs = [Counter(dict(zip(*document_vector(r.text), strict=True))) for r in held]
    terms = Counter(dict.fromkeys(query_vector(query)[0], 1.0))

    def weight(doc: Counter[Any], term: Any) -> float:
        return float(doc[term])

    n = len(docs)
    df = {t: sum(1 for d in docs if t in d) for t in terms}
    idf = {t: math.log((n - df[t] + 0.5) / (df[t] + 0.5) + 1) for t in terms}
    wanted = {r.id for r in in_scope(held, scope)}
    scored = [
        (r.id, sum(idf[t] * weight(d, t) * q for t, q in terms.items() if t in d))
        for r, d in zip(held, docs, strict=True)
        if r.id in wanted and any(t in d for t in terms)
    ]
    return sorted(scored, key=lambda pair: -pair[1])[:10]


def test_lexical_search_is_bm25_over_the_whole_collection(
    filled: tuple[MessageStore, Recording, list[StoredMessage]], request: pytest.FixtureRequest
) -> None:
    if request.node.callspec.params["filled"] == "valkey":
        pytest.skip(
            "Valkey's lexical search is the Search module's own BM25 (its tokens, its scores), "
            "run by the server; this test is of memrules' in-process index"
        )
    store, _, held = filled
    for query in QUERIES:
        for scope in scopes():
            got = store.search(query, k=10, scope=scope, mode="lexical")
            same_ranking([(h.id, h.score) for h in got], bm25(held, query, scope))


def test_search_follows_writes_deletes_and_a_reopened_store(
    tmp_path: Path, local_embedder: Embedder
) -> None:
    for backend in ("milvus", "qdrant-disk"):
        (tmp_path / backend).mkdir()
        make = maker(backend, tmp_path / backend, local_embedder)
        held = records(60, seed=1)
        scope = Scope(user="u1", tenant="t1")
        with make("c1") as store:
            store.add(held[:30])
            store.search("budget", k=5, scope=scope, mode="hybrid")  # the index is built
            store.add(held[30:])
            gone = store.delete_scope(Scope(user="u2", tenant="t1"))
            assert gone
            kept = [r for r in held if (r.scope.user, r.scope.tenant) != ("u2", "t1")]
            before = {
                q: store.search(q, k=10, scope=scope, mode=m) for q in QUERIES for m in ("lexical",)
            }
            for query, hits in before.items():
                same_ranking([(h.id, h.score) for h in hits], bm25(kept, query, scope))
            dense = store.search("budget", k=20, scope=Scope(user="u2", tenant="t1"), mode="dense")
            assert dense == ()
        with make("c1") as reopened:
            for query, hits in before.items():
                again = reopened.search(query, k=10, scope=scope, mode="lexical")
                same_ranking([(h.id, h.score) for h in again], [(h.id, h.score) for h in hits])


def test_a_local_search_checks_no_filter_record_by_record(
    tmp_path: Path, local_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Qdrant's local mode evaluates a query's payload filter in Python for
    every point; the store's searches never ask it to."""
    pytest.importorskip("qdrant_client")
    from qdrant_client.local import local_collection

    store = maker("qdrant-disk", tmp_path, local_embedder)()
    store.add(records(40))
    calls: list[int] = []
    real = local_collection.calculate_payload_mask

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(local_collection, "calculate_payload_mask", counted)
    for mode in ("dense", "lexical", "hybrid"):
        store.search("budget for Porto", k=5, scope=Scope(user="u1", tenant="t1"), mode=mode)
    store.close()
    assert calls == []


def test_hybrid_search_fuses_the_two_exact_rankings(
    filled: tuple[MessageStore, Recording, list[StoredMessage]],
) -> None:
    from memrules.seams._fusion import reciprocal_rank_fusion

    store, _, _ = filled
    for query in QUERIES:
        for scope in scopes():
            got = store.search(query, k=5, scope=scope, mode="hybrid")
            wide = store.candidates
            dense = store.search(query, k=wide, scope=scope, mode="dense")
            lexical = store.search(query, k=wide, scope=scope, mode="lexical")
            fused = reciprocal_rank_fusion([[h.id for h in dense], [h.id for h in lexical]])[:5]
            assert [(h.id, h.score) for h in got] == fused


def test_stores_of_one_milvus_lite_file_share_what_they_search(
    tmp_path: Path, local_embedder: Embedder
) -> None:
    """Milvus Lite serves a file to the whole process: what one store of it
    writes or forgets, another store of the same file searches at once."""
    pytest.importorskip("pymilvus")
    from memrules.seams import milvus_store

    uri = str(tmp_path / "shared.db")
    one = milvus_store(embedder=local_embedder, uri=uri, collection="memories")
    other = milvus_store(embedder=local_embedder, uri=uri, collection="memories")
    beside = milvus_store(embedder=local_embedder, uri=uri, collection="elsewhere")
    held = records(30, seed=2)
    scope = Scope(user="u1", tenant="t1")
    mine = in_scope(held, scope)
    assert mine
    with one, other, beside:
        one.add(held[:10])
        assert one.search("budget", k=30, scope=scope, mode="dense") is not None  # built
        other.add(held[10:])
        found = {h.id for h in one.search("budget", k=30, scope=scope, mode="dense")}
        assert found == {r.id for r in mine}
        assert beside.delete_scope(scope, collection="memories") == len(mine)
        assert one.search("budget", k=30, scope=scope, mode="hybrid") == ()
        assert other.search("budget", k=30, scope=scope, mode="lexical") == ()
