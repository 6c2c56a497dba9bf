"""The vector stores against the real backends: a Milvus Lite file, Qdrant's
local mode in memory and on disk, a Valkey server with its Search module.
One suite, parametrized over all four, with the real local embedder."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from memrules import MemoryConfig, Pipeline, load_pipeline
from memrules._core.errors import CollectionError, EmbedderError, StoreError
from memrules._core.messages import (
    Conversation,
    Message,
    Opaque,
    Text,
    ToolCall,
    ToolResult,
    message,
)
from memrules._core.seam_records import StoredMessage, build_records
from memrules.seams import (
    Embedder,
    MessageStore,
    Scope,
    Seams,
    answer_recall,
    local_embedder,
    recall_tool,
)
from memrules.strategies import offload
from tests.strategies.test_units import agent_loop
from tests.support.seams import (
    BACKENDS,
    CLIENT_BACKENDS,
    KEPT_BACKENDS,
    StoreMaker,
    maker,
    slow_but,
)
from tests.support.strategies import COUNTER
from tests.support.valkey_search import HAS_VALKEY_SEARCH, key_prefix, shared_server

SCOPE = Scope(conversation_id="c1", user="u1", tenant="t1")


def _stores(backend: str, where: Path, embedder: Embedder) -> Iterator[StoreMaker]:
    opened: list[MessageStore] = []
    base = maker(backend, where, embedder)

    def tracked(name: str | None = None, **options: object) -> MessageStore:
        store = base(name, **options)
        opened.append(store)
        return store

    yield tracked
    for store in opened:
        store.close()


@pytest.fixture(params=BACKENDS)
def make(
    request: pytest.FixtureRequest, tmp_path: Path, local_embedder: Embedder
) -> Iterator[StoreMaker]:
    """Stores of every backend: Milvus Lite, Qdrant in memory, Qdrant on disk, Valkey."""
    yield from _stores(request.param, tmp_path, local_embedder)


@pytest.fixture(params=KEPT_BACKENDS)
def make_on_disk(
    request: pytest.FixtureRequest, tmp_path: Path, local_embedder: Embedder
) -> Iterator[StoreMaker]:
    """Stores that keep their records in a file or directory, or a server."""
    yield from _stores(request.param, tmp_path, local_embedder)


@pytest.fixture(params=CLIENT_BACKENDS)
def make_client(
    request: pytest.FixtureRequest, tmp_path: Path, local_embedder: Embedder
) -> Iterator[StoreMaker]:
    """One store of each client library (Qdrant's two local modes share code)."""
    yield from _stores(request.param, tmp_path, local_embedder)


def chat(*texts: str) -> Conversation:
    """A conversation of alternating user and assistant messages."""
    return tuple(message("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts))


FACTS = chat(
    "My sister Priya moved to Porto last spring.",
    "Porto is lovely. Noted.",
    "The deploy key lives in vault/prod/deploy.key and rotates every 90 days.",
    "Understood, vault/prod/deploy.key, 90 days.",
    "We decided to use Terraform 1.7 for the rollout.",
    "Terraform 1.7 it is.",
    "Remind me to call the dentist on Friday.",
    "I will remind you on Friday.",
)


def test_add_then_search_in_every_mode(make: StoreMaker) -> None:
    store = make()
    records = build_records(FACTS, scope=SCOPE)
    write = store.add(records)
    assert write.added == tuple(r.id for r in records)
    assert write.existing == ()
    for mode in ("dense", "lexical", "hybrid"):
        hits = store.search("vault/prod/deploy.key", k=3, scope=SCOPE, mode=mode)
        assert hits, mode
        assert "deploy.key" in hits[0].text, (mode, hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    (hit,) = store.search("In which city does my sister live now?", k=1, scope=SCOPE, mode="dense")
    assert hit.message is not FACTS[0]
    assert hit.message == FACTS[0]
    assert (hit.conversation_id, hit.user, hit.tenant) == ("c1", "u1", "t1")
    assert hit.text == "user: My sister Priya moved to Porto last spring."


def test_writes_are_idempotent_and_nothing_is_embedded_twice(
    make: StoreMaker, local_embedder: Embedder
) -> None:
    counted = Counting(local_embedder)
    store = make()
    store.embedder = counted
    records = build_records(FACTS, scope=SCOPE)
    store.add(records[:5])
    assert counted.texts == 5
    again = store.add(records)
    assert again.existing == tuple(r.id for r in records[:5])
    assert again.added == tuple(r.id for r in records[5:])
    assert counted.texts == len(records)
    assert store.add(records).added == ()
    assert counted.texts == len(records)
    hits = store.search("Terraform", k=10, scope=SCOPE, mode="lexical")
    assert len(hits) == 2  # each message once


class Counting:
    """Counts the texts a real embedder is asked to embed."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.texts = 0

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    @property
    def identity(self) -> dict[str, Any]:
        return self.embedder.identity

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += len(texts)
        return self.embedder.embed(texts)


def test_messages_come_back_losslessly(make: StoreMaker) -> None:
    odd = (
        Message(
            role="user",
            id="m-1",
            name="ana",
            parts=(
                Text(text="Look at this: 東京 ☃", extra={"cache_control": {"type": "ephemeral"}}),
            ),
            metadata={"source": {"z": 1, "a": [1, 2.5, None, True]}},
        ),
        Message(
            role="assistant",
            parts=(
                Opaque(kind="anthropic:thinking", payload={"thinking": "hmm", "signature": "x"}),
                ToolCall(id="call_9", name="read_file", arguments='{"path": "a.py"}'),
            ),
        ),
        Message(
            role="user",
            parts=(
                ToolResult(
                    call_id="call_9",
                    content=(Text(text="x = 1"), Opaque(kind="image", payload={"url": "u"})),
                    is_error=True,
                ),
            ),
        ),
    )
    store = make()
    store.add(build_records(odd, scope=SCOPE))
    found = {h.message for h in store.search("a.py x = 1 東京 Look", k=10, scope=SCOPE)}
    assert found == set(odd)
    by_id = {h.message.id: h.message for h in store.search("Look at this", k=3, scope=SCOPE)}
    original = by_id["m-1"]
    assert list(original.metadata["source"]) == ["z", "a"]  # key order kept
    assert original.parts[0].extra == odd[0].parts[0].extra


def test_search_stays_within_the_user_and_tenant(make: StoreMaker) -> None:
    store = make()
    store.add(build_records(FACTS, scope=SCOPE))
    other = Scope(conversation_id="c2", user="u1", tenant="t1")
    store.add(build_records(chat("Priya's cat is called Miso."), scope=other))
    store.add(build_records(chat("Priya owes me 20 euros."), scope=Scope(user="u2", tenant="t1")))
    store.add(build_records(chat("Priya is my landlord."), scope=Scope(user="u1", tenant="t2")))
    store.add(build_records(chat("Priya plays chess."), scope=Scope()))

    def texts(scope: Scope) -> set[str]:
        return {h.text for h in store.search("Priya", k=20, scope=scope, mode="lexical")}

    assert texts(SCOPE) == {"user: My sister Priya moved to Porto last spring."}
    assert texts(Scope(user="u1", tenant="t1")) == {
        "user: My sister Priya moved to Porto last spring.",
        "user: Priya's cat is called Miso.",
    }
    assert texts(Scope(user="u2", tenant="t1")) == {"user: Priya owes me 20 euros."}
    assert texts(Scope(user="u1", tenant="t2")) == {"user: Priya is my landlord."}
    assert texts(Scope()) == {"user: Priya plays chess."}
    assert texts(Scope(user="nobody")) == set()


def test_an_empty_or_missing_collection_answers_nothing(make: StoreMaker) -> None:
    store = make()
    assert store.search("anything", k=3, scope=SCOPE) == ()
    store.add(build_records(FACTS, scope=SCOPE))
    assert store.search("   ", k=3, scope=SCOPE) == ()


def test_a_collection_is_bound_to_its_embedder(make: StoreMaker) -> None:
    first = make()
    first.add(build_records(FACTS, scope=SCOPE))
    other = MessageStore(
        backend=first._backend,  # type: ignore[attr-defined]
        embedder=Renamed(first.embedder),
        description="the same collection, another embedder",
    )
    with pytest.raises(StoreError, match="was made for embedder"):
        other.add(build_records(chat("hello"), scope=SCOPE))
    with pytest.raises(StoreError, match="use another collection"):
        other.search("hello", k=1, scope=SCOPE)


class Renamed(Counting):
    """The same vectors under another identity, as a different model's would be."""

    @property
    def identity(self) -> dict[str, Any]:
        return {**self.embedder.identity, "model": "some-other-model"}


def test_a_file_store_keeps_its_records_when_reopened(make_on_disk: StoreMaker) -> None:
    make = make_on_disk
    first = make("kept")
    first.add(build_records(FACTS, scope=SCOPE))
    first.close()
    again = make("kept")
    hits = again.search("Terraform", k=1, scope=SCOPE)
    assert hits[0].message in FACTS[4:6]
    assert again.add(build_records(FACTS, scope=SCOPE)).added == ()


def test_a_large_message_is_stored_whole(make: StoreMaker) -> None:
    body = "\n".join(f"row {i}: {'data ' * 30}" for i in range(2000))  # ~330 KB
    big = (
        message("user", "dump the table"),
        message("assistant", ToolCall(id="c1", name="dump", arguments="{}")),
        message("tool", ToolResult(call_id="c1", content=body)),
    )
    store = make()
    store.add(build_records(big, scope=SCOPE))
    hits = store.search("dump the table rows", k=3, scope=SCOPE)
    assert big[2] in {h.message for h in hits}


# --- fault injection ---------------------------------------------------------------------


class FailOnWrite:
    """A real backend that fails its ``k``-th write (counting from 1) once,
    having written half of that write's rows, as a connection that drops
    mid-request can leave it."""

    def __init__(self, backend: Any, k: int) -> None:
        self.backend = backend
        self.k = k
        self.writes = 0
        self.engine = backend.engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def write(self, rows: Sequence[tuple[StoredMessage, list[float]]]) -> None:
        self.writes += 1
        if self.writes == self.k:
            self.backend.write(rows[: len(rows) // 2])
            msg = f"connection reset during write {self.k}"
            raise ConnectionError(msg)
        self.backend.write(rows)


def grow(history: Conversation, start: int, rounds: int) -> Conversation:
    """``history`` with ``rounds`` more tool rounds (numbered from ``start``)."""
    extra = []
    for r in range(start, start + rounds):
        call = ToolCall(
            id=f"call_{r}", name="read_file", arguments=json.dumps({"path": f"f{r}.py"})
        )
        extra.append(message("assistant", f"Reading f{r}.py.", call))
        extra.append(message("tool", ToolResult(call_id=f"call_{r}", content=f"x_{r} = {r}")))
    return (*history, *extra)


# A new store for every k: tens of seconds on Milvus Lite and Valkey, so
# Qdrant's in-memory mode runs it by default and the other clients with -m slow.
@pytest.mark.parametrize("make_client", slow_but("qdrant", CLIENT_BACKENDS), indirect=True)
def test_a_store_that_fails_on_any_write_loses_nothing(make_client: StoreMaker) -> None:
    """An agent's history grows over three requests, each sent whole;
    offload stores old rounds in writes of 3 records. For every k, the store
    fails on its k-th write (having written half of it): afterwards every
    message is in the store and gone from the request, or in the request in
    its place; and a failed offload kept nothing of its own. The failures
    come from a wrapper between the store and its backend, so what is under
    test is the store's and offload's bookkeeping, the same for every
    client; ``-m slow`` adds Milvus Lite and Valkey (their own engines
    holding the half-written batch)."""
    make = make_client
    base = agent_loop(0)[:2]
    requests = [grow(base, 0, 6), grow(base, 0, 10), grow(base, 0, 14)]
    k = 1
    while True:
        real = make()
        failing = FailOnWrite(real._backend, k)  # type: ignore[attr-defined]
        store = MessageStore(
            backend=failing, embedder=real.embedder, batch_size=3, description=repr(real)
        )
        pipeline = Pipeline.from_config(
            MemoryConfig(max_messages=8, strategies=[offload(turns=1, keep_exchanges=2)]),
            seams=Seams(store=store),
            counter=COUNTER,
        )
        failures = 0
        for history in requests:
            ids = [r.id for r in build_records(history, scope=Scope(conversation_id="c1"))]
            before = real.holds(ids)
            result = pipeline.apply(history, conversation_id="c1")
            after = real.holds(ids)
            sent = result.messages
            assert [m for m in history if any(s is m for s in sent)] == list(sent)
            for m, record_id in zip(history, ids, strict=True):
                assert any(s is m for s in sent) or record_id in after, (k, m)
            if result.report.errors:
                failures += 1
                assert sent is history
                assert after == before  # the failed offload kept nothing
                (error,) = result.report.errors
                assert "at write" in error
                assert "nothing of this call was kept" in error
                (action,) = result.report.actions
                (call,) = action.seam_calls
                assert call.error is not None
                assert call.response is None
            else:
                assert len(sent) <= 8
        if failing.writes < k:  # no write failed: every k has been tried
            assert failures == 0
            break
        assert failures == 1
        k += 1
    assert k > 4  # the requests needed several writes


# --- the agent: offload, then recall ----------------------------------------------------

DATABASE = (
    "# Postgres settings for the nightly export job\n"
    "host: db.internal\n"
    "port: 5433\n"
    "pool_size: 4\n"
    "# The connection pool is far too small: export workers wait for a free\n"
    "# database connection for most of the night."
)
SCHEDULER = (
    "def schedule(job):\n"
    '    """Start the nightly export at 02:30 UTC; retry up to 5 times."""\n'
    "    cron.add(job, at='02:30', tz='UTC', retries=5)"
)


def agent_history(rounds: int) -> Conversation:
    """The one-instruction agent loop, whose second and third rounds read
    two files that matter later."""
    history = list(agent_loop(rounds))
    for r, (path, body) in (
        (1, ("config/database.yaml", DATABASE)),
        (2, ("src/scheduler.py", SCHEDULER)),
    ):
        call = ToolCall(id=f"call_{r}", name="read_file", arguments=json.dumps({"path": path}))
        history[2 + 2 * r] = message("assistant", f"Reading {path}.", call)
        history[3 + 2 * r] = message("tool", ToolResult(call_id=f"call_{r}", content=body))
    return tuple(history)


def test_an_agent_offloads_old_rounds_and_recalls_an_early_file(make: StoreMaker) -> None:
    history = agent_history(24)
    store = make()
    config = MemoryConfig(max_messages=20)  # the default eight strategies
    pipeline = Pipeline.from_config(config, seams=Seams(store=store), counter=COUNTER)
    result = pipeline.apply(history, conversation_id="agent-1", user="dev")
    assert [a.strategy for a in result.report.actions if a.changed] == ["offload"]
    assert len(result.messages) <= 20
    assert history[4] not in result.messages
    assert history[5] not in result.messages
    (call,) = result.report.actions[0].seam_calls
    assert call.response["added"] == [r["id"] for r in call.request["records"]]

    database = {history[4], history[5]}  # the call and its result
    for question in (
        "How many connections does the database pool allow?",  # a paraphrase
        "config/database.yaml",  # the exact name
    ):
        hits = pipeline.recall(question, k=3, conversation_id="agent-1", user="dev")
        assert database & {h.message for h in hits}, (question, [h.text[:60] for h in hits])
        exchange = next(h.exchange for h in hits if h.message in database)
        assert exchange  # both messages carry their exchange's key
    hits = pipeline.recall("When does the nightly export start?", k=3, user="dev")
    assert history[7] in {h.message for h in hits}
    assert pipeline.recall("config/database.yaml", k=3, user="someone-else") == ()


def test_the_recall_tool_answers_from_the_store(make: StoreMaker) -> None:
    store = make()
    pipeline = Pipeline.from_config(MemoryConfig(), seams=Seams(store=store), counter=COUNTER)
    history = agent_history(6)
    write = pipeline.remember(history, conversation_id="agent-1", user="dev")
    assert len(write.added) == len(history)
    assert pipeline.remember(history, conversation_id="agent-1", user="dev").added == ()

    openai_tool = recall_tool()
    assert openai_tool["function"]["name"] == "recall_memory"
    assert recall_tool("anthropic")["input_schema"] == openai_tool["function"]["parameters"]
    call = ToolCall(
        id="t1", name="recall_memory", arguments='{"query": "config/database.yaml", "k": 2}'
    )
    answer = answer_recall(store, call, conversation_id="agent-1", user="dev")
    assert answer.role == "tool"
    (result,) = answer.parts
    assert isinstance(result, ToolResult)
    assert result.call_id == "t1"
    assert not result.is_error
    assert isinstance(result.content, str)
    payload = json.loads(result.content)
    assert len(payload["results"]) == 2
    assert any(
        "pool_size: 4" in r["text"] or "Reading config/database.yaml" in r["text"]
        for r in payload["results"]
    )
    anthropic = answer_recall(store, call, user="dev", format="anthropic")
    assert anthropic.role == "user"
    bad = answer_recall(store, ToolCall(id="t2", name="recall_memory", arguments="{}"), user="dev")
    (error,) = bad.parts
    assert isinstance(error, ToolResult)
    assert error.is_error
    assert "query" in str(error.content)


def test_a_config_builds_the_store_and_offload_uses_it(backend: str, tmp_path: Path) -> None:
    if backend == "milvus":
        where = f"backend: milvus\n  uri: {tmp_path / 'memory.db'}"
    elif backend == "valkey":
        server = shared_server()
        where = f"backend: valkey\n  url: {server.url}\n  key_prefix: '{key_prefix(tmp_path)}'"
    else:
        where = f"backend: qdrant\n  path: {tmp_path / 'qdrant'}"
    pipeline = load_pipeline(
        f"max_messages: 10\nstore:\n  {where}\n  collection: agent\n  search: hybrid\n"
        "strategies:\n  - type: offload\n    turns: 1\n"
    )
    assert pipeline.seams.store is not None
    assert "collection='agent'" in repr(pipeline.seams.store)
    history = agent_history(10)
    result = pipeline.apply(history, conversation_id="c")
    assert len(result.messages) <= 10
    hits = pipeline.recall("src/scheduler.py", k=2, conversation_id="c")
    assert history[6] in {h.message for h in hits}
    pipeline.seams.store.close()  # type: ignore[attr-defined]


@pytest.fixture(params=["milvus", "qdrant", "valkey"])
def backend(request: pytest.FixtureRequest, local_embedder: Embedder) -> str:
    from tests.support.seams import HAS_MILVUS, HAS_QDRANT

    has = {"milvus": HAS_MILVUS, "qdrant": HAS_QDRANT, "valkey": HAS_VALKEY_SEARCH}
    if not has[request.param]:
        pytest.skip(f"needs the {request.param} extra: pip install -e '.[{request.param}]'")
    return str(request.param)


def test_an_embedder_failure_keeps_the_messages(backend: str, tmp_path: Path) -> None:
    class Broken(Counting):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            msg = "embeddings endpoint unreachable"
            raise EmbedderError(msg)

    store = maker(backend, tmp_path, Broken(local_embedder()))()
    config = MemoryConfig(max_messages=6, strategies=[offload(turns=1)])
    pipeline = Pipeline.from_config(config, seams=Seams(store=store), counter=COUNTER)
    history = agent_history(6)
    result = pipeline.apply(history, conversation_id="c")
    assert result.messages is history
    assert "embeddings endpoint unreachable" in (result.report.last_error or "")
    store.close()


def test_the_request_hook_files_offloaded_messages_under_the_conversation(
    make_client: StoreMaker,
) -> None:
    from memrules import MemoryPlugin, Request

    store = make_client()
    config = MemoryConfig(max_messages=8, strategies=[offload(turns=1, keep_exchanges=2)])
    plugin = MemoryPlugin(config, store=store, counter=COUNTER)
    history = agent_history(8)
    sent = plugin.on_request(Request(messages=history, conversation_id="thread-7"))
    assert len(sent.messages) <= 8
    hits = plugin.pipeline.recall("config/database.yaml", k=2, conversation_id="thread-7")
    assert {h.conversation_id for h in hits} == {"thread-7"}
    assert plugin.pipeline.recall("config/database.yaml", k=2, conversation_id="thread-8") == ()


class Shortened(Counting):
    """The same identity, but vectors of 128 floats and a dimension it does
    not know beforehand: a remote model swapped behind its endpoint."""

    @property
    def dimension(self) -> int:
        return 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for vector in self.embedder.embed(texts):
            head = vector[:128]
            norm = sum(x * x for x in head) ** 0.5
            out.append([x / norm for x in head])
        return out


def test_a_collection_of_another_dimension_is_refused_before_any_comparison(
    make_client: StoreMaker,
) -> None:
    first = make_client()
    first.add(build_records(FACTS, scope=SCOPE))
    assert first.check(probe=True) is True

    def swapped() -> MessageStore:
        return MessageStore(
            backend=first._backend,  # type: ignore[attr-defined]
            embedder=Shortened(first.embedder),
            description="the same collection, vectors of another length",
        )

    with pytest.raises(CollectionError, match=r"holds vectors of 384 floats.*makes vectors of 128"):
        swapped().check(probe=True)
    # Without the probe, the first vector it makes is refused before it is compared.
    unprobed = swapped()
    assert unprobed.check() is True
    with pytest.raises(CollectionError, match="holds vectors of 384 floats"):
        unprobed.search("Terraform", k=1, scope=SCOPE, mode="dense")
    with pytest.raises(CollectionError, match="holds vectors of 384 floats"):
        swapped().add(build_records(chat("something new"), scope=SCOPE))
    assert len(first.scan(SCOPE)) == len(FACTS)  # nothing was written


def test_a_missing_collection_checks_as_absent(make_client: StoreMaker) -> None:
    store = make_client()
    assert store.check(probe=True) is False
    assert store.collections() == ()
    assert store.scan(SCOPE) == ()
    assert store.delete_scope(SCOPE) == 0


def test_scan_and_delete_scope_touch_one_user_and_tenant_only(make_client: StoreMaker) -> None:
    store = make_client()
    mine = build_records(FACTS[:4], scope=Scope(conversation_id="c1", user="u1", tenant="t1"))
    also_mine = build_records(FACTS[4:6], scope=Scope(conversation_id="c2", user="u1", tenant="t1"))
    theirs = build_records(FACTS[6:], scope=Scope(conversation_id="c1", user="u2", tenant="t1"))
    elsewhere = build_records(FACTS[:2], scope=Scope(conversation_id="c1", user="u1", tenant="t2"))
    store.add([*mine, *also_mine, *theirs, *elsewhere])
    assert store.collections() == (store.collection,)
    everything = Scope(user="u1", tenant="t1")
    assert [h.id for h in store.scan(everything)] == sorted(r.id for r in (*mine, *also_mine))
    assert {h.message for h in store.scan(everything)} == set(FACTS[:6])
    assert [h.id for h in store.scan(SCOPE)] == sorted(r.id for r in mine)
    assert store.delete_scope(everything) == 6
    assert store.scan(everything) == ()
    assert [h.id for h in store.scan(Scope(user="u2", tenant="t1"))] == sorted(r.id for r in theirs)
    assert [h.id for h in store.scan(Scope(user="u1", tenant="t2"))] == sorted(
        r.id for r in elsewhere
    )
    assert store.search("Terraform", k=5, scope=everything) == ()


def test_scan_and_delete_reach_another_collection_of_the_engine(make_client: StoreMaker) -> None:
    store = make_client("kept")
    store.add(build_records(FACTS, scope=SCOPE))
    other = MessageStore(
        backend=_beside(store, "other_model"),
        embedder=Renamed(store.embedder),
        description="another collection, another embedder",
    )
    other.add(build_records(chat("Priya likes chess."), scope=SCOPE))
    assert store.collections() == ("kept", "other_model")
    assert [h.text for h in store.scan(SCOPE, collection="other_model")] == [
        "user: Priya likes chess."
    ]
    assert store.delete_scope(SCOPE, collection="other_model") == 1
    assert other.scan(SCOPE) == ()
    assert len(store.scan(SCOPE)) == len(FACTS)


def _beside(store: MessageStore, collection: str) -> Any:
    """A backend for another collection where ``store`` is, on its client
    (a Qdrant directory, or memory, is one client's)."""
    backend: Any = store._backend  # type: ignore[attr-defined]
    backend._open()
    if backend.engine == "milvus":
        other: Any = type(backend)(backend.uri, collection, None)
    elif backend.engine == "valkey":
        other = _valkey_beside(backend, collection)
    else:
        other = type(backend)(
            url=backend.url, path=backend.path, collection=collection, api_key_env=None
        )
    other._client = backend._client
    return other


def _valkey_beside(backend: Any, collection: str) -> Any:
    """A Valkey backend like ``backend`` (its server, key prefix and HNSW
    settings) for another collection."""
    return type(backend)(
        url=backend.url,
        collection=collection,
        key_prefix=backend.key_prefix,
        m=backend.m,
        ef_construction=backend.ef_construction,
        ef_runtime=backend.ef_runtime,
        timeout_seconds=backend.timeout_seconds,
    )
