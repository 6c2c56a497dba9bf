"""Qdrant as a vector store: local mode (in memory, or a directory on disk)
or a Qdrant server or cluster by URL, through the official ``qdrant-client``
(the ``qdrant`` extra: ``pip install 'memrules[qdrant]'``).

One point per message, its id the record id (as a UUID), with two named
vectors: ``dense`` (the embedding, cosine) and ``lexical``, a sparse vector
of BM25 term weights (`memrules.seams._lexical`) whose inverse document
frequency Qdrant applies itself (``Modifier.IDF``), so lexical search runs
in Qdrant, over everything it holds. The payload holds the indexed text,
the conversation, user and tenant ids, the turn and exchange keys, the
content hash and the message as lossless JSON text (a string, so its keys
keep their order).

In local mode, searches run on an exact in-process index that follows
every write (`memrules.seams._local_index`): local mode checks a
payload filter in Python point by point, and the index answers the same
top k under a numpy mask. On disk, the index is saved when the store
closes and loaded by the next process while the collection's files are
as they were then (`memrules.seams._index_file`). Local mode's SQLite
file commits to a write-ahead log (`commit_to_the_log`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

from memrules._core.checks import check_api_key_env
from memrules._core.errors import ConfigError, StoreError
from memrules._core.redaction import redact_url
from memrules._core.seam_protocols import Embedder
from memrules._core.seam_records import RecallHit, Scope, StoredMessage, decode_message
from memrules.seams import _index_file
from memrules.seams._backend import DEFAULT_COLLECTION, check_collection, check_mode
from memrules.seams._durable import local_path
from memrules.seams._lexical import document_vector, query_vector
from memrules.seams._local_index import LocalIndex
from memrules.seams._qdrant_files import IDENTITY, MEMORY, QdrantFiles
from memrules.seams._qdrant_storage import (
    close_storage,
    commit_to_the_log,
    one_transaction,
    payloads,
    point_id_of,
    record_id_of,
)
from memrules.seams._store import MessageStore

__all__ = ["DEFAULT_PATH", "MEMORY", "qdrant_store"]

DEFAULT_PATH = "memrules_qdrant"
"""The directory local mode uses when neither ``url`` nor ``path`` is given."""

log = logging.getLogger("memrules.seams")


class _Qdrant(QdrantFiles):
    """The Qdrant backend of a `MessageStore`: writes, searches, the local
    index and closing (the files and local mode's opening are `QdrantFiles`')."""

    def identity(self) -> dict[str, Any] | None:
        saved = self._saved_header()
        if saved is not None:  # the files are as they were when it was saved
            known: dict[str, Any] = saved["about"]["identity"]
            self._unconfirmed = self._identity = known
            return known
        client = self._open()
        if not client.collection_exists(self.collection):
            return None
        metadata = client.get_collection(self.collection).config.metadata or {}
        identity = metadata.get(IDENTITY)
        if not isinstance(identity, dict):
            msg = (
                f"collection {self.collection!r} was not made by memrules (its metadata has no "
                f"{IDENTITY!r}); name another collection"
            )
            raise StoreError(msg)
        self._identity = identity
        return identity

    def dimension(self) -> int | None:
        saved = self._saved_header()
        if saved is not None:
            return int(saved["dimension"])
        client = self._open()
        if not client.collection_exists(self.collection):
            return None
        vectors = client.get_collection(self.collection).config.params.vectors
        dense = vectors.get("dense") if isinstance(vectors, dict) else None
        return None if dense is None else int(dense.size)

    def create(self, dimension: int, identity: dict[str, Any]) -> None:
        from qdrant_client import models

        client = self._open()
        self._count_write()
        client.create_collection(
            self.collection,
            vectors_config={
                "dense": models.VectorParams(size=dimension, distance=models.Distance.COSINE)
            },
            sparse_vectors_config={
                "lexical": models.SparseVectorParams(modifier=models.Modifier.IDF)
            },
            metadata={IDENTITY: identity},
        )
        self._identity = identity
        if self.url is not None:  # local mode has no payload indexes
            for field in ("conversation_id", "user", "tenant"):
                client.create_payload_index(
                    self.collection, field, models.PayloadSchemaType.KEYWORD
                )
        else:
            self._index = LocalIndex(dimension)

    def existing(self, ids: Sequence[str]) -> set[str]:
        client = self._open()
        found: set[str] = set()
        for start in range(0, len(ids), 512):
            points = client.retrieve(
                self.collection,
                ids=[point_id_of(i) for i in ids[start : start + 512]],
                with_payload=False,
                with_vectors=False,
            )
            found.update(record_id_of(p.id) for p in points)
        return found

    def write(self, rows: Sequence[tuple[StoredMessage, list[float]]]) -> None:
        from qdrant_client import models

        points = []
        indexed = []
        for r, vector in rows:
            indices, values = document_vector(r.text)
            scope = (r.scope.user or "", r.scope.tenant or "", r.scope.conversation_id or "")
            indexed.append((r.id, scope, vector, (indices, values)))
            points.append(
                models.PointStruct(
                    id=point_id_of(r.id),
                    vector={
                        "dense": vector,
                        "lexical": models.SparseVector(indices=indices, values=values),
                    },
                    payload={
                        "text": r.text,
                        "conversation_id": r.scope.conversation_id or "",
                        "user": r.scope.user or "",
                        "tenant": r.scope.tenant or "",
                        "turn": r.turn,
                        "exchange": r.exchange,
                        "content_hash": r.content_hash,
                        "role": r.message.role,
                        "message": r.payload,
                    },
                )
            )
        client = self._open()
        if self._files is not None and not self._tuned:
            commit_to_the_log(client, self.collection)
            self._tuned = True
        with self._following():
            if self._files is not None:
                with one_transaction(client, self.collection):
                    client.upsert(self.collection, points=points, wait=True)
            else:
                client.upsert(self.collection, points=points, wait=True)
            if self._index is not None:
                self._index.upsert(indexed)

    def delete(self, ids: Sequence[str]) -> None:
        from qdrant_client import models

        if ids:
            with self._following():
                self._open().delete(
                    self.collection,
                    points_selector=models.PointIdsList(points=[point_id_of(i) for i in ids]),
                    wait=True,
                )
                if self._index is not None:
                    self._index.delete(ids)

    @contextlib.contextmanager
    def _following(self) -> Iterator[None]:
        """Run a write the local index follows; when it fails, drop the
        index (the engine may hold part of the write), so the next search
        builds it again from what the engine holds. A write the index does
        not follow (it is not built yet) makes the saved index stale."""
        self._open()
        self._count_write()
        if self._index is None:
            self._mark = None
        self._saved = False
        try:
            yield
        except BaseException:
            self._index = None
            raise

    def warm(self) -> None:
        """Build the local index now (local mode), not in the first search."""
        self._local()

    def _local(self) -> LocalIndex | None:
        """The local index of this collection (built from the engine the
        first time), or None for a server."""
        if self.url is not None:
            return None
        with self._state:
            unlocked = self._unlocked
            if unlocked is not None and self._client is None and self._fingerprint() != unlocked:
                # another process wrote since the saved index was loaded
                self._index, self._saved = None, False
                self._unlocked, self._rows = None, None
            if self._index is not None or self._load_unopened():
                return self._index
        client = self._open()
        with self._state:
            return self._index if self._index is not None else self._built(client)

    def _built(self, client: Any) -> LocalIndex:
        """The local index loaded from the saved file (while the files are
        as local mode found them) or built from local mode's points."""
        dimension = self.dimension()
        if self._mark is not None and self._files is not None:
            loaded = _index_file.load(
                _index_file.snapshot_path(self._files.root, self.collection),
                of=self._of(),
                mark=self._mark,
                dimension=dimension or 0,
            )
            if loaded is not None:
                self._index, self._saved = loaded[0], True
                return self._index
        index = LocalIndex(dimension or 0)
        offset: Any = None
        while True:
            points, offset = client.scroll(
                self.collection,
                limit=1024,
                offset=offset,
                with_payload=["user", "tenant", "conversation_id"],
                with_vectors=True,
            )
            index.upsert(
                (
                    record_id_of(point.id),
                    (
                        (point.payload or {}).get("user", ""),
                        (point.payload or {}).get("tenant", ""),
                        (point.payload or {}).get("conversation_id", ""),
                    ),
                    point.vector["dense"],
                    (point.vector["lexical"].indices, point.vector["lexical"].values)
                    if "lexical" in point.vector
                    else ([], []),
                )
                for point in points
            )
            if offset is None:
                break
        self._index = index
        return index

    def _fetch(self, found: list[tuple[str, float]]) -> list[RecallHit]:
        """The records the local index found, in order: from the payloads
        saved with the index while local mode has not opened (which it then
        does, in the background), else read back from local mode."""
        with self._state:
            rows = self._rows
            if rows is not None:
                hits = []
                for record_id, score in found:
                    row = rows.get(record_id)
                    if isinstance(row, bytes):
                        row = rows[record_id] = json.loads(row)
                    if row is not None:
                        hits.append(_hit_of(row, record_id, score))
        if rows is not None:
            self._open_in_background()
            return hits
        if not found:
            return []
        points = self._open().retrieve(
            self.collection,
            ids=[point_id_of(record_id) for record_id, _ in found],
            with_payload=True,
            with_vectors=False,
        )
        by_id = {record_id_of(p.id): p for p in points}
        return [_hit(by_id[i], score) for i, score in found if i in by_id]

    def persist(self, wrote: bool) -> bool:
        """A server acknowledged the write (``wait=True``); local mode on
        disk committed it, and its files are checked to be the ones opened;
        in memory it is not durable."""
        if self.url is not None:
            return True
        if self._files is None:
            return False
        self._files.watch(self._storage())
        self._files.check()
        return True

    def _filter(self, scope: Scope) -> Any:
        from qdrant_client import models

        must: list[Any] = [
            models.FieldCondition(key="user", match=models.MatchValue(value=scope.user or "")),
            models.FieldCondition(key="tenant", match=models.MatchValue(value=scope.tenant or "")),
        ]
        if scope.conversation_id is not None:
            must.append(
                models.FieldCondition(
                    key="conversation_id", match=models.MatchValue(value=scope.conversation_id)
                )
            )
        return models.Filter(must=must)

    def _search(self, query: Any, using: str, k: int, scope: Scope) -> list[RecallHit]:
        result = self._open().query_points(
            self.collection,
            query=query,
            using=using,
            limit=k,
            query_filter=self._filter(scope),
            with_payload=True,
            with_vectors=False,
        )
        return [_hit(point, float(point.score)) for point in result.points]

    @property
    def ranks_ids(self) -> bool:
        """Local mode ranks ids in its local index."""
        return self.url is None

    def dense_ranking(
        self, vector: list[float], *, k: int, scope: Scope
    ) -> list[tuple[str, float]]:
        index = self._local()
        assert index is not None
        return index.dense(vector, k=k, **_parts(scope))

    def lexical_ranking(self, query: str, *, k: int, scope: Scope) -> list[tuple[str, float]]:
        indices, _ = query_vector(query)
        index = self._local()
        assert index is not None
        if not indices:
            return []
        return index.lexical(dict.fromkeys(indices, 1.0), k=k, **_parts(scope))

    def fetch(self, found: Sequence[tuple[str, float]]) -> list[RecallHit]:
        return self._fetch(list(found))

    def dense(self, vector: list[float], *, k: int, scope: Scope) -> list[RecallHit]:
        if self.url is not None:
            return self._search(vector, "dense", k, scope)
        return self._fetch(self.dense_ranking(vector, k=k, scope=scope))

    def lexical(self, query: str, *, k: int, scope: Scope) -> list[RecallHit]:
        from qdrant_client import models

        if self.url is None:
            return self._fetch(self.lexical_ranking(query, k=k, scope=scope))
        indices, values = query_vector(query)
        if not indices:
            return []
        return self._search(
            models.SparseVector(indices=indices, values=values), "lexical", k, scope
        )

    def collections(self) -> list[str]:
        return [c.name for c in self._open().get_collections().collections]

    def scan(self, scope: Scope, *, collection: str) -> list[RecallHit]:
        client = self._open()
        hits: list[RecallHit] = []
        offset: Any = None
        while True:
            points, offset = client.scroll(
                collection,
                scroll_filter=self._filter(scope),
                limit=256,
                offset=offset,
                with_payload=True,
                with_vectors=False,
            )
            hits.extend(_hit(point, 0.0) for point in points)
            if offset is None:
                return hits

    def delete_where(self, scope: Scope, *, collection: str) -> int:
        from qdrant_client import models

        client = self._open()
        selected = self._filter(scope)
        count = int(client.count(collection, count_filter=selected, exact=True).count)
        if count:
            if collection == self.collection:
                self._index = None  # built again, without them, by the next search
                self._mark, self._saved = None, False
            self._count_write(collection)
            client.delete(
                collection, points_selector=models.FilterSelector(filter=selected), wait=True
            )
        return count

    def close(self) -> None:
        opener, self._opener = self._opener, None
        if opener is not None:
            opener.join()  # local mode opening in the background is closed with the rest
        if self._client is not None:
            mark = None
            extra = None
            if self._files is not None and self._index is not None and not self._saved:
                extra = payloads(self._client, self.collection, self._index.live_ids())
                # The files as local mode leaves them, taken while it still
                # holds the directory: once it lets go, another process may
                # write before a fingerprint taken then, which would hold
                # that write the index lacks.
                if close_storage(self._client):
                    mark = self._fingerprint()
                if mark and _index_file.counted(mark) != self._counter:
                    mark = None  # a write this process did not count: not saved
            self._client.close()
            self._client = None
            if mark and self._index is not None and self._files is not None:
                target = _index_file.snapshot_path(self._files.root, self.collection)
                about = {"identity": self._identity} if self._identity is not None else None
                _index_file.save(
                    target, self._index, of=self._of(), mark=mark, extra=extra, about=about
                )
        self._index = None
        self._mark, self._saved = None, False
        self._tuned = False
        self._counter = None
        self._unlocked, self._rows, self._unconfirmed = None, None, None


def _parts(scope: Scope) -> dict[str, Any]:
    return {
        "user": scope.user or "",
        "tenant": scope.tenant or "",
        "conversation": scope.conversation_id,
    }


def _hit(point: Any, score: float) -> RecallHit:
    return _hit_of(point.payload or {}, record_id_of(point.id), score)


def _hit_of(p: dict[str, Any], record_id: str, score: float) -> RecallHit:
    return RecallHit(
        message=decode_message(p["message"]),
        score=score,
        conversation_id=p["conversation_id"] or None,
        user=p["user"] or None,
        tenant=p["tenant"] or None,
        turn=p["turn"],
        exchange=p["exchange"],
        text=p["text"],
        id=record_id,
    )


def qdrant_missing() -> bool:
    """Whether ``qdrant-client`` (the ``qdrant`` extra) is not installed."""
    return importlib.util.find_spec("qdrant_client") is None


def qdrant_store(
    *,
    embedder: Embedder,
    url: str | None = None,
    path: str | None = None,
    collection: str = DEFAULT_COLLECTION,
    search: str = "hybrid",
    api_key_env: str | None = None,
    batch_size: int = 256,
    candidates: int = 50,
) -> MessageStore:
    """A Qdrant store: a server or cluster at ``url`` (``http://host:6333``,
    its API key in the environment variable ``api_key_env`` names, never
    recorded), or local mode in the directory ``path`` (``":memory:"`` keeps
    it in memory; `DEFAULT_PATH` when neither is given). ``search``
    is ``hybrid`` (dense and BM25 rankings fused), ``dense`` or
    ``lexical``; hybrid fetches ``candidates`` of each. Writes go in chunks
    of ``batch_size`` points. A relative ``path`` is the working
    directory's when the store is made (its messages name the real path);
    in memory, writes report ``durable=False``. Opens on first use; raises
    `StoreError` on failure, and a `ConfigError` here without
    the ``qdrant`` extra. Local mode is for one process: a directory is locked while open.
    """
    if url is not None and path is not None:
        msg = (
            f"url={redact_url(url)!r} and path={path!r} are both set; a store is a server or local"
        )
        raise ConfigError.single(msg, yaml_path="path")
    if url is not None and (
        not isinstance(url, str) or not url.startswith(("http://", "https://"))
    ):
        msg = f"url={redact_url(url)!r} must be a Qdrant server's http(s)://host:port"
        raise ConfigError.single(msg, yaml_path="url")
    if url is None:
        path = DEFAULT_PATH if path is None else path
        if not isinstance(path, str) or not path:
            msg = f"path={path!r} must be a directory, or {MEMORY!r}"
            raise ConfigError.single(msg, yaml_path="path")
        if path != MEMORY:
            path = local_path(path, "path")
    check_api_key_env(api_key_env)
    check_collection(collection)
    check_mode(search)
    if qdrant_missing():
        msg = "the qdrant backend needs qdrant-client: pip install 'memrules[qdrant]'"
        raise ConfigError.single(msg, yaml_path="backend")
    where = f"url={redact_url(url)!r}" if url is not None else f"path={path!r}"
    key = f", api_key_env={api_key_env!r}" if api_key_env else ""
    description = f"qdrant_store({where}, collection={collection!r}, search={search!r}{key})"
    return MessageStore(
        backend=_Qdrant(url=url, path=path, collection=collection, api_key_env=api_key_env),
        embedder=embedder,
        search=search,
        batch_size=batch_size,
        candidates=candidates,
        description=description,
    )
