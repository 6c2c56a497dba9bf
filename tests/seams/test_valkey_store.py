"""Valkey as a vector store, beyond the shared store suite: a server killed
mid-write and started again, a server that is down, what a write's
acknowledgement guarantees, secrets in the URL, its settings, and two
plugin processes sharing one server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from memrules import MemoryConfig, Pipeline, load_pipeline
from memrules._core.errors import ConfigError, StoreError
from memrules._core.seam_records import StoredMessage, build_records
from memrules.memory import RetrievalStoreConfig, RouteRetrieval
from memrules.seams import Embedder, MessageStore, Scope, Seams
from memrules.seams.valkey import valkey_store
from memrules.strategies import offload
from tests.seams.test_stores import FACTS, grow
from tests.strategies.test_units import agent_loop
from tests.support.memory_helpers import ask
from tests.support.strategies import COUNTER
from tests.support.valkey_search import SearchServer, key_prefix, needs_valkey_search

pytestmark = needs_valkey_search

ROOT = Path(__file__).resolve().parents[2]
SCOPE = Scope(conversation_id="c1", user="u1", tenant="t1")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SearchServer]:
    """A server of this test's own, on a data directory it keeps."""
    running = SearchServer(data_dir=tmp_path / "data").start()
    yield running
    running.stop()


# --- the server killed mid-write ------------------------------------------------------------


class KillOnWrite:
    """A real Valkey backend whose ``k``-th write (counting from 1) writes
    half its rows, then the server is killed (SIGKILL) and the write goes
    on against it, as a crash in the middle of an offload leaves it."""

    def __init__(self, backend: Any, server: SearchServer, k: int) -> None:
        self.backend = backend
        self.server = server
        self.k = k
        self.writes = 0
        self.engine = backend.engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def write(self, rows: Sequence[tuple[StoredMessage, list[float]]]) -> None:
        self.writes += 1
        if self.writes == self.k:
            self.backend.write(rows[: len(rows) // 2])
            self.server.kill()
            self.backend.write(rows[len(rows) // 2 :])  # the server is gone: this fails
        self.backend.write(rows)


@needs_valkey_search
def test_a_server_killed_mid_write_loses_nothing_acknowledged(
    server: SearchServer, tmp_path: Path, local_embedder: Embedder
) -> None:
    """An agent's history grows over three requests; offload writes old
    rounds in chunks of 3 records. For every k, the server is killed during
    the k-th write and started again on its data: every record an earlier
    offload acknowledged (durably) is still there; the failed request is
    sent whole, nothing removed; and the next request offloads again."""
    base = agent_loop(0)[:2]
    requests = [grow(base, 0, 6), grow(base, 0, 10), grow(base, 0, 14)]
    k = 1
    while True:
        real = valkey_store(
            url=server.url, collection=f"kill{k}", key_prefix="k:", embedder=local_embedder
        )
        failing = KillOnWrite(real._backend, server, k)  # type: ignore[attr-defined]
        store = MessageStore(
            backend=failing, embedder=real.embedder, batch_size=3, description=repr(real)
        )
        pipeline = Pipeline.from_config(
            MemoryConfig(max_messages=8, strategies=[offload(turns=1, keep_exchanges=2)]),
            seams=Seams(store=store),
            counter=COUNTER,
        )
        acknowledged: set[str] = set()
        failures = 0
        for history in requests:
            ids = [r.id for r in build_records(history, scope=Scope(conversation_id="c1"))]
            result = pipeline.apply(history, conversation_id="c1")
            sent = result.messages
            if result.report.errors:
                failures += 1
                assert sent is history  # nothing removed from a request that was not stored
                (action,) = result.report.actions
                (call,) = action.seam_calls
                assert call.error is not None
                assert call.response is None
                server.start()  # the same data directory and port
            else:
                for action in result.report.actions:
                    for call in action.seam_calls:
                        assert call.response.get("durable", True) is True  # said when False
                        acknowledged.update(call.response["added"])
            after = real.holds(ids)
            assert acknowledged & set(ids) <= after, k  # nothing acknowledged is lost
            for m, record_id in zip(history, ids, strict=True):
                assert any(s is m for s in sent) or record_id in after, (k, m)
        real.close()
        if failing.writes < k:  # no write failed: every k has been tried
            assert failures == 0
            break
        assert failures == 1
        k += 1
    assert k > 4  # the requests needed several writes


# --- a server that is down -----------------------------------------------------------------


def _dead_url() -> str:
    """A loopback port nothing listens on."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"valkey://someone:hunter2@127.0.0.1:{port}"


def test_a_server_that_is_down_costs_a_request_its_memory_never_the_request(
    local_embedder: Embedder,
) -> None:
    url = _dead_url()
    from memrules import MemoryPlugin

    settings = RetrievalStoreConfig(store={"backend": "valkey", "url": url, "timeout_seconds": 1.0})
    config = MemoryConfig(
        memory=RouteRetrieval(auto_store=True),
        memory_store=settings,
        max_messages=8,
        strategies=[offload(turns=1, keep_exchanges=2)],
    )
    offloads = valkey_store(url=url, embedder=local_embedder, timeout_seconds=1.0)
    plugin = MemoryPlugin(config, store=offloads, counter=COUNTER)
    history = grow(agent_loop(0)[:2], 0, 10)
    request = ask("Where does my sister live?", history=history)
    step = plugin.handle(request)
    assert step.request.messages == request.messages  # offload failed: the request is whole
    assert step.memory is not None
    assert step.memory.retrieval.status == "error"
    assert "hunter2" not in (step.memory.retrieval.error or "")
    assert "hunter2" not in (step.report.last_error or "")
    assert "connect" in (step.report.last_error or "").lower()
    stored = plugin.on_response(ask("My sister lives in Porto."), "Noted.")
    assert stored.status == "error"
    assert "hunter2" not in (stored.error or "")
    with pytest.raises(StoreError) as raised:
        offloads.search("Porto", k=1, scope=SCOPE)
    assert "hunter2" not in str(raised.value)
    assert "valkey://someone:***@127.0.0.1" in str(raised.value)
    offloads.close()
    plugin.close()


# --- what an acknowledgement guarantees ----------------------------------------------------


@pytest.mark.parametrize(
    ("appendonly", "durable"), [("yes", True), ("no", False)], ids=["aof", "no-aof"]
)
def test_a_write_is_durable_only_when_the_server_fsyncs_it(
    appendonly: str, durable: bool, tmp_path: Path, local_embedder: Embedder
) -> None:
    with SearchServer(appendonly=appendonly) as running:
        store = valkey_store(url=running.url, embedder=local_embedder)
        write = store.add(build_records(FACTS, scope=SCOPE))
        assert write.durable is durable
        assert store.add(build_records(FACTS, scope=SCOPE)).durable is durable
        store.close()


def test_an_acknowledged_write_survives_a_kill_and_the_index_comes_back(
    server: SearchServer, local_embedder: Embedder
) -> None:
    store = valkey_store(url=server.url, embedder=local_embedder, collection="kept")
    records = build_records(FACTS, scope=SCOPE)
    assert store.add(records).durable is True
    server.kill()
    server.start()
    assert store.holds([r.id for r in records]) == {r.id for r in records}
    (hit,) = store.search("Terraform 1.7", k=1, scope=SCOPE, mode="lexical")
    assert "Terraform" in hit.text
    (hit,) = store.search("Where does my sister live?", k=1, scope=SCOPE, mode="dense")
    assert "Porto" in hit.text
    store.close()


# --- settings ------------------------------------------------------------------------------


def test_the_password_never_shows(local_embedder: Embedder) -> None:
    url = "valkey://someone:hunter2@127.0.0.1:6390/0"
    store = valkey_store(url=url, embedder=local_embedder)
    assert "hunter2" not in repr(store)
    assert "someone:***@" in repr(store)
    pipeline = load_pipeline(f"store:\n  backend: valkey\n  url: '{url}'\n")
    assert "hunter2" not in repr(pipeline.seams.store)
    settings = RetrievalStoreConfig(store={"backend": "valkey", "url": url})
    assert "hunter2" not in repr(settings)
    with pytest.raises(ConfigError) as raised:
        valkey_store(url="http://someone:hunter2@127.0.0.1:6390", embedder=local_embedder)
    assert "hunter2" not in str(raised.value)


@pytest.mark.parametrize(
    ("yaml", "where", "says"),
    [
        ("url: http://127.0.0.1:6379", "store.url", "valkey://"),
        ("key_prefix: 'a b'", "store.key_prefix", "key_prefix"),
        ("key_prefix: ''", "store.key_prefix", "key_prefix"),
        ("m: 1", "store.m", "m=1"),
        ("ef_runtime: 0", "store.ef_runtime", "ef_runtime=0"),
        ("timeout_seconds: 0", "store.timeout_seconds", "timeout_seconds=0"),
        ("collection: 'a-b'", "store.collection", "collection"),
        ("index: x", "store.index", "known keys"),
    ],
)
def test_bad_settings_are_config_errors_at_their_yaml_path(
    yaml: str, where: str, says: str, local_embedder: Embedder
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_pipeline(f"store:\n  backend: valkey\n  {yaml}\n")
    (problem,) = raised.value.problems
    assert problem.yaml_path == where
    assert says in problem.message


def test_hnsw_settings_reach_the_index(server: SearchServer, local_embedder: Embedder) -> None:
    store = valkey_store(
        url=server.url, embedder=local_embedder, collection="tuned", m=8, ef_construction=64
    )
    store.add(build_records(FACTS, scope=SCOPE))
    info = server.client().execute_command("FT.INFO", "memrules:vectors:tuned")
    text = json.dumps(info, default=lambda b: b.decode() if isinstance(b, bytes) else str(b))
    assert '"M", 8' in text
    assert '"ef_construction", 64' in text
    assert '"HNSW"' in text
    store.close()


def test_the_state_store_and_the_vector_store_share_a_server(
    server: SearchServer, local_embedder: Embedder
) -> None:
    from memrules.state.valkey import ValkeyStateStore

    state = ValkeyStateStore(server.url)
    store = valkey_store(url=server.url, embedder=local_embedder)
    store.add(build_records(FACTS, scope=SCOPE))
    assert state.key("c1").startswith("memrules:")
    keys = {k.decode() for k in server.client().keys("*")}
    assert all(k.startswith("memrules:vectors:") for k in keys)
    assert len(store.scan(SCOPE)) == len(FACTS)
    store.close()


# --- two plugin processes sharing one server ------------------------------------------------


def _app(server: SearchServer, where: Path) -> Path:
    text = (
        "max_messages: 50\n"
        "stores:\n"
        f"  memory: {{backend: valkey, url: '{server.url}', key_prefix: '{key_prefix(where)}', "
        "collection: memories, threshold: -1.0}\n"
        "memory: {auto_store: true, retrieval_limit: 20}\n"
    )
    path = where / "app.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_two_plugin_processes_share_one_server_and_never_another_users_memories(
    server: SearchServer, tmp_path: Path
) -> None:
    """Two application processes, running at once, each auto-store turns
    for their own users; each then retrieves and lists what both stored
    for ana, and never what either stored for another user or tenant."""
    config = _app(server, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.shared_memory_process", name, str(config)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("one", "two")
    ]
    outs = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr[-4000:]
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    from tests.support.shared_memory_process import SAID

    ana = {text for name in ("one", "two") for text in SAID[name]["ana"]}
    others = {
        text
        for name in ("one", "two")
        for who, texts in SAID[name].items()
        if who != "ana"
        for text in texts
    }
    for out in outs:
        assert set(out["ana_listed"]) == ana
        assert ana <= set(out["ana_retrieved"])
        assert not others & set(out["ana_retrieved"])
        assert not others & set(out["ana_listed"])
        assert out["nobody_listed"] == []
        assert set(out["bob_listed"]) == {t for n in ("one", "two") for t in SAID[n].get("bob", ())}


# --- dense search against the exact scan ----------------------------------------------------


class Seeded:
    """Seeded random unit vectors of 64 floats: the same text, the same vector."""

    dimension = 64
    identity: ClassVar[dict[str, Any]] = {"model": "seeded", "dimension": 64}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import hashlib

        import numpy as np

        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
            v = np.random.default_rng(seed).standard_normal(64)
            out.append((v / np.linalg.norm(v)).tolist())
        return out


def test_dense_search_is_the_exact_scan_within_the_scope(server: SearchServer) -> None:
    """600 records of 3 users; for each user and query, the dense top 10 is
    the top 10 of a numpy scan of every record with the user's mask."""
    import numpy as np

    from memrules._core.messages import message

    embedder = Seeded()
    store = valkey_store(url=server.url, embedder=embedder, collection="exact", search="dense")
    scopes = [Scope(user=f"u{u}", tenant="t") for u in range(3)]
    records = [
        r
        for i in range(600)
        for r in build_records((message("user", f"note {i}"),), scope=scopes[i % 3])
    ]
    store.add(records)
    matrix = np.array(embedder.embed([r.text for r in records]))
    owner = np.array([r.scope.user for r in records])
    for q in range(10):
        (query,) = embedder.embed([f"question {q}"])
        for scope in scopes:
            scores = np.where(owner == scope.user, matrix @ np.array(query), -np.inf)
            exact = [records[i].id for i in np.argsort(-scores)[:10]]
            hits = store.search(f"question {q}", k=10, scope=scope)
            assert [h.id for h in hits] == exact
            assert np.allclose([h.score for h in hits], np.sort(scores)[::-1][:10], atol=1e-5)
    store.close()


def test_a_new_collection_on_a_full_server_indexes_each_record_once(server: SearchServer) -> None:
    """Creating an index starts the module's scan of the whole keyspace; a
    record written while that scan runs is indexed twice, and the stale
    copy skews BM25 until the module's collector runs (a tag-filtered
    query then misses records that hold every term). A new collection on a
    server with other data waits for its scan, so every record is indexed
    once and lexical search ranks as on an empty server."""
    from memrules._core.messages import message

    client = server.client()
    pipe = client.pipeline(transaction=False)
    for i in range(200_000):
        pipe.hset(f"other:{i}", mapping={"field": "value"})
        if i % 10_000 == 9_999:
            pipe.execute()
    pipe.execute()
    texts = [f"reading src/module_{i}.py line {i}" for i in range(12)] + [
        "reading src/sched.py",
        "def schedule(job): return queue.put(job)  # src/sched.py",
    ]
    scope = Scope(user="u", tenant="t")
    store = valkey_store(url=server.url, embedder=Seeded(), collection="busy", search="lexical")
    records = [r for t in texts for r in build_records((message("user", t),), scope=scope)]
    store.add(records)
    info = client.execute_command("FT.INFO", store._backend._index("busy"))
    fields = {
        (k.decode() if isinstance(k, bytes) else k): v
        for k, v in zip(info[::2], info[1::2], strict=True)
    }
    hits = store.search("src/sched.py", k=2, scope=scope)
    assert sorted(h.text for h in hits) == sorted(f"user: {t}" for t in texts[-2:])
    assert int(fields["num_docs"]) == len(texts)
    assert int(fields["indexing"]) == 0
    store.close()
