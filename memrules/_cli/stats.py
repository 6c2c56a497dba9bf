"""Confidence intervals and paired comparisons for ``memrules eval``.

Questions of one conversation are not independent (they share its history,
and one compaction decides several of them), so the bootstrap resamples
*conversations*, with replacement, and recomputes each rate as a ratio of
sums over the resampled conversations (the cluster bootstrap). The interval
is the percentile interval of the resampled rates. Every rate is resampled
with the same seeded sequence of draws, so two configs are compared on the
same resamples (a paired bootstrap) and a run with the same ``seed`` gives
the same intervals.

>>> groups = [(1.0, 2.0), (2.0, 2.0), (0.0, 1.0)]
>>> interval = bootstrap_ratio(groups, resamples=200, seed=0)
>>> 0.0 <= interval[0] <= 3 / 5 <= interval[1] <= 1.0
True
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import attrs

__all__ = ["LEVEL", "Paired", "bootstrap_difference", "bootstrap_ratio", "mcnemar_exact", "paired"]

LEVEL = 0.95
"""The confidence level of every interval."""


def _draws(count: int, resamples: int, seed: int) -> list[list[int]]:
    """The resampled indices: ``resamples`` lists of ``count`` draws."""
    rng = random.Random(seed)
    return [[rng.randrange(count) for _ in range(count)] for _ in range(resamples)]


def _percentiles(values: list[float], level: float) -> tuple[float, float]:
    values.sort()
    tail = (1.0 - level) / 2
    low = values[max(0, math.floor(tail * len(values)))]
    high = values[min(len(values) - 1, math.ceil((1.0 - tail) * len(values)) - 1)]
    return low, high


def bootstrap_ratio(
    groups: Sequence[tuple[float, float]], *, resamples: int, seed: int, level: float = LEVEL
) -> tuple[float, float] | None:
    """The percentile interval of ``sum(num) / sum(den)`` over conversations
    (``groups``: one ``(num, den)`` per conversation) resampled
    ``resamples`` times; None when there is nothing to divide by."""
    if not groups or sum(d for _, d in groups) == 0 or resamples < 1:
        return None
    rates = []
    for draw in _draws(len(groups), resamples, seed):
        num = sum(groups[i][0] for i in draw)
        den = sum(groups[i][1] for i in draw)
        if den:
            rates.append(num / den)
    return _percentiles(rates, level) if rates else None


def bootstrap_difference(
    groups: Sequence[tuple[float, float, float]],
    *,
    resamples: int,
    seed: int,
    level: float = LEVEL,
) -> tuple[float, float] | None:
    """The interval of ``(sum(b) - sum(a)) / sum(n)`` with ``groups`` one
    ``(a, b, n)`` per conversation: the difference of two rates measured on
    the same questions, resampled together."""
    if not groups or sum(n for *_, n in groups) == 0 or resamples < 1:
        return None
    rates = []
    for draw in _draws(len(groups), resamples, seed):
        n = sum(groups[i][2] for i in draw)
        if n:
            rates.append((sum(groups[i][1] for i in draw) - sum(groups[i][0] for i in draw)) / n)
    return _percentiles(rates, level) if rates else None


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """The two-sided exact McNemar p-value: under "no difference", the
    discordant questions split as fair coin flips."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return float(min(1.0, 2 * tail))


@attrs.frozen(kw_only=True, slots=True)
class Paired:
    """One rate of config ``b`` against config ``a`` on the same questions:
    how many each got, how many only one of them got, the difference of the
    rates (b minus a) with its bootstrap interval (None without
    ``--bootstrap``), and the exact McNemar p-value."""

    rate: str
    a: str
    b: str
    questions: int
    a_hits: int
    b_hits: int
    only_a: int
    only_b: int
    difference: float
    interval: tuple[float, float] | None
    p_value: float

    def to_dict(self) -> dict[str, object]:
        return {
            "rate": self.rate,
            "a": self.a,
            "b": self.b,
            "questions": self.questions,
            "a_hits": self.a_hits,
            "b_hits": self.b_hits,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "difference": self.difference,
            "interval": None if self.interval is None else list(self.interval),
            "mcnemar_p": self.p_value,
        }


def paired(
    rate: str,
    names: tuple[str, str],
    outcomes: Sequence[Sequence[tuple[bool, bool]]],
    *,
    resamples: int,
    seed: int,
) -> Paired:
    """Compare two configs on one rate: ``outcomes`` holds per conversation
    each question's ``(a got it, b got it)``."""
    flat = [pair for group in outcomes for pair in group]
    only_a = sum(a and not b for a, b in flat)
    only_b = sum(b and not a for a, b in flat)
    a_hits = sum(a for a, _ in flat)
    b_hits = sum(b for _, b in flat)
    groups = [
        (float(sum(a for a, _ in g)), float(sum(b for _, b in g)), float(len(g))) for g in outcomes
    ]
    interval = (
        bootstrap_difference(groups, resamples=resamples, seed=seed) if resamples > 0 else None
    )
    return Paired(
        rate=rate,
        a=names[0],
        b=names[1],
        questions=len(flat),
        a_hits=a_hits,
        b_hits=b_hits,
        only_a=only_a,
        only_b=only_b,
        difference=(b_hits - a_hits) / len(flat) if flat else 0.0,
        interval=interval,
        p_value=mcnemar_exact(only_a, only_b),
    )
