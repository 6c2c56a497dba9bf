"""Shared helpers for the retrieval-memory tests: plugins over the real
stores (a Milvus Lite file, Qdrant's local mode), with the session's real
local embedder."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from memrules import MemoryConfig, MemoryPlugin, Request
from memrules._core.messages import Message, message
from memrules.memory import RetrievalStoreConfig, RouteRetrieval
from memrules.memory.binding import open_store
from memrules.seams import Embedder, MessageStore
from tests.support.valkey_search import key_prefix, shared_server

DAY = 86_400.0
T0 = 1_750_000_000.0
SYSTEM = message("system", "You are a helpful assistant.")


def store_settings(
    backend: str, where: Path, name: str = "memories", **options: Any
) -> RetrievalStoreConfig:
    """``stores.memory`` for ``backend`` in ``where``: a Milvus Lite file, or
    Qdrant's local mode in memory (``qdrant``) or on disk (``qdrant-disk``),
    or the test process's Valkey server under ``where``'s key prefix."""
    if backend == "milvus":
        store: dict[str, Any] = {"backend": "milvus", "uri": str(where / f"{name}.db")}
    elif backend == "qdrant":
        store = {"backend": "qdrant", "path": ":memory:"}
    elif backend == "valkey":
        url, prefix = shared_server().url, key_prefix(where)
        store = {"backend": "valkey", "url": url, "key_prefix": prefix}
    else:
        store = {"backend": "qdrant", "path": str(where / name)}
    return RetrievalStoreConfig(store={**store, "collection": name}, **options)


class Plugins:
    """Makes plugins with memory over real stores, and closes the stores."""

    def __init__(self, backend: str, where: Path, embedder: Embedder) -> None:
        self.backend = backend
        self.where = where
        self.embedder = embedder
        self.opened: list[MessageStore] = []

    def store(
        self, settings: RetrievalStoreConfig, embedder: Embedder | None = None
    ) -> MessageStore:
        store = open_store(settings, embedder=embedder or self.embedder)
        self.opened.append(store)
        return store

    def __call__(
        self,
        *,
        memory: RouteRetrieval | None = None,
        settings: RetrievalStoreConfig | None = None,
        store: MessageStore | None = None,
        **options: Any,
    ) -> MemoryPlugin:
        settings = settings or store_settings(self.backend, self.where)
        config = MemoryConfig(
            memory=memory or RouteRetrieval(auto_store=True),
            memory_store=settings,
            max_messages=50,
        )
        return MemoryPlugin(config, memory_store=store or self.store(settings), **options)

    def close(self) -> None:
        for store in self.opened:
            store.close()


def plugins(backend: str, where: Path, embedder: Embedder) -> Iterator[Plugins]:
    made = Plugins(backend, where, embedder)
    yield made
    made.close()


def ask(
    text: str,
    *,
    user: str | None = "ana",
    tenant: str | None = "acme",
    conversation_id: str | None = "c1",
    history: Sequence[Message] = (SYSTEM,),
) -> Request:
    return Request(
        messages=(*history, message("user", text)),
        user=user,
        tenant=tenant,
        conversation_id=conversation_id,
    )


def remember(plugin: MemoryPlugin, text: str, reply: str, *, now: float = T0, **scope: Any) -> str:
    """Store one turn; its memory id."""
    outcome = plugin.on_response(ask(text, **scope), reply, now=now)
    assert outcome.status in ("stored", "duplicate"), outcome
    assert outcome.id is not None
    return outcome.id


Maker = Callable[..., MemoryPlugin]
