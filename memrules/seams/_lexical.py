"""Lexical (BM25) vectors for stores that take sparse vectors (Qdrant).

A text becomes a sparse vector: each token's index is a stable hash of it,
its value BM25's term-frequency part, ``tf * (k1 + 1) / (tf + k1 * (1 - b +
b * length / AVG_TOKENS))``. The store multiplies in the inverse document
frequency itself (Qdrant's ``IDF`` modifier), over everything it holds, so
no index of every record lives in Python. A query's vector gives each
distinct token weight 1. ``AVG_TOKENS`` stands in for the corpus's average
length, which the store does not tell; Milvus's BM25 function uses the true
one, so the two backends rank alike but not identically.

Tokens are lower-cased runs of letters, digits and ``_`` (``invoice_7``,
``py``); Chinese, Japanese and Korean characters are one token each.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

__all__ = ["AVG_TOKENS", "K1", "B", "document_vector", "query_vector", "tokens"]

K1 = 1.2
B = 0.75
AVG_TOKENS = 64

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")


def tokens(text: str) -> list[str]:
    """The lexical tokens of ``text``, lower-cased, in order."""
    return _WORD.findall(text.lower())


def _index(token: str) -> int:
    digest = hashlib.blake2b(token.encode("utf-8", "replace"), digest_size=4).digest()
    return int.from_bytes(digest, "big")


def _vector(weights: dict[int, float]) -> tuple[list[int], list[float]]:
    indices = sorted(weights)
    return indices, [weights[i] for i in indices]


def document_vector(text: str) -> tuple[list[int], list[float]]:
    """The sparse vector a stored text is indexed by: (indices, values)."""
    found = tokens(text)
    scale = K1 * (1 - B + B * len(found) / AVG_TOKENS)
    weights: dict[int, float] = {}
    for token, tf in Counter(found).items():
        index = _index(token)
        weights[index] = weights.get(index, 0.0) + tf * (K1 + 1) / (tf + scale)
    return _vector(weights)


def query_vector(text: str) -> tuple[list[int], list[float]]:
    """The sparse vector a query searches with: weight 1 per distinct token."""
    return _vector({_index(token): 1.0 for token in set(tokens(text))})
