"""Local mode's SQLite file, read and written beside `qdrant_client`: a write
committed to the log before it returns, many points' payloads read at once,
the file closed, and a batch of writes in one transaction.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import uuid
from collections.abc import Iterator
from typing import Any

__all__ = [
    "close_storage",
    "commit_to_the_log",
    "one_transaction",
    "payloads",
    "point_id_of",
    "record_id_of",
]

log = logging.getLogger("memrules.seams")


def point_id_of(record_id: str) -> str:
    """A record's id as a Qdrant point id (a UUID)."""
    return str(uuid.UUID(hex=record_id))


def record_id_of(point_id: object) -> str:
    """The record id a Qdrant point id was made from."""
    return uuid.UUID(str(point_id)).hex


def commit_to_the_log(client: Any, collection: str) -> None:
    """Put the SQLite file local mode keeps ``collection`` in into
    write-ahead-log mode with ``synchronous=NORMAL``; whether it could.

    Local mode commits every point in a transaction of its own, and SQLite's
    default journal syncs the disk several times per commit: a write of 64
    memories costs 64 rounds of ``fsync`` (30 ms each on a busy disk), far
    more than embedding them. In WAL mode a commit appends to the log and
    the disk is synced at checkpoints: a committed point survives the
    process being killed (the log is in the file system); an operating
    system crash or power loss can undo the last commits. The connection is
    qdrant-client's own (``QdrantClient._client.collections[...].storage``,
    not a public API): when it is not where this looks, nothing changes."""
    try:
        connection = client._client.collections[collection].storage.storage
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
    except Exception:  # another qdrant-client layout: keep its own settings
        return


def payloads(client: Any, collection: str, ids: list[str]) -> list[bytes] | None:
    """The payload of each of ``ids`` (the local index's live rows, in row
    order) as JSON bytes, read from local mode by id (a read that checks
    no filter point by point): saved with the index, so the next process
    answers its first searches before local mode opens; None when local
    mode does not hold every one of them."""
    found: dict[str, bytes] = {}
    try:
        for start in range(0, len(ids), 512):
            points = client.retrieve(
                collection,
                ids=[point_id_of(i) for i in ids[start : start + 512]],
                with_payload=True,
                with_vectors=False,
            )
            for point in points:
                found[record_id_of(point.id)] = json.dumps(point.payload or {}).encode("utf-8")
    except Exception as exc:  # saving the payloads only spares the next process a wait
        log.info("the payloads of %r were not saved with its index: %s", collection, exc)
        return None
    if len(found) != len(ids):
        return None
    return [found[i] for i in ids]


def close_storage(client: Any) -> bool:
    """Close the SQLite files of every collection local mode holds,
    leaving its directory lock held (`QdrantClient.close` closes
    them, then lets go of the lock); whether it could. On the last close
    SQLite folds its write-ahead log into the file and removes the log, so
    the files are as the next process finds them. Local mode's collections
    are qdrant-client's own (``QdrantClient._client.collections``, not a
    public API): when they are not where this looks, nothing is closed and
    no index is saved (the next process builds it)."""
    try:
        collections = list(client._client.collections.values())
        for collection in collections:
            collection.close()
    except Exception:  # another qdrant-client layout: the next process builds the index
        return False
    return True


class _Deferred:
    """A SQLite connection whose ``with`` block neither commits nor rolls
    back: the transaction around it (`one_transaction`) does."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)

    def __enter__(self) -> _Deferred:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@contextlib.contextmanager
def one_transaction(client: Any, collection: str) -> Iterator[None]:
    """One SQLite transaction for every point written inside: local mode
    commits each point in a transaction of its own (a commit per memory,
    which costs more than building the point), so this hands it the
    connection with a ``with`` block that does nothing, and commits once
    at the end, or rolls back every point of the write when it fails
    (the points the write put in local mode's memory are then removed by
    the store's undo). The connection is qdrant-client's own, as in
    `commit_to_the_log`: when it is not where this looks, each
    point commits on its own as before."""
    try:
        storage = client._client.collections[collection].storage
        connection = storage.storage
    except Exception:  # another qdrant-client layout: its own transactions
        connection = None
    if not isinstance(connection, sqlite3.Connection):
        yield
        return
    storage.storage = _Deferred(connection)
    try:
        with connection:
            yield
    finally:
        storage.storage = connection
