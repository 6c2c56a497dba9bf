"""The retrieval-memory stores open in this process, shared by their holders.

A `RetrievalStoreConfig` is a value: reading it
opens nothing. Whoever serves requests opens the store it describes through
`SHARED_STORES` and gives it back when done: every holder of one
config value gets the same store (one client, since a Qdrant directory can
be open once per process), and the store is closed when its last holder
releases it. `MemoryPlugin` is the holder in memrules: it
acquires its route's store when it is made and releases it in
`MemoryPlugin.close` (or at the end of a ``with`` block).
"""

from __future__ import annotations

import threading

import attrs

from memrules.memory.binding import open_store
from memrules.memory.config import RetrievalStoreConfig
from memrules.seams._store import MessageStore

__all__ = ["SHARED_STORES", "SharedStores"]


@attrs.define
class _Held:
    settings: RetrievalStoreConfig
    store: MessageStore
    holders: int


class SharedStores:
    """Open stores, one per `RetrievalStoreConfig` value (by identity,
    as a config file's routes share theirs), each counted by its holders."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, _Held] = {}

    def acquire(self, settings: RetrievalStoreConfig) -> MessageStore:
        """The store ``settings`` describe: the one already open for this
        value, else a new one (`open_store`,
        no I/O: it connects on first use). Each call must be paired with
        one `release`."""
        with self._lock:
            held = self._held.get(id(settings))
            if held is None or held.settings is not settings:
                held = _Held(settings=settings, store=open_store(settings), holders=0)
                self._held[id(settings)] = held
            held.holders += 1
            return held.store

    def release(self, settings: RetrievalStoreConfig) -> None:
        """One holder of ``settings``' store is done; the last one closes it."""
        with self._lock:
            held = self._held.get(id(settings))
            if held is None or held.settings is not settings:
                return
            held.holders -= 1
            if held.holders > 0:
                return
            del self._held[id(settings)]
        held.store.close()

    def close(self, settings: RetrievalStoreConfig) -> None:
        """Close ``settings``' store now, whoever still holds it (their
        later calls fail as the store's do after ``close``); a later
        `acquire` opens a new one."""
        with self._lock:
            held = self._held.get(id(settings))
            if held is None or held.settings is not settings:
                return
            del self._held[id(settings)]
        held.store.close()

    def is_open(self, settings: RetrievalStoreConfig) -> bool:
        """Whether a store for ``settings`` is open."""
        with self._lock:
            held = self._held.get(id(settings))
            return held is not None and held.settings is settings


SHARED_STORES = SharedStores()
"""This process's open retrieval-memory stores."""
