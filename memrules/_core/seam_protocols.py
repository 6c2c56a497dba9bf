"""The seam protocols: what a summarizer, an embedder and a vector store do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from memrules._core.messages import Conversation
from memrules._core.seam_records import RecallHit, Scope, StoredMessage, StoreWrite

__all__ = [
    "SEARCH_MODES",
    "Embedder",
    "JSONRequests",
    "SeamCall",
    "Seams",
    "Summarizer",
    "VectorStore",
]

SEARCH_MODES = ("hybrid", "dense", "lexical")
"""How a store searches: both rankings fused, embeddings only, BM25 only."""


@runtime_checkable
class Summarizer(Protocol):
    """Summarizes messages into text. May do I/O; raises on failure."""

    def summarize(self, messages: Conversation) -> str: ...


@runtime_checkable
class JSONRequests(Protocol):
    """A seam that can say, as JSON, the request a call would make, so the
    report records it (and a replay can answer it without the seam). The
    built-in summarizers do; for others the report records the messages."""

    def request_json(self, messages: Conversation) -> dict[str, Any]: ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of ``dimension`` floats, one per text, in
    order (``dimension`` is 0 while unknown: a remote model without a
    configured size tells it with its first answer). ``identity`` names the
    model and every setting that changes its vectors: a collection is bound
    to it, so vectors of two models are never compared."""

    @property
    def dimension(self) -> int: ...

    @property
    def identity(self) -> dict[str, Any]: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@runtime_checkable
class VectorStore(Protocol):
    """Keeps messages moved out of the conversation so they can be found again.

    ``add`` stores every record or raises having stored none that were not
    there before (offloading is all or nothing); a record whose id is stored
    already is kept as it is and not embedded again. ``search`` answers the
    ``k`` best records for ``query`` within ``scope`` (the user and tenant
    exactly; every conversation when ``scope.conversation_id`` is None), best
    first, in the store's search mode unless ``mode`` names another.
    """

    def add(self, records: Sequence[StoredMessage]) -> StoreWrite: ...

    def search(
        self, query: str, *, k: int, scope: Scope, mode: str | None = None
    ) -> tuple[RecallHit, ...]: ...


@attrs.frozen(kw_only=True, slots=True)
class Seams:
    """The seams a pipeline run may use; each absent by default."""

    summarizer: Summarizer | None = None
    store: VectorStore | None = None


@attrs.frozen(kw_only=True, slots=True)
class SeamCall:
    """One call a strategy made through a seam, as the report records it:
    which seam, what was asked (``request``) and what came back
    (``response``), both JSON, or the ``error`` it raised. Deterministic: the
    same input and seam answers record the same call."""

    seam: str
    operation: str
    request: object = None
    response: object = None
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "seam": self.seam,
            "operation": self.operation,
            "request": self.request,
            "response": self.response,
            "error": self.error,
        }
