"""A trace's first line: the format, its version, the memrules that wrote it,
and what each pipeline was (see `memrules._trace.record`)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from memrules._config.load import service_config
from memrules._core.seam_protocols import JSONRequests
from memrules._io.version import memrules_version
from memrules._runtime.logged import (
    LoggedSummarizer,
)
from memrules._runtime.pipeline import Pipeline
from memrules._trace.canonical import (
    canonical_config,
    config_sha256,
    described,
    encoder_fingerprint,
)

__all__ = [
    "READS_VERSIONS",
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "TraceHeader",
    "UnreplayableStrategyWarning",
    "not_rebuildable",
    "pipeline_header",
]


TRACE_FORMAT = "memrules.trace"
TRACE_VERSION = 2
READS_VERSIONS = (1, 2)
"""The format versions `read_trace` reads (1: every input in full)."""


def _version() -> str:
    return memrules_version()


def _seams_header(
    pipeline: Pipeline, *, extractor: object = None, resolver: object = None
) -> dict[str, Any]:
    summarizer = pipeline.seams.summarizer
    inner = summarizer.inner if isinstance(summarizer, LoggedSummarizer) else summarizer
    store = pipeline.seams.store
    return {
        "summarizer": None
        if inner is None
        else {"repr": described(inner), "json_requests": isinstance(inner, JSONRequests)},
        "store": None if store is None else described(store),
        "graph_extractor": None if extractor is None else described(extractor),
        "context_window_resolver": None if resolver is None else described(resolver),
    }


class UnreplayableStrategyWarning(UserWarning):
    """A trace is being recorded with a strategy its replay cannot rebuild
    (a closure whose parameters it cannot hold): said when it is recorded,
    not first when ``memrules replay`` refuses it."""


def not_rebuildable(canonical: Mapping[str, Any]) -> list[str]:
    """The strategies of a canonical config that a replay cannot rebuild,
    each as ``"strategies[i] (type, code)"``."""
    return [
        f"strategies[{i}] ({s.get('type')}, {s.get('code')})"
        for i, s in enumerate(canonical.get("strategies", ()))
        if isinstance(s, Mapping) and s.get("parameters") == "unknown"
    ]


def pipeline_header(name: str, pipeline: Pipeline, *, plugin: bool = False) -> dict[str, Any]:
    """What a trace's header says of one pipeline (see the module docs).

    A strategy the replay cannot rebuild is listed under
    ``"not_rebuildable"`` (the key is there only then) and warned about
    with `UnreplayableStrategyWarning`: such a trace replays only
    with the pipeline passed in (``replay_trace(path, pipelines=...)``)."""
    canonical = canonical_config(pipeline.config)
    config = service_config(pipeline.config)
    unknown = not_rebuildable(canonical)
    if unknown:
        msg = (
            f"pipeline {name!r}: {', '.join(unknown)} is a closure whose parameters a trace "
            "cannot hold, so `memrules replay` cannot rebuild it; build it with a factory "
            "marked @strategy_factory, or write it as an attrs class"
        )
        warnings.warn(msg, UnreplayableStrategyWarning, stacklevel=3)
    return {
        "name": name,
        "config": canonical,
        "config_sha256": config_sha256(canonical),
        "max_passes": pipeline.max_passes,
        **encoder_fingerprint(pipeline.counter),
        "seams": _seams_header(
            pipeline,
            extractor=config.graph_extractor if plugin else None,
            resolver=config.context_window_resolver if plugin else None,
        ),
        **({"not_rebuildable": unknown} if unknown else {}),
    }


@attrs.frozen(kw_only=True, slots=True)
class TraceHeader:
    """A trace's first line, read: the format version, the memrules that
    wrote it, and each pipeline's entry (as `pipeline_header` wrote it)."""

    version: int
    memrules: str
    pipelines: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": TRACE_FORMAT,
            "version": self.version,
            "memrules": self.memrules,
            "pipelines": list(self.pipelines),
        }


def _header(entries: Sequence[dict[str, Any]]) -> TraceHeader:
    return TraceHeader(version=TRACE_VERSION, memrules=_version(), pipelines=tuple(entries))
