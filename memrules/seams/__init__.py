"""The seams: where compaction reaches outside the pure core.

A seam is a Protocol. Strategies find seams in their context and do nothing
when the one they need is absent. Concrete seams (an OpenAI-compatible
summarizer, Milvus and Qdrant stores, embedders) implement these protocols.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

from memrules._messages import Conversation

__all__ = ["SeamCall", "Seams", "Summarizer", "VectorStore"]


@runtime_checkable
class Summarizer(Protocol):
    """Summarizes messages into text. May do I/O; raises on failure."""

    def summarize(self, messages: Conversation) -> str: ...


@runtime_checkable
class VectorStore(Protocol):
    """Keeps messages moved out of the conversation so they can be found again.

    ``add`` stores all of ``messages`` or raises having stored none of them:
    offloading is all or nothing.
    """

    def add(self, messages: Conversation) -> None: ...


@attrs.frozen(kw_only=True, slots=True)
class Seams:
    """The seams a pipeline run may use; each absent by default."""

    summarizer: Summarizer | None = None
    store: VectorStore | None = None


@attrs.frozen(kw_only=True, slots=True)
class SeamCall:
    """One call a strategy made through a seam, as the report records it:
    which seam, what was asked (``request``, JSON-able) and what came back."""

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
