"""Fusing rankings: reciprocal rank fusion.

Hybrid search fuses the dense ranking (cosine similarity of embeddings) and
the lexical one (BM25) by **reciprocal rank fusion**: each record scores
``sum(1 / (RRF_K + rank))`` over the rankings that hold it (ranks from 1).
Ranks, not scores, because the two scores share no scale: cosine lies in
[-1, 1] and clusters by model, BM25 is unbounded and grows with the corpus
and the query's length (and Milvus Lite reports it negated); a calibrated sum
would need weights fitted per corpus, model and backend, and drifts as the
store grows. RRF needs no calibration, is the same on every backend, and a
record near the top of either ranking surfaces: an exact file name (which
only BM25 sees) or a paraphrase (which only the embedding sees).
``RRF_K = 60`` is the constant of the original paper (Cormack et al., 2009);
it keeps one first place from drowning agreement lower down.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["RRF_K", "reciprocal_rank_fusion"]

RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], *, k: int = RRF_K
) -> list[tuple[str, float]]:
    """The ids of ``rankings`` (each best first, ids unique within one) with
    their fused scores, best first; ties go to the id ranked best anywhere,
    then to the smaller id, so the order is deterministic.

    >>> reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], k=1)
    [('a', 0.8333333333333333), ('c', 0.75), ('b', 0.3333333333333333)]
    """
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for ranking in rankings:
        for rank, record_id in enumerate(ranking, start=1):
            scores[record_id] = scores.get(record_id, 0.0) + 1.0 / (k + rank)
            best[record_id] = min(best.get(record_id, rank), rank)
    return sorted(scores.items(), key=lambda item: (-item[1], best[item[0]], item[0]))
