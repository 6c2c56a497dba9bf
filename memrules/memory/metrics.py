"""Watching retrieval memory: the events the shell reports, and the
observer protocol that receives them.

Every retrieval that asked the store is one `RetrievalEvent`
(``hit``, ``miss`` or ``error``, with its latency and how many memories it
kept); a retrieval that did not ask (no user or tenant, no question, small
talk) is one too, with ``status="skipped"`` and the short reason. Every
write, forget and listing is one `StoreEvent`. Events carry no user,
tenant, conversation or text: labels made of those make a time series per
user, which no metrics system survives, and would put who asked what in
the metrics.

`PrometheusRetrievalObserver` turns
them into Prometheus metrics (``llm_memory_retrieval_total{backend,
status}``, a latency histogram and a result-count histogram). An observer
that raises is logged and otherwise ignored: metrics never fail a request.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Literal, Protocol, runtime_checkable

import attrs

__all__ = ["RetrievalEvent", "RetrievalObserver", "StoreEvent", "notify"]

log = logging.getLogger("memrules.memory")


@attrs.frozen(kw_only=True, slots=True)
class RetrievalEvent:
    """One retrieval: the store's ``backend`` (``milvus``, ``qdrant``, or
    ``unknown`` for a store of your own), its ``status`` (``hit``, ``miss``,
    ``error``, ``skipped``), the ``seconds`` the store and embedder took
    (0 when skipped), how many memories it kept (``results``), and why it
    was skipped (``skipped``: ``no_scope``, ``no_question``, ``small_talk``)."""

    backend: str
    status: Literal["hit", "miss", "error", "skipped"]
    seconds: float = 0.0
    results: int = 0
    skipped: str | None = None


@attrs.frozen(kw_only=True, slots=True)
class StoreEvent:
    """One write, forget or listing: the ``backend``, the ``operation``
    (``store``, ``forget``, ``list``), its ``status`` (``stored``,
    ``duplicate``, ``skipped`` for a turn not worth keeping, ``done``,
    ``error``) and the ``seconds`` it took."""

    backend: str
    operation: Literal["store", "forget", "list"]
    status: Literal["stored", "duplicate", "skipped", "blocked", "done", "error"]
    seconds: float = 0.0


@runtime_checkable
class RetrievalObserver(Protocol):
    """Receives retrieval memory's events (see the module docs)."""

    def on_retrieval(self, event: RetrievalEvent) -> None: ...

    def on_store(self, event: StoreEvent) -> None: ...


def notify(observers: Iterable[RetrievalObserver], event: RetrievalEvent | StoreEvent) -> None:
    """Hand ``event`` to every observer; one that raises is logged and skipped."""
    for observer in observers:
        try:
            if isinstance(event, RetrievalEvent):
                observer.on_retrieval(event)
            else:
                observer.on_store(event)
        except Exception:
            log.exception("memory observer %r failed; the request goes on", observer)
