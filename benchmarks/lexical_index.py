"""The embedded stores' in-process BM25 against a numpy BM25, without an
engine: ``LocalIndex.lexical`` (the query's terms made as the store makes
them) and the floor of ``benchmarks/memory.py`` over the same generated
memories, in paired rounds; medians and their ratio.

    python benchmarks/lexical_index.py 100000
"""

import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np

from benchmarks.memory import TENANT, TOPICS, fill
from memrules.memory.autostore import memory_text
from memrules.seams._lexical import document_vector, query_vector, tokens
from memrules.seams._local_index import LocalIndex

N = int(sys.argv[1])
rng = random.Random(0)
users = [f"user-{i}" for i in range(40)]
texts, scopes = [], []
for i in range(N):
    asked, answer = rng.choice(TOPICS)
    texts.append(memory_text(fill(asked, rng), fill(answer, rng) + f" (#{i})", 4000))
    scopes.append(rng.choice(users))
vec = np.zeros(8, np.float32)
# Both stores index the same sparse vectors; they differ only in the query's weights.
ix = LocalIndex(8)
rows = [
    (f"id{i}", (scopes[i], TENANT, f"c{i}"), vec, document_vector(t)) for i, t in enumerate(texts)
]
for s in range(0, N, 2000):
    ix.upsert(rows[s : s + 2000])
# the floor, as benchmarks/memory.py builds it
by_token = {}
lengths = np.zeros(N, dtype=np.float32)
for doc, text in enumerate(texts):
    found = tokens(text)
    lengths[doc] = len(found)
    counts = {}
    for tok in found:
        counts[tok] = counts.get(tok, 0) + 1
    for tok, tf in counts.items():
        by_token.setdefault(tok, []).append((doc, tf))
k1, b, avg = 1.2, 0.75, float(lengths.mean())
postings = {}
for tok, pairs in by_token.items():
    docs = np.asarray([d for d, _ in pairs])
    tf = np.asarray([t for _, t in pairs], dtype=np.float32)
    idf = math.log((N - len(docs) + 0.5) / (len(docs) + 0.5) + 1)
    postings[tok] = (docs, idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[docs] / avg)))
codes = np.asarray([users.index(u) for u in scopes])


def floor(query, user, k=10):
    scores = np.zeros(N, dtype=np.float32)
    for tok in set(tokens(query)):
        f = postings.get(tok)
        if f is not None:
            scores[f[0]] += f[1]
    scores[codes != users.index(user)] = 0
    top = np.argpartition(-scores, k)[:k]
    return [i for i in top[np.argsort(-scores[top])] if scores[i] > 0]


def ours(engine, query, user):
    i, v = query_vector(query)
    q = dict.fromkeys(i, 1.0) if engine == "qdrant" else dict(zip(i, v, strict=True))
    return ix.lexical(q, k=10, user=user, tenant=TENANT, conversation=None)


qs = [
    (fill(rng.choice(TOPICS)[0], rng) + rng.choice(["", " now", " again"]), rng.choice(users))
    for _ in range(60)
]
for engine in ("qdrant", "milvus"):
    a, f = [], []
    for n, (q, u) in enumerate(qs):
        for order in (0, 1) if n % 2 else (1, 0):
            t = time.perf_counter()
            if order == 0:
                ours(engine, q, u)
            else:
                floor(q, u)
            (a if order == 0 else f).append(time.perf_counter() - t)
    ours_ms, floor_ms = statistics.median(a) * 1e3, statistics.median(f) * 1e3
    print(
        f"{engine} {N:,}: lexical p50 {ours_ms:.2f} ms, numpy BM25 p50 {floor_ms:.2f} ms, "
        f"ratio {ours_ms / floor_ms:.2f}x"
    )
