"""Logs, traces and metrics of a known compaction: names, labels, values, and
no message content anywhere unless asked for."""

from __future__ import annotations

import importlib.util
import json
import logging
from typing import Any

import pytest

from memrules import (
    MemoryConfig,
    Pipeline,
    StrategyError,
    ToolCall,
    ToolResult,
    load_pipeline,
)
from memrules._core.messages import Conversation, message
from memrules._core.survivors import SurvivorRule
from memrules.observability import LoggingObserver, error_type, run_attributes
from memrules.strategies import clear_tool_results, sliding_window

SECRET = "SECRET-CONTENT-42"

CONFIG = """
context_window_tokens: 100000
max_tokens: 120
strategies:
  - type: clear_tool_results
    keep_pairs: 1
    preview_chars: 0          # the results are shorter than a 200-character preview
  - type: sliding_window
    keep_messages: 4
"""

needs_otel = pytest.mark.skipif(
    # find_spec of a submodule raises when its package is absent: ask for the package first
    importlib.util.find_spec("opentelemetry") is None
    or importlib.util.find_spec("opentelemetry.sdk") is None,
    reason="needs the otel extra: pip install 'memrules[otel]' opentelemetry-sdk",
)
needs_prometheus = pytest.mark.skipif(
    importlib.util.find_spec("prometheus_client") is None,
    reason="needs the prometheus extra: pip install 'memrules[prometheus]'",
)


# Two messages leave no room for the task: these tests are about a failing strategy.
NO_TASK = SurvivorRule(task=False)


def _history() -> Conversation:
    out = [message("system", f"You are an agent. {SECRET}")]
    for i in range(4):
        out.append(message("user", f"step {i}: look at the file {SECRET}"))
        call = ToolCall(id=f"call_{i}", name="read_file", arguments=json.dumps({"path": SECRET}))
        out.append(message("assistant", call))
        out.append(message("tool", ToolResult(call_id=f"call_{i}", content=f"{SECRET} " * 10)))
        out.append(message("assistant", f"done with step {i}, {SECRET}"))
    out.append(message("user", f"and now? {SECRET}"))
    return tuple(out)


def _boom(conversation: Conversation, context: Any) -> Conversation:
    msg = f"the summarizer said {SECRET}"
    raise StrategyError(msg)


def _no_secret(value: object) -> None:
    assert SECRET not in repr(value)


# --- logging -------------------------------------------------------------------


def test_logging_one_record_per_run_and_per_strategy_run(caplog: pytest.LogCaptureFixture) -> None:
    pipeline = load_pipeline(CONFIG, observers=[LoggingObserver()])
    with caplog.at_level(logging.DEBUG, logger="memrules"):
        result = pipeline.apply(_history(), conversation_id="thread-1")
    report = result.report
    runs = [r for r in caplog.records if r.levelno == logging.INFO]
    steps = [r for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(runs) == 1
    assert len(steps) == len(report.actions)
    fields = runs[0].memrules  # type: ignore[attr-defined]
    assert fields["memrules.tokens.before"] == report.tokens_before
    assert fields["memrules.tokens.after"] == report.tokens_after
    assert fields["memrules.stop_reason"] == report.stop_reason.value == "under_budget"
    assert fields["gen_ai.conversation.id"] == "thread-1"
    assert fields["memrules.duration_ms"] >= 0
    assert runs[0].getMessage() == (
        f"memrules apply: {report.tokens_before} -> {report.tokens_after} tokens, "
        f"{report.messages_before} -> {report.messages_after} messages "
        "(max(cl100k_base,o200k_base)), "
        f"under_budget after {report.passes} passes"
    )
    for record in caplog.records:
        _no_secret(record.getMessage())
        _no_secret(record.memrules)  # type: ignore[attr-defined]


def test_logging_a_strategy_error_warns_with_its_type_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = MemoryConfig(
        max_messages=2, strategies=[_boom, sliding_window(keep_messages=2)], survivors=NO_TASK
    )
    pipeline = Pipeline.from_config(config, observers=[LoggingObserver(step_level=None)])
    with caplog.at_level(logging.DEBUG, logger="memrules"):
        pipeline.apply(_history())
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "_boom pass 1 failed (StrategyError)" in warnings[0].getMessage()
    assert warnings[0].memrules["error.type"] == "StrategyError"  # type: ignore[attr-defined]
    for record in caplog.records:
        _no_secret(record.getMessage())
        _no_secret(record.memrules)  # type: ignore[attr-defined]


def test_error_types_never_carry_the_text() -> None:
    assert error_type(f"StrategyError: {SECRET}") == "StrategyError"
    assert error_type("tool call 'c1' outlives its result") == "rejected_output"
    assert error_type("returned list at index 0, expected Message") == "rejected_output"


# --- OpenTelemetry ----------------------------------------------------------------


@pytest.fixture
def spans() -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@needs_otel
def test_otel_spans_for_a_known_compaction(spans: Any) -> None:
    from memrules.integrations.otel import OpenTelemetryObserver

    provider, exporter = spans
    pipeline = load_pipeline(CONFIG, observers=[OpenTelemetryObserver(provider)])
    result = pipeline.apply(_history(), conversation_id="thread-1")
    report = result.report
    finished = exporter.get_finished_spans()
    names = [s.name for s in finished]
    assert names == [f"memrules.strategy {a.strategy}" for a in report.actions] + ["memrules.apply"]
    assert [a.strategy for a in report.actions] == ["clear_tool_results", "sliding_window"]
    run = finished[-1]
    assert run.attributes == {
        "memrules.operation": "apply",
        "memrules.counter": "max(cl100k_base,o200k_base)",
        "memrules.strategies": "clear_tool_results,sliding_window",
        "memrules.messages.before": 18,
        "memrules.budget.kind": "tokens",
        "memrules.budget.limit": 120,
        "gen_ai.conversation.id": "thread-1",
        "memrules.stop_reason": "under_budget",
        "memrules.passes": 1,
        "memrules.compacted": True,
        "memrules.tokens.before": report.tokens_before,
        "memrules.tokens.after": report.tokens_after,
        "memrules.messages.after": report.messages_after,
        "memrules.strategy_runs": 2,
        "memrules.errors": 0,
        "memrules.over_budget": False,
        "gen_ai.usage.input_tokens": report.tokens_after,
    }
    assert report.tokens_after < 120 <= report.tokens_before
    for span, action in zip(finished[:-1], report.actions, strict=True):
        assert span.parent is not None
        assert span.parent.span_id == run.context.span_id
        assert span.attributes["memrules.strategy"] == action.strategy
        assert span.attributes["memrules.pass"] == 1
        assert span.attributes["memrules.tokens.before"] == action.tokens_before
        assert span.attributes["memrules.tokens.after"] == action.tokens_after
        assert span.attributes["memrules.messages.before"] == action.messages_before
        assert span.attributes["memrules.messages.after"] == action.messages_after
        assert span.attributes["memrules.removed"] == len(action.removed)
        assert span.attributes["memrules.replaced"] == len(action.replaced)
        assert span.attributes["gen_ai.conversation.id"] == "thread-1"
        assert "error.type" not in span.attributes
        assert span.status.is_ok
    cleared = finished[0]
    assert cleared.attributes["memrules.replaced"] == 3  # every tool result but the newest
    for span in finished:
        _no_secret(span.name)
        _no_secret(dict(span.attributes))
        _no_secret(span.events)
        _no_secret(span.status.description)


@needs_otel
def test_otel_a_failing_strategy_has_an_error_status_without_its_text(spans: Any) -> None:
    from opentelemetry.trace import StatusCode

    from memrules.integrations.otel import OpenTelemetryObserver

    provider, exporter = spans
    config = MemoryConfig(max_messages=2, strategies=[_boom, sliding_window(keep_messages=2)])
    Pipeline.from_config(config, observers=[OpenTelemetryObserver(provider)]).apply(_history())
    boom = next(s for s in exporter.get_finished_spans() if s.name == "memrules.strategy _boom")
    assert boom.status.status_code == StatusCode.ERROR
    assert boom.status.description is None
    assert boom.attributes["error.type"] == "StrategyError"
    for span in exporter.get_finished_spans():
        _no_secret(dict(span.attributes))
        _no_secret(span.status.description)


@needs_otel
def test_otel_records_content_only_when_asked(spans: Any) -> None:
    from memrules.integrations.otel import OpenTelemetryObserver

    provider, exporter = spans
    config = MemoryConfig(max_messages=2, strategies=[_boom, sliding_window(keep_messages=2)])
    observer = OpenTelemetryObserver(provider, include_content=True)
    result = Pipeline.from_config(config, observers=[observer]).apply(_history())
    finished = {s.name: s for s in exporter.get_finished_spans()}
    run = finished["memrules.apply"]
    output = json.loads(run.attributes["memrules.output.messages"])
    assert output == [{"role": m.role, "content": m.countable_text} for m in result.messages]
    assert SECRET in run.attributes["memrules.input.messages"]
    assert SECRET in finished["memrules.strategy _boom"].status.description


@needs_otel
def test_otel_a_run_that_raises_is_an_error_span(spans: Any) -> None:
    from opentelemetry.trace import StatusCode

    from memrules.integrations.otel import OpenTelemetryObserver

    class Broken:
        name = "broken"

        def count(self, m: object) -> int:
            raise RuntimeError(SECRET)

        def counts(self, ms: Any) -> tuple[int, ...]:
            raise RuntimeError(SECRET)

        def count_text(self, text: str) -> int:
            raise RuntimeError(SECRET)

    provider, exporter = spans
    config = MemoryConfig(max_messages=2, strategies=[clear_tool_results()])
    pipeline = Pipeline.from_config(
        config, counter=Broken(), observers=[OpenTelemetryObserver(provider)]
    )
    with pytest.raises(RuntimeError):
        pipeline.apply(_history())
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["error.type"] == "RuntimeError"
    _no_secret(span.status.description)
    assert not span.events  # no exception event: its message could be content


@needs_otel
def test_otel_spans_nest_under_the_callers_span(spans: Any) -> None:
    from memrules.integrations.otel import OpenTelemetryObserver

    provider, exporter = spans
    pipeline = load_pipeline(CONFIG, observers=[OpenTelemetryObserver(provider)])
    with provider.get_tracer("agent").start_as_current_span("agent turn") as turn:
        pipeline.compress(_history())
    finished = {s.name: s for s in exporter.get_finished_spans()}
    assert finished["memrules.compress"].parent.span_id == turn.get_span_context().span_id


# --- Prometheus --------------------------------------------------------------------


@needs_prometheus
def test_prometheus_metrics_for_a_known_compaction() -> None:
    from prometheus_client import CollectorRegistry

    from memrules.integrations.prometheus import PrometheusObserver

    registry = CollectorRegistry()
    pipeline = load_pipeline(CONFIG, observers=[PrometheusObserver(registry)])
    report = pipeline.apply(_history(), conversation_id="thread-1").report
    pipeline.apply(_history()[:2])  # under budget: no strategy runs

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("memrules_runs_total", operation="apply", stop_reason="under_budget") == 2
    assert value("memrules_strategy_runs_total", strategy="clear_tool_results", outcome="changed")
    reclaimed = {a.strategy: a.tokens_before - a.tokens_after for a in report.actions if a.changed}
    for strategy, tokens in reclaimed.items():
        assert value("memrules_tokens_reclaimed_total", strategy=strategy) == tokens
    assert sum(reclaimed.values()) == report.tokens_before - report.tokens_after
    assert value("memrules_apply_duration_seconds_count", operation="apply") == 2
    assert value("memrules_apply_duration_seconds_sum", operation="apply") > 0

    families = {m.name: m for m in registry.collect()}
    assert set(families) == {
        "memrules_runs",
        "memrules_strategy_runs",
        "memrules_tokens_reclaimed",
        "memrules_over_budget",
        "memrules_apply_duration_seconds",
        "memrules_cache_input_tokens",
        "memrules_cache_cost_units",
    }
    for family in families.values():
        for sample in family.samples:
            assert set(sample.labels) <= {"operation", "stop_reason", "strategy", "outcome", "le"}
            assert "thread-1" not in sample.labels.values()
            _no_secret(sample.labels)


@needs_prometheus
def test_prometheus_counts_errors_and_refuses_a_second_registration() -> None:
    from prometheus_client import CollectorRegistry

    from memrules import ConfigError
    from memrules.integrations.prometheus import PrometheusObserver

    registry = CollectorRegistry()
    observer = PrometheusObserver(registry)
    config = MemoryConfig(
        max_messages=2, strategies=[_boom, sliding_window(keep_messages=2)], survivors=NO_TASK
    )
    Pipeline.from_config(config, observers=[observer]).apply(_history())
    assert (
        registry.get_sample_value(
            "memrules_strategy_runs_total", {"strategy": "_boom", "outcome": "error"}
        )
        == 1
    )
    with pytest.raises(ConfigError, match="one PrometheusObserver per registry"):
        PrometheusObserver(registry)
    PrometheusObserver(registry, namespace="other")


def test_run_attributes_before_the_run_hold_no_outcome() -> None:
    from memrules import Budget
    from memrules._engine.observe import RunInfo

    info = RunInfo(
        operation="apply",
        counter="estimate",
        budget=Budget.UNLIMITED,
        messages=3,
        strategies=("a", "b"),
        max_passes=4,
    )
    assert run_attributes(info) == {
        "memrules.operation": "apply",
        "memrules.counter": "estimate",
        "memrules.strategies": "a,b",
        "memrules.messages.before": 3,
        "memrules.budget.kind": "unlimited",
    }


@needs_prometheus
def test_prometheus_counts_runs_left_over_budget() -> None:
    import warnings

    from prometheus_client import CollectorRegistry

    from memrules.integrations.prometheus import PrometheusObserver

    registry = CollectorRegistry()
    pipeline = load_pipeline(
        "{max_tokens: 5, over_budget: send, strategies: []}",
        observers=[PrometheusObserver(registry)],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pipeline.apply(_history()).report.over_budget
    assert registry.get_sample_value("memrules_over_budget_total", {"operation": "apply"}) == 1
