"""Memory collections bound to the embedding model's identity, against the
real stores that keep what they hold (a Milvus Lite file, a Qdrant
directory): a changed model or dimension starts a new collection, the old
one stays readable by the old config, a remote endpoint keeps the configured
collection (and says so once), and a collection of another dimension is an
error at start-up."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import memrules
from memrules import ConfigError
from memrules.memory import RetrievalStoreConfig, RouteRetrieval, bound_collection
from memrules.memory.binding import generations, identity_digest
from memrules.seams import Embedder
from tests.support.chat_server import ChatServer, embeddings_reply
from tests.support.memory_helpers import DAY, T0, Plugins, ask, remember, store_settings
from tests.support.seams import KEPT_BACKENDS


class OtherModel:
    """A real model's vectors under another model's identity: what a
    changed model looks like to the store (``shorter`` also cuts the vectors
    to 128 floats, a model of another dimension)."""

    def __init__(self, embedder: Embedder, *, shorter: bool) -> None:
        self.embedder = embedder
        self.shorter = shorter

    @property
    def dimension(self) -> int:
        return 128 if self.shorter else self.embedder.dimension

    @property
    def identity(self) -> dict[str, Any]:
        model = "minilm-first-128" if self.shorter else "another-minilm"
        return {**self.embedder.identity, "model": model, "dimension": self.dimension}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self.embedder.embed(texts)
        if not self.shorter:
            return vectors
        out = []
        for vector in vectors:
            head = vector[:128]
            norm = sum(x * x for x in head) ** 0.5
            out.append([x / norm for x in head])
        return out


def test_a_local_model_names_its_collection_by_its_identity(local_embedder: Embedder) -> None:
    name = bound_collection("memories", local_embedder)
    assert name == f"memories__{identity_digest(local_embedder.identity)}"
    assert name != bound_collection("memories", OtherModel(local_embedder, shorter=False))
    assert name != bound_collection("memories", OtherModel(local_embedder, shorter=True))
    assert generations("memories", [name, "memories", "memories_x", "memories__zz", "other"]) == (
        "memories",
        name,
    )


@pytest.mark.parametrize("shorter", [False, True], ids=["model", "dimension"])
@pytest.mark.parametrize("backend", KEPT_BACKENDS)
def test_a_changed_model_starts_a_new_collection_and_the_old_one_stays_readable(
    backend: str, shorter: bool, tmp_path: Path, local_embedder: Embedder
) -> None:
    settings = store_settings(backend, tmp_path)
    make = Plugins(backend, tmp_path, local_embedder)
    question = ask("Where does my sister live now?", conversation_id="later")

    old_store = make.store(settings)
    old = make(settings=settings, store=old_store)
    remember(old, "My sister Priya moved to Porto last spring.", "Noted.")
    old_collection = old_store.collection
    old_store.close()  # a Qdrant directory opens once per process

    new_model = OtherModel(local_embedder, shorter=shorter)
    new_store = make.store(settings, embedder=new_model)
    new = make(settings=settings, store=new_store)
    assert new_store.collection != old_collection
    assert new.handle(question).memory.retrieval.status == "miss"  # type: ignore[union-attr]
    remember(new, "I switched to decaf coffee.", "Noted, decaf.", now=T0 + DAY)
    assert new_store.collections() == tuple(sorted((old_collection, new_store.collection)))
    listed = new.list_memories("ana", "acme")
    assert [(m.collection, m.current) for m in listed] == [
        (old_collection, False),
        (new_store.collection, True),
    ]
    new_store.close()

    again_store = make.store(settings)  # the old config, after the change
    again = make(settings=settings, store=again_store)
    assert again_store.collection == old_collection
    found = again.handle(question).memory
    assert found is not None
    assert "Porto" in (found.gate.text or "")
    assert "decaf" not in (found.gate.text or "")
    # The right to be forgotten covers every generation.
    assert again.forget("ana", "acme") == 2
    assert again.list_memories("ana", "acme") == ()
    make.close()


# --- a remote endpoint ----------------------------------------------------------------------


def remote_config(backend: str, where: Path, server: ChatServer) -> memrules.MemoryConfig:
    settings = store_settings(backend, where, threshold=-1.0)
    return memrules.MemoryConfig(
        memory=RouteRetrieval(auto_store=True),
        memory_store=RetrievalStoreConfig(
            store=settings.store,
            embedding={"type": "openai", "base_url": server.url, "model": "embed-1"},
            threshold=-1.0,
        ),
    )


@pytest.mark.parametrize("backend", KEPT_BACKENDS)
def test_a_remote_endpoint_keeps_the_configured_collection_and_warns_once(
    backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with ChatServer() as server:
        config = remote_config(backend, tmp_path, server)
        with caplog.at_level(logging.WARNING, logger="memrules.memory"):
            first, second = (memrules.MemoryPlugin.from_config(config) for _ in range(2))
        try:
            warnings = [r for r in caplog.records if "remote endpoint" in r.getMessage()]
            assert len(warnings) == 1
            assert "point stores.memory.collection at a new collection" in warnings[0].getMessage()
            assert first.memory is not None
            assert second.memory is not None
            assert first.memory.store is second.memory.store
            assert first.memory.store.collection == "memories"  # type: ignore[attr-defined]
            remember(first, "My sister Priya moved to Porto.", "Noted.")
            assert second.list_memories("ana", "acme")[0].collection == "memories"
            assert server.embedding_requests  # the vectors came from the endpoint
        finally:
            config.close()


@pytest.mark.parametrize("backend", KEPT_BACKENDS)
def test_a_collection_of_another_dimension_is_an_error_at_start_up(
    backend: str, tmp_path: Path
) -> None:
    def longer(body: dict[str, Any]) -> Any:  # the provider changed the model behind the URL
        return embeddings_reply({**body, "dimensions": 24})

    with ChatServer() as server:  # 16 floats
        config = remote_config(backend, tmp_path, server)
        try:
            plugin = memrules.MemoryPlugin.from_config(config)
            remember(plugin, "My sister Priya moved to Porto.", "Noted.")
        finally:
            config.close()
        server.embeddings = longer
        config = remote_config(backend, tmp_path, server)
        with pytest.raises(ConfigError) as caught:
            memrules.MemoryPlugin.from_config(config)
        config.close()
    (problem,) = caught.value.problems
    assert problem.yaml_path == "stores.memory.collection"
    assert "holds vectors of 16 floats" in problem.message
    assert "makes vectors of 24" in problem.message
