"""Retrieval memory in the request hook, against the real stores (a Milvus
Lite file, Qdrant's local mode) and the real local embedder: what a request
gets, where it goes, what is kept, and what happens when the store is down."""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import memrules
from memrules import ConfigError, MemoryConfig, MemoryPlugin, Request
from memrules._core.messages import message
from memrules.memory import (
    RetrievalEvent,
    RetrievalStoreConfig,
    RouteRetrieval,
    StoreEvent,
)
from memrules.memory.retrieve import is_memory_message
from memrules.memory.shared import SHARED_STORES
from memrules.seams import Embedder, openai_embedder, qdrant_store
from tests.support.chat_server import ChatServer
from tests.support.memory_helpers import (
    DAY,
    SYSTEM,
    T0,
    Plugins,
    ask,
    plugins,
    remember,
    store_settings,
)
from tests.support.seams import CLIENT_BACKENDS, needs_memory_extras

needs_prometheus = pytest.mark.skipif(
    importlib.util.find_spec("prometheus_client") is None,
    reason="needs the prometheus extra: pip install 'memrules[prometheus]'",
)

MARKER = "memrules memory:"


@pytest.fixture
def make(tmp_path: Path, local_embedder: Embedder) -> Iterator[Plugins]:
    """Plugins with memory over Qdrant in memory (the isolation and binding
    tests, and the tests marked so here, run against every backend)."""
    yield from plugins("qdrant", tmp_path, local_embedder)


@pytest.fixture(params=CLIENT_BACKENDS)
def make_each(
    request: pytest.FixtureRequest, tmp_path: Path, local_embedder: Embedder
) -> Iterator[Plugins]:
    """Plugins with memory over each backend (Milvus Lite, Qdrant in memory)."""
    yield from plugins(request.param, tmp_path, local_embedder)


class Events:
    """A RetrievalObserver that keeps what it is told."""

    def __init__(self) -> None:
        self.retrievals: list[RetrievalEvent] = []
        self.stores: list[StoreEvent] = []

    def on_retrieval(self, event: RetrievalEvent) -> None:
        self.retrievals.append(event)

    def on_store(self, event: StoreEvent) -> None:
        self.stores.append(event)


def memory_messages(request: Request) -> list[str]:
    return [m.text for m in request.messages if is_memory_message(m, MARKER)]


def test_a_turn_kept_in_one_conversation_is_recalled_in_another(make_each: Plugins) -> None:
    events = Events()
    plugin = make_each(memory_observers=[events])
    remember(plugin, "My sister Priya moved to Porto last spring.", "Porto is lovely. Noted!")
    remember(plugin, "We deploy with Terraform 1.7.", "Terraform 1.7 it is.")
    result = plugin.handle(
        ask("Where does my sister live now?", conversation_id="c2"), now=T0 + DAY
    )
    sent = result.request.messages
    assert sent[0] is SYSTEM
    assert is_memory_message(sent[1], MARKER)
    assert sent[2].text == "Where does my sister live now?"
    # Stored the day before, one quoted line.
    assert (
        '\n- [2025-06-15] "Q: My sister Priya moved to Porto last spring.\\nA: Porto is lovely. '
        'Noted!"' in sent[1].text
    )
    assert "Terraform" not in sent[1].text  # under the threshold
    report = result.memory
    assert report is not None
    assert report.retrieval.status == "hit"
    assert report.retrieval.question == "Where does my sister live now?"
    assert report.now == T0 + DAY
    assert report.injected
    assert result.memory_tokens == plugin.count_tokens([sent[1]])
    assert [e.status for e in events.stores] == ["stored", "stored"]
    assert [(e.status, e.results) for e in events.retrievals] == [("hit", 1)]
    assert events.retrievals[0].backend == plugin.memory.backend  # type: ignore[union-attr]


def test_nothing_relevant_is_a_miss_and_injects_nothing(make: Plugins) -> None:
    plugin = make()
    remember(plugin, "My sister Priya moved to Porto last spring.", "Noted.")
    request = ask("Write a haiku about autumn leaves.")
    result = plugin.handle(request, now=T0)
    assert result.memory is not None
    assert result.memory.retrieval.status == "miss"
    assert result.request is request  # nothing changed
    assert result.memory_tokens == 0


def test_the_message_goes_after_the_first_system_message_and_replaces_a_stale_one(
    make: Plugins,
) -> None:
    plugin = make()
    remember(plugin, "My sister Priya moved to Porto last spring.", "Noted.")
    question = "Where does my sister live now?"
    bare = plugin.on_request(ask(question, history=()))
    assert [m.role for m in bare.messages] == ["system", "user"]  # first, without a system one
    two = (SYSTEM, message("user", "hello"), message("system", "an observation"))
    sent = plugin.on_request(ask(question, history=two)).messages
    assert [m.role for m in sent] == ["system", "system", "user", "system", "user"]
    assert is_memory_message(sent[1], MARKER)
    # The client kept the memory message: it is replaced, not repeated, and
    # the same message comes back when nothing changed.
    again = plugin.on_request(Request(messages=sent, user="ana", tenant="acme"))
    assert len(memory_messages(again)) == 1
    assert again.messages == sent
    assert again.messages[1] is sent[1]


@pytest.mark.parametrize(
    ("user", "tenant", "missing"),
    [
        (None, "acme", ["metadata.user_id"]),
        ("ana", None, ["metadata.tenant_id"]),
        (None, None, ["metadata.user_id", "metadata.tenant_id"]),
    ],
)
def test_a_request_without_user_and_tenant_gets_no_memory_and_says_so(
    make: Plugins, user: str | None, tenant: str | None, missing: list[str]
) -> None:
    events = Events()
    plugin = make(memory_observers=[events])
    remember(plugin, "My sister Priya moved to Porto last spring.", "Noted.")
    request = ask("Where does my sister live now?", user=user, tenant=tenant)
    result = plugin.handle(request)
    assert result.request is request
    report = result.memory
    assert report is not None
    assert report.retrieval.status == "skipped"
    assert report.retrieval.skipped == "no_scope"
    for key in missing:
        assert key in (report.retrieval.reason or "")
    assert [(e.status, e.skipped) for e in events.retrievals] == [("skipped", "no_scope")]
    stored = plugin.on_response(request, "In Porto.")
    assert stored.status == "skipped"
    assert "no memory without a user and a tenant" in (stored.reason or "")


def test_small_talk_asks_nothing_and_keeps_nothing(make: Plugins) -> None:
    plugin = make()
    remember(plugin, "Hi there! Where is the deploy key?", "In vault/prod/deploy.key.")
    request = ask("hi!")
    result = plugin.handle(request)
    assert result.memory is not None
    assert result.memory.retrieval.skipped == "small_talk"
    assert plugin.on_response(ask("thanks!"), "You're welcome!").status == "skipped"
    assert len(plugin.list_memories("ana", "acme")) == 1


def test_the_same_turn_is_kept_once(make: Plugins) -> None:
    plugin = make()
    first = plugin.on_response(ask("Our VPN is vpn.acme.dev"), "Noted: vpn.acme.dev.", now=T0)
    again = plugin.on_response(
        ask("Our VPN is  vpn.acme.dev", conversation_id="c9"), "Noted:\nvpn.acme.dev.", now=T0 + DAY
    )
    assert (first.status, again.status) == ("stored", "duplicate")
    assert first.id == again.id
    (kept,) = plugin.list_memories("ana", "acme")
    assert kept.stored_at == T0  # the first time it was said
    assert kept.conversation_id == "c1"


def test_routes_without_auto_store_or_memory_keep_nothing(make: Plugins) -> None:
    reading = make(memory=RouteRetrieval(auto_store=False))
    assert reading.on_response(ask("I live in Porto."), "Noted.").status == "disabled"
    assert reading.list_memories("ana", "acme") == ()
    plain = MemoryPlugin(MemoryConfig())
    assert plain.memory is None
    assert plain.on_response(ask("I live in Porto."), "Noted.").status == "disabled"
    assert plain.handle(ask("Where do I live?")).memory is None
    with pytest.raises(ConfigError, match="this route has no retrieval memory"):
        plain.forget("ana", "acme")


def test_forget_removes_one_user_and_tenant_only(make_each: Plugins) -> None:
    plugin = make_each()
    remember(plugin, "I live in Porto.", "Noted.")
    remember(plugin, "My cat is called Miso.", "Lovely name.", now=T0 + 1)
    remember(plugin, "I live in Lyon.", "Noted.", user="bob")
    remember(plugin, "I live in Oslo.", "Noted.", tenant="other")
    assert [m.text.splitlines()[0] for m in plugin.list_memories("ana", "acme")] == [
        "Q: I live in Porto.",
        "Q: My cat is called Miso.",
    ]
    assert plugin.forget("ana", "acme") == 2
    assert plugin.list_memories("ana", "acme") == ()
    assert plugin.handle(ask("Where do I live?"), now=T0).memory.retrieval.status == "miss"  # type: ignore[union-attr]
    assert len(plugin.list_memories("bob", "acme")) == 1
    assert len(plugin.list_memories("ana", "other")) == 1
    assert plugin.forget("ana", "acme") == 0
    with pytest.raises(ConfigError, match="user"):
        plugin.forget("", "acme")


def test_older_memories_decay_as_of_the_time_given(make_each: Plugins) -> None:
    plugin = make_each()
    remember(plugin, "Our budget for the trip is 10,000 dollars.", "Noted.", now=T0)
    remember(plugin, "Update: the trip budget is now 12,000 dollars.", "Noted.", now=T0 + 90 * DAY)
    question = ask("What is our budget for the trip?")
    late = plugin.handle(question, now=T0 + 91 * DAY).memory
    assert late is not None
    assert ["12,000" in m.text for m in late.gate.memories] == [True, False]
    assert late.gate.memories[1].score < late.retrieval.memories[-1].score / 4
    # The same request at the same time injects the same bytes: a replay.
    again = plugin.handle(question, now=T0 + 91 * DAY)
    assert again.memory == late


def test_openai_bodies_carry_the_user_and_tenant_in_metadata(make: Plugins) -> None:
    plugin = make()
    body: dict[str, Any] = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "My sister Priya moved to Porto last spring."},
        ],
        "metadata": {"conversation_id": "c1", "user_id": "ana", "tenant_id": "acme"},
    }
    reply = {"choices": [{"message": {"role": "assistant", "content": "Noted, Porto!"}}]}
    assert plugin.on_openai_response(body, reply, now=T0).status == "stored"
    later = {
        **body,
        "messages": [
            body["messages"][0],
            {"role": "user", "content": "Where does my sister live?"},
        ],
    }
    sent = plugin.on_openai_request(later)
    assert sent["messages"][1]["role"] == "system"
    assert "Porto" in sent["messages"][1]["content"]
    # The caller's own user and tenant win over the body's.
    other = plugin.on_openai_request(later, user="mallory")
    assert len(other["messages"]) == 2
    with pytest.raises(memrules.MessageFormatError, match="choices"):
        plugin.on_openai_response(body, {"choices": []})


def test_a_failing_observer_fails_nothing(make: Plugins, caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def on_retrieval(self, event: RetrievalEvent) -> None:
            raise RuntimeError("metrics are down")

        def on_store(self, event: StoreEvent) -> None:
            raise RuntimeError("metrics are down")

    plugin = make(memory_observers=[Broken()])
    with caplog.at_level(logging.ERROR, logger="memrules.memory"):
        remember(plugin, "I live in Porto.", "Noted.")
        assert plugin.handle(ask("Where do I live?")).memory.retrieval.status == "hit"  # type: ignore[union-attr]
    assert "metrics are down" in caplog.text


# --- a store that is down --------------------------------------------------------------


def settle() -> None:
    """Wait for qdrant-client's background version check of a server that
    is down (it warns that it could not ask), so its warning falls in the
    test that caused it."""
    for thread in threading.enumerate():
        if "_check_compatibility" in thread.name:
            thread.join(timeout=10)


def down_settings(backend: str) -> RetrievalStoreConfig:
    store = (
        {"backend": "milvus", "uri": "http://127.0.0.1:1"}
        if backend == "milvus"
        else {"backend": "qdrant", "url": "http://127.0.0.1:1"}
    )
    return RetrievalStoreConfig(store=store)


@pytest.mark.filterwarnings("ignore:Failed to obtain server version")
@pytest.mark.parametrize("backend", CLIENT_BACKENDS)
def test_a_store_that_is_down_costs_the_request_its_memory_only(
    backend: str, tmp_path: Path, local_embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    make = Plugins(backend, tmp_path, local_embedder)
    events = Events()
    with caplog.at_level(logging.WARNING, logger="memrules.memory"):
        plugin = make(settings=down_settings(backend), memory_observers=[events])  # starts
        assert "cannot be checked at start-up" in caplog.text
        request = ask("Where does my sister live now?")
        result = plugin.handle(request)
        stored = plugin.on_response(request, "In Porto.")
    assert result.request is request  # the request goes on, without memory
    assert result.memory is not None
    assert result.memory.retrieval.status == "error"
    assert "StoreError" in (result.memory.retrieval.error or "")
    assert not result.memory.injected
    assert stored.status == "error"
    assert [e.status for e in events.retrievals] == ["error"]
    assert [e.status for e in events.stores] == ["error"]
    with pytest.raises(memrules.StoreError):
        plugin.forget("ana", "acme")  # a forget that did not happen says so
    settle()


@needs_prometheus
@pytest.mark.filterwarnings("ignore:Failed to obtain server version")
def test_prometheus_counts_hits_misses_errors_without_a_user_label(
    tmp_path: Path, local_embedder: Embedder
) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from memrules.integrations.prometheus import PrometheusRetrievalObserver

    registry = CollectorRegistry()
    metrics = PrometheusRetrievalObserver(registry)
    make = Plugins("qdrant", tmp_path, local_embedder)
    try:
        plugin = make(memory_observers=[metrics])
        remember(plugin, "My sister Priya moved to Porto last spring.", "Noted.")
        plugin.handle(ask("Where does my sister live now?"))
        plugin.handle(ask("Write a haiku about autumn leaves."))
        plugin.handle(ask("Where does my sister live now?", user=None))
        plugin.handle(ask("hello"))
        down = make(settings=down_settings("qdrant"), memory_observers=[metrics])
        down.handle(ask("Where does my sister live now?"))
    finally:
        make.close()
        settle()

    def value(name: str, **labels: str) -> float:
        found = registry.get_sample_value(name, labels)
        return 0.0 if found is None else found

    assert value("llm_memory_retrieval_total", backend="qdrant", status="hit") == 1
    assert value("llm_memory_retrieval_total", backend="qdrant", status="miss") == 1
    assert value("llm_memory_retrieval_total", backend="qdrant", status="error") == 1
    assert value("llm_memory_retrieval_skipped_total", reason="no_scope") == 1
    assert value("llm_memory_retrieval_skipped_total", reason="small_talk") == 1
    assert value("llm_memory_retrieval_latency_seconds_count", backend="qdrant") == 3
    assert value("llm_memory_retrieval_results_count", backend="qdrant") == 2
    assert value("llm_memory_retrieval_results_sum", backend="qdrant") == 1
    stored = {"backend": "qdrant", "operation": "store", "status": "stored"}
    assert value("llm_memory_store_operations_total", **stored) == 1
    exposition = generate_latest(registry).decode()
    assert "ana" not in exposition
    assert "acme" not in exposition
    assert "user" not in exposition.replace("per user", "")
    with pytest.raises(ConfigError, match="one PrometheusRetrievalObserver per registry"):
        PrometheusRetrievalObserver(registry)


# --- routes of one file -----------------------------------------------------------------


@needs_memory_extras
def test_routes_of_one_file_share_one_store(tmp_path: Path) -> None:
    where = tmp_path / "memories"
    config = memrules.load_config(
        f"""
stores:
  memory:
    backend: qdrant
    path: {str(where)!r}
routes:
  support:
    memory: {{auto_store: true}}
  billing:
    memory: {{retrieval_limit: 2}}
  code:
    max_messages: 20
"""
    )
    try:
        support, billing, code = (
            MemoryPlugin.from_config(config, route=n) for n in ("support", "billing", "code")
        )
        assert support.memory is not None
        assert billing.memory is not None
        assert support.memory.store is billing.memory.store  # one client on the directory
        remember(support, "Invoices go to billing@acme.dev.", "Noted.")
        found = billing.handle(ask("Where do invoices go?")).memory
        assert found is not None
        assert "billing@acme.dev" in (found.gate.text or "")
        assert billing.on_response(ask("I moved to Oslo."), "Noted.").status == "disabled"
        request = ask("Where do invoices go?")
        assert code.handle(request).request is request
        assert code.memory is None
    finally:
        config.close()


@needs_memory_extras
def test_a_config_is_a_value_and_its_plugins_own_the_store(tmp_path: Path) -> None:
    where = tmp_path / "memories"
    text = f"""
stores:
  memory: {{backend: qdrant, path: {str(where)!r}}}
routes:
  support:
    memory: {{auto_store: true}}
  billing:
    memory: {{retrieval_limit: 2}}
"""
    config = memrules.load_config(text)
    settings = config.routes["support"].memory_store
    assert settings is not None
    assert not hasattr(settings, "open")  # reading a config opens nothing, and holds nothing
    assert not hasattr(settings, "close")
    assert attrs.evolve(settings) == settings
    with (
        MemoryPlugin.from_config(config, route="support") as support,
        MemoryPlugin.from_config(config, route="billing") as billing,
    ):
        assert support.config is config.routes["support"]
        assert support.memory is not None
        assert billing.memory is not None
        assert support.memory.store is billing.memory.store  # one client on the directory
        remember(support, "Invoices go to billing@acme.dev.", "Noted.")
    # The last plugin closed the directory's client: another config can open it.
    again = memrules.load_config(text)
    with MemoryPlugin.from_config(again, route="billing") as billing:
        found = billing.handle(ask("Where do invoices go?")).memory
        assert found is not None
        assert "billing@acme.dev" in (found.gate.text or "")
    with pytest.raises(ConfigError, match=r"route='suport'.*did you mean 'support'"):
        MemoryPlugin.from_config(again, route="suport")


@needs_memory_extras
def test_the_shared_store_is_open_while_a_plugin_holds_it(tmp_path: Path) -> None:
    settings = store_settings("qdrant", tmp_path)
    config = MemoryConfig(memory=RouteRetrieval(auto_store=True), memory_store=settings)
    first = MemoryPlugin.from_config(config)
    with MemoryPlugin.from_config(config) as second:
        assert SHARED_STORES.is_open(settings)
        remember(second, "I live in Porto.", "Noted.")
    assert SHARED_STORES.is_open(settings)  # ``first`` still holds it
    assert len(first.list_memories("ana", "acme")) == 1
    first.close()
    assert not SHARED_STORES.is_open(settings)
    first.close()  # twice is harmless


def test_a_route_can_be_given_its_own_store(tmp_path: Path, local_embedder: Embedder) -> None:
    settings = store_settings("qdrant", tmp_path)
    store = qdrant_store(path=":memory:", collection="given", embedder=local_embedder)
    config = MemoryConfig(memory=RouteRetrieval(auto_store=True), memory_store=settings)
    plugin = MemoryPlugin.from_config(config, memory_store=store)
    assert plugin.memory is not None
    assert plugin.memory.store is store
    remember(plugin, "I live in Porto.", "Noted.")
    assert store.collections() == ("given",)
    assert len(plugin.list_memories("ana", "acme")) == 1
    store.close()


def test_a_memory_message_counts_outside_the_budget(make: Plugins) -> None:
    plugin = make()
    remember(plugin, "My sister Priya moved to Porto last spring.", "Noted.")
    result = plugin.handle(ask("Where does my sister live now?"))
    assert result.usage.messages == 2  # measured before the memory message went in
    assert len(result.request.messages) == 3
    assert attrs.evolve(result.report).compacted is False


def test_memory_and_the_working_graph_take_their_places_together(
    tmp_path: Path, local_embedder: Embedder
) -> None:
    from memrules.graph import GraphContext, offline_extractor
    from memrules.graph.render import is_graph_message

    make = Plugins("qdrant", tmp_path, local_embedder)
    settings = store_settings("qdrant", tmp_path)
    config = MemoryConfig(
        memory=RouteRetrieval(auto_store=True),
        memory_store=settings,
        graph_context=GraphContext(),
        graph_extractor=offline_extractor(),
    )
    plugin = MemoryPlugin(config, memory_store=make.store(settings))
    try:
        remember(plugin, "My sister Priya moved to Porto last spring.", "Noted.")
        first = plugin.on_request(
            ask("The vault is in Lisbon. Where does my sister live now?", conversation_id="g")
        )
        kinds = [
            "memory"
            if is_memory_message(m, MARKER)
            else "graph"
            if is_graph_message(m, "memrules graph memory:")
            else m.role
            for m in first.messages
        ]
        assert kinds == ["system", "memory", "graph", "user"]
        # The client sends both back, with a new question: each is replaced once, in place.
        again = Request(
            messages=(
                *first.messages,
                message("assistant", "In Porto."),
                message("user", "And where does my sister Priya live?"),
            ),
            user="ana",
            tenant="acme",
            conversation_id="g",
        )
        sent = plugin.on_request(again).messages
        kinds = [
            "memory"
            if is_memory_message(m, MARKER)
            else "graph"
            if is_graph_message(m, "memrules graph memory:")
            else m.role
            for m in sent
        ]
        assert kinds == ["system", "memory", "graph", "user", "assistant", "user"]
        assert sent[0] is SYSTEM
    finally:
        make.close()


def test_metadata_that_cannot_scope_memory_costs_memory_not_the_request() -> None:
    body = {
        "messages": [{"role": "user", "content": "hi"}],
        "metadata": {"user_id": "x" * 300, "tenant_id": 7},
    }
    request = Request.from_openai(body)
    assert (request.user, request.tenant) == (None, None)
    assert Request.from_openai(body, user="ana", tenant="acme").user == "ana"
    assert Request(messages=(), user="").user is None
    with pytest.raises(memrules.MessageFormatError, match="user="):
        Request(messages=(), user="x" * 300)  # the caller's own value is checked


@pytest.mark.parametrize("backend", CLIENT_BACKENDS)
@pytest.mark.parametrize("held", ["nothing", "a memory"])
def test_an_embedder_that_fails_is_an_error_whatever_the_store_holds(
    backend: str, held: str, tmp_path: Path, local_embedder: Embedder
) -> None:
    """A loopback embeddings server that answers 500: retrieval reports
    ``error`` on an empty store as on one that holds memories (an empty
    store answering ``miss`` hid a broken embedder until the first write)."""
    make = Plugins(backend, tmp_path, local_embedder)
    events = Events()
    try:
        with ChatServer() as server:
            remote = openai_embedder(
                base_url=server.url, model="loopback-embed", dimensions=16, retries=0
            )
            settings = store_settings(backend, tmp_path)
            plugin = make(store=make.store(settings, remote), memory_observers=[events])
            if held == "a memory":
                remember(plugin, "My sister Priya moved to Porto.", "Noted.")
            asked = len(server.embedding_requests)
            server.fail.extend([500] * 20)
            result = plugin.handle(ask("Where does my sister live now?"))
            assert len(server.embedding_requests) > asked  # it was asked, and failed
    finally:
        make.close()
    assert result.memory is not None
    assert result.memory.retrieval.status == "error", result.memory.retrieval
    assert "EmbedderError" in (result.memory.retrieval.error or "")
    assert [e.status for e in events.retrievals] == ["error"]
    assert not result.memory.injected
