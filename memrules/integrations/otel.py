"""OpenTelemetry spans for compaction (the ``otel`` extra).

One span per pipeline run (``memrules.apply`` or ``memrules.compress``) and,
inside it, one per strategy run (``memrules.strategy <name>``), carrying the
attributes of `run_attributes` and
`step_attributes`: strategy, pass, tokens and
messages before and after, stop reason, error type; and, following the
GenAI semantic conventions where they apply, ``gen_ai.conversation.id``
(when the caller names the conversation) and ``gen_ai.usage.input_tokens``
(the compacted conversation's tokens). Spans nest under whatever span is
current, so compaction shows inside the agent's own trace:

    from memrules import load_pipeline
    from memrules.integrations.otel import OpenTelemetryObserver

    pipeline = load_pipeline("memrules.yaml", observers=[OpenTelemetryObserver()])
    pipeline.apply(messages, conversation_id=thread_id)

No message content is recorded unless ``include_content=True``, which adds
the conversation before and after (``memrules.input.messages``,
``memrules.output.messages``: JSON lists of role and countable text) and
each strategy error's text as its span status description.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from memrules._core.messages import Conversation
from memrules._core.public_names import report_public_module
from memrules._core.report import CompressionAction, CompressionResult
from memrules._engine.observe import RunInfo, StepInfo
from memrules._io.version import memrules_version
from memrules.integrations._extras import require
from memrules.observability import run_attributes, step_attributes

__all__ = ["TRACER_NAME", "OpenTelemetryObserver"]

TRACER_NAME = "memrules"

_trace: Any = require("opentelemetry.trace", "otel")


def _content(conversation: Conversation) -> str:
    return json.dumps(
        [{"role": m.role, "content": m.countable_text} for m in conversation],
        ensure_ascii=False,
    )


class OpenTelemetryObserver:
    """A `PipelineObserver` that makes spans.

    ``tracer_provider`` is the global one by default. ``include_content``
    records message text (off: traces often leave the trust boundary that
    conversations stay in).
    """

    __slots__ = ("include_content", "tracer")

    def __init__(self, tracer_provider: Any = None, *, include_content: bool = False) -> None:
        self.tracer = _trace.get_tracer(
            TRACER_NAME, memrules_version(), tracer_provider=tracer_provider
        )
        self.include_content = include_content

    def _span(self, name: str, attributes: dict[str, Any]) -> Any:
        return self.tracer.start_as_current_span(
            name,
            kind=_trace.SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )

    def _failed(self, span: Any, exc: BaseException) -> None:
        """A run that raised: the error's type, and its text only with content."""
        span.set_attribute("error.type", type(exc).__name__)
        description = f"{type(exc).__name__}: {exc}" if self.include_content else None
        span.set_status(_trace.Status(_trace.StatusCode.ERROR, description))

    def observe_run(self, run: RunInfo, proceed: Callable[[], CompressionResult]) -> None:
        with self._span(f"memrules.{run.operation}", run_attributes(run)) as span:
            try:
                result = proceed()
            except BaseException as exc:
                self._failed(span, exc)
                raise
            span.set_attributes(run_attributes(run, result))
            if self.include_content:
                span.set_attribute("memrules.input.messages", _content(run.conversation))
                span.set_attribute("memrules.output.messages", _content(result.messages))

    def observe_step(self, step: StepInfo, proceed: Callable[[], CompressionAction]) -> None:
        with self._span(f"memrules.strategy {step.strategy}", step_attributes(step)) as span:
            try:
                action = proceed()
            except BaseException as exc:
                self._failed(span, exc)
                raise
            span.set_attributes(step_attributes(step, action))
            if action.error is not None:
                description = action.error if self.include_content else None
                span.set_status(_trace.Status(_trace.StatusCode.ERROR, description))

    def __repr__(self) -> str:
        return f"OpenTelemetryObserver(include_content={self.include_content})"


report_public_module(__name__, __all__, globals())
del report_public_module
