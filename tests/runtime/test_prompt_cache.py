"""The prompt-cache measure wired through the pipeline, the plugin, the
trace and replay, OpenTelemetry spans and Prometheus counters."""

from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.histories import agent_history, request_points
from memrules import MemoryPlugin, load_config, load_pipeline
from memrules._core.prompt_cache import Sent
from memrules._counting.cache import AnthropicRule, OpenAIRule, measure
from memrules._replay.replay import replay_trace

HISTORY = agent_history(160, seed=3)
POINTS = request_points(HISTORY)

CACHE_CONFIG = """
encoder_name: o200k_base
max_tokens: 12000
cache:
  compact_to: 0.5
strategies:
  - type: clear_tool_results
    keep_pairs: 2
  - type: trim_to_budget
"""


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_report_measures_what_was_sent_against_the_previous_request() -> None:
    pipeline = load_pipeline(
        "{encoder_name: o200k_base, max_tokens: 9000, strategies: [{type: trim_to_budget}]}"
    )
    rule = AnthropicRule(automatic=True)
    previous = None
    before: Sent | None = None
    figures = []
    for n in POINTS[:30]:
        result = pipeline.apply(HISTORY.messages[:n], previous=previous, cache=rule)
        assert result.sent is not None
        sent = result.sent.sent
        assert sent.messages == result.messages
        # An independent count of what is sent: one message at a time.
        assert sent.tokens == pipeline.count(result.messages)
        expected = measure(before, sent, rule)
        assert result.report.cache == expected
        assert result.report.to_dict()["cache"] == expected.to_dict()
        figures.append(expected.cached)
        previous, before = result.sent, sent
    assert figures[0] == 0
    assert sum(figures) > 0


def test_a_report_without_the_cache_serializes_as_before() -> None:
    pipeline = load_pipeline("{max_tokens: 9000, strategies: [{type: trim_to_budget}]}")
    result = pipeline.apply(HISTORY.messages)
    assert result.sent is None
    assert result.report.cache is None
    keys = set(result.report.to_dict())
    assert not keys & {"cache", "carried", "compact_to"}


def test_the_plugin_measures_each_conversation_against_its_own_previous_request() -> None:
    plugin = MemoryPlugin(load_config(CACHE_CONFIG))
    served: dict[str, list[int]] = {"a": [], "b": []}
    for n in POINTS[:12]:
        for cid in ("a", "b"):
            body = {"model": "gpt-5", "messages": HISTORY.openai[:n]}
            plugin.on_openai_request(body, conversation_id=cid)
            report = plugin.last_report
            assert report is not None
            assert report.cache is not None
            assert report.cache.rule == OpenAIRule(model="gpt-5").name
            served[cid].append(report.cache.cached)
    # Interleaved, each conversation's second request is still served from
    # the cache: it is compared with its own first, not the other's.
    assert served["a"] == served["b"]
    assert served["a"][0] == 0
    assert all(c > 0 for c in served["a"][3:])


def test_a_plugin_trace_replays_the_cache_figures_through_the_recorded_clock(
    tmp_path: Path,
) -> None:
    times = itertools.chain([1000.0, 1030.0, 1400.0], itertools.count(1410.0, 10.0))
    trace = tmp_path / "cache.jsonl"
    plugin = MemoryPlugin(load_config(CACHE_CONFIG), trace=trace, clock=lambda: next(times))
    for n in POINTS[:8]:
        plugin.on_openai_request({"model": "gpt-5", "messages": HISTORY.openai[:n]})
    plugin.close()
    recorded = [line for line in _lines(trace) if line.get("kind") == "request"]
    elapsed = [line["report"]["cache"]["elapsed"] for line in recorded]
    assert elapsed[:4] == [0.0, 30.0, 370.0, 10.0]
    cached = [line["report"]["cache"]["cached"] for line in recorded]
    assert cached[1] > 0
    assert cached[2] == 0
    assert all("clock" in {c["seam"] for c in line["calls"]} for line in recorded)
    summary = replay_trace(trace)  # its own clock is never read
    assert summary.identical
    assert summary.requests == len(recorded)


needs_otel = pytest.mark.skipif(
    importlib.util.find_spec("opentelemetry") is None
    or importlib.util.find_spec("opentelemetry.sdk") is None,
    reason="needs the otel extra: pip install 'memrules[otel]' opentelemetry-sdk",
)
needs_prometheus = pytest.mark.skipif(
    importlib.util.find_spec("prometheus_client") is None,
    reason="needs the prometheus extra: pip install 'memrules[prometheus]'",
)


@needs_otel
def test_the_run_span_carries_the_cache_figures() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from memrules.integrations.otel import OpenTelemetryObserver

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observer = OpenTelemetryObserver(tracer_provider=provider)
    pipeline = load_pipeline(CACHE_CONFIG, observers=[observer])
    previous = None
    reports = []
    for n in POINTS[:6]:
        result = pipeline.apply(HISTORY.messages[:n], previous=previous)
        previous = result.sent
        reports.append(result.report)
    runs = [
        s for s in exporter.get_finished_spans() if "memrules.cache.cached_tokens" in s.attributes
    ]
    assert len(runs) == len(reports)
    for span, report in zip(runs, reports, strict=True):
        assert report.cache is not None
        assert span.attributes["memrules.cache.cached_tokens"] == report.cache.cached
        assert span.attributes["memrules.cache.uncached_tokens"] == report.cache.uncached
        assert span.attributes["gen_ai.usage.cache_read.input_tokens"] == report.cache.cached
        assert span.attributes["memrules.cache.cost"] == report.cache.cost


@needs_prometheus
def test_prometheus_counts_cached_and_uncached_input_tokens() -> None:
    from prometheus_client import CollectorRegistry

    from memrules.integrations.prometheus import PrometheusObserver

    registry = CollectorRegistry()
    pipeline = load_pipeline(CACHE_CONFIG, observers=[PrometheusObserver(registry)])
    previous = None
    cached = uncached = 0
    cost = 0.0
    for n in POINTS[:10]:
        result = pipeline.apply(HISTORY.messages[:n], previous=previous)
        previous = result.sent
        assert result.report.cache is not None
        cached += result.report.cache.cached
        uncached += result.report.cache.uncached
        cost += result.report.cache.cost

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert cached > 0
    tokens = "memrules_cache_input_tokens_total"
    assert value(tokens, operation="apply", served="cached") == cached
    assert value(tokens, operation="apply", served="uncached") == uncached
    assert value("memrules_cache_cost_units_total", operation="apply") == pytest.approx(cost)
