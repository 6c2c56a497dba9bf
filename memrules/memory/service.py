"""The shell of retrieval memory: where it touches the store, the clock and
the metrics. `MemoryPlugin` holds one
`RetrievalService` per route with memory enabled.

- `RetrievalService.start` loads the embedding model in a background
  thread (so that the first request does not wait for all of it: the
  model loads while the store opens), opens the collection at start-up
  and checks it against the embedder, then builds the store's search
  index in another (an embedded engine's local index, read from the
  engine while the model loads, not in the first request; a Milvus Lite
  file with a saved index is checked and searched from that file until
  its engine has opened, see `memrules.seams.milvus`). A collection
  made for another embedder, or holding vectors of another dimension, is a
  `ConfigError` there and then (never near-zero
  scores later); a store that cannot be reached is logged, and retrieval
  reports ``error`` until it is back.
- `RetrievalService.retrieve` asks the store (see
  `plan`) and never raises: a store or
  embedder that fails is a `Retrieval`
  with ``status="error"`` (and the ``error`` metric), and the request goes
  on without memory.
- `RetrievalService.store_turn` writes one turn (see
  `memrules.memory.autostore`); it never raises either.
- `RetrievalService.forget` and `RetrievalService.memories` delete
  and list one user's memories in every generation of the collection (one
  per embedding model it was used with; see
  `memrules.memory.binding`): the right to be forgotten covers them
  all. They raise `StoreError` on failure: a
  forget that did not happen must not look as if it had.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from memrules._core.errors import CollectionError, ConfigError, SeamError, StoreError
from memrules._core.messages import Conversation, Message
from memrules._core.seam_protocols import VectorStore
from memrules._core.seam_records import Scope, scope_id_problem
from memrules.memory.autostore import StoreOutcome, StoreStatus, plan_store
from memrules.memory.binding import generations
from memrules.memory.config import RetrievalStoreConfig, RouteRetrieval
from memrules.memory.metrics import RetrievalEvent, RetrievalObserver, StoreEvent, notify
from memrules.memory.retrieve import (
    Retrieval,
    RetrievalStatus,
    plan,
    scope_problem,
    select,
    stored_at,
)
from memrules.memory.screen import screen_text
from memrules.memory.shared import SHARED_STORES

__all__ = ["ListedRecord", "RetrievalService", "load_ahead"]

log = logging.getLogger("memrules.memory")


@attrs.frozen(kw_only=True, slots=True)
class ListedRecord:
    """One memory as `RetrievalService.memories` lists it: its ``id``,
    ``text``, when it was stored, the conversation it came from, the
    physical ``collection`` that holds it and whether that is the one the
    current embedder uses (``current``)."""

    id: str
    text: str
    stored_at: float | None
    conversation_id: str | None
    collection: str
    current: bool

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _scope_problem(user: object, tenant: object) -> tuple[str, str] | None:
    """Why ``user`` and ``tenant`` cannot scope memory, and the field at
    fault, if they cannot: as `scope_problem`
    says, or an id no store can keep (a lone surrogate), which could be
    written nowhere and so never forgotten."""
    for name, value in (("user", user), ("tenant", tenant)):
        wrong = scope_id_problem(name, value)
        if wrong is not None:
            return scope_problem(user, tenant) or f"no memory for this scope: {wrong}", name
    return None


def _load_model(load: Callable[[], object]) -> None:
    """Load a model (or build an index) ahead of its first use; one that
    cannot load says why at that first use (in the retrieval's status)."""
    try:
        load()
    except Exception as exc:
        log.debug("%r did not run ahead of its first use: %s", load, exc)


def load_ahead(store: object) -> threading.Thread | None:
    """Begin loading ``store``'s embedding model in a background thread,
    when its embedder has a ``load`` (the local model; a remote embedder
    loads nothing), so that the model loads while the caller goes on
    opening the rest; the thread, for its owner to join, or None. A load
    that fails is not kept: the model's first use loads it again and
    raises that error there (a retrieval with ``status="error"``)."""
    load = getattr(getattr(store, "embedder", None), "load", None)
    if not callable(load):
        return None
    thread = threading.Thread(
        target=_load_model, args=(load,), name="memrules-model-load", daemon=True
    )
    thread.start()
    return thread


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


class RetrievalService:
    """Retrieval memory for one route: the shared store's ``settings``, the
    route's entry (``route``), the store (``store``; by default the one
    `SHARED_STORES` holds for ``settings``,
    acquired here and released by `close`), the ``observers`` that get its events, and the
    ``clock`` auto-store stamps memories with. ``source`` names the config
    file in start-up errors."""

    def __init__(
        self,
        settings: RetrievalStoreConfig,
        route: RouteRetrieval,
        *,
        store: VectorStore | None = None,
        observers: Iterable[RetrievalObserver] = (),
        clock: Callable[[], float] = time.time,
        source: str | None = None,
        loading: threading.Thread | None = None,
    ) -> None:
        self.settings = settings
        self.route = route
        self._acquired = store is None
        self.store: VectorStore = SHARED_STORES.acquire(settings) if store is None else store
        self.observers = tuple(observers)
        self.clock = clock
        self.source = source
        self.loading: threading.Thread | None = loading
        """The thread that loads the embedding model: ``loading``, begun by
        the caller (see `load_ahead`), else the one `start`
        begins."""
        self.indexing: threading.Thread | None = None
        """The thread that builds the store's search index, from `start`."""

    @property
    def backend(self) -> str:
        """The store's engine (``milvus``, ``qdrant``), or ``unknown``."""
        return str(getattr(self.store, "engine", "unknown"))

    @property
    def threshold(self) -> float:
        """The lowest score this route keeps."""
        return self.route.threshold_in(self.settings)

    def close(self) -> None:
        """Give back the shared store this service acquired (the last
        holder closes it); a store passed in is its giver's to close."""
        if self._acquired:
            self._acquired = False
            SHARED_STORES.release(self.settings)

    def __repr__(self) -> str:
        return f"RetrievalService(store={self.store!r}, route={self.route!r})"

    # --- start-up ---------------------------------------------------------------------

    def start(self) -> None:
        """Open and check the collection (see the module docs). Raises
        `ConfigError` when it cannot be used with
        the embedder; logs, and goes on, when the store is down."""
        if self.loading is None:
            self.loading = load_ahead(self.store)
        check = getattr(self.store, "check", None)
        if not callable(check):
            return
        try:
            exists = check(probe=True)
        except CollectionError as exc:
            raise ConfigError.single(
                str(exc), path=self.source, yaml_path="stores.memory.collection"
            ) from exc
        except SeamError as exc:
            log.warning(
                "memory store %r cannot be checked at start-up (%s); retrieval reports "
                "'error' and requests go on without memory until it is back",
                self.store,
                _error(exc),
            )
            return
        warm = getattr(self.store, "warm", None)
        if exists and callable(warm) and self.indexing is None:
            self.indexing = threading.Thread(
                target=_load_model, args=(warm,), name="memrules-index-build", daemon=True
            )
            self.indexing.start()

    # --- retrieval ----------------------------------------------------------------------

    def retrieve(
        self, messages: Conversation, *, user: str | None, tenant: str | None
    ) -> Retrieval:
        """What memory answers for a request of ``messages`` from ``user``
        and ``tenant``. Never raises (see the module docs)."""
        backend, threshold = self.backend, self.threshold
        unusable = _scope_problem(user, tenant)
        planned = (
            plan(messages, user=user, tenant=tenant)
            if unusable is None
            else Retrieval(status="skipped", reason=unusable[0], skipped="no_scope")
        )
        if isinstance(planned, Retrieval):
            notify(
                self.observers,
                RetrievalEvent(backend=backend, status="skipped", skipped=planned.skipped),
            )
            return attrs.evolve(planned, backend=backend, threshold=threshold)
        assert user is not None  # plan checked them
        assert tenant is not None
        started = time.perf_counter()
        try:
            hits = self.store.search(
                planned, k=self.route.retrieval_limit, scope=Scope(user=user, tenant=tenant)
            )
        except Exception as exc:
            seconds = time.perf_counter() - started
            notify(
                self.observers,
                RetrievalEvent(backend=self.backend, status="error", seconds=seconds),
            )
            log.warning("memory retrieval failed; the request goes on without memory: %s", exc)
            return Retrieval(
                status="error",
                error=_error(exc),
                question=planned,
                user=user,
                tenant=tenant,
                backend=backend,
                threshold=threshold,
            )
        seconds = time.perf_counter() - started
        strangers = [h.id for h in hits if h.user != user or h.tenant != tenant]
        if strangers:
            log.error(
                "memory store %r answered %d records of another user or tenant; they were "
                "dropped (ids %s)",
                self.store,
                len(strangers),
                ", ".join(strangers),
            )
        memories = select(
            hits,
            user=user,
            tenant=tenant,
            threshold=self.threshold,
            limit=self.route.retrieval_limit,
        )
        status: RetrievalStatus = "hit" if memories else "miss"
        notify(
            self.observers,
            RetrievalEvent(
                backend=self.backend, status=status, seconds=seconds, results=len(memories)
            ),
        )
        return Retrieval(
            status=status,
            question=planned,
            user=user,
            tenant=tenant,
            memories=memories,
            backend=backend,
            threshold=threshold,
        )

    # --- auto-store ---------------------------------------------------------------------

    def store_turn(
        self,
        messages: Conversation,
        reply: Message | str,
        *,
        user: str | None,
        tenant: str | None,
        conversation_id: str | None,
        now: float | None = None,
    ) -> StoreOutcome:
        """Keep the turn ``messages`` asked and ``reply`` answered, for
        ``user`` and ``tenant`` (see `memrules.memory.autostore`),
        stamped ``now`` (the clock's time by default). Never raises."""
        if not self.route.auto_store:
            return StoreOutcome(
                status="disabled", reason="this route does not auto-store (memory.auto_store)"
            )
        unusable = _scope_problem(user, tenant)
        if unusable is not None:
            self._stored("skipped")
            return StoreOutcome(status="skipped", reason=unusable[0])
        assert user is not None  # scope_problem checked them
        assert tenant is not None
        planned = plan_store(
            messages,
            reply,
            user=user,
            tenant=tenant,
            conversation_id=conversation_id,
            max_chars=self.settings.max_memory_chars,
            now=self.clock() if now is None else now,
        )
        if isinstance(planned, StoreOutcome):
            self._stored("skipped")
            return planned
        reflection = self.settings.reflection
        refused = screen_text(planned.text, reflection) if reflection.enabled else None
        if refused is not None:
            self._stored("blocked")
            log.warning(
                "memory auto-store refused memory %s of user %r: it reads as an order to the "
                "model (%s)",
                planned.id,
                user,
                refused,
            )
            return StoreOutcome(
                status="blocked",
                reason=f"memory poisoning: {refused}",
                id=planned.id,
                text=planned.text,
            )
        started = time.perf_counter()
        try:
            write = self.store.add([planned])
        except Exception as exc:
            self._stored("error", time.perf_counter() - started)
            log.warning("memory auto-store failed; the turn is not kept: %s", exc)
            return StoreOutcome(status="error", error=_error(exc), id=planned.id, text=planned.text)
        status: StoreStatus = "stored" if planned.id in write.added else "duplicate"
        self._stored(status, time.perf_counter() - started)
        return StoreOutcome(status=status, id=planned.id, text=planned.text)

    def _stored(self, status: Any, seconds: float = 0.0) -> None:
        notify(
            self.observers,
            StoreEvent(backend=self.backend, operation="store", status=status, seconds=seconds),
        )

    # --- the right to be forgotten -----------------------------------------------------

    def _scope(self, user: object, tenant: object) -> Scope:
        unusable = _scope_problem(user, tenant)
        if unusable is not None:
            wrong = scope_id_problem(unusable[1], user if unusable[1] == "user" else tenant)
            msg = (
                f"user={user!r:.60} and tenant={tenant!r:.60} must both be non-empty strings of "
                "at most 256 characters, without lone surrogates: memories belong to a user of "
                f"a tenant ({wrong})"
            )
            raise ConfigError.single(msg, yaml_path=unusable[1])
        return Scope(user=str(user), tenant=str(tenant))

    def _collections(self, doing: str) -> tuple[Any, tuple[str, ...]]:
        """The store, and the collections of every generation of memory."""
        store: Any = self.store
        if not all(
            callable(getattr(store, m, None)) for m in ("collections", "scan", "delete_scope")
        ):
            msg = (
                f"memory store {store!r} cannot {doing}: it lists no collections and deletes "
                "nothing by user (use milvus_store or qdrant_store)"
            )
            raise StoreError(msg)
        names = set(generations(self.settings.collection, store.collections()))
        names.add(str(store.collection))
        return store, tuple(sorted(names))

    def forget(self, *, user: str, tenant: str) -> int:
        """Delete every memory of ``user`` and ``tenant``, in every
        generation of the collection; how many there were. Raises
        `StoreError` on failure (some may be gone
        already; calling again finishes the job)."""
        scope = self._scope(user, tenant)
        started = time.perf_counter()
        try:
            store, names = self._collections("forget")
            deleted = sum(store.delete_scope(scope, collection=name) for name in names)
        except Exception:
            self._event("forget", "error", started)
            raise
        self._event("forget", "done", started)
        return int(deleted)

    def memories(self, *, user: str, tenant: str) -> tuple[ListedRecord, ...]:
        """Every memory of ``user`` and ``tenant``, in every generation of
        the collection, oldest first. Raises
        `StoreError` on failure."""
        scope = self._scope(user, tenant)
        started = time.perf_counter()
        try:
            store, names = self._collections("list memories")
            found = [
                ListedRecord(
                    id=hit.id,
                    text=hit.message.text,
                    stored_at=stored_at(hit.message),
                    conversation_id=hit.conversation_id,
                    collection=name,
                    current=name == store.collection,
                )
                for name in names
                for hit in store.scan(scope, collection=name)
            ]
        except Exception:
            self._event("list", "error", started)
            raise
        self._event("list", "done", started)
        return tuple(sorted(found, key=lambda m: (m.stored_at or 0.0, m.collection, m.id)))

    def _event(self, operation: Any, status: Any, started: float) -> None:
        notify(
            self.observers,
            StoreEvent(
                backend=self.backend,
                operation=operation,
                status=status,
                seconds=time.perf_counter() - started,
            ),
        )
