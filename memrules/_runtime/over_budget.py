"""What is done with a request compaction could not bring within its budget
(the ``over_budget`` setting): ``send`` it in silence, ``warn`` (the
default: an `OverBudgetWarning`, a ``WARNING`` record on
the ``memrules`` logger, and the report's ``over_budget``, which the
observers' metrics count) and send it, or ``raise``
`OverBudgetError` and send nothing.

The pipeline and the request hook call `settle` once per request,
after compaction: the report's `CompressionReport.over_budget`
is the fact, this is the noise.
"""

from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path

from memrules._core.errors import ConfigError, OverBudgetError, OverBudgetWarning
from memrules._core.report import OVER_BUDGET_MODES, CompressionReport, OverBudgetMode

__all__ = ["check_mode", "over_budget_text", "settle"]

log = logging.getLogger("memrules")

_PACKAGE = str(Path(__file__).resolve().parent.parent)


def check_mode(value: object, name: str = "over_budget") -> OverBudgetMode:
    """``value`` when it is one of ``send``, ``warn``, ``raise``; else a
    `ConfigError` naming ``name``."""
    if value not in OVER_BUDGET_MODES:
        msg = f"{name}={value!r} must be one of {', '.join(map(repr, OVER_BUDGET_MODES))}"
        raise ConfigError.single(msg, yaml_path=name)
    return value


def over_budget_text(report: CompressionReport) -> str:
    """What `settle` says about an over-budget ``report``: what the
    survivors cost against what budget, and what to do."""
    budget = report.budget
    if budget.kind == "messages":
        cost = f"{report.messages_after} messages against a budget of {budget.limit}"
    else:
        cost = f"{report.tokens_after} tokens against a budget of {budget.limit}"
    return (
        f"over budget after compaction ({report.stop_reason.value}): {cost}; raise the "
        "budget or add a strategy that cuts more (clamp_oversized_messages, "
        "clear_tool_results); over_budget: send silences this, raise refuses the request"
    )


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside memrules, for a warning
    emitted from `settle`: the user's call, not the library's."""
    frame = sys._getframe(1)  # settle's frame: stacklevel 1 there
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def settle(report: CompressionReport, mode: OverBudgetMode) -> None:
    """Act on ``report`` under ``mode``: nothing when it fits or under
    ``send``; under ``warn``, a log record and an
    `OverBudgetWarning` (pointing at the first caller
    outside memrules); under ``raise``, `OverBudgetError`
    with what the survivors cost and the budget."""
    if mode == "send" or not report.over_budget:
        return
    text = over_budget_text(report)
    if mode == "raise":
        raise OverBudgetError(
            text,
            tokens=report.tokens_after,
            messages=report.messages_after,
            budget=report.budget,
            report=report,
        )
    fields = {
        "memrules.over_budget": True,
        "memrules.budget.kind": report.budget.kind,
        "memrules.budget.limit": report.budget.limit,
        "memrules.tokens.after": report.tokens_after,
        "memrules.messages.after": report.messages_after,
    }
    log.warning("memrules %s", text, extra={"memrules": fields})
    warnings.warn(text, OverBudgetWarning, stacklevel=_caller_level())
