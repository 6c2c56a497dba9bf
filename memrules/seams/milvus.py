"""Milvus as a vector store: a Milvus Lite file (embedded, the default) or a
Milvus server or cluster by URI, through the official ``pymilvus`` client
(the ``milvus`` extra: ``pip install 'memrules[milvus]'``).

One row per message: the indexed text (``<name or role>: <text>``, at most
:data:`MAX_TEXT_BYTES` of it), its dense vector, a sparse BM25 vector that
Milvus's own BM25 function computes from the text (so lexical search runs in
Milvus, over everything it holds), the conversation, user and tenant ids,
the turn and exchange keys, the content hash, and the message as lossless
JSON (in pieces of at most 65,535 bytes, up to :data:`MAX_MESSAGE_BYTES`).

On a Milvus Lite file, searches run on an exact in-process index shared by
the stores of that file in the process (:mod:`memrules.seams._local_index`;
Milvus Lite answers a filtered query by rebuilding rows in Python, and
approximately once its rows are in an HNSW segment), with BM25 over the
whole collection (Milvus Lite scores each segment with its own
statistics) of the sparse vectors Qdrant's points hold: the same terms
(English stop words left out, a light stem), the same term weights (k1, b
and the stand-in average length of :mod:`memrules.seams._lexical`), so a
file ranks a chat as Qdrant does. A Milvus server ranks with its own BM25
function and analyzer. Writes are
flushed into segments every :data:`_FLUSH_ROWS` rows and on close; its
write-ahead log keeps each acknowledged write before. The index is saved
when the last store of the collection in the process closes, and loaded
by the next process while the collection's files are as they were then
(:mod:`memrules.seams._index_file`). A process checks the collection and
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
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from memrules._core.checks import check_api_key_env
from memrules._core.errors import CollectionError, ConfigError, StoreError
from memrules._core.messages import Message
from memrules._core.redaction import redact_url
from memrules._core.seam_protocols import Embedder
from memrules._core.seam_records import (
    MAX_SCOPE_CHARS,
    RecallHit,
    Scope,
    StoredMessage,
    decode_message,
)
from memrules.seams import _index_file
from memrules.seams._backend import DEFAULT_COLLECTION, check_collection, check_mode
from memrules.seams._durable import Files, local_path
from memrules.seams._lexical import document_vector, query_vector
from memrules.seams._local_index import LocalIndex, Row
from memrules.seams._store import MessageStore

__all__ = ["DEFAULT_URI", "MAX_MESSAGE_BYTES", "MAX_TEXT_BYTES", "milvus_store"]

DEFAULT_URI = "memrules_memory.db"
"""The Milvus Lite file a store uses when no ``uri`` is given (relative to
the working directory)."""

_PIECE_BYTES = 65_535
_PIECES = 256
MAX_TEXT_BYTES = _PIECE_BYTES
MAX_MESSAGE_BYTES = _PIECE_BYTES * _PIECES
_IDENTITY = "memrules.embedder"
_FLUSH_ROWS = 1024
"""Rows a Milvus Lite store writes before it flushes them into a segment."""
_QUERY_WINDOW = 16_384  # the most rows one Milvus query returns
_DECODED = 4096  # hits whose decoded messages a collection's index keeps at most
_SERVER_SCHEMES = ("http://", "https://", "tcp://", "unix:")
_FIELDS = ["id", "text", "conversation_id", "user", "tenant", "turn", "exchange", "message"]

log = logging.getLogger("memrules.seams")


class _Unimplemented(logging.Filter):
    """Milvus Lite's in-process gRPC server does not implement every call
    pymilvus makes of a server (``AllocTimestamp``): gRPC logs each such
    call as an ERROR with its traceback (63 lines on every start, wherever
    the application's logging goes), and pymilvus goes on without it. This
    filter, on gRPC's server logger, keeps those records out of the
    application's log and says them as DEBUG records of ``memrules.seams``;
    every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, NotImplementedError) and "not implemented" in str(error):
            log.debug(
                "Milvus Lite's server does not implement a call pymilvus made (it goes on "
                "without it): %s",
                record.getMessage(),
                exc_info=record.exc_info,
            )
            return False
        return True


def _quiet_unimplemented() -> None:
    """Put :class:`_Unimplemented` on gRPC's server logger, once: done when a
    Milvus Lite file is first opened, not when this module is imported."""
    server = logging.getLogger("grpc._server")
    if not any(isinstance(f, _Unimplemented) for f in server.filters):
        server.addFilter(_Unimplemented())


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _literal(value: str) -> str:
    """``value`` as a string literal of Milvus's filter language: only the
    escapes Milvus Lite reads (quote, backslash, newline, carriage return,
    tab); any other character, control characters too, as itself (a ``\\u``
    escape is an "unknown escape sequence" to Milvus Lite, so an id holding
    one could be stored but never listed or forgotten)."""
    return '"' + "".join(_ESCAPES.get(c, c) for c in value) + '"'


def _filter(scope: Scope) -> str:
    parts = [f"user == {_literal(scope.user or '')}", f"tenant == {_literal(scope.tenant or '')}"]
    if scope.conversation_id is not None:
        parts.append(f"conversation_id == {_literal(scope.conversation_id)}")
    return " and ".join(parts)


def _utf8_prefix(text: str, limit: int) -> str:
    data = text.encode("utf-8", "replace")
    return data[:limit].decode("utf-8", "ignore") if len(data) > limit else text


def _pieces(payload: str) -> list[str]:
    """``payload`` (JSON, ASCII-safe pieces) cut into pieces Milvus takes."""
    data = payload.encode("utf-8")
    if len(data) > MAX_MESSAGE_BYTES:
        msg = (
            f"a message of {len(data):,} bytes as JSON is over Milvus's limit of "
            f"{MAX_MESSAGE_BYTES:,}; clamp it first (clamp_oversized_messages) or use Qdrant"
        )
        raise StoreError(msg)
    out: list[str] = []
    start = 0
    while start < len(data):
        end = min(start + _PIECE_BYTES, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:  # not inside a character
            end -= 1
        out.append(data[start:end].decode("utf-8"))
        start = end
    return out or [""]


def _weights(vector: tuple[list[int], list[float]]) -> dict[int, float]:
    """A sparse vector of :mod:`memrules.seams._lexical` as index: weight."""
    return dict(zip(*vector, strict=True))


class _Shared:
    """The local index of one Milvus Lite collection (see
    :mod:`memrules.seams._local_index`), the fields of each record a hit
    is made of (``rows``, by id: a search then reads nothing back through
    Milvus Lite's gRPC server, which costs more than the search), and the
    lock its users take turns with. ``index`` is None (and ``rows`` empty)
    until the first search builds both from the engine (or loads them),
    and again after a write they may not have followed. A row loaded from
    a saved index is its JSON bytes until a hit needs it. ``mark`` is the
    fingerprint of the collection's files when this process opened them
    (None once it changed them while the index was not built), ``saved``
    whether the index is the one saved. ``decoded`` holds the messages of
    recent hits, each with the row it was decoded from (a write replaces a
    record's row, so a message is used only while its row is the one
    held): a search that finds them again decodes nothing.

    Before this process's engine holds the file, the saved index may answer
    searches (see :meth:`_Milvus.search_unopened`): ``unlocked`` is then the
    fingerprint it was loaded under, checked again before each search and
    once the engine holds the files; ``settled`` is whether the holder was
    given the fingerprint taken under the engine's lock; ``identity`` the
    collection's embedder identity, saved with the index."""

    def __init__(self, mark: list[list[Any]] | None = None, *, settled: bool = True) -> None:
        self.lock = threading.RLock()
        self.index: LocalIndex | None = None
        self.rows: dict[str, dict[str, Any] | bytes] = {}
        self.decoded: dict[str, tuple[dict[str, Any], Message]] = {}
        self.holders = 0
        self.mark = mark
        self.saved = False
        self.unlocked: list[list[Any]] | None = None
        self.settled = settled
        self.identity: dict[str, Any] | None = None

    def drop(self) -> None:
        self.index = None
        self.rows = {}
        self.decoded = {}
        self.mark, self.saved, self.unlocked = None, False, None


class _Indexes:
    """The local indexes of the Milvus Lite collections this process has
    open, by (file, collection). Milvus Lite serves one file to every
    client in the process and locks it against other processes, so the
    stores of one file in this process share one index per collection,
    which lives while one of them holds it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[str, str], _Shared] = {}
        # The fingerprints of each file's collections when this process
        # first opened the file, each taken by the collection's first holder.
        self._seen: set[str] = set()
        self._marks: dict[tuple[str, str], list[list[Any]] | None] = {}

    def look(self, uri: str) -> None:
        """Take the fingerprints of ``uri``'s collections, the first time
        only (once Milvus Lite in this process holds the file: no other
        process changes it from then on)."""
        with self._lock:
            if uri in self._seen:
                return
            self._seen.add(uri)
            root = os.path.join(uri, "collections")
            names = sorted(os.listdir(root)) if os.path.isdir(root) else []
            for name in names:
                self._marks[(uri, name)] = _fingerprint(uri, name)

    def opened(self, uri: str) -> bool:
        """Whether this process's engine has opened ``uri`` (and holds its lock)."""
        with self._lock:
            return uri in self._seen

    def acquire(self, key: tuple[str, str]) -> _Shared:
        with self._lock:
            shared = self._held.get(key)
            if shared is None:
                settled = key[0] in self._seen
                mark = self._marks.pop(key, None) if settled else None
                shared = self._held[key] = _Shared(mark, settled=settled)
            shared.holders += 1
            return shared

    def settle(self, key: tuple[str, str], shared: _Shared) -> None:
        """Give ``shared``, acquired before the engine opened the file, the
        fingerprint taken once it did (:meth:`look`); an index it loaded
        before then stays only when the files are still as it was loaded
        under (no other process wrote in between), else the next search
        builds it from the engine."""
        with shared.lock:
            if shared.settled:
                return
            with self._lock:
                mark = self._marks.pop(key, None)
            shared.settled = True
            if shared.unlocked is not None:
                if mark is None or mark != shared.unlocked:
                    shared.drop()
                else:
                    shared.mark, shared.unlocked = mark, None
            elif shared.index is None:
                shared.mark = mark

    def drop(self, key: tuple[str, str]) -> None:
        """Drop ``key``'s index, if a store holds it: a write that store
        did not make changed the collection."""
        with self._lock:
            shared = self._held.get(key)
            self._marks.pop(key, None)
        if shared is not None:
            with shared.lock:
                shared.drop()

    def release(self, key: tuple[str, str]) -> _Shared | None:
        """Let go of ``key``'s holder; it, when this was its last store."""
        with self._lock:
            shared = self._held[key]
            shared.holders -= 1
            if not shared.holders:
                del self._held[key]
                return shared
        return None


_LOCAL = _Indexes()


def _fingerprint(uri: str, collection: str) -> list[list[Any]] | None:
    """The fingerprint of ``collection``'s files in the Milvus Lite file
    ``uri`` and of its write counter (see :mod:`memrules.seams._index_file`)."""
    return _index_file.fingerprint(
        os.path.join(uri, "collections", collection),
        writes=_index_file.writes_path(uri, collection),
    )


def is_server(uri: str) -> bool:
    """Whether ``uri`` names a Milvus server (else a Milvus Lite file)."""
    return uri.startswith(_SERVER_SCHEMES)


class _Milvus:
    engine = "milvus"

    def __init__(self, uri: str, collection: str, api_key_env: str | None) -> None:
        self.uri = uri
        self.collection = collection
        self.api_key_env = api_key_env
        self._client: Any = None
        self._loaded: set[str] = set()
        self._files = None if is_server(uri) else Files(uri)
        # Milvus Lite only: the local index of this collection, shared in the process.
        self._shared: _Shared | None = None
        self._unflushed = 0  # rows this store wrote since its last flush
        self._opening = threading.Lock()  # held while the client is made
        self._opener: threading.Thread | None = None
        # The identity the saved index answered the start-up check with, until
        # the engine confirms it (the collection may be made again before it opens).
        self._unconfirmed: dict[str, Any] | None = None
        # Milvus Lite only: the ids its upserts answered, until confirmed.
        self._acknowledged: set[str] = set()

    def _open(self) -> Any:
        with self._opening:
            if self._client is None:
                from pymilvus import MilvusClient

                token = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
                if self._files is not None:
                    _quiet_unimplemented()
                client = MilvusClient(uri=self.uri, token=token)
                if self._files is not None:
                    _LOCAL.look(self.uri)  # Milvus Lite holds the file's lock now
                    self._files.watch(self.uri)
                self._loaded = set()
                self._client = client
            client = self._client
        shared = self._shared
        if shared is not None and not shared.settled:
            _LOCAL.settle((self.uri, self.collection), shared)
        if self._unconfirmed is not None:
            self._confirm(client, self._unconfirmed)
        return client

    def _confirm(self, client: Any, identity: dict[str, Any]) -> None:
        """Check that the collection the engine holds is the one the saved
        index was checked as at start-up (another process may have dropped
        and made it again, for another embedder, before the engine opened):
        a :class:`CollectionError` on every call until it is."""
        stored = None
        if client.has_collection(self.collection):
            properties = client.describe_collection(self.collection).get("properties") or {}
            raw = properties.get(_IDENTITY)
            stored = json.loads(raw) if raw is not None else None
        if json.dumps(stored, sort_keys=True) != json.dumps(identity, sort_keys=True):
            msg = (
                f"collection {self.collection!r} of {self.uri} was dropped or made again "
                f"(for embedder {json.dumps(stored, sort_keys=True)}) after this store was "
                f"checked for {json.dumps(identity, sort_keys=True)}; open the store again"
            )
            raise CollectionError(msg)
        self._unconfirmed = None

    # --- before the engine opens (Milvus Lite) ------------------------------------------

    def _unopened(self) -> bool:
        """Whether this is a Milvus Lite file this process's engine has not
        opened yet: the saved index may answer until it does."""
        return self._files is not None and self._client is None and not _LOCAL.opened(self.uri)

    def _saved_header(self) -> dict[str, Any] | None:
        """The saved index's header, when the collection's files are as
        they were when it was saved (taken now) and it names the
        collection's embedder identity; else None (ask the engine)."""
        if not self._unopened():
            return None
        found = _index_file.header(
            _index_file.snapshot_path(self.uri, self.collection), of=self._of()
        )
        if found is None or not isinstance(found.get("about"), dict):
            return None
        if "identity" not in found["about"] or not found.get("mark"):
            return None
        if found["mark"] != _fingerprint(self.uri, self.collection):
            return None
        return found

    def _load_unopened(self, shared: _Shared) -> bool:
        """Load the saved index into ``shared`` before the engine opens the
        file, when the collection's files are as they were when it was
        saved; whether it did. The engine opens in the background once the
        index answered a search (:meth:`_ranked`), and :meth:`_open`
        settles the index against the files under its lock."""
        if not self._unopened() or shared.settled:
            return False
        found = self._saved_header()
        if found is None:
            return False
        checked = self._unconfirmed
        if checked is None or json.dumps(checked, sort_keys=True) != json.dumps(
            found["about"]["identity"], sort_keys=True
        ):
            return False  # saved for a collection other than the one checked: ask the engine
        now = _fingerprint(self.uri, self.collection)
        if not now:
            return False
        loaded = _index_file.load(
            _index_file.snapshot_path(self.uri, self.collection),
            of=self._of(),
            mark=now,
            dimension=int(found["dimension"]),
        )
        if loaded is None or loaded[1] is None:
            return False
        index, extra = loaded[0], loaded[1]
        shared.index, shared.saved, shared.unlocked = index, True, now
        shared.rows = dict(zip(index.live_ids(), extra, strict=True))
        shared.identity = found["about"]["identity"]
        return True

    def _open_in_background(self) -> None:
        """Open the engine in a thread of its own, so that the writes and
        searches after the first do not wait for it; a failure is logged
        here and raised by the next call that needs the engine."""
        if self._opener is not None:
            return

        def opening() -> None:
            try:
                self._open()
            except Exception as exc:
                log.info("Milvus Lite at %s did not open in the background: %s", self.uri, exc)

        self._opener = threading.Thread(target=opening, name="memrules-milvus-open", daemon=True)
        self._opener.start()

    def _still_unchanged(self, shared: _Shared) -> None:
        """Before a search of an index loaded while the engine had not
        opened the file: drop it unless the collection's files are still
        as it was loaded under (another process may have written since;
        then the search asks the engine)."""
        if shared.unlocked is None:
            return
        if _LOCAL.opened(self.uri):
            self._open()  # settle it against the fingerprint taken under the lock
            return
        if _fingerprint(self.uri, self.collection) != shared.unlocked:
            shared.drop()

    def _ready(self, collection: str) -> Any:
        """The client, with ``collection`` (which exists) loaded: a
        collection another process made or wrote is released until it is
        loaded, and answers no search, query or write before."""
        client = self._open()
        if collection not in self._loaded:
            state = client.get_load_state(collection).get("state")
            if getattr(state, "name", str(state)) != "Loaded":
                client.load_collection(collection)
            self._loaded.add(collection)
            if self._files is not None:
                self._files.watch(os.path.join(self.uri, "collections", collection))
        return client

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
        raw = properties.get(_IDENTITY)
        if raw is None:
            msg = (
                f"collection {self.collection!r} was not made by memrules (it has no "
                f"{_IDENTITY!r} property); name another collection"
            )
            raise StoreError(msg)
        identity: dict[str, Any] = json.loads(raw)
        shared = self._share()
        if shared is not None:
            shared.identity = identity
        return identity

    def dimension(self) -> int | None:
        saved = self._saved_header()
        if saved is not None:
            return int(saved["dimension"])
        client = self._open()
        if not client.has_collection(self.collection):
            return None
        for field in client.describe_collection(self.collection).get("fields", ()):
            if field.get("name") == "dense":
                return int(field["params"]["dim"])
        return None

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
            max_capacity=_PIECES,
            max_length=_PIECE_BYTES,
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
            properties={_IDENTITY: json.dumps(identity, sort_keys=True)},
        )
        self._ready(self.collection)
        shared = self._share()
        if shared is not None:
            with shared.lock:
                shared.index, shared.rows = LocalIndex(dimension), {}
                shared.saved = False
                shared.identity = identity

    def existing(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` the collection holds. On a Milvus Lite file whose
        local index is built, the index answers (no query): it follows
        every write and delete this process makes, and no other process
        writes the file while this one holds it. An index loaded before the
        engine held the file is settled against the files first (another
        process may have written or deleted since: then it is dropped, and
        the engine answers)."""
        shared = self._share()
        if shared is not None:
            self._open()
            with shared.lock:
                if shared.index is not None:
                    return {i for i in ids if i in shared.rows}
        client = self._ready(self.collection)
        found: set[str] = set()
        for start in range(0, len(ids), 512):
            chunk = list(ids[start : start + 512])
            rows = client.query(
                self.collection, filter=f"id in {json.dumps(chunk)}", output_fields=["id"]
            )
            found.update(row["id"] for row in rows)
        return found

    def write(self, rows: Sequence[tuple[StoredMessage, list[float]]]) -> None:
        data: list[dict[str, Any]] = [
            {
                "id": r.id,
                "text": _utf8_prefix(r.text, MAX_TEXT_BYTES),
                "dense": vector,
                "conversation_id": r.scope.conversation_id or "",
                "user": r.scope.user or "",
                "tenant": r.scope.tenant or "",
                "turn": r.turn,
                "exchange": r.exchange,
                "content_hash": r.content_hash,
                "role": r.message.role,
                "message": _pieces(r.payload),
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
                    _row(r.id, r.scope.user, r.scope.tenant, r.scope.conversation_id, v, r.text)
                    for r, v in rows
                )
                shared.rows.update((row["id"], _kept(row)) for row in data)

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

    def _share(self) -> _Shared | None:
        """The shared local index holder of this collection; None for a server."""
        if self._files is None:
            return None
        if self._shared is None:
            self._shared = _LOCAL.acquire((self.uri, self.collection))
        return self._shared

    @contextlib.contextmanager
    def _following(self) -> Iterator[_Shared | None]:
        """Run a write the local index follows (its holder is given, to
        update the index, when the index is built); when the write fails,
        drop the index (the engine may hold part of the write), so the
        next search builds it again."""
        shared = self._share()
        if shared is None:
            yield None
            return
        self._open()  # an index loaded before the engine opened is settled first
        with shared.lock:
            self._count_write(self.collection)
            if shared.index is None:
                shared.mark = None  # the saved index would miss this write
            shared.saved = False
            try:
                yield shared if shared.index is not None else None
            except BaseException:
                shared.drop()
                raise

    def _ranked(self, search: Any, *, opening: bool = True) -> list[tuple[str, float]]:
        """``search(index)`` on the local index, built from the engine
        when it is not, under the index's lock. When the saved index
        answered it before the engine opened the file, the engine opens in
        the background from then on (with ``opening``): not sooner, since
        opening it (importing its client: Python, holding the interpreter's
        lock) would slow the first request it is not needed for."""
        shared = self._share()
        assert shared is not None
        with shared.lock:
            self._still_unchanged(shared)
            if shared.index is None and not self._load_unopened(shared) and not self._load(shared):
                index, rows = self._build()
                shared.index, shared.rows = index, dict(rows)
            found: list[tuple[str, float]] = search(shared.index)
            if opening and shared.unlocked is not None:
                self._open_in_background()
        return found

    def warm(self) -> None:
        """Build the local index now (Milvus Lite), not in the first search."""
        if self._files is not None:
            self._ranked(lambda index: [], opening=False)

    @property
    def ranks_ids(self) -> bool:
        """Milvus Lite ranks ids in its local index."""
        return self._files is not None

    def dense_ranking(
        self, vector: list[float], *, k: int, scope: Scope
    ) -> list[tuple[str, float]]:
        return self._ranked(lambda index: index.dense(vector, k=k, **_parts(scope)))

    def lexical_ranking(self, query: str, *, k: int, scope: Scope) -> list[tuple[str, float]]:
        weights = _weights(query_vector(query))
        return self._ranked(lambda index: index.lexical(weights, k=k, **_parts(scope)))

    def fetch(self, found: Sequence[tuple[str, float]]) -> list[RecallHit]:
        """The records of ``found``, in order, from the rows the local
        index keeps."""
        shared = self._share()
        assert shared is not None
        hits = []
        with shared.lock:
            for record_id, score in found:
                row = self._kept_row(shared, record_id)
                if row is not None:
                    hits.append(_hit(row, record_id, score, _decoded(shared, record_id, row)))
        return hits

    @staticmethod
    def _kept_row(shared: _Shared, record_id: str) -> dict[str, Any] | None:
        row = shared.rows.get(record_id)
        if isinstance(row, bytes):
            row = shared.rows[record_id] = json.loads(row)
        return row

    def _of(self) -> dict[str, Any]:
        """What a saved index of this collection is of."""
        return {
            "engine": self.engine,
            "collection": self.collection,
            "terms": "bm25-weights-blake2b-4",
        }

    def _load(self, shared: _Shared) -> bool:
        """Load the saved index into ``shared``, when the collection's files
        are as they were when it was saved; whether it did."""
        if shared.mark is None or not os.path.isdir(self.uri):
            return False
        loaded = _index_file.load(
            _index_file.snapshot_path(self.uri, self.collection),
            of=self._of(),
            mark=shared.mark,
            dimension=self.dimension() or 0,
        )
        if loaded is None or loaded[1] is None:
            return False
        index, extra = loaded[0], loaded[1]
        shared.index, shared.saved = index, True
        shared.rows = dict(zip(index.live_ids(), extra, strict=True))
        return True

    def _count_write(self, collection: str) -> None:
        """Before a write to ``collection`` of a Milvus Lite file (the
        engine holds it): give its write counter a new value, so no saved
        index or fingerprint taken before the write matches after it."""
        if self._files is not None:
            _index_file.count_write(self.uri, collection)

    def _save(self, shared: _Shared) -> None:
        """Save ``shared``'s index beside the engine's files, with their
        fingerprint now (the last store of the collection closed)."""
        if shared.index is None or shared.saved or not os.path.isdir(self.uri):
            return
        mark = _fingerprint(self.uri, self.collection)
        if not mark:
            return
        ids = shared.index.live_ids()
        extra = []
        for record_id in ids:
            row = shared.rows.get(record_id)
            if row is None:
                return  # a row the index holds but not its fields: not saved
            extra.append(row if isinstance(row, bytes) else json.dumps(row).encode("utf-8"))
        target = _index_file.snapshot_path(self.uri, self.collection)
        about = {"identity": shared.identity} if shared.identity is not None else None
        _index_file.save(target, shared.index, of=self._of(), mark=mark, extra=extra, about=about)

    def _build(self) -> tuple[LocalIndex, dict[str, dict[str, Any]]]:
        """The local index of every record the collection holds, and the
        fields of each."""
        index = LocalIndex(self.dimension() or 0)
        kept: dict[str, dict[str, Any]] = {}
        client = self._ready(self.collection)
        iterator = client.query_iterator(
            self.collection, filter="", output_fields=[*_FIELDS, "dense"], batch_size=2000
        )
        try:
            while batch := iterator.next():
                index.upsert(
                    _row(
                        r["id"], r["user"], r["tenant"], r["conversation_id"], r["dense"], r["text"]
                    )
                    for r in batch
                )
                kept.update((r["id"], _kept(r)) for r in batch)
        finally:
            iterator.close()
        return index, kept

    def persist(self, wrote: bool) -> bool:
        """A server acknowledged the write (it keeps what it acknowledged).
        Milvus Lite appends every write to its write-ahead log before it
        answers, so an acknowledged write survives the process being
        killed (the next open replays the log); the rows are flushed into
        a segment once :data:`_FLUSH_ROWS` are waiting, and when the store
        closes (a flush writes a segment file: 0.1 s each time, and a
        segment per small write slows every later query). The files are
        checked to be the ones opened."""
        if self._files is None:
            return True
        if wrote and self._unflushed >= _FLUSH_ROWS:
            self._flush()
        self._files.check()
        return True

    def confirm(self, ids: Sequence[str]) -> tuple[bool, set[str]]:
        """:meth:`persist` and which of ``ids`` the collection holds. On a
        Milvus Lite file, the ids its upserts answered are the ones held:
        Milvus Lite answers an upsert once its write-ahead log holds the
        rows, and :meth:`persist` checks that the files are the ones
        opened, so no query reads them back. A server is asked."""
        try:
            durable = self.persist(True)
            if self._files is None:
                return durable, self.existing(ids)
            return durable, {i for i in ids if i in self._acknowledged}
        finally:
            self._acknowledged.clear()  # each write is confirmed once

    def _flush(self) -> None:
        self._ready(self.collection).flush(self.collection)
        self._unflushed = 0

    def _hits(self, result: Any, *, absolute: bool) -> list[RecallHit]:
        hits = []
        for found in result[0] if result else ():
            score = float(found["distance"])
            hits.append(_hit(found["entity"], found["id"], abs(score) if absolute else score))
        return hits

    def dense(self, vector: list[float], *, k: int, scope: Scope) -> list[RecallHit]:
        if self._files is not None:
            return self.fetch(self.dense_ranking(vector, k=k, scope=scope))
        result = self._ready(self.collection).search(
            self.collection,
            data=[vector],
            anns_field="dense",
            limit=k,
            filter=_filter(scope),
            output_fields=_FIELDS,
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
            filter=_filter(scope),
            output_fields=_FIELDS,
            search_params={"metric_type": "BM25"},
        )
        # BM25 is never negative; Milvus Lite reports it negated.
        return self._hits(result, absolute=True)

    def collections(self) -> list[str]:
        return list(self._open().list_collections())

    def scan(self, scope: Scope, *, collection: str) -> list[RecallHit]:
        client = self._ready(collection)
        rows = client.query(
            collection, filter=_filter(scope), output_fields=_FIELDS, limit=_QUERY_WINDOW
        )
        if len(rows) < _QUERY_WINDOW:
            return [_hit(row, row["id"], 0.0) for row in rows]
        # More than one query may return: page through all of them.
        iterator = client.query_iterator(
            collection, filter=_filter(scope), output_fields=_FIELDS, batch_size=1000
        )
        hits: list[RecallHit] = []
        try:
            while rows := iterator.next():
                hits.extend(_hit(row, row["id"], 0.0) for row in rows)
        finally:
            iterator.close()
        return hits

    def delete_where(self, scope: Scope, *, collection: str) -> int:
        ids = [hit.id for hit in self.scan(scope, collection=collection)]
        if ids:
            if collection != self.collection:
                try:
                    self._count_write(collection)
                    self._ready(collection).delete(collection, filter=_filter(scope))
                finally:  # another store of this file may search that collection
                    _LOCAL.drop((self.uri, collection))
                return len(ids)
            with self._following() as shared:
                # Listed again under the index's lock: a record another store
                # of this file added since is deleted from the index too.
                ids = [hit.id for hit in self.scan(scope, collection=collection)]
                self._acknowledged.difference_update(ids)
                self._ready(collection).delete(collection, filter=_filter(scope))
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
            last = _LOCAL.release((self.uri, self.collection))
            self._shared = None
            if last is not None:
                with last.lock:
                    self._save(last)


def _row(
    record_id: str,
    user: str | None,
    tenant: str | None,
    conversation_id: str | None,
    vector: Sequence[float],
    text: str,
) -> Row:
    sparse = document_vector(_utf8_prefix(text, MAX_TEXT_BYTES))
    scope = (user or "", tenant or "", conversation_id or "")
    return record_id, scope, vector, sparse


def _kept(row: dict[str, Any]) -> dict[str, Any]:
    """What a hit is made of, of a row as written or read."""
    kept = {name: row[name] for name in _FIELDS if name != "message"}
    kept["message"] = "".join(row["message"])
    return kept


def _parts(scope: Scope) -> dict[str, Any]:
    return {
        "user": scope.user or "",
        "tenant": scope.tenant or "",
        "conversation": scope.conversation_id,
    }


def _decoded(shared: _Shared, record_id: str, row: dict[str, Any]) -> Message:
    """The message of ``row`` (the row ``shared`` holds for ``record_id``),
    decoded once while that row is held."""
    kept = shared.decoded.get(record_id)
    if kept is not None and kept[0] is row:
        return kept[1]
    if len(shared.decoded) >= _DECODED:
        shared.decoded.clear()
    message = decode_message(row["message"])
    shared.decoded[record_id] = (row, message)
    return message


def _hit(row: Any, record_id: str, score: float, message: Message | None = None) -> RecallHit:
    return RecallHit(
        message=decode_message("".join(row["message"])) if message is None else message,
        score=score,
        conversation_id=row["conversation_id"] or None,
        user=row["user"] or None,
        tenant=row["tenant"] or None,
        turn=row["turn"],
        exchange=row["exchange"],
        text=row["text"],
        id=record_id,
    )


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
    :class:`StoreError` on failure, and a :class:`ConfigError` here without
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
