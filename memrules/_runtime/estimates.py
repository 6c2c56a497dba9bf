"""What of a result's count is a stated estimate (an image of unknown size,
PDF pages, encrypted reasoning), for its report."""

from __future__ import annotations

import itertools
import operator

import attrs

from memrules._core.messages import Conversation
from memrules._core.report import CompressionResult
from memrules._counting.measure import Measure
from memrules._counting.tokens import TokenCounter

__all__ = ["with_estimates"]


def with_estimates(
    result: CompressionResult,
    counter: TokenCounter,
    measure: Measure | None = None,
    source: Conversation | None = None,
) -> CompressionResult:
    """``result`` with its report's ``estimates``: what of the output's
    count ``counter`` estimated (an image of unknown size, PDF pages,
    encrypted reasoning), as ``"messages[i].parts[j]: ..."``; ``result``
    itself when nothing was estimated or the counter cannot say.

    With ``measure`` and ``source`` (the run's input, which the report's
    ``origin`` maps the output to), a message the output kept is looked up
    in what ``measure`` found for ``source`` (once per message), and only
    the new ones are asked about."""
    estimates = getattr(counter, "estimates", None)
    if estimates is None:
        return result
    stated = getattr(getattr(counter, "base", counter), "note", "")
    messages = result.messages
    origin = result.report.origin
    each: dict[int, tuple[str, ...]]
    if measure is not None and source is not None and len(origin) == len(messages):
        known = measure.estimated(source)
        each = (
            {j: known[i] for j, i in enumerate(origin) if i is not None and i in known}
            if known
            else {}
        )
        # A message no action inserted or replaced is one of the input's.
        if any(a.inserted or a.replaced for a in result.report.actions):
            new = itertools.compress(itertools.count(), map(operator.is_, origin, _NONES))
            for j in new:
                if messages[j].parts:
                    each[j] = estimates(messages[j])
    else:
        many = getattr(counter, "estimates_many", None)
        found = many(messages) if many is not None else tuple(map(estimates, messages))
        each = dict(
            zip(itertools.compress(itertools.count(), found), filter(None, found), strict=True)
        )
    lines = tuple(
        f"messages[{j}].{line}" for j in sorted(each) if messages[j].parts for line in each[j]
    )
    if isinstance(stated, str) and stated:
        lines = (f"every message: {stated}", *lines)
    if not lines:
        return result
    return attrs.evolve(result, report=attrs.evolve(result.report, estimates=lines))


_NONES = itertools.repeat(None)
