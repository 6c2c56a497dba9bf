"""Retrieval memory's cost per request: how long a route with memory takes to
retrieve, gate and inject, and to keep a turn, on the embedded engines.

    python benchmarks/memory.py                 # 2,000 memories of 40 users
    python benchmarks/memory.py --memories 10000 --users 200

A store is filled with generated turns (``Q: …\\nA: …``, one user and tenant
each, the same for the same seed), then each backend answers ``--questions``
requests of random users through :meth:`MemoryPlugin.handle`: the question
embedded by the local model, the store searched within the user and tenant,
the gate run, the message injected. Printed: the median and 95th percentile
of a request, of the embedding alone, and of the gate alone, and the time to
keep one turn (:meth:`MemoryPlugin.on_response`). Needs the local-embed,
milvus and qdrant extras.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from memrules import MemoryConfig, MemoryPlugin, Request
from memrules._core.messages import message
from memrules.memory import ReflectionConfig, RetrievalStoreConfig, RouteRetrieval, reflect
from memrules.memory.autostore import memory_record, memory_text
from memrules.memory.binding import open_store
from memrules.seams import local_embedder

TOPICS = [
    ("Where does my {who} live?", "In {city}."),
    ("What is the {thing} for {project}?", "It is {value}."),
    ("Which {tool} version do we use on {project}?", "{tool} {version}."),
    ("When is the {event} for {project}?", "On {day}."),
    ("Who owns {project}?", "{who_name} owns it."),
]
WORDS = {
    "who": ["sister", "brother", "landlord", "manager", "dentist"],
    "city": ["Porto", "Lyon", "Oslo", "Kyoto", "Lima", "Austin"],
    "thing": ["deploy key", "API token", "budget", "on-call rota", "VPN host"],
    "project": ["atlas", "billing", "search", "mobile", "infra", "data"],
    "value": ["vault/prod/key", "12,000 dollars", "vpn.acme.dev", "the blue team"],
    "tool": ["Terraform", "Python", "Postgres", "Kafka"],
    "version": ["1.7", "3.12", "16", "3.6"],
    "event": ["release", "audit", "offsite", "migration"],
    "day": ["Friday", "March 3", "next Tuesday"],
    "who_name": ["Priya", "Tomás", "Mei", "Ade"],
}


def fill(template: str, rng: random.Random) -> str:
    return template.format(**{k: rng.choice(v) for k, v in WORDS.items()})


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{statistics.median(ordered) * 1000:7.1f} / {p95 * 1000:7.1f} ms"


def run(backend: str, where: Path, args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    embedder = local_embedder()
    embedder.load()  # type: ignore[attr-defined]
    store_config = (
        {"backend": "milvus", "uri": str(where / "memories.db")}
        if backend == "milvus"
        else {"backend": "qdrant", "path": str(where / "memories")}
    )
    settings = RetrievalStoreConfig(store=store_config)
    store = open_store(settings, embedder=embedder)
    users = [f"user-{i}" for i in range(args.users)]
    records = []
    for i in range(args.memories):
        asked, answer = rng.choice(TOPICS)
        text = memory_text(fill(asked, rng), fill(answer, rng), 4000)
        records.append(
            memory_record(
                text, user=rng.choice(users), tenant="acme", conversation_id=f"c{i}", now=0.0
            )
        )
    started = time.perf_counter()
    store.add(records)
    filled = time.perf_counter() - started
    config = MemoryConfig(
        memory=RouteRetrieval(retrieval_limit=5, auto_store=True), memory_store=settings
    )
    plugin = MemoryPlugin(config, memory_store=store)
    requests, embeds, gates, keeps = [], [], [], []
    for i in range(args.questions):
        asked, answer = rng.choice(TOPICS)
        question = fill(asked, rng)
        request = Request(
            messages=(message("system", "Be brief."), message("user", question)),
            user=rng.choice(users),
            tenant="acme",
        )
        started = time.perf_counter()
        result = plugin.handle(request, now=float(i))
        requests.append(time.perf_counter() - started)
        started = time.perf_counter()
        embedder.embed([question])
        embeds.append(time.perf_counter() - started)
        assert result.memory is not None
        found = result.memory.retrieval.memories
        started = time.perf_counter()
        reflect(found, ReflectionConfig(), now=float(i), marker="memrules memory:")
        gates.append(time.perf_counter() - started)
        started = time.perf_counter()
        plugin.on_response(request, fill(answer, rng) + f" (#{i})", now=float(i))
        keeps.append(time.perf_counter() - started)
    store.close()
    print(
        f"{backend:>7}: filled {args.memories:,} memories in {filled:5.1f} s; "
        f"request with memory {percentiles(requests)}; embedding {percentiles(embeds)}; "
        f"gate {percentiles(gates)}; keep a turn {percentiles(keeps)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backends", nargs="+", default=["milvus", "qdrant"])
    args = parser.parse_args()
    print("median / p95 of each step (the request includes embedding the question)")
    for backend in args.backends:
        with tempfile.TemporaryDirectory() as where:
            run(backend, Path(where), args)


if __name__ == "__main__":
    main()
