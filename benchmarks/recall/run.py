"""Recall quality and speed of the vector stores, with the local embedder.

``python benchmarks/recall/run.py`` (needs ``pip install -e
'.[local-embed,milvus,qdrant]'``):

1. **Quality.** Remembers every session of ``dataset.json`` (one user, many
   conversations) and asks each question across all of them, in each search
   mode; a question is answered at k when one of its evidence messages is
   among the first k hits. Prints recall@1/5/10 per mode, for all
   questions and per kind (paraphrased, exact name).
2. **Speed** (``--timing-messages``, 10,000 by default; 0 skips it): the
   time to remember that many messages of a generated dataset, and the
   latency of recall in each mode over ``--queries`` questions.

``--backends milvus qdrant`` chooses the stores; ``--json FILE`` writes
every figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.recall.generate import generate  # noqa: E402
from memrules import MemoryConfig, Pipeline  # noqa: E402
from memrules._core.seam_records import decode_message  # noqa: E402
from memrules.seams import Seams, local_embedder, milvus_store, qdrant_store  # noqa: E402
from memrules.seams._store import MessageStore  # noqa: E402

MODES = ("dense", "lexical", "hybrid")
KS = (1, 5, 10)


def make_store(backend: str, where: Path, name: str) -> MessageStore:
    embedder = local_embedder()
    if backend == "milvus":
        return milvus_store(uri=str(where / f"{name}.db"), collection=name, embedder=embedder)
    return qdrant_store(path=str(where / name), collection=name, embedder=embedder)


def remember_all(pipeline: Pipeline, data: dict[str, Any]) -> int:
    count = 0
    for conversation in data["conversations"]:
        messages = tuple(decode_message(json.dumps(m)) for m in conversation["messages"])
        pipeline.remember(messages, conversation_id=conversation["id"], user=data["user"])
        count += len(messages)
    return count


def quality(backend: str, where: Path, data: dict[str, Any]) -> dict[str, Any]:
    store = make_store(backend, where, "quality")
    pipeline = Pipeline.from_config(MemoryConfig(), seams=Seams(store=store))
    remember_all(pipeline, data)
    found: dict[str, dict[str, list[int | None]]] = {m: {} for m in MODES}
    for q in data["questions"]:
        evidence = set(q["evidence"])
        for mode in MODES:
            hits = pipeline.recall(q["question"], k=max(KS), user=data["user"], mode=mode)
            rank = next((i for i, h in enumerate(hits, 1) if h.message.id in evidence), None)
            found[mode].setdefault(q["kind"], []).append(rank)
            found[mode].setdefault("all", []).append(rank)
    store.close()
    return {
        mode: {
            kind: {f"@{k}": sum(r is not None and r <= k for r in ranks) / len(ranks) for k in KS}
            | {"questions": len(ranks)}
            for kind, ranks in by_kind.items()
        }
        for mode, by_kind in found.items()
    }


class Timed:
    """An embedder that adds up the time spent in the one it wraps."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.seconds = 0.0

    @property
    def dimension(self) -> int:
        return int(self.embedder.dimension)

    @property
    def identity(self) -> dict[str, Any]:
        return dict(self.embedder.identity)

    def embed(self, texts: Any) -> list[list[float]]:
        start = time.perf_counter()
        try:
            return list(self.embedder.embed(texts))
        finally:
            self.seconds += time.perf_counter() - start


def timing(backend: str, where: Path, messages: int, queries: int) -> dict[str, Any]:
    """Remember about ``messages`` messages (generated, seed 1), then time
    ``queries`` recalls in each mode."""
    per_session = (
        sum(len(c["messages"]) for c in generate(seed=1, sessions=50)["conversations"]) / 50
    )
    data = generate(seed=1, sessions=max(1, round(messages / per_session)))
    store = make_store(backend, where, "timing")
    store.embedder.load()  # type: ignore[attr-defined]
    timed = Timed(store.embedder)
    store.embedder = timed
    pipeline = Pipeline.from_config(MemoryConfig(), seams=Seams(store=store))
    start = time.perf_counter()
    count = remember_all(pipeline, data)
    remember_s = time.perf_counter() - start
    embed_s = timed.seconds
    latencies: dict[str, list[float]] = {m: [] for m in MODES}
    for q in data["questions"][:queries]:
        for mode in MODES:
            start = time.perf_counter()
            pipeline.recall(q["question"], k=10, user=data["user"], mode=mode)
            latencies[mode].append(time.perf_counter() - start)
    store.close()
    return {
        "messages": count,
        "conversations": len(data["conversations"]),
        "remember_s": remember_s,
        "embedding_s": embed_s,
        "recall_ms": {
            mode: {
                "median": statistics.median(v) * 1000,
                "p95": sorted(v)[max(0, int(len(v) * 0.95) - 1)] * 1000,
                "queries": len(v),
            }
            for mode, v in latencies.items()
        },
    }


def report(backend: str, result: dict[str, Any]) -> None:
    print(f"\n{backend}: recall@1 / @5 / @10", flush=True)
    print("| mode | all | paraphrase | exact name |")
    print("|---|---|---|---|")
    for mode in MODES:
        cells = [
            " / ".join(f"{result['quality'][mode][kind][f'@{k}']:.2f}" for k in KS)
            for kind in ("all", "paraphrase", "exact")
        ]
        print(f"| {mode} | {' | '.join(cells)} |")
    if "timing" in result:
        t = result["timing"]
        print(
            f"remember {t['messages']:,} messages ({t['conversations']} conversations): "
            f"{t['remember_s']:.1f} s, of which {t['embedding_s']:.1f} s embedding"
        )
        for mode, r in t["recall_ms"].items():
            print(f"recall ({mode}, k=10): median {r['median']:.1f} ms, p95 {r['p95']:.1f} ms")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", default=["milvus", "qdrant"])
    parser.add_argument("--dataset", type=Path, default=Path(__file__).with_name("dataset.json"))
    parser.add_argument("--timing-messages", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    data = json.loads(args.dataset.read_text(encoding="utf-8"))
    results: dict[str, Any] = {}
    messages = sum(len(c["messages"]) for c in data["conversations"])
    print(f"dataset: {messages} messages, {len(data['questions'])} questions, seed {data['seed']}")
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends:
            where = Path(tmp) / backend
            where.mkdir()
            results[backend] = {"quality": quality(backend, where, data)}
            if args.timing_messages:
                results[backend]["timing"] = timing(
                    backend, where, args.timing_messages, args.queries
                )
            report(backend, results[backend])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
