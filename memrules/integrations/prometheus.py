"""Prometheus metrics for compaction (the ``prometheus`` extra).

=========================================  =================================================
``memrules_runs_total``                    pipeline runs, by ``operation`` (apply, compress)
                                           and ``stop_reason`` (``error`` for a run that raised)
``memrules_strategy_runs_total``           strategy runs, by ``strategy`` and ``outcome``
                                           (``changed``, ``unchanged``, ``error``)
``memrules_tokens_reclaimed_total``        tokens strategies removed, by ``strategy``
``memrules_over_budget_total``             runs whose output is still over its budget (see
                                           the ``over_budget`` setting), by ``operation``
``memrules_apply_duration_seconds``        how long a run took (histogram), by ``operation``
``memrules_cache_input_tokens_total``      input tokens sent, by ``operation`` and ``served``
                                           (``cached``, ``uncached``: what the provider's
                                           prompt cache serves), runs that measured it only
``memrules_cache_cost_units_total``        what those requests cost, in input-token units
=========================================  =================================================

Retrieval memory (`PrometheusRetrievalObserver`, a
`RetrievalObserver`), named as the reference router
names them:

===========================================  ===============================================
``llm_memory_retrieval_total``               retrievals, by ``backend`` and ``status``
                                             (``hit``, ``miss``, ``error``: a store or
                                             embedder that failed; the request went on)
``llm_memory_retrieval_latency_seconds``     how long the store and embedder took
                                             (histogram), by ``backend``
``llm_memory_retrieval_results``             memories kept per retrieval (histogram), by
                                             ``backend``
``llm_memory_retrieval_skipped_total``       requests memory was not asked for, by
                                             ``reason`` (``no_scope``: no user or tenant,
                                             ``no_question``, ``small_talk``)
``llm_memory_store_operations_total``        writes, forgets and listings, by ``backend``,
                                             ``operation`` (store, forget, list) and
                                             ``status`` (stored, duplicate, skipped, done,
                                             error)
===========================================  ===============================================

No user, tenant or conversation label, ever: such labels make a series per
conversation, which no Prometheus survives. ``namespace`` replaces the
``memrules`` prefix of the compaction metrics:

    from prometheus_client import start_http_server
    from memrules import MemoryPlugin, load_config, load_pipeline
    from memrules.integrations.prometheus import PrometheusRetrievalObserver, PrometheusObserver

    pipeline = load_pipeline("memrules.yaml", observers=[PrometheusObserver()])
    config = load_config("routes.yaml")
    observers = [PrometheusRetrievalObserver()]
    support = MemoryPlugin.from_config(config, route="support", memory_observers=observers)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from memrules._core.errors import ConfigError
from memrules._core.public_names import report_public_module
from memrules._core.report import CompressionAction, CompressionResult
from memrules._engine.observe import RunInfo, StepInfo
from memrules.integrations._extras import require
from memrules.memory.metrics import RetrievalEvent, StoreEvent

__all__ = [
    "DURATION_BUCKETS",
    "RESULT_BUCKETS",
    "RETRIEVAL_BUCKETS",
    "PrometheusObserver",
    "PrometheusRetrievalObserver",
    "outcome",
]

_prometheus: Any = require("prometheus_client", "prometheus")

DURATION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
"""Seconds: a cached agent-loop request takes well under a millisecond; a
first count of a long history or a summarizer call takes seconds."""


def outcome(action: CompressionAction) -> str:
    """``error``, ``changed`` or ``unchanged``: a strategy run's outcome label."""
    if action.error is not None:
        return "error"
    return "changed" if action.changed else "unchanged"


class PrometheusObserver:
    """A `PipelineObserver` that counts.

    ``registry`` is prometheus_client's default one unless given. Make one
    observer per registry and share it between pipelines: registering the
    same metric twice is a `ConfigError`.
    """

    __slots__ = (
        "cache_cost",
        "cache_tokens",
        "duration",
        "over_budget",
        "runs",
        "strategy_runs",
        "tokens_reclaimed",
    )

    def __init__(
        self,
        registry: Any = None,
        *,
        namespace: str = "memrules",
        buckets: Sequence[float] = DURATION_BUCKETS,
    ) -> None:
        registry = _prometheus.REGISTRY if registry is None else registry
        try:
            self.runs = _prometheus.Counter(
                "runs",
                "Pipeline runs, by operation and stop reason.",
                ["operation", "stop_reason"],
                namespace=namespace,
                registry=registry,
            )
            self.strategy_runs = _prometheus.Counter(
                "strategy_runs",
                "Strategy runs, by strategy and outcome (changed, unchanged, error).",
                ["strategy", "outcome"],
                namespace=namespace,
                registry=registry,
            )
            self.tokens_reclaimed = _prometheus.Counter(
                "tokens_reclaimed",
                "Tokens removed from conversations, by strategy.",
                ["strategy"],
                namespace=namespace,
                registry=registry,
            )
            self.cache_tokens = _prometheus.Counter(
                "cache_input_tokens",
                "Input tokens of the requests sent, by whether the provider's prompt cache "
                "serves them (cached, uncached); runs that measured the cache only.",
                ["operation", "served"],
                namespace=namespace,
                registry=registry,
            )
            self.cache_cost = _prometheus.Counter(
                "cache_cost_units",
                "What the requests sent cost, in input-token units (one uncached token: 1), "
                "under the prompt cache's rule; runs that measured the cache only.",
                ["operation"],
                namespace=namespace,
                registry=registry,
            )
            self.over_budget = _prometheus.Counter(
                "over_budget",
                "Pipeline runs whose output is still over its budget (what could not be "
                "removed costs more), by operation.",
                ["operation"],
                namespace=namespace,
                registry=registry,
            )
            self.duration = _prometheus.Histogram(
                "apply_duration_seconds",
                "How long a pipeline run took, by operation.",
                ["operation"],
                namespace=namespace,
                registry=registry,
                buckets=tuple(buckets),
            )
        except ValueError as exc:  # prometheus_client: "Duplicated timeseries"
            msg = (
                f"cannot register memrules metrics: {exc}; make one PrometheusObserver "
                "per registry and share it, or give another namespace"
            )
            raise ConfigError.single(msg) from None

    def observe_run(self, run: RunInfo, proceed: Callable[[], CompressionResult]) -> None:
        started = time.perf_counter()
        try:
            result = proceed()
        except BaseException:
            self.runs.labels(run.operation, "error").inc()
            raise
        self.duration.labels(run.operation).observe(time.perf_counter() - started)
        self.runs.labels(run.operation, result.report.stop_reason.value).inc()
        if result.report.over_budget:
            self.over_budget.labels(run.operation).inc()
        cache = result.report.cache
        if cache is not None:
            self.cache_tokens.labels(run.operation, "cached").inc(cache.cached)
            self.cache_tokens.labels(run.operation, "uncached").inc(cache.uncached)
            self.cache_cost.labels(run.operation).inc(cache.cost)

    def observe_step(self, step: StepInfo, proceed: Callable[[], CompressionAction]) -> None:
        action = proceed()
        self.strategy_runs.labels(step.strategy, outcome(action)).inc()
        reclaimed = action.tokens_before - action.tokens_after
        if action.error is None and reclaimed > 0:
            self.tokens_reclaimed.labels(step.strategy).inc(reclaimed)

    def __repr__(self) -> str:
        return "PrometheusObserver()"


RETRIEVAL_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
"""Seconds: a Milvus or Qdrant server answers in milliseconds; an embedded
engine over a large store, or a remote embedder, in hundreds."""

RESULT_BUCKETS = (0, 1, 2, 3, 5, 10, 20, 50, 100)
"""Memories kept per retrieval (``retrieval_limit`` is at most 100)."""


class PrometheusRetrievalObserver:
    """A `RetrievalObserver` that counts retrieval
    memory's events as the module docs list (no user label). ``registry``
    is prometheus_client's default one unless given. Make one per registry
    and share it between routes: registering the same metric twice is a
    `ConfigError`."""

    __slots__ = ("latency", "results", "retrievals", "skipped", "store_operations")

    def __init__(
        self,
        registry: Any = None,
        *,
        buckets: Sequence[float] = RETRIEVAL_BUCKETS,
        result_buckets: Sequence[float] = RESULT_BUCKETS,
    ) -> None:
        registry = _prometheus.REGISTRY if registry is None else registry
        try:
            self.retrievals = _prometheus.Counter(
                "llm_memory_retrieval_total",
                "Memory retrievals, by backend and status (hit, miss, error).",
                ["backend", "status"],
                registry=registry,
            )
            self.latency = _prometheus.Histogram(
                "llm_memory_retrieval_latency_seconds",
                "How long a memory retrieval took (embedding and search), by backend.",
                ["backend"],
                registry=registry,
                buckets=tuple(buckets),
            )
            self.results = _prometheus.Histogram(
                "llm_memory_retrieval_results",
                "Memories kept per retrieval, by backend.",
                ["backend"],
                registry=registry,
                buckets=tuple(result_buckets),
            )
            self.skipped = _prometheus.Counter(
                "llm_memory_retrieval_skipped_total",
                "Requests memory was not asked for, by reason (no_scope, no_question, small_talk).",
                ["reason"],
                registry=registry,
            )
            self.store_operations = _prometheus.Counter(
                "llm_memory_store_operations_total",
                "Memory writes, forgets and listings, by backend, operation and status.",
                ["backend", "operation", "status"],
                registry=registry,
            )
        except ValueError as exc:  # prometheus_client: "Duplicated timeseries"
            msg = (
                f"cannot register memrules memory metrics: {exc}; make one "
                "PrometheusRetrievalObserver per registry and share it"
            )
            raise ConfigError.single(msg) from None

    def on_retrieval(self, event: RetrievalEvent) -> None:
        if event.status == "skipped":
            self.skipped.labels(event.skipped or "other").inc()
            return
        self.retrievals.labels(event.backend, event.status).inc()
        self.latency.labels(event.backend).observe(event.seconds)
        if event.status != "error":
            self.results.labels(event.backend).observe(event.results)

    def on_store(self, event: StoreEvent) -> None:
        self.store_operations.labels(event.backend, event.operation, event.status).inc()

    def __repr__(self) -> str:
        return "PrometheusRetrievalObserver()"


report_public_module(__name__, __all__, globals())
del report_public_module
