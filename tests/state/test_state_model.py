"""Conversation state (memrules.state): the in-memory store, the
encoding stores that keep bytes use, and the store config."""

from __future__ import annotations

import threading

import attrs
import pytest

from memrules import ConversationState
from memrules._core.errors import ConfigError, StateStoreError
from memrules.graph import (
    GraphLimits,
    GraphNode,
    MemoryGraph,
)
from memrules.state import (
    InMemoryStateStore,
    StateRecord,
    StateStore,
    StateStoreConfig,
    open_state_store,
)
from memrules.state.config import redact
from memrules.state.memory import LocalLocks
from memrules.state.model import SwappingStateStore, decode_state, encode_state

GRAPH = MemoryGraph.of([GraphNode(id="b"), GraphNode(id="a", weight=2)])


def warn(state: ConversationState) -> ConversationState:
    return state if state.warned else attrs.evolve(state, warned=True)


def test_the_in_memory_store_is_a_state_store() -> None:
    assert isinstance(InMemoryStateStore(), StateStore)


def test_versions_count_writes_and_no_ops_write_nothing() -> None:
    store = InMemoryStateStore()
    fresh = store.load("c")
    assert fresh == StateRecord(state=ConversationState(), version=0)
    assert store.load("c") is fresh
    first = store.update("c", warn)
    assert (first.version, first.state.warned) == (1, True)
    assert store.update("c", warn) is first  # nothing changed: nothing written
    second = store.update("c", lambda s: attrs.evolve(s, graph=GRAPH))
    assert second.version == 2
    assert store.load("c") is second
    assert store.load("other").version == 0
    store.forget("c")
    assert store.load("c").version == 0


def test_fresh_states_carry_the_graph_limits() -> None:
    limits = GraphLimits(max_nodes=3)
    store = InMemoryStateStore(graph_limits=limits)
    assert store.load(None).state.graph.limits == limits


def test_the_store_is_bounded_and_keeps_busy_conversations() -> None:
    store = InMemoryStateStore(max_conversations=2)
    held = threading.Event()
    release = threading.Event()

    def busy() -> None:
        with store.lock("busy"):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=busy)
    thread.start()
    held.wait(10)
    store.update("busy", warn)
    for k in range(5):
        store.update(f"c{k}", warn)
    assert len(store) == 2
    assert store.load("busy").state.warned  # a request in progress keeps its conversation
    assert store.load("c4").state.warned
    assert store.load("c0").version == 0
    release.set()
    thread.join()
    with pytest.raises(ConfigError, match="max_conversations=0"):
        InMemoryStateStore(max_conversations=0)


def test_updates_of_one_conversation_run_one_at_a_time() -> None:
    store = InMemoryStateStore()
    calls: list[int] = []

    def add_one(state: ConversationState) -> ConversationState:
        n = len(state.graph.nodes)
        calls.append(n)
        return attrs.evolve(state, graph=state.graph.add_node(GraphNode(id=f"n{n}")))

    threads = [threading.Thread(target=store.update, args=("c", add_one)) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.load("c").version == 16
    assert len(store.load("c").state.graph.nodes) == 16
    assert sorted(calls) == list(range(16))  # each ran once, on the latest state


def test_local_locks_are_bounded() -> None:
    locks = LocalLocks(cap=2)
    for k in range(10):
        with locks(f"c{k}"):
            pass
    assert len(locks._table) == 2


# --- encoding ----------------------------------------------------------------------------


def test_encoding_round_trips_state_version_and_ages() -> None:
    state = ConversationState(warned=True, graph=GRAPH)
    text = encode_state(state, 7)
    record = decode_state(text, limits=GraphLimits(), where="'k'")
    assert record.version == 7
    assert record.state == state
    assert [n.id for n in record.state.graph.ordered_nodes()] == ["b", "a"]
    assert encode_state(record.state, 7) == text


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"\x00garbage", "cannot be read"),
        ('{"format": "other"}', "not a memrules.state record"),
        ('{"format": "memrules.state", "version": 0, "warned": false, "graph": {}}', "version=0"),
        ('{"format": "memrules.state", "version": 1, "warned": 1, "graph": {}}', "warned=1"),
        (
            '{"format": "memrules.state", "version": 1, "warned": false, "graph": '
            '{"version": 1, "nodes": [], "relationships": [{"id": "r", "from": "a", "to": "b", '
            '"type": "t"}]}}',
            "is not a node of the snapshot",
        ),
    ],
)
def test_data_that_is_no_record_fails_as_a_store_error(data: str | bytes, says: str) -> None:
    with pytest.raises(StateStoreError, match="state store entry 'k' cannot be read") as raised:
        decode_state(data, limits=GraphLimits(), where="'k'")
    assert says in str(raised.value)
    assert isinstance(raised.value, OSError)


# --- config ---------------------------------------------------------------------------------


def test_config_and_redaction() -> None:
    assert StateStoreConfig().in_memory
    assert isinstance(open_state_store(StateStoreConfig()), InMemoryStateStore)
    config = StateStoreConfig(url="rediss://me:hunter2@cache.example:6380/1")
    assert "hunter2" not in repr(config)
    assert redact("valkey://:pw@h:1/0") == "valkey://:***@h:1/0"
    assert redact("valkey://h:1/0") == "valkey://h:1/0"
    with pytest.raises(ConfigError) as raised:
        StateStoreConfig(url="http://me:hunter2@x", ttl_seconds=1.5, timeout_seconds=0)  # type: ignore[arg-type]
    assert "hunter2" not in str(raised.value)
    assert [p.yaml_path for p in raised.value.problems] == [
        "state_store.url",
        "state_store.ttl_seconds",
        "state_store.timeout_seconds",
    ]


def test_swap_writes_only_over_the_record_it_was_given() -> None:
    store = InMemoryStateStore()
    assert isinstance(store, SwappingStateStore)
    seen = store.held("c")
    assert seen is not None
    assert seen.version == 0
    warned = ConversationState(warned=True)
    done, written = store.swap("c", seen, warned)
    assert done
    assert written.version == 1
    assert store.held("c") is written
    done, current = store.swap("c", seen, ConversationState())  # seen is stale now
    assert not done
    assert current is written  # the newer record, nothing written
    done, kept = store.swap("c", written, written.state)  # no change: no write
    assert done
    assert kept is written
    assert store.load("c").version == 1
