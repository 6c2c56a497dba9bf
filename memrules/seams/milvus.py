"""Milvus as a vector store: a Milvus Lite file (embedded, the default) or a
Milvus server or cluster by URI, through the official ``pymilvus`` client
(the ``milvus`` extra: ``pip install 'memrules[milvus]'``).

One row per message: the indexed text (``<name or role>: <text>``, at most
`MAX_TEXT_BYTES` of it), its dense vector, a sparse BM25 vector that
Milvus's own BM25 function computes from the text (so lexical search runs in
Milvus, over everything it holds), the conversation, user and tenant ids,
the turn and exchange keys, the content hash, and the message as lossless
JSON (in pieces of at most 65,535 bytes, up to `MAX_MESSAGE_BYTES`).

On a Milvus Lite file, searches run on an exact in-process index shared by
the stores of that file in the process (`memrules.seams._local_index`;
Milvus Lite answers a filtered query by rebuilding rows in Python, and
approximately once its rows are in an HNSW segment), with BM25 over the
whole collection (Milvus Lite scores each segment with its own
statistics) of the sparse vectors Qdrant's points hold: the same terms
(English stop words left out, a light stem), the same term weights (k1, b
and the stand-in average length of `memrules.seams._lexical`), so a
file ranks a chat as Qdrant does. A Milvus server ranks with its own BM25
function and analyzer. Writes are
flushed into segments every `FLUSH_ROWS` rows and on close; its
write-ahead log keeps each acknowledged write before. The index is saved
when the last store of the collection in the process closes, and loaded
by the next process while the collection's files are as they were then
(`memrules.seams._index_file`). A process checks the collection and
answers its first searches from that file before its engine opens the
file (opening it is most of a memory route's first request): each such
search takes the fingerprint again first, and the engine, opened in the
background after the first, takes it once more under its lock; a write
waits for the engine.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
from collections.abc import Sequence
from typing import Any

from memrules._core.checks import check_api_key_env
from memrules._core.errors import ConfigError, StoreError
from memrules._core.redaction import redact_url
from memrules._core.seam_protocols import Embedder
from memrules._core.seam_records import (
    MAX_SCOPE_CHARS,
    RecallHit,
    Scope,
    StoredMessage,
)
from memrules.seams._backend import DEFAULT_COLLECTION, check_collection, check_mode
from memrules.seams._durable import local_path
from memrules.seams._local_index import LocalIndex
from memrules.seams._milvus_indexes import (
    LOCAL,
)
from memrules.seams._milvus_lite import (
    IDENTITY,
    QUERY_WINDOW,
    MilvusLite,
    is_server,
)
from memrules.seams._milvus_rows import (
    FIELDS,
    MAX_MESSAGE_BYTES,
    MAX_TEXT_BYTES,
    PIECE_BYTES,
    PIECES,
    index_row,
    kept_fields,
    message_pieces,
    row_hit,
    scope_filter,
    utf8_prefix,
)
from memrules.seams._store import MessageStore

__all__ = ["DEFAULT_URI", "MAX_MESSAGE_BYTES", "MAX_TEXT_BYTES", "milvus_store"]

DEFAULT_URI = "memrules_memory.db"
"""The Milvus Lite file a store uses when no ``uri`` is given (relative to
the working directory)."""


class _Milvus(MilvusLite):
    """The Milvus backend of a `MessageStore`: its collection, writes,
    searches and deletes (the client and the local index are `MilvusLite`'s)."""

    # --- before the engine opens (Milvus Lite) ------------------------------------------

    def identity(self) -> dict[str, Any] | None:
        saved = self._saved_header()
        if saved is not None:  # the files are as they were when it was saved
            known: dict[str, Any] = saved["about"]["identity"]
            self._unconfirmed = known
            return known
        client = self._open()
        if not client.has_collection(self.collection):
            return None
        properties = client.describe_collection(self.collection).get("properties") or {}
        raw = properties.get(IDENTITY)
        if raw is None:
            msg = (
                f"collection {self.collection!r} was not made by memrules (it has no "
                f"{IDENTITY!r} property); name another collection"
            )
            raise StoreError(msg)
        identity: dict[str, Any] = json.loads(raw)
        shared = self._share()
        if shared is not None:
            shared.identity = identity
        return identity

    def create(self, dimension: int, identity: dict[str, Any]) -> None:
        from pymilvus import DataType, Function, FunctionType

        client = self._open()
        self._count_write(self.collection)
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("text", DataType.VARCHAR, max_length=MAX_TEXT_BYTES, enable_analyzer=True)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dimension)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        for name in ("conversation_id", "user", "tenant"):
            schema.add_field(name, DataType.VARCHAR, max_length=MAX_SCOPE_CHARS * 4)
        for name in ("turn", "exchange", "content_hash"):
            schema.add_field(name, DataType.VARCHAR, max_length=64)
        schema.add_field("role", DataType.VARCHAR, max_length=16)
        schema.add_field(
            "message",
            DataType.ARRAY,
            element_type=DataType.VARCHAR,
            max_capacity=PIECES,
            max_length=PIECE_BYTES,
        )
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=["sparse"],
            )
        )
        index = client.prepare_index_params()
        index.add_index(field_name="dense", index_type="AUTOINDEX", metric_type="COSINE")
        index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        client.create_collection(
            self.collection,
            schema=schema,
            index_params=index,
            consistency_level="Strong",
            properties={IDENTITY: json.dumps(identity, sort_keys=True)},
        )
        self._ready(self.collection)
        shared = self._share()
        if shared is not None:
            with shared.lock:
                shared.index, shared.rows = LocalIndex(dimension), {}
                shared.saved = False
                shared.identity = identity

    def write(self, rows: Sequence[tuple[StoredMessage, list[float]]]) -> None:
        data: list[dict[str, Any]] = [
            {
                "id": r.id,
                "text": utf8_prefix(r.text, MAX_TEXT_BYTES),
                "dense": vector,
                "conversation_id": r.scope.conversation_id or "",
                "user": r.scope.user or "",
                "tenant": r.scope.tenant or "",
                "turn": r.turn,
                "exchange": r.exchange,
                "content_hash": r.content_hash,
                "role": r.message.role,
                "message": message_pieces(r.payload),
            }
            for r, vector in rows
        ]
        with self._following() as shared:
            self._unflushed += len(data)
            reply = self._ready(self.collection).upsert(self.collection, data)
            if self._files is not None:
                # The rows Milvus Lite answers it upserted: its write-ahead
                # log holds them (see persist), so confirm reads them here.
                self._acknowledged.update(str(i) for i in reply.get("ids", ()))
            if shared is not None and shared.index is not None:
                shared.index.upsert(
                    index_row(
                        r.id, r.scope.user, r.scope.tenant, r.scope.conversation_id, v, r.text
                    )
                    for r, v in rows
                )
                shared.rows.update((row["id"], kept_fields(row)) for row in data)

    def delete(self, ids: Sequence[str]) -> None:
        self._acknowledged.difference_update(ids)
        if ids:
            with self._following() as shared:
                self._ready(self.collection).delete(self.collection, ids=list(ids))
                if shared is not None and shared.index is not None:
                    shared.index.delete(ids)
                    for record_id in ids:
                        shared.rows.pop(record_id, None)

    # --- the local index (Milvus Lite) ---------------------------------------------------

    def _hits(self, result: Any, *, absolute: bool) -> list[RecallHit]:
        hits = []
        for found in result[0] if result else ():
            score = float(found["distance"])
            hits.append(row_hit(found["entity"], found["id"], abs(score) if absolute else score))
        return hits

    def dense(self, vector: list[float], *, k: int, scope: Scope) -> list[RecallHit]:
        if self._files is not None:
            return self.fetch(self.dense_ranking(vector, k=k, scope=scope))
        result = self._ready(self.collection).search(
            self.collection,
            data=[vector],
            anns_field="dense",
            limit=k,
            filter=scope_filter(scope),
            output_fields=FIELDS,
            search_params={"metric_type": "COSINE"},
        )
        return self._hits(result, absolute=False)

    def lexical(self, query: str, *, k: int, scope: Scope) -> list[RecallHit]:
        if self._files is not None:
            return self.fetch(self.lexical_ranking(query, k=k, scope=scope))
        result = self._ready(self.collection).search(
            self.collection,
            data=[query],
            anns_field="sparse",
            limit=k,
            filter=scope_filter(scope),
            output_fields=FIELDS,
            search_params={"metric_type": "BM25"},
        )
        # BM25 is never negative; Milvus Lite reports it negated.
        return self._hits(result, absolute=True)

    def collections(self) -> list[str]:
        return list(self._open().list_collections())

    def scan(self, scope: Scope, *, collection: str) -> list[RecallHit]:
        client = self._ready(collection)
        rows = client.query(
            collection, filter=scope_filter(scope), output_fields=FIELDS, limit=QUERY_WINDOW
        )
        if len(rows) < QUERY_WINDOW:
            return [row_hit(row, row["id"], 0.0) for row in rows]
        # More than one query may return: page through all of them.
        iterator = client.query_iterator(
            collection, filter=scope_filter(scope), output_fields=FIELDS, batch_size=1000
        )
        hits: list[RecallHit] = []
        try:
            while rows := iterator.next():
                hits.extend(row_hit(row, row["id"], 0.0) for row in rows)
        finally:
            iterator.close()
        return hits

    def delete_where(self, scope: Scope, *, collection: str) -> int:
        ids = [hit.id for hit in self.scan(scope, collection=collection)]
        if ids:
            if collection != self.collection:
                try:
                    self._count_write(collection)
                    self._ready(collection).delete(collection, filter=scope_filter(scope))
                finally:  # another store of this file may search that collection
                    LOCAL.drop((self.uri, collection))
                return len(ids)
            with self._following() as shared:
                # Listed again under the index's lock: a record another store
                # of this file added since is deleted from the index too.
                ids = [hit.id for hit in self.scan(scope, collection=collection)]
                self._acknowledged.difference_update(ids)
                self._ready(collection).delete(collection, filter=scope_filter(scope))
                if shared is not None and shared.index is not None:
                    shared.index.delete(ids)
                    for record_id in ids:
                        shared.rows.pop(record_id, None)
        return len(ids)

    def close(self) -> None:
        opener, self._opener = self._opener, None
        if opener is not None:
            opener.join()  # an engine opening in the background is closed with the rest
        if self._client is not None:
            if self._unflushed and self._files is not None:
                with contextlib.suppress(Exception):  # the write-ahead log keeps them
                    self._flush()
            self._client.close()
            self._client = None
            self._loaded = set()
        if self._shared is not None:
            last = LOCAL.release((self.uri, self.collection))
            self._shared = None
            if last is not None:
                with last.lock:
                    self._save(last)


def milvus_missing() -> bool:
    """Whether ``pymilvus`` (the ``milvus`` extra) is not installed."""
    return importlib.util.find_spec("pymilvus") is None


def milvus_store(
    *,
    embedder: Embedder,
    uri: str = DEFAULT_URI,
    collection: str = DEFAULT_COLLECTION,
    search: str = "hybrid",
    api_key_env: str | None = None,
    batch_size: int = 256,
    candidates: int = 50,
) -> MessageStore:
    """A Milvus store. ``uri`` is a Milvus Lite file (a path ending ``.db``,
    made on first write; relative to the working directory when the store
    is made, and named by its real path in the store's messages) or a
    server's ``http(s)://host:19530``;
    ``api_key_env`` names the environment variable holding a server's token
    (``user:password`` or an API key), read when the client connects and
    never recorded. ``search`` is ``hybrid`` (dense and BM25 rankings fused),
    ``dense`` or ``lexical``; hybrid fetches ``candidates`` of each. Writes
    go in chunks of ``batch_size`` rows. Connects on first use; raises
    `StoreError` on failure, and a `ConfigError` here without
    the ``milvus`` extra."""
    if not isinstance(uri, str) or not uri:
        msg = (
            f"uri={redact_url(uri)!r} must be a Milvus Lite file (ending .db) or an http(s):// URL"
        )
        raise ConfigError.single(msg, yaml_path="uri")
    if not is_server(uri) and not uri.endswith(".db"):
        msg = (
            f"uri={redact_url(uri)!r} must be a Milvus Lite file (a path ending .db) or a server's "
            "http(s)://host:port"
        )
        raise ConfigError.single(msg, yaml_path="uri")
    check_api_key_env(api_key_env)
    check_collection(collection)
    check_mode(search)
    if milvus_missing():
        msg = "the milvus backend needs pymilvus: pip install 'memrules[milvus]'"
        raise ConfigError.single(msg, yaml_path="backend")
    if not is_server(uri):
        uri = local_path(uri, "uri")
    token = f", api_key_env={api_key_env!r}" if api_key_env else ""
    description = (
        f"milvus_store(uri={redact_url(uri)!r}, collection={collection!r}, "
        f"search={search!r}{token})"
    )
    return MessageStore(
        backend=_Milvus(uri, collection, api_key_env),
        embedder=embedder,
        search=search,
        batch_size=batch_size,
        candidates=candidates,
        description=description,
    )
