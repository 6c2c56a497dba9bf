"""What one search on an embedded engine's local index costs, counted, not
timed: a scope's rows are found once between writes (not by comparing
every row's codes on each search), and a Milvus Lite hit's message is
decoded once while its record is unchanged."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from memrules._core.seam_records import decode_message
from memrules.seams import Embedder, Scope
from memrules.seams import _milvus_indexes as milvus_indexes
from memrules.seams import _milvus_rows as milvus_rows
from memrules.seams._local_index import LocalIndex
from tests.seams.test_store_exact import QUERIES, records
from tests.support.seams import HAS_MILVUS, maker

D = 8


def _rows(rng: random.Random, count: int) -> list[Any]:
    return [
        (
            f"id{i}",
            (f"u{i % 4}", "t0", f"c{i % 3}"),
            [rng.random() - 0.5 for _ in range(D)],
            (sorted(rng.sample(range(30), 4)), [rng.random() + 0.1 for _ in range(4)]),
        )
        for i in range(count)
    ]


def test_a_scope_s_rows_are_found_once_between_writes() -> None:
    rng = random.Random(1)
    index = LocalIndex(D)
    index.upsert(_rows(rng, 300))
    vector = [0.1] * D
    first = index.dense(vector, k=5, user="u1", tenant="t0", conversation=None)
    for _ in range(5):
        assert index.dense(vector, k=5, user="u1", tenant="t0", conversation=None) == first
        index.lexical({3: 1.0, 7: 1.0}, k=5, user="u1", tenant="t0", conversation=None)
    assert index.scope_scans == 1
    index.lexical({3: 1.0}, k=5, user="u1", tenant="t0", conversation="c2")
    index.lexical({3: 1.0}, k=5, user="nobody", tenant="t0", conversation=None)
    assert index.scope_scans == 2  # a scope no row has compares nothing
    index.delete(["id1"])  # a write: the scope's rows are found again, without the deleted row
    again = index.dense(vector, k=300, user="u1", tenant="t0", conversation=None)
    assert index.scope_scans == 3
    assert "id1" not in {i for i, _ in again}
    index.upsert(_rows(random.Random(2), 1))  # id0 rewritten, as user u0
    assert index.dense(vector, k=300, user="u1", tenant="t0", conversation=None) == again
    assert index.scope_scans == 4


@pytest.mark.skipif(not HAS_MILVUS, reason="needs the milvus extra: pip install -e '.[milvus]'")
def test_a_milvus_lite_hit_s_message_is_decoded_once_while_its_record_is_unchanged(
    tmp_path: Path, local_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = maker("milvus", tmp_path, local_embedder)()
    held = records(60)
    store.add(held)
    decodes: list[str] = []

    def counting(text: str) -> Any:
        decodes.append(text)
        return decode_message(text)

    for module in (milvus_indexes, milvus_rows):  # where a Milvus hit's message is decoded
        monkeypatch.setattr(module, "decode_message", counting)
    scope = Scope(user="u1", tenant="t1")
    try:
        for mode in ("lexical", "dense", "hybrid"):
            first = store.search(QUERIES[0], k=5, scope=scope, mode=mode)
            decoded = len(decodes)
            assert decoded <= len(first)
            again = store.search(QUERIES[0], k=5, scope=scope, mode=mode)
            assert again == first
            assert len(decodes) == decoded  # the second search decodes nothing
            decodes.clear()
        by_id = {r.id: r for r in held}
        for hit in first:
            assert hit.message == by_id[hit.id].message
        store.delete_scope(scope)
        assert store.search(QUERIES[0], k=5, scope=scope, mode="lexical") == ()
    finally:
        store.close()
