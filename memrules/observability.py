"""Watching compaction: observers for logs, traces and metrics.

A pipeline's ``observers`` are called around every run and every strategy
run (`PipelineObserver`); they see sizes, names and outcomes, never
change the result, and add no wall-clock value to the report (replays stay
byte-identical). Give them to a pipeline:

    import logging
    from memrules import load_pipeline
    from memrules.observability import LoggingObserver

    pipeline = load_pipeline("memrules.yaml", observers=[LoggingObserver()])

- `LoggingObserver`: one structured `logging` record per run
  (and one per strategy run at ``DEBUG``), no message content;
- `OpenTelemetryObserver`: spans for each
  run and strategy run (the ``otel`` extra);
- `PrometheusObserver`: counters
  and a latency histogram (the ``prometheus`` extra).

`run_attributes` and `step_attributes` are what they all
record: names, counts, the stop reason and error *types*. None of them holds
message content; an error's text (which a strategy's exception may fill
with content) is recorded only where an observer is told to record content.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

from memrules._core.public_names import report_public_module
from memrules._core.report import CompressionAction, CompressionResult
from memrules._engine.observe import PipelineObserver, RunInfo, StepInfo

__all__ = [
    "LoggingObserver",
    "PipelineObserver",
    "RunInfo",
    "StepInfo",
    "error_type",
    "run_attributes",
    "step_attributes",
]

Attributes = dict[str, str | int | float | bool]

_ERROR_TYPE = re.compile(r"([A-Za-z_][\w.]*): ")

REJECTED_OUTPUT = "rejected_output"
"""The error type of a strategy whose output the interpreter refused (not a
conversation, or it broke an invariant)."""


def error_type(error: str) -> str:
    """The kind of a strategy error, without its text: the exception's class
    name (``"StrategyError"``), or `REJECTED_OUTPUT`."""
    match = _ERROR_TYPE.match(error)
    return match.group(1) if match else REJECTED_OUTPUT


def run_attributes(run: RunInfo, result: CompressionResult | None = None) -> Attributes:
    """What a run is known by, before (``result`` None) and after it:
    ``memrules.*`` keys (``memrules.over_budget``: the output still over
    its budget), and the GenAI conventions' ``gen_ai.conversation.id``
    and ``gen_ai.usage.input_tokens`` (the tokens of the compacted
    conversation: what the model is sent, by this pipeline's counter).
    When the run measured the prompt cache (``report.cache``), also
    ``memrules.cache.*`` (the rule, cached, uncached and written tokens,
    the cost in input-token units) and the conventions'
    ``gen_ai.usage.cache_read.input_tokens`` and
    ``gen_ai.usage.cache_creation.input_tokens``."""
    attributes: Attributes = {
        "memrules.operation": run.operation,
        "memrules.counter": run.counter,
        "memrules.strategies": ",".join(run.strategies),
        "memrules.messages.before": run.messages,
    }
    attributes["memrules.budget.kind"] = run.budget.kind
    if not run.budget.is_unlimited:
        attributes["memrules.budget.limit"] = run.budget.limit
    if run.conversation_id is not None:
        attributes["gen_ai.conversation.id"] = run.conversation_id
    if result is not None:
        report = result.report
        attributes.update(
            {
                "memrules.stop_reason": report.stop_reason.value,
                "memrules.passes": report.passes,
                "memrules.compacted": report.compacted,
                "memrules.tokens.before": report.tokens_before,
                "memrules.tokens.after": report.tokens_after,
                "memrules.messages.after": report.messages_after,
                "memrules.strategy_runs": len(report.actions),
                "memrules.errors": len(report.errors),
                "memrules.over_budget": report.over_budget,
                "gen_ai.usage.input_tokens": report.tokens_after,
            }
        )
        cache = report.cache
        if cache is not None:
            attributes.update(
                {
                    "memrules.cache.rule": cache.rule,
                    "memrules.cache.cached_tokens": cache.cached,
                    "memrules.cache.uncached_tokens": cache.uncached,
                    "memrules.cache.written_tokens": cache.written,
                    "memrules.cache.cost": cache.cost,
                    "gen_ai.usage.cache_read.input_tokens": cache.cached,
                    "gen_ai.usage.cache_creation.input_tokens": cache.written,
                }
            )
    return attributes


def step_attributes(step: StepInfo, action: CompressionAction | None = None) -> Attributes:
    """What a strategy run is known by, before (``action`` None) and after it.
    A failed run has ``error.type`` (OpenTelemetry's general attribute), not
    its message."""
    attributes: Attributes = {
        "memrules.strategy": step.strategy,
        "memrules.pass": step.pass_number,
        "memrules.messages.before": step.messages,
        "memrules.tokens.before": step.tokens,
    }
    if step.run.conversation_id is not None:
        attributes["gen_ai.conversation.id"] = step.run.conversation_id
    if action is not None:
        attributes.update(
            {
                "memrules.messages.after": action.messages_after,
                "memrules.tokens.after": action.tokens_after,
                "memrules.changed": action.changed,
                "memrules.removed": len(action.removed),
                "memrules.replaced": len(action.replaced),
                "memrules.inserted": len(action.inserted),
                "memrules.closed_calls": len(action.closed_calls),
            }
        )
        if action.error is not None:
            attributes["error.type"] = error_type(action.error)
    return attributes


class LoggingObserver:
    """Logs each run as one record on ``logger`` (``memrules`` by default) at
    ``level``, and each strategy run at ``step_level`` (``DEBUG``; None for
    none). The fields are in the record's ``memrules`` attribute (a dict of
    `run_attributes` or `step_attributes`, plus
    ``memrules.duration_ms``), for structured formatters; the message says
    the same in a line. A strategy error is logged at ``WARNING`` with its
    type, never its text. No message content is ever logged.
    """

    __slots__ = ("level", "logger", "step_level")

    def __init__(
        self,
        logger: logging.Logger | None = None,
        *,
        level: int = logging.INFO,
        step_level: int | None = logging.DEBUG,
    ) -> None:
        self.logger = logger if logger is not None else logging.getLogger("memrules")
        self.level = level
        self.step_level = step_level

    def observe_run(self, run: RunInfo, proceed: Callable[[], CompressionResult]) -> None:
        started = time.perf_counter()
        result = proceed()
        if not self.logger.isEnabledFor(self.level):
            return
        fields = run_attributes(run, result)
        fields["memrules.duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        report = result.report
        self.logger.log(
            self.level,
            "memrules %s: %d -> %d tokens, %d -> %d messages (%s), %s after %d passes",
            run.operation,
            report.tokens_before,
            report.tokens_after,
            report.messages_before,
            report.messages_after,
            run.counter,
            report.stop_reason.value,
            report.passes,
            extra={"memrules": fields},
        )

    def observe_step(self, step: StepInfo, proceed: Callable[[], CompressionAction]) -> None:
        action = proceed()
        level = logging.WARNING if action.error is not None else self.step_level
        if level is None or not self.logger.isEnabledFor(level):
            return
        fields = step_attributes(step, action)
        outcome = "failed" if action.error is not None else "changed"
        if action.error is None and not action.changed:
            outcome = "unchanged"
        error = f" ({fields['error.type']})" if action.error is not None else ""
        self.logger.log(
            level,
            "memrules strategy %s pass %d %s%s: %d -> %d tokens, %d -> %d messages",
            step.strategy,
            step.pass_number,
            outcome,
            error,
            action.tokens_before,
            action.tokens_after,
            action.messages_before,
            action.messages_after,
            extra={"memrules": fields},
        )

    def __repr__(self) -> str:
        return f"LoggingObserver({self.logger.name!r})"


report_public_module(__name__, __all__, globals())
del report_public_module
