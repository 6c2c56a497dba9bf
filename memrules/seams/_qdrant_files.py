"""A Qdrant store's files and local mode's opening.

Local mode (Qdrant's embedded engine, on disk) holds a collection's
directory under a lock while it is open, and importing `qdrant_client` is
slow. `QdrantFiles` is the part of the Qdrant backend that knows the files:
it opens the client (a server, in memory or on disk), and before local mode
opens on disk lets a saved index answer (`memrules.seams._index_file`),
checking each time that the files are still as the index was saved under,
then opens local mode in the background.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from typing import Any

from memrules._core.errors import CollectionError
from memrules.seams import _index_file
from memrules.seams._durable import Files
from memrules.seams._local_index import LocalIndex

__all__ = ["IDENTITY", "MEMORY", "QdrantFiles"]

MEMORY = ":memory:"
"""The ``path`` that keeps a local-mode store in memory only."""

IDENTITY = "memrules_embedder"
"""The collection metadata key of the embedder identity it was made for."""

log = logging.getLogger("memrules.seams")


class QdrantFiles:
    """A Qdrant collection's client and, on disk, its files and saved index."""

    engine = "qdrant"

    def __init__(
        self, *, url: str | None, path: str | None, collection: str, api_key_env: str | None
    ) -> None:
        self.url = url
        self.path = path
        self.collection = collection
        self.api_key_env = api_key_env
        self._client: Any = None
        self._files = None if url is not None or path in (None, MEMORY) else Files(str(path))
        # Local mode only: this process holds the collection (see _local_index).
        self._index: LocalIndex | None = None
        # On disk: the fingerprint of the collection's files when local mode
        # opened them (None once this process changed them first), and
        # whether the index is the one saved (nothing to save on close).
        self._mark: list[list[Any]] | None = None
        self._saved = False
        self._tuned = False
        # On disk: the collection's write counter as this process last knew it
        # under local mode's lock (what a fingerprint at close must still hold).
        self._counter: str | None = None
        # Before local mode opens (on disk): the saved index may answer
        # searches. ``_unlocked`` is the fingerprint it was loaded under
        # (checked before each search, and once local mode holds the
        # directory), ``_rows`` each live record's payload as saved (JSON
        # bytes, decoded when a hit needs it), ``_unconfirmed`` the identity
        # the saved index answered the start-up check with, until local mode
        # confirms the collection is that one.
        self._unlocked: list[list[Any]] | None = None
        self._rows: dict[str, bytes | dict[str, Any]] | None = None
        self._unconfirmed: dict[str, Any] | None = None
        self._identity: dict[str, Any] | None = None
        self._opening = threading.Lock()  # held while local mode opens
        self._state = threading.RLock()  # the index against the background opening
        self._opener: threading.Thread | None = None

    def _open(self) -> Any:
        with self._opening:
            if self._client is None:
                import warnings

                from qdrant_client import QdrantClient

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # local mode warns about payload indexes
                    if self.url is not None:
                        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
                        client = QdrantClient(url=self.url, api_key=key or None)
                    elif self.path == MEMORY:
                        client = QdrantClient(location=MEMORY)
                    else:
                        client = QdrantClient(path=self.path)
                        # Taken once local mode holds the directory's lock.
                        self._settle(self._fingerprint())
                if self._files is not None:
                    self._files.watch(self._files.root, self._storage())
                self._client = client
            client = self._client
        if self._unconfirmed is not None:
            self._confirm(client, self._unconfirmed)
        return client

    def _settle(self, mark: list[list[Any]] | None) -> None:
        """Take ``mark``, the fingerprint local mode found the files with
        once it held the directory: an index loaded from the saved file
        before then stays only when the files are still as it was loaded
        under (no other process wrote in between); the hits are read from
        local mode from now on."""
        with self._state:
            self._mark = mark
            self._counter = _index_file.counted(mark)
            if self._unlocked is not None and mark != self._unlocked:
                self._index, self._saved = None, False
            self._unlocked, self._rows = None, None

    def _confirm(self, client: Any, identity: dict[str, Any]) -> None:
        """Check that the collection local mode holds is the one the saved
        index was checked as at start-up (another process may have dropped
        and made it again, for another embedder, before local mode opened):
        a `CollectionError` on every call until it is."""
        stored = None
        if client.collection_exists(self.collection):
            stored = (client.get_collection(self.collection).config.metadata or {}).get(IDENTITY)
        if json.dumps(stored, sort_keys=True) != json.dumps(identity, sort_keys=True):
            msg = (
                f"collection {self.collection!r} at {self.path} was dropped or made again "
                f"(for embedder {json.dumps(stored, sort_keys=True)}) after this store was "
                f"checked for {json.dumps(identity, sort_keys=True)}; open the store again"
            )
            raise CollectionError(msg)
        self._unconfirmed = None

    # --- before local mode opens (on disk) ------------------------------------------------

    def _unopened(self) -> bool:
        """Whether this is local mode on disk, not opened yet: the saved
        index may answer until it is."""
        return self._files is not None and self._client is None

    def _saved_header(self) -> dict[str, Any] | None:
        """The saved index's header, when local mode has not opened, the
        collection's files (and write counter) are as they were when it was
        saved (taken now), and it names the collection's embedder identity
        and holds each record's payload; else None (ask local mode)."""
        if not self._unopened():
            return None
        assert self._files is not None
        found = _index_file.header(
            _index_file.snapshot_path(self._files.root, self.collection), of=self._of()
        )
        if found is None or not isinstance(found.get("about"), dict):
            return None
        if "identity" not in found["about"] or not found.get("mark"):
            return None
        if not any(a[0] == "extra" for a in found.get("arrays", ())):
            return None
        if found["mark"] != self._fingerprint():
            return None
        return found

    def _load_unopened(self) -> bool:
        """Load the saved index, with each record's payload, before local
        mode opens the directory, when the files are as they were when it
        was saved and it is of the collection checked at start-up; whether
        it did."""
        found = self._saved_header()
        if found is None or self._unconfirmed is None:
            return False
        if json.dumps(self._unconfirmed, sort_keys=True) != json.dumps(
            found["about"]["identity"], sort_keys=True
        ):
            return False  # saved for a collection other than the one checked
        assert self._files is not None
        now = self._fingerprint()
        if not now:
            return False
        loaded = _index_file.load(
            _index_file.snapshot_path(self._files.root, self.collection),
            of=self._of(),
            mark=now,
            dimension=int(found["dimension"]),
        )
        if loaded is None or loaded[1] is None:
            return False
        index, extra = loaded[0], loaded[1]
        self._index, self._saved, self._unlocked = index, True, now
        self._rows = dict(zip(index.live_ids(), extra, strict=True))
        return True

    def _open_in_background(self) -> None:
        """Open local mode in a thread of its own, once the saved index
        answered a search (not sooner: importing ``qdrant_client`` holds the
        interpreter's lock, and would slow the first request); a failure is
        logged here and raised by the next call that needs local mode."""
        if self._opener is not None:
            return

        def opening() -> None:
            try:
                self._open()
            except Exception as exc:
                log.info(
                    "Qdrant local mode at %s did not open in the background: %s", self.path, exc
                )

        self._opener = threading.Thread(target=opening, name="memrules-qdrant-open", daemon=True)
        self._opener.start()

    def _directory(self) -> str:
        """Where local mode keeps this collection's files."""
        return os.path.join(str(self.path), "collection", self.collection)

    def _storage(self) -> str:
        """Where local mode keeps this collection's points."""
        return os.path.join(self._directory(), "storage.sqlite")

    def _fingerprint(self) -> list[list[Any]] | None:
        """The fingerprint of this collection's files and write counter."""
        assert self._files is not None
        return _index_file.fingerprint(
            self._directory(), writes=_index_file.writes_path(self._files.root, self.collection)
        )

    def _count_write(self, collection: str | None = None) -> None:
        """Before a write to ``collection`` (this store's by default), on
        disk: give its write counter a new value, while local mode holds the
        directory, so no saved index taken before the write matches after."""
        if self._files is None:
            return
        value = _index_file.count_write(self._files.root, collection or self.collection)
        if collection in (None, self.collection):
            self._counter = value

    def _of(self) -> dict[str, Any]:
        """What a saved index of this collection is of."""
        return {"engine": self.engine, "collection": self.collection}
