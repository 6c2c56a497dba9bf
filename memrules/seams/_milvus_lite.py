"""Milvus' connection and, for Milvus Lite, the file's local index.

`MilvusLite` is the part of the Milvus backend that knows the engine and its
file: it opens the client (a server, or Milvus Lite's file) and, for Milvus
Lite, keeps the collection's local index (shared by every store of the
process, `memrules.seams._milvus_indexes`) that ranks ids without the
engine, loads it from its saved file before the engine opens, and saves it
again. The backend's writes, searches and deletes are `memrules.seams.milvus`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from memrules._core.errors import CollectionError
from memrules._core.seam_records import (
    RecallHit,
    Scope,
)
from memrules.seams import _index_file
from memrules.seams._durable import Files
from memrules.seams._lexical import query_vector
from memrules.seams._local_index import LocalIndex
from memrules.seams._milvus_indexes import (
    LOCAL,
    Shared,
    decoded_message,
    files_fingerprint,
)
from memrules.seams._milvus_rows import (
    FIELDS,
    index_row,
    kept_fields,
    row_hit,
    scope_parts,
    sparse_weights,
)

__all__ = [
    "FLUSH_ROWS",
    "IDENTITY",
    "QUERY_WINDOW",
    "MilvusLite",
    "is_server",
    "quiet_unimplemented",
]

IDENTITY = "memrules.embedder"


FLUSH_ROWS = 1024
"""Rows a Milvus Lite store writes before it flushes them into a segment."""


QUERY_WINDOW = 16_384  # the most rows one Milvus query returns


SERVER_SCHEMES = ("http://", "https://", "tcp://", "unix:")


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


def quiet_unimplemented() -> None:
    """Put `_Unimplemented` on gRPC's server logger, once: done when a
    Milvus Lite file is first opened, not when this module is imported."""
    server = logging.getLogger("grpc._server")
    if not any(isinstance(f, _Unimplemented) for f in server.filters):
        server.addFilter(_Unimplemented())


def is_server(uri: str) -> bool:
    """Whether ``uri`` names a Milvus server (else a Milvus Lite file)."""
    return uri.startswith(SERVER_SCHEMES)


class MilvusLite:
    """A Milvus collection's client and, for Milvus Lite, its local index."""

    engine = "milvus"

    def __init__(self, uri: str, collection: str, api_key_env: str | None) -> None:
        self.uri = uri
        self.collection = collection
        self.api_key_env = api_key_env
        self._client: Any = None
        self._loaded: set[str] = set()
        self._files = None if is_server(uri) else Files(uri)
        # Milvus Lite only: the local index of this collection, shared in the process.
        self._shared: Shared | None = None
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
                    quiet_unimplemented()
                client = MilvusClient(uri=self.uri, token=token)
                if self._files is not None:
                    LOCAL.look(self.uri)  # Milvus Lite holds the file's lock now
                    self._files.watch(self.uri)
                self._loaded = set()
                self._client = client
            client = self._client
        shared = self._shared
        if shared is not None and not shared.settled:
            LOCAL.settle((self.uri, self.collection), shared)
        if self._unconfirmed is not None:
            self._confirm(client, self._unconfirmed)
        return client

    def _confirm(self, client: Any, identity: dict[str, Any]) -> None:
        """Check that the collection the engine holds is the one the saved
        index was checked as at start-up (another process may have dropped
        and made it again, for another embedder, before the engine opened):
        a `CollectionError` on every call until it is."""
        stored = None
        if client.has_collection(self.collection):
            properties = client.describe_collection(self.collection).get("properties") or {}
            raw = properties.get(IDENTITY)
            stored = json.loads(raw) if raw is not None else None
        if json.dumps(stored, sort_keys=True) != json.dumps(identity, sort_keys=True):
            msg = (
                f"collection {self.collection!r} of {self.uri} was dropped or made again "
                f"(for embedder {json.dumps(stored, sort_keys=True)}) after this store was "
                f"checked for {json.dumps(identity, sort_keys=True)}; open the store again"
            )
            raise CollectionError(msg)
        self._unconfirmed = None

    def _unopened(self) -> bool:
        """Whether this is a Milvus Lite file this process's engine has not
        opened yet: the saved index may answer until it does."""
        return self._files is not None and self._client is None and not LOCAL.opened(self.uri)

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
        if found["mark"] != files_fingerprint(self.uri, self.collection):
            return None
        return found

    def _load_unopened(self, shared: Shared) -> bool:
        """Load the saved index into ``shared`` before the engine opens the
        file, when the collection's files are as they were when it was
        saved; whether it did. The engine opens in the background once the
        index answered a search (`_ranked`), and `_open`
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
        now = files_fingerprint(self.uri, self.collection)
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

    def _still_unchanged(self, shared: Shared) -> None:
        """Before a search of an index loaded while the engine had not
        opened the file: drop it unless the collection's files are still
        as it was loaded under (another process may have written since;
        then the search asks the engine)."""
        if shared.unlocked is None:
            return
        if LOCAL.opened(self.uri):
            self._open()  # settle it against the fingerprint taken under the lock
            return
        if files_fingerprint(self.uri, self.collection) != shared.unlocked:
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

    def _share(self) -> Shared | None:
        """The shared local index holder of this collection; None for a server."""
        if self._files is None:
            return None
        if self._shared is None:
            self._shared = LOCAL.acquire((self.uri, self.collection))
        return self._shared

    @contextlib.contextmanager
    def _following(self) -> Iterator[Shared | None]:
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
        return self._ranked(lambda index: index.dense(vector, k=k, **scope_parts(scope)))

    def lexical_ranking(self, query: str, *, k: int, scope: Scope) -> list[tuple[str, float]]:
        weights = sparse_weights(query_vector(query))
        return self._ranked(lambda index: index.lexical(weights, k=k, **scope_parts(scope)))

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
                    hits.append(
                        row_hit(row, record_id, score, decoded_message(shared, record_id, row))
                    )
        return hits

    @staticmethod
    def _kept_row(shared: Shared, record_id: str) -> dict[str, Any] | None:
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

    def _load(self, shared: Shared) -> bool:
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

    def _save(self, shared: Shared) -> None:
        """Save ``shared``'s index beside the engine's files, with their
        fingerprint now (the last store of the collection closed)."""
        if shared.index is None or shared.saved or not os.path.isdir(self.uri):
            return
        mark = files_fingerprint(self.uri, self.collection)
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
            self.collection, filter="", output_fields=[*FIELDS, "dense"], batch_size=2000
        )
        try:
            while batch := iterator.next():
                index.upsert(
                    index_row(
                        r["id"], r["user"], r["tenant"], r["conversation_id"], r["dense"], r["text"]
                    )
                    for r in batch
                )
                kept.update((r["id"], kept_fields(r)) for r in batch)
        finally:
            iterator.close()
        return index, kept

    def confirm(self, ids: Sequence[str]) -> tuple[bool, set[str]]:
        """`persist` and which of ``ids`` the collection holds. On a
        Milvus Lite file, the ids its upserts answered are the ones held:
        Milvus Lite answers an upsert once its write-ahead log holds the
        rows, and `persist` checks that the files are the ones
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

    def persist(self, wrote: bool) -> bool:
        """A server acknowledged the write (it keeps what it acknowledged).
        Milvus Lite appends every write to its write-ahead log before it
        answers, so an acknowledged write survives the process being
        killed (the next open replays the log); the rows are flushed into
        a segment once `FLUSH_ROWS` are waiting, and when the store
        closes (a flush writes a segment file: 0.1 s each time, and a
        segment per small write slows every later query). The files are
        checked to be the ones opened."""
        if self._files is None:
            return True
        if wrote and self._unflushed >= FLUSH_ROWS:
            self._flush()
        self._files.check()
        return True
