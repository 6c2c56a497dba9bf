"""What ``memrules eval`` measures, as values, and the statistics over them.

`RequestFigures` is one request of one pipeline (with where each
evidence message went, `Evidence`, the cache columns and the
answer-level score); `PipelineFigures` is one table row, summed over
a config's requests, with the bootstrap intervals of its rates
(`RATES`); `EvalRun` is a whole run, with the paired
comparisons of every config against the first (`memrules._cli.stats`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from memrules._cli.stats import Paired, bootstrap_ratio, paired
from memrules._config.load import MemoryConfig
from memrules._counting.cache import OpenAIRule
from memrules._replay.answers import Scored

__all__ = [
    "CACHE_RULE",
    "RATES",
    "Endpoint",
    "EvalRun",
    "EvalSettings",
    "Evidence",
    "PipelineFigures",
    "RequestFigures",
    "budgeted",
    "comparisons",
    "pipeline_figures",
]

CACHE_RULE = OpenAIRule()
"""The prompt cache the cache columns model: OpenAI's automatic cache, from
1,024 tokens in 128-token steps, each request right after the previous one."""


@attrs.frozen(kw_only=True, slots=True)
class EvalSettings:
    """What ``memrules eval`` was asked: the configs (paths), the dataset,
    ``k`` for recall, the budget override, the number of processes, the
    modules configs may import, and where to write a trace."""

    configs: tuple[Path, ...]
    dataset: Path
    k: int = 5
    max_tokens: int | None = None
    jobs: int = 1
    allow_imports: bool | tuple[str, ...] = ()
    trace: Path | None = None
    bootstrap: int = 0
    seed: int = 0
    answer_model: Endpoint | None = None
    judge_model: Endpoint | None = None


@attrs.frozen(kw_only=True, slots=True)
class Endpoint:
    """An OpenAI-compatible chat endpoint for answer-level scoring: its base
    URL, the model's name (None: the first the endpoint lists), and the
    environment variable holding its API key."""

    url: str
    model: str | None = None
    api_key_env: str | None = None


@attrs.frozen(kw_only=True, slots=True)
class Evidence:
    """Where one evidence message went in one request: ``context`` (there,
    its text unchanged), ``changed`` (there, its text not: clamped, cleared,
    stubbed) or ``gone``; ``by`` the strategy that removed it (for
    ``gone``) or first replaced it (for ``changed``); ``steps`` every
    strategy run that touched it, in order, as ``"replaced by X"`` or
    ``"removed by X"``; ``recalled`` whether recall found it (None without
    a store)."""

    id: str
    where: str
    by: str | None = None
    steps: tuple[str, ...] = ()
    recalled: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "where": self.where,
            "by": self.by,
            "steps": list(self.steps),
            "recalled": self.recalled,
        }


@attrs.frozen(kw_only=True, slots=True)
class RequestFigures:
    """One request of one pipeline: tokens before and after, broken pairs in
    the output, whether it asked a question and kept its fact (in context;
    by recall, None without a store), and how long ``apply`` took. Also its
    conversation and question, where each evidence message went, the
    prompt cache's part in what was sent (``cached`` of ``sent`` tokens, and
    the cost in input-token units, after the conversation's previous request),
    and the answer-level score when models were given."""

    tokens_before: int
    tokens_after: int
    broken: int
    question: bool
    kept: bool = False
    recalled: bool | None = None
    seconds: float = 0.0
    conversation: str = ""
    question_id: str | None = None
    category: str | None = None
    evidence: tuple[Evidence, ...] = ()
    sent: int = 0
    cached: int = 0
    cost: float = 0.0
    scored: Scored | None = None
    recall_seconds: float | None = None
    """How long recall took for the question (None without a store)."""
    recall_count: int | None = None
    """How many messages recall gave the question whole (the hits, or the
    memories of the memory message; None without a store)."""


@attrs.frozen(kw_only=True, slots=True)
class PipelineFigures:
    """One table row (see the module docs)."""

    name: str
    config: str
    config_sha256: str
    requests: int
    tokens_before: int
    tokens_after: int
    broken: int
    facts: int
    kept: int
    recalled: int | None
    kept_or_recalled: int | None
    p50_ms: float
    p95_ms: float
    sent: int = 0
    cached: int = 0
    cost: float = 0.0
    answered: int = 0
    judged: int = 0
    correct: int = 0
    intervals: tuple[tuple[str, tuple[float, float] | None], ...] = ()
    recall_p50_ms: float | None = None
    recall_p95_ms: float | None = None
    """The p50 and p95 of the time recall took per question (None without a store)."""
    any_evidence: int | None = None
    """Questions with at least one evidence message kept in the context or
    among the hits, or kept or recalled: LoCoMo's own count (any evidence
    turn), looser than ``kept_or_recalled``, which needs every evidence
    message in one of the two (None without a store)."""

    @property
    def cache_share(self) -> float | None:
        return self.cached / self.sent if self.sent else None

    @property
    def answer_share(self) -> float | None:
        return self.correct / self.judged if self.judged else None

    def interval(self, rate: str) -> tuple[float, float] | None:
        """The bootstrap interval of ``rate`` (a `RATES` name), if computed."""
        return dict(self.intervals).get(rate)

    @property
    def ratio(self) -> float:
        return self.tokens_before / self.tokens_after if self.tokens_after else math.inf

    @property
    def kept_share(self) -> float | None:
        return self.kept / self.facts if self.facts else None

    @property
    def recall_share(self) -> float | None:
        if self.recalled is None or not self.facts:
            return None
        return self.recalled / self.facts

    @property
    def kept_or_recalled_share(self) -> float | None:
        if self.kept_or_recalled is None or not self.facts:
            return None
        return self.kept_or_recalled / self.facts

    @property
    def any_evidence_share(self) -> float | None:
        if self.any_evidence is None or not self.facts:
            return None
        return self.any_evidence / self.facts


def _percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in (0, 1]); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


RATES = ("facts_kept", "recall", "kept_or_recalled", "cache_share", "answer_correct")
"""The rates ``--bootstrap`` puts an interval on (those a run has)."""


def _by_conversation(requests: Sequence[RequestFigures]) -> list[list[RequestFigures]]:
    groups: dict[str, list[RequestFigures]] = {}
    for r in requests:
        groups.setdefault(r.conversation, []).append(r)
    return list(groups.values())


def _rate_groups(
    rate: str, groups: Sequence[Sequence[RequestFigures]], has_store: bool
) -> list[tuple[float, float]] | None:
    """Per conversation ``(numerator, denominator)`` of ``rate``; None when
    the run does not measure it."""
    if rate in ("recall", "kept_or_recalled") and not has_store:
        return None
    if rate == "cache_share":
        return [(float(sum(r.cached for r in g)), float(sum(r.sent for r in g))) for g in groups]
    asked = [[r for r in g if r.question] for g in groups]
    if rate == "answer_correct":
        judged = [
            [r for r in g if r.scored is not None and r.scored.score is not None] for g in asked
        ]
        if not any(judged):
            return None
        return [
            (float(sum(r.scored.score or 0 for r in g if r.scored)), float(len(g))) for g in judged
        ]
    hit = _HITS[rate]
    return [(float(sum(hit(r) for r in g)), float(len(g))) for g in asked]


_HITS: dict[str, Callable[[RequestFigures], bool]] = {
    "facts_kept": lambda r: r.kept,
    "recall": lambda r: bool(r.recalled),
    "kept_or_recalled": lambda r: r.kept or bool(r.recalled),
    "answer_correct": lambda r: r.scored is not None and r.scored.score == 1,
}


def _intervals(
    requests: Sequence[RequestFigures], has_store: bool, settings: EvalSettings
) -> tuple[tuple[str, tuple[float, float] | None], ...]:
    if settings.bootstrap < 1:
        return ()
    groups = _by_conversation(requests)
    out = []
    for rate in RATES:
        counts = _rate_groups(rate, groups, has_store)
        if counts is not None:
            found = bootstrap_ratio(counts, resamples=settings.bootstrap, seed=settings.seed)
            out.append((rate, found))
    return tuple(out)


def pipeline_figures(
    name: str,
    path: Path,
    sha: str,
    requests: Sequence[RequestFigures],
    has_store: bool,
    settings: EvalSettings,
) -> PipelineFigures:
    asked = [r for r in requests if r.question]
    times = [r.seconds * 1000 for r in requests]
    recall_times = [r.recall_seconds * 1000 for r in asked if r.recall_seconds is not None]
    scored = [r.scored for r in asked if r.scored is not None]
    return PipelineFigures(
        name=name,
        config=str(path),
        config_sha256=sha,
        requests=len(requests),
        tokens_before=sum(r.tokens_before for r in requests),
        tokens_after=sum(r.tokens_after for r in requests),
        broken=sum(r.broken for r in requests),
        facts=len(asked),
        kept=sum(r.kept for r in asked),
        recalled=sum(bool(r.recalled) for r in asked) if has_store else None,
        kept_or_recalled=sum(r.kept or bool(r.recalled) for r in asked) if has_store else None,
        p50_ms=_percentile(times, 0.5),
        p95_ms=_percentile(times, 0.95),
        sent=sum(r.sent for r in requests),
        cached=sum(r.cached for r in requests),
        cost=sum(r.cost for r in requests),
        answered=len(scored),
        judged=sum(s.score is not None for s in scored),
        correct=sum(s.score == 1 for s in scored),
        intervals=_intervals(requests, has_store, settings),
        any_evidence=sum(_any_evidence(r) for r in asked) if has_store else None,
        recall_p50_ms=_percentile(recall_times, 0.5) if recall_times else None,
        recall_p95_ms=_percentile(recall_times, 0.95) if recall_times else None,
    )


def _any_evidence(request: RequestFigures) -> bool:
    """Whether ``request`` kept or recalled its fact, or kept or recalled
    at least one of its evidence messages."""
    if request.kept or request.recalled:
        return True
    return any(e.where == "context" or e.recalled for e in request.evidence)


@attrs.frozen(kw_only=True, slots=True)
class EvalRun:
    """A whole run: the settings (with model names resolved), one row per
    config, each config's requests in the dataset's order, and the paired
    comparisons of every config with the first."""

    settings: EvalSettings
    rows: tuple[PipelineFigures, ...]
    requests: tuple[tuple[RequestFigures, ...], ...]
    comparisons: tuple[Paired, ...] = ()


def comparisons(
    rows: Sequence[PipelineFigures],
    requests: Sequence[Sequence[RequestFigures]],
    settings: EvalSettings,
) -> tuple[Paired, ...]:
    """Every config against the first, on the same questions, for each rate
    both measure per question."""
    out: list[Paired] = []
    if len(rows) < 2:
        return ()
    base = _by_conversation([r for r in requests[0] if r.question])
    for row, other in zip(rows[1:], requests[1:], strict=True):
        groups = _by_conversation([r for r in other if r.question])
        for rate, hit in _HITS.items():
            if rate in ("recall", "kept_or_recalled") and (
                rows[0].recalled is None or row.recalled is None
            ):
                continue
            if rate == "answer_correct" and (not rows[0].judged or not row.judged):
                continue
            outcomes = [
                [(hit(a), hit(b)) for a, b in zip(ga, gb, strict=True)]
                for ga, gb in zip(base, groups, strict=True)
            ]
            out.append(
                paired(
                    rate,
                    (rows[0].name, row.name),
                    outcomes,
                    resamples=settings.bootstrap,
                    seed=settings.seed,
                )
            )
    return tuple(out)


def budgeted(config: MemoryConfig, max_tokens: int | None) -> MemoryConfig:
    """``config`` on one token budget of ``max_tokens`` (``--max-tokens``),
    its own trigger replaced; ``config`` itself when None."""
    if max_tokens is None:
        return config
    return attrs.evolve(
        config,
        max_tokens=max_tokens,
        max_fraction=None,
        max_messages=None,
        context_window_tokens=max(config.context_window_tokens, max_tokens),
    )
