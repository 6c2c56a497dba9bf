"""What a pipeline run did, as data: one action per strategy run, and why it stopped."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import attrs

from memrules._core.budget import Budget
from memrules._core.indices import EMPTY, IdsOf, Indices, indices
from memrules._core.messages import Conversation
from memrules._core.prompt_cache import CacheMeasure, SentRequest
from memrules._core.seam_protocols import SeamCall

__all__ = [
    "OVER_BUDGET_MODES",
    "CompressionAction",
    "CompressionReport",
    "OverBudgetMode",
    "StopReason",
]

OverBudgetMode = Literal["send", "warn", "raise"]
OVER_BUDGET_MODES: tuple[OverBudgetMode, ...] = ("send", "warn", "raise")
"""What is done with a request compaction could not bring within its
budget (the ``over_budget`` setting): ``send`` it as it is, ``warn`` (an
`OverBudgetWarning`, a log record, a metric) and send it,
or ``raise`` `OverBudgetError` and send nothing."""


def _ids(value: Iterable[str]) -> Sequence[str]:
    return value if isinstance(value, (IdsOf, tuple)) else tuple(value)


class StopReason(enum.StrEnum):
    """Why the interpreter stopped."""

    UNDER_BUDGET = "under_budget"
    """The conversation is within the budget (possibly without any pass)."""
    NO_PROGRESS = "no_progress"
    """A whole pass changed nothing, and the conversation is still over budget."""
    PASS_LIMIT = "pass_limit"
    """The pass limit was reached and the conversation is still over budget."""
    NO_TRIGGER = "no_trigger"
    """The budget is unlimited: nothing was compacted."""
    SINGLE_PASS = "single_pass"
    """``compress``: every strategy ran once, with no budget."""


@attrs.frozen(kw_only=True, slots=True)
class CompressionAction:
    """One strategy run.

    ``removed`` and the first of each ``replaced`` pair index the strategy's
    input; ``inserted`` and the second of each pair index its output.
    ``removed_ids`` and ``replaced_ids`` give the message ids where the messages
    had one. ``removed`` is an `Indices` and
    ``removed_ids`` is read on first use: both read as the tuples they stand
    for, and cost what a window's runs cost rather than one entry per
    message a window dropped. ``closed_calls`` are the tool call ids that pairing closure
    dropped. ``error`` is set when the strategy raised or broke an invariant;
    its output was then discarded.
    """

    strategy: str
    pass_number: int
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    removed: Indices = attrs.field(default=EMPTY, converter=indices)
    replaced: tuple[tuple[int, int], ...] = ()
    inserted: tuple[int, ...] = ()
    removed_ids: Sequence[str] = attrs.field(default=(), converter=_ids)
    replaced_ids: tuple[str, ...] = ()
    closed_calls: tuple[str, ...] = ()
    note: str = ""
    error: str | None = None
    seam_calls: tuple[SeamCall, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.replaced or self.inserted)

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "pass": self.pass_number,
            "changed": self.changed,
            "messages_before": self.messages_before,
            "messages_after": self.messages_after,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "removed": list(self.removed),
            "replaced": [list(p) for p in self.replaced],
            "inserted": list(self.inserted),
            "removed_ids": list(self.removed_ids),
            "replaced_ids": list(self.replaced_ids),
            "closed_calls": list(self.closed_calls),
            "note": self.note,
            "error": self.error,
            "seam_calls": [c.to_dict() for c in self.seam_calls],
        }


@attrs.frozen(kw_only=True, slots=True)
class CompressionReport:
    """The whole run: sizes before and after, each strategy run, errors, and
    the stop reason. ``origin[j]`` is the input index of output message ``j``,
    or None for a message a strategy made (summary, stub, placeholder).
    ``input_problems`` lists what was already broken in the input (a tool
    result with no call, two results for one call, ...; see the ``repair``
    setting), as ``"messages[i]: ..."``. ``counter`` names the token counter
    that measured every count here (``cl100k_base``, ``estimate``,
    ``hf:...``), since counts from different tokenizers do not compare.

    Set only when the caller asked for them (and serialized only then, so
    that reports without them read as they always did): ``cache``, what
    the provider's prompt cache serves of the messages sent and their cost
    (a `CacheMeasure`: ``cached``,
    ``uncached``, ``cost``, ``share``); ``carried``, how many leading
    messages were sent as the conversation's previous request sent them
    (a ``cache:`` section's append path); ``compact_to``, the token target
    compaction aimed below once the trigger fired (``cache.compact_to``).

    ``estimates`` says which parts of the output were counted by a stated
    estimate rather than measured (an image at a URL, whose size is
    unknown; PDF pages; encrypted reasoning), as
    ``"messages[i].parts[j]: ..."``."""

    budget: Budget
    stop_reason: StopReason
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    passes: int = 0
    actions: tuple[CompressionAction, ...] = ()
    origin: tuple[int | None, ...] = ()
    input_problems: tuple[str, ...] = ()
    counter: str = ""
    cache: CacheMeasure | None = None
    carried: int | None = None
    compact_to: int | None = None
    estimates: tuple[str, ...] = ()

    @property
    def errors(self) -> tuple[str, ...]:
        """Every strategy error, in order, as ``"<strategy>: <message>"``."""
        return tuple(f"{a.strategy}: {a.error}" for a in self.actions if a.error is not None)

    @property
    def last_error(self) -> str | None:
        errors = self.errors
        return errors[-1] if errors else None

    @property
    def compacted(self) -> bool:
        """Whether any strategy changed the conversation."""
        return any(a.changed for a in self.actions)

    @property
    def over_budget(self) -> bool:
        """Whether the output is still over `budget` (more messages
        than a message budget, or at least a token budget's tokens): what
        the strategies could not remove costs more than the budget allows.
        The ``over_budget`` setting says what is done about it (send, warn,
        raise)."""
        return self.budget.is_over(messages=self.messages_after, tokens=self.tokens_after)

    def to_dict(self) -> dict[str, Any]:
        out = self._fields_dict()
        if self.over_budget:  # absent otherwise: reports that fit read as before
            out["over_budget"] = True
        if self.estimates:  # absent otherwise: reports without estimates read as before
            out["estimates"] = list(self.estimates)
        return out

    def _fields_dict(self) -> dict[str, Any]:
        return {
            "budget": self.budget.to_dict(),
            "counter": self.counter,
            "stop_reason": self.stop_reason.value,
            "passes": self.passes,
            "compacted": self.compacted,
            "messages_before": self.messages_before,
            "messages_after": self.messages_after,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "errors": list(self.errors),
            "last_error": self.last_error,
            "input_problems": list(self.input_problems),
            "origin": list(self.origin),
            "actions": [a.to_dict() for a in self.actions],
            **self._cache_dict(),
        }

    def _cache_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.carried is not None:
            out["carried"] = self.carried
        if self.compact_to is not None:
            out["compact_to"] = self.compact_to
        if self.cache is not None:
            out["cache"] = self.cache.to_dict()
        return out


@attrs.frozen(kw_only=True, slots=True)
class CompressionResult:
    """The result of applying a pipeline: the new messages and the report;
    ``sent``, when the caller gave a cache rule or the previous request,
    is this request to pass as ``previous=`` with the next one."""

    messages: Conversation
    report: CompressionReport
    sent: SentRequest | None = None
