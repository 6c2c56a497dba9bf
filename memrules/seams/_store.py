"""The part of a vector store that does not depend on the engine.

`MessageStore` implements `VectorStore` over a
`Backend` (Milvus, Qdrant) and an `Embedder`:

- **add**: asks the backend which records it holds already (those are
  neither embedded nor written again: writes are idempotent), embeds the
  rest, and writes them in chunks of ``batch_size``. When a write fails, the
  records this call wrote are deleted again, so the store holds what it held
  before, and `StoreError` says at which write it
  failed (and whether the clean-up failed too). Then it makes them durable
  and checks that they are: the backend flushes them (Milvus Lite), the
  records read back, and a local store's files are still the ones it
  opened (`memrules.seams._durable`); a `StoreError` when not,
  so an offload never drops messages a store did not keep.
  `StoreWrite.durable` is False for a store in memory only.
- **search**: dense (the query's embedding against the stored ones), lexical
  (BM25, computed by the engine) or hybrid (both rankings, fused by
  reciprocal rank; see `memrules.seams._fusion`), always within the
  caller's user and tenant. A backend that ranks ids by itself
  (`Ranking`: the embedded engines' local index, or Valkey, whose
  replies are held undecoded) has both rankings fused first, and only the
  records fusion keeps read back or decoded.
- **scopes** whose ids no store can keep (a lone surrogate) are refused by
  every method, naming the field
  (`check_storable`).

A collection is bound to its embedder's identity: the store records it when
it makes the collection, and refuses to write or search with another; and to
its vector dimension: an existing collection whose vectors are of another
length than the embedder's is refused as well (`CollectionError`,
before any vector is compared). `MessageStore.check` does both checks
at once, so an application can fail at start-up rather than at its first
request.

For the right to be forgotten, a store also lists the records of one user
and tenant (`MessageStore.scan`) and deletes them
(`MessageStore.delete_scope`), in its own collection or in another one
of the same engine (`MessageStore.collections` names them), whatever
embedder made it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from memrules._core.checks import check_whole
from memrules._core.errors import CollectionError, ConfigError, EmbedderError, StoreError
from memrules._core.redaction import redact_text
from memrules._core.seam_protocols import Embedder
from memrules._core.seam_records import RecallHit, Scope, StoredMessage, StoreWrite, check_storable
from memrules.seams._backend import (
    DEFAULT_COLLECTION,
    MAX_K,
    Backend,
    Confirming,
    Ranking,
    check_collection,
    check_mode,
)
from memrules.seams._fusion import reciprocal_rank_fusion
from memrules.seams._log import seam_call, texts_request, vectors_answer

__all__ = [
    "DEFAULT_COLLECTION",
    "Backend",
    "Confirming",
    "MessageStore",
    "check_collection",
    "check_mode",
]


def _comparable(identity: dict[str, Any]) -> str:
    return json.dumps(identity, sort_keys=True, default=str)


class MessageStore:
    """A `VectorStore` over a backend and an embedder
    (see the module docs). Built by `milvus_store` and
    `qdrant_store`. Thread-safe: calls take turns.
    ``close()`` (or ``with``) releases the client."""

    def __init__(
        self,
        *,
        backend: Backend,
        embedder: Embedder,
        search: str = "hybrid",
        batch_size: int = 256,
        candidates: int = 50,
        description: str,
    ) -> None:
        self._backend = backend
        self.embedder = embedder
        self.search_mode = check_mode(search)
        self.batch_size = check_whole("batch_size", batch_size, 1)
        self.candidates = check_whole("candidates", candidates, 1)
        self._description = description
        self._lock = threading.RLock()
        self._queue_lock = threading.Lock()
        self._queue: list[_Pending] = []  # calls of add waiting to be written
        self._closed = False  # closed once: warm() opens nothing again
        self._checked = False
        self._dimension: int | None = None

    @property
    def engine(self) -> str:
        return self._backend.engine

    @property
    def collection(self) -> str:
        """The name of the collection this store writes and searches."""
        return self._backend.collection

    def __repr__(self) -> str:
        return self._description

    def __enter__(self) -> MessageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._backend.close()

    # --- the collection and its identity ---------------------------------------------

    def _fail(self, doing: str, exc: BaseException) -> StoreError:
        detail = redact_text(" ".join(str(exc).split())) or type(exc).__name__
        msg = f"{self._description} failed {doing}: {detail}"
        return StoreError(msg)

    def _exists(self) -> bool:
        """Whether the collection exists; checks its identity and dimension
        the first time (and asks no more once it has: a collection is not
        unmade under a store that uses it)."""
        if self._checked:
            return True
        try:
            stored = self._backend.identity()
            dimension = None if stored is None else self._backend.dimension()
        except CollectionError:
            raise
        except Exception as exc:
            raise self._fail("to open its collection", exc) from exc
        if stored is None:
            return False
        mine = self.embedder.identity
        if _comparable(stored) != _comparable(mine):
            msg = (
                f"{self._description}: the collection was made for embedder "
                f"{_comparable(stored)}, not {_comparable(mine)}; vectors of two models "
                "cannot be compared: use another collection, or the embedder it was made for"
            )
            raise CollectionError(msg)
        self._dimension = dimension
        self._check_dimension(self.embedder.dimension)
        self._checked = True
        return True

    def _check_dimension(self, length: int) -> None:
        """Refuse vectors of ``length`` floats (0: not known yet) for a
        collection whose vectors have another length."""
        held = self._dimension
        if held is not None and length and length != held:
            msg = (
                f"{self._description}: the collection holds vectors of {held} floats, and "
                f"embedder {self.embedder!r} makes vectors of {length}; they cannot be "
                "compared: use another collection, or the embedder it was made for"
            )
            raise CollectionError(msg)

    def check(self, *, probe: bool = False) -> bool:
        """Open the collection now and check it against the embedder: whether
        it exists (False: it is made on the first write). Raises
        `CollectionError` when it was made for
        another embedder or holds vectors of another dimension, and
        `StoreError` when the store cannot be
        reached. With ``probe``, an embedder that does not know its
        dimension yet (a remote model without ``dimensions``) embeds one
        short text to learn it (an
        `EmbedderError` when it fails)."""
        with self._lock:
            exists = self._exists()
            if exists and probe and not self.embedder.dimension:
                (vector,) = self._embed(["dimension probe"])
                self._check_dimension(len(vector))
            return exists

    def warm(self) -> None:
        """Build now what the first search would build (an embedded
        engine's local index of the collection, read from the engine), so
        that the first search does not wait for it; nothing when the
        collection does not exist yet, the backend builds nothing, or the
        store was closed (a build started before ``close`` opens nothing
        again). Raises `StoreError` on failure."""
        with self._lock:
            warm = getattr(self._backend, "warm", None)
            if self._closed or not callable(warm) or not self._exists():
                return
            try:
                warm()
            except Exception as exc:
                raise self._fail("to build its search index", exc) from exc

    # --- add ------------------------------------------------------------------------------

    def add(self, records: Sequence[StoredMessage]) -> StoreWrite:
        """Store ``records`` (see the module docs); all or none of the new ones.

        Calls made at the same time from several threads are written
        together (see `_commit`): while one call embeds and writes,
        the calls that arrive wait, and the next of them embeds and writes
        all of theirs in one batch. Each call still answers only once its
        own records are written and confirmed, and each stays all or
        nothing on its own."""
        unique: dict[str, StoredMessage] = {}
        for r in records:
            unique.setdefault(r.id, r)
        if not unique:
            return StoreWrite()
        for scope in {r.scope for r in unique.values()}:
            check_storable(scope)
        mine = _Pending(unique)
        with self._queue_lock:
            self._queue.append(mine)
        with self._lock:
            if mine.write is None and mine.error is None:
                with self._queue_lock:
                    group, self._queue = self._queue, []
                self._commit(group)
        if mine.error is not None:
            raise mine.error
        assert mine.write is not None
        return mine.write

    def _commit(self, group: list[_Pending]) -> None:
        """Write the records of every call in ``group`` (waiting calls, in
        the order they came), under the store's lock: one lookup, one
        embedding batch and one write for all of them, so a model embeds
        many calls' texts at once. When that fails, each call is written
        again on its own, so a call fails only for its own records (one
        that cannot be embedded or stored), never for another's. A record
        that two calls bring is added by the first and ``existing`` for
        the others. Interrupted (``KeyboardInterrupt``), the calls not done
        go back to the front of the queue for the next caller to write."""
        try:
            if len(group) > 1:
                merged: dict[str, StoredMessage] = {}
                for pending in group:
                    for record_id, record in pending.records.items():
                        merged.setdefault(record_id, record)
                try:
                    together = self._add_unique(merged)
                except Exception:
                    together = None  # each call is written alone below
                if together is not None:
                    _share(group, together)
                    return
            for pending in group:
                try:
                    pending.write = self._add_unique(pending.records)
                except Exception as exc:
                    pending.error = exc
        except BaseException:
            with self._queue_lock:
                self._queue[:0] = [p for p in group if p.write is None and p.error is None]
            raise

    def _add_unique(self, unique: dict[str, StoredMessage]) -> StoreWrite:
        """Store the records of ``unique`` (by id); the store's lock is held."""
        exists = self._exists()
        try:
            held = self._backend.existing(list(unique)) if exists else set()
        except Exception as exc:
            raise self._fail("to look up records", exc) from exc
        new = [r for r in unique.values() if r.id not in held]
        existing = tuple(i for i in unique if i in held)
        if not new:
            return StoreWrite(existing=existing, durable=self._persist([]))
        vectors = self._embed([r.text for r in new])
        self._check_dimension(len(vectors[0]))
        if not exists:
            try:
                self._backend.create(len(vectors[0]), self.embedder.identity)
            except Exception as exc:
                raise self._fail("to create its collection", exc) from exc
            self._dimension = len(vectors[0])
            self._checked = True
        self._write(list(zip(new, vectors, strict=True)))
        durable = self._persist([r.id for r in new])
        return StoreWrite(added=tuple(r.id for r in new), existing=existing, durable=durable)

    def _persist(self, written: list[str]) -> bool:
        """Make the records of ``written`` durable and check them (see the
        module docs); whether the store keeps them beyond this process."""
        doing = (
            f"to confirm that the {len(written)} records it wrote are kept"
            if written
            else "to confirm that the records it holds are kept"
        )
        try:
            if written and isinstance(self._backend, Confirming):
                durable, held = self._backend.confirm(written)
            else:
                durable = self._backend.persist(bool(written))
                held = self._backend.existing(written) if written else set()
            missing = set(written) - held
        except Exception as exc:
            error = self._fail(doing, exc)
            if not written:
                raise error from exc
            # A backend may send its last write with the confirmation
            # (Confirming): what it wrote is removed as after a failed write.
            raise StoreError(f"{error}; {self._undo(written)}") from exc
        if missing:
            msg = (
                f"{self._description} failed {doing}: {len(missing)} of them do not read "
                "back; they may not be stored"
            )
            raise StoreError(msg)
        return durable

    def _embed(self, texts: list[str]) -> list[list[float]]:
        try:
            vectors = seam_call(
                "embedder",
                "embed",
                lambda: texts_request(texts),
                lambda: self.embedder.embed(texts),
                answer=vectors_answer,
            )
        except EmbedderError:
            raise
        except Exception as exc:
            msg = f"embedder {self.embedder!r} failed: {type(exc).__name__}: {exc}"
            raise EmbedderError(msg) from exc
        if len(vectors) != len(texts) or len({len(v) for v in vectors}) > 1:
            msg = (
                f"embedder {self.embedder!r} answered {len(vectors)} vectors for {len(texts)} texts"
            )
            raise EmbedderError(msg)
        return vectors

    def _write(self, rows: list[tuple[StoredMessage, list[float]]]) -> None:
        chunks = [rows[i : i + self.batch_size] for i in range(0, len(rows), self.batch_size)]
        written: list[str] = []
        for number, chunk in enumerate(chunks, start=1):
            try:
                self._backend.write(chunk)
            except Exception as exc:
                # The chunk itself may be partly written: remove it too.
                undo = [*written, *(r.id for r, _ in chunk)]
                cleanup = self._undo(undo)
                doing = f"at write {number} of {len(chunks)} ({len(rows)} records)"
                error = self._fail(doing, exc)
                raise StoreError(f"{error}; {cleanup}") from exc
            written.extend(r.id for r, _ in chunk)

    def _undo(self, ids: list[str]) -> str:
        try:
            self._backend.delete(ids)
        except Exception as exc:
            detail = redact_text(" ".join(str(exc).split())) or type(exc).__name__
            return (
                f"removing the {len(ids)} records this call may have written failed too "
                f"({detail}): they stay, and the next offload of the same messages finds them"
            )
        return "nothing of this call was kept"

    def holds(self, ids: Sequence[str]) -> frozenset[str]:
        """Which of the record ids ``ids`` the store holds."""
        with self._lock:
            if not self._exists():
                return frozenset()
            try:
                return frozenset(self._backend.existing(list(ids)))
            except Exception as exc:
                raise self._fail("to look up records", exc) from exc

    # --- search ----------------------------------------------------------------------------

    def search(
        self, query: str, *, k: int = 5, scope: Scope, mode: str | None = None
    ) -> tuple[RecallHit, ...]:
        """The ``k`` best records for ``query`` within ``scope``, best first."""
        if not isinstance(query, str):
            msg = f"query={query!r} must be a string"
            raise ConfigError.single(msg, yaml_path="query")
        k = check_whole("k", k, 1)
        if k > MAX_K:
            msg = f"k={k} must be at most {MAX_K}"
            raise ConfigError.single(msg, yaml_path="k")
        mode = self.search_mode if mode is None else check_mode(mode, "mode")
        check_storable(scope)
        if not query.strip():
            return ()
        with self._lock:
            if not self._exists():
                if mode != "lexical":
                    # An embedder that fails is an error whatever the store holds.
                    self._embed([query])
                return ()
            if mode == "dense":
                return tuple(self._dense(query, k, scope))
            if mode == "lexical":
                return tuple(self._lexical(query, k, scope))
            wide = max(k, self.candidates)
            if isinstance(self._backend, Ranking) and self._backend.ranks_ids:
                return tuple(self._fused(self._backend, query, k, wide, scope))
            dense = self._dense(query, wide, scope)
            lexical = self._lexical(query, wide, scope)
        by_id = {h.id: h for h in (*lexical, *dense)}
        fused = reciprocal_rank_fusion([[h.id for h in dense], [h.id for h in lexical]])
        return tuple(_with_score(by_id[record_id], score) for record_id, score in fused[:k])

    def _fused(
        self, backend: Ranking, query: str, k: int, wide: int, scope: Scope
    ) -> list[RecallHit]:
        """Hybrid search on a backend that ranks ids: both rankings fused,
        then only the ``k`` records fusion keeps read back."""
        (vector,) = self._embed([query])
        self._check_dimension(len(vector))
        try:
            dense = backend.dense_ranking(vector, k=wide, scope=scope)
        except Exception as exc:
            raise self._fail("to search by embedding", exc) from exc
        try:
            lexical = backend.lexical_ranking(query, k=wide, scope=scope)
        except Exception as exc:
            raise self._fail("to search by BM25", exc) from exc
        fused = reciprocal_rank_fusion([[i for i, _ in dense], [i for i, _ in lexical]])[:k]
        try:
            return backend.fetch(fused)
        except Exception as exc:
            raise self._fail("to read the records it found", exc) from exc

    def _dense(self, query: str, k: int, scope: Scope) -> list[RecallHit]:
        (vector,) = self._embed([query])
        self._check_dimension(len(vector))
        try:
            return self._backend.dense(vector, k=k, scope=scope)
        except Exception as exc:
            raise self._fail("to search by embedding", exc) from exc

    def _lexical(self, query: str, k: int, scope: Scope) -> list[RecallHit]:
        try:
            return self._backend.lexical(query, k=k, scope=scope)
        except Exception as exc:
            raise self._fail("to search by BM25", exc) from exc

    # --- listing and forgetting, by scope --------------------------------------------------

    def collections(self) -> tuple[str, ...]:
        """The names of every collection the engine holds where this store
        is (its Milvus database, its Qdrant directory or server), sorted."""
        with self._lock:
            try:
                return tuple(sorted(self._backend.collections()))
            except Exception as exc:
                raise self._fail("to list its collections", exc) from exc

    def _target(self, collection: str | None) -> str | None:
        """The collection to scan or delete in (this store's by default), or
        None when it does not exist."""
        name = self.collection if collection is None else check_collection(collection)
        return name if name in self.collections() else None

    def scan(self, scope: Scope, *, collection: str | None = None) -> tuple[RecallHit, ...]:
        """Every record of ``scope`` (its user and tenant exactly, and its
        conversation unless None) in ``collection`` (this store's by
        default; any collection of the engine, whatever embedder made it),
        sorted by id, each with score 0. Raises
        `StoreError` on failure."""
        check_storable(scope)
        with self._lock:
            name = self._target(collection)
            if name is None:
                return ()
            try:
                hits = self._backend.scan(scope, collection=name)
            except Exception as exc:
                raise self._fail(f"to list the records of {name!r}", exc) from exc
        return tuple(sorted(hits, key=lambda h: h.id))

    def delete_scope(self, scope: Scope, *, collection: str | None = None) -> int:
        """Delete every record of ``scope`` (as `scan` finds them) from
        ``collection`` (this store's by default): how many there were.
        Raises `StoreError` on failure."""
        check_storable(scope)
        with self._lock:
            name = self._target(collection)
            if name is None:
                return 0
            try:
                return self._backend.delete_where(scope, collection=name)
            except Exception as exc:
                raise self._fail(f"to delete records from {name!r}", exc) from exc


class _Pending:
    """One call of `MessageStore.add` waiting to be written: its
    records by id, then what the write did (``write``) or why it failed
    (``error``)."""

    __slots__ = ("error", "records", "write")

    def __init__(self, records: dict[str, StoredMessage]) -> None:
        self.records = records
        self.write: StoreWrite | None = None
        self.error: Exception | None = None


def _share(group: list[_Pending], together: StoreWrite) -> None:
    """Each call's part of ``together``, the write of every call of
    ``group``: the records it brought that the write added (a record two
    calls brought is added by the first) or found."""
    added = set(together.added)
    for pending in group:
        mine = [i for i in pending.records if i in added]
        added.difference_update(mine)
        pending.write = StoreWrite(
            added=tuple(mine),
            existing=tuple(i for i in pending.records if i not in mine),
            durable=together.durable,
        )


def _with_score(hit: RecallHit, score: float) -> RecallHit:
    return RecallHit(
        message=hit.message,
        score=score,
        conversation_id=hit.conversation_id,
        user=hit.user,
        tenant=hit.tenant,
        turn=hit.turn,
        exchange=hit.exchange,
        text=hit.text,
        id=hit.id,
    )
