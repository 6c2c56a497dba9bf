"""The local indexes of Milvus Lite collections, shared by every store of this
process that opens the same file and collection.

A `Shared` entry holds a collection's `LocalIndex`, its rows and their
decoded messages, and the fingerprint of the file it was built or loaded
under; `LOCAL` is the process's table of them (`Indexes`), taken and
released by each store, and watched for the file changing under it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from memrules._core.messages import Message
from memrules._core.seam_records import (
    decode_message,
)
from memrules.seams import _index_file
from memrules.seams._local_index import LocalIndex

DECODED = 4096  # hits whose decoded messages a collection's index keeps at most


class Shared:
    """The local index of one Milvus Lite collection (see
    `memrules.seams._local_index`), the fields of each record a hit
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
    searches (see `search_unopened`): ``unlocked`` is then the
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


class Indexes:
    """The local indexes of the Milvus Lite collections this process has
    open, by (file, collection). Milvus Lite serves one file to every
    client in the process and locks it against other processes, so the
    stores of one file in this process share one index per collection,
    which lives while one of them holds it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[str, str], Shared] = {}
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
                self._marks[(uri, name)] = files_fingerprint(uri, name)

    def opened(self, uri: str) -> bool:
        """Whether this process's engine has opened ``uri`` (and holds its lock)."""
        with self._lock:
            return uri in self._seen

    def acquire(self, key: tuple[str, str]) -> Shared:
        with self._lock:
            shared = self._held.get(key)
            if shared is None:
                settled = key[0] in self._seen
                mark = self._marks.pop(key, None) if settled else None
                shared = self._held[key] = Shared(mark, settled=settled)
            shared.holders += 1
            return shared

    def settle(self, key: tuple[str, str], shared: Shared) -> None:
        """Give ``shared``, acquired before the engine opened the file, the
        fingerprint taken once it did (`look`); an index it loaded
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

    def release(self, key: tuple[str, str]) -> Shared | None:
        """Let go of ``key``'s holder; it, when this was its last store."""
        with self._lock:
            shared = self._held[key]
            shared.holders -= 1
            if not shared.holders:
                del self._held[key]
                return shared
        return None


LOCAL = Indexes()


def files_fingerprint(uri: str, collection: str) -> list[list[Any]] | None:
    """The fingerprint of ``collection``'s files in the Milvus Lite file
    ``uri`` and of its write counter (see `memrules.seams._index_file`)."""
    return _index_file.fingerprint(
        os.path.join(uri, "collections", collection),
        writes=_index_file.writes_path(uri, collection),
    )


def decoded_message(shared: Shared, record_id: str, row: dict[str, Any]) -> Message:
    """The message of ``row`` (the row ``shared`` holds for ``record_id``),
    decoded once while that row is held."""
    kept = shared.decoded.get(record_id)
    if kept is not None and kept[0] is row:
        return kept[1]
    if len(shared.decoded) >= DECODED:
        shared.decoded.clear()
    message = decode_message(row["message"])
    shared.decoded[record_id] = (row, message)
    return message
