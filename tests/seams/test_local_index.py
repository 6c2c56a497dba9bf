"""The in-process index of the embedded stores: a restored copy ranks
exactly as the index it was taken from, through writes, deletes and
compaction, and lexical search is BM25 over the live rows (written out
here)."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np

from memrules.seams._local_index import LocalIndex, Row
from tests.seams.test_store_exact import same_ranking

D = 8


def _rows(rng: random.Random, start: int, stop: int) -> list[Row]:
    out: list[Row] = []
    for i in range(start, stop):
        terms: dict[int, float] = {}
        for _ in range(rng.randint(1, 12)):
            term = rng.randint(0, 200) if rng.random() < 0.8 else rng.randint(0, 20_000)
            terms[term] = terms.get(term, 0.0) + rng.choice([1.0, 0.3, 2.0])
        scope = (f"u{rng.randint(0, 20)}", f"t{rng.randint(0, 1)}", f"c{rng.randint(0, 4)}")
        vector = [rng.random() - 0.5 for _ in range(D)]
        out.append((f"id{i}", scope, vector, (list(terms), list(terms.values()))))
    return out


def _queries(rng: random.Random) -> list[tuple[dict[int, float], str, str | None]]:
    return [
        (
            {rng.randint(0, 200): rng.choice([1.0, 0.5]) for _ in range(rng.randint(1, 5))},
            f"u{rng.randint(0, 21)}",
            None if n % 3 else "c1",
        )
        for n in range(30)
    ]


def _same(a: LocalIndex, b: LocalIndex, rng: random.Random) -> None:
    for query, user, conversation in _queries(rng):
        for tenant in ("t0", "t1"):
            where: dict[str, Any] = {"user": user, "tenant": tenant, "conversation": conversation}
            assert a.lexical(query, k=10, **where) == b.lexical(query, k=10, **where)
            vector = [rng.random() - 0.5 for _ in range(D)]
            assert a.dense(vector, k=10, **where) == b.dense(vector, k=10, **where)


def test_a_restored_index_ranks_exactly_as_the_one_it_was_taken_from() -> None:
    rng = random.Random(7)
    built = LocalIndex(D)
    rows = _rows(rng, 0, 1500)
    for start in range(0, len(rows), 400):
        built.upsert(rows[start : start + 400])
    restored = LocalIndex(D)
    restored.restore(built.frozen())
    assert len(restored) == len(built)
    _same(built, restored, rng)
    for index in (built, restored):  # new records, and rewrites of old ones
        index.upsert(_rows(random.Random(8), 1500, 1700) + _rows(random.Random(9), 0, 100))
    _same(built, restored, rng)
    for index in (built, restored):
        index.delete([f"id{i}" for i in range(0, 1700, 3)])
    _same(built, restored, rng)
    for index in (built, restored):  # more than half dead: compacted
        index.delete([f"id{i}" for i in range(1, 1700, 3)])
    assert len(restored) == len(built) == len(range(2, 1700, 3))
    _same(built, restored, rng)
    again = LocalIndex(D)
    again.restore(restored.frozen())
    _same(built, again, rng)


def _bm25(
    live: dict[str, Row], query: dict[int, float], user: str, tenant: str
) -> list[tuple[str, float]]:
    n = len(live)
    terms = {i: dict(zip(*r[3], strict=True)) for i, r in live.items()}
    scored = []
    for record_id, row in live.items():
        if row[1][:2] != (user, tenant) or not set(query) & set(terms[record_id]):
            continue
        score = 0.0
        for term, weight in query.items():
            if term not in terms[record_id]:
                continue
            df = sum(1 for t in terms.values() if term in t)
            idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
            score += terms[record_id][term] * idf * weight
        scored.append((record_id, score))
    return sorted(scored, key=lambda pair: -pair[1])[:10]


def test_lexical_search_is_bm25_over_the_live_rows() -> None:
    rng = random.Random(3)
    index = LocalIndex(D)
    rows = _rows(rng, 0, 400)
    index.upsert(rows)
    live = {r[0]: r for r in rows}
    for record_id in [f"id{i}" for i in range(0, 400, 4)]:
        del live[record_id]
    index.delete([f"id{i}" for i in range(0, 400, 4)])
    for step in range(2):
        for query, user, _ in _queries(rng)[:15]:
            got = index.lexical(query, k=10, user=user, tenant="t0", conversation=None)
            same_ranking(got, _bm25(live, query, user, "t0"))
        if step == 0:  # after a write, the statistics follow it
            more = _rows(random.Random(4), 400, 500)
            index.upsert(more)
            live.update((r[0], r) for r in more)
    assert np.isfinite([s for _, s in got]).all()
