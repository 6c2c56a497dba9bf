"""What a vector store engine implements for `MessageStore`, and the checks of
the names and modes a store is opened with.

`Backend` is the engine's part of a store (Milvus, Qdrant, Valkey): its
collection, writes, deletes and the two rankings; `Ranking` a backend that
ranks ids without reading the records back; `Confirming` one that confirms
a write by reading the ids back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from memrules._core.errors import ConfigError
from memrules._core.seam_protocols import SEARCH_MODES
from memrules._core.seam_records import RecallHit, Scope, StoredMessage

__all__ = [
    "DEFAULT_COLLECTION",
    "MAX_K",
    "Backend",
    "Confirming",
    "Ranking",
    "check_collection",
    "check_mode",
]

DEFAULT_COLLECTION = "memrules_memory"
MAX_K = 1000


class Backend(Protocol):
    """What a store engine does for `MessageStore`. Raises anything
    on failure; the store turns it into `StoreError`."""

    engine: str
    collection: str

    def identity(self) -> dict[str, Any] | None:
        """The embedder identity the collection was made for; None when the
        collection does not exist yet."""

    def dimension(self) -> int | None:
        """The length of the collection's vectors; None when it does not exist."""

    def create(self, dimension: int, identity: dict[str, Any]) -> None:
        """Make the collection for vectors of ``dimension`` floats."""

    def existing(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` the collection holds."""

    def write(self, rows: Sequence[tuple[StoredMessage, list[float]]]) -> None:
        """Store each record with its vector (an upsert by record id)."""

    def delete(self, ids: Sequence[str]) -> None:
        """Remove these records."""

    def persist(self, wrote: bool) -> bool:
        """Make what was written durable (``wrote``: this call wrote
        records) and check that it is: True when it is on disk where the
        store opened its files, or acknowledged by a server that keeps it;
        False when the engine keeps it in memory only. Raises when the
        records cannot be confirmed (the files were removed under the
        process)."""

    def dense(self, vector: list[float], *, k: int, scope: Scope) -> list[RecallHit]:
        """The ``k`` records nearest ``vector`` (cosine), best first."""

    def lexical(self, query: str, *, k: int, scope: Scope) -> list[RecallHit]:
        """The ``k`` best records for ``query`` by BM25, best first."""

    def collections(self) -> list[str]:
        """The names of every collection the engine holds where this store is."""

    def scan(self, scope: Scope, *, collection: str) -> list[RecallHit]:
        """Every record of ``scope`` in ``collection`` (which exists), any order, score 0."""

    def delete_where(self, scope: Scope, *, collection: str) -> int:
        """Delete every record of ``scope`` in ``collection`` (which exists);
        how many there were."""

    def close(self) -> None:
        """Release the client."""


@runtime_checkable
class Ranking(Protocol):
    """A backend that can rank record ids before it decodes the records (an
    embedded engine's local index, `memrules.seams._local_index`; Valkey,
    which holds each ranking's reply undecoded): hybrid search fuses the two
    rankings first and reads back or decodes only the records it keeps.
    ``ranks_ids`` says whether this one does (Milvus and Qdrant servers do
    not)."""

    @property
    def ranks_ids(self) -> bool: ...

    def dense_ranking(
        self, vector: list[float], *, k: int, scope: Scope
    ) -> list[tuple[str, float]]:
        """The ids and scores `Backend.dense` would answer."""

    def lexical_ranking(self, query: str, *, k: int, scope: Scope) -> list[tuple[str, float]]:
        """The ids and scores `Backend.lexical` would answer."""

    def fetch(self, found: Sequence[tuple[str, float]]) -> list[RecallHit]:
        """The records of ``found`` (id, score), in its order, with its scores."""


@runtime_checkable
class Confirming(Protocol):
    """A backend that makes a write durable and reads its records back in
    one round trip (a server: both commands sent at once, after the last
    write it held back to send with them), or from the write's own reply
    (an embedded engine that answers a write once its log holds it),
    instead of `Backend.persist` then `Backend.existing`.
    When it raises, the store removes what the call wrote, as after a
    failed write."""

    def confirm(self, ids: Sequence[str]) -> tuple[bool, set[str]]:
        """What ``persist(True)`` answers, and which of ``ids`` the
        collection holds (``existing``), asked together; raises as they do,
        and as `Backend.write` does for a write it held back."""


def check_mode(mode: object, name: str = "search") -> str:
    if mode not in SEARCH_MODES:
        msg = f"{name}={mode!r} must be one of {', '.join(SEARCH_MODES)}"
        raise ConfigError.single(msg, yaml_path=name)
    return str(mode)


def check_collection(name: object) -> str:
    ok = (
        isinstance(name, str)
        and 0 < len(name) <= 255
        and name[0].isascii()
        and (name[0].isalpha() or name[0] == "_")
        and all(c.isascii() and (c.isalnum() or c == "_") for c in name)
    )
    if not ok:
        msg = (
            f"collection={name!r} must start with a letter or '_' and hold only ASCII letters, "
            "digits and '_' (at most 255)"
        )
        raise ConfigError.single(msg, yaml_path="collection")
    return str(name)
