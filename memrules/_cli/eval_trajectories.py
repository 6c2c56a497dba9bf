"""``memrules eval --trajectories``: replay agent trajectories and probe them.

Each trajectory (`memrules.datasets`: mini-swe-agent, SWE-agent,
OpenAI or Anthropic messages, Claude Code or Codex sessions) is replayed as
the agent loop ran it: one request per model call, the messages before each
assistant reply, each compacted by the pipeline with ``previous=`` the request before's result
(as the plugin passes it, so a ``cache:`` section acts as it would live)
and the conversation's own measure. Each compacted request is scored by
the probes of `probe` (task, question, user first,
edited paths, last error line, last test command), counted again with
tiktoken's ``o200k_base`` (`o200k_tokens`) to
check the budget with a tokenizer other than the pipeline's, checked for
broken tool pairs, and measured for the prompt cache against the request
before (`measure` under
`CACHE_RULE`, as ``memrules eval``
does). `memrules._cli.trajectory_output` prints and writes the figures.
"""

from __future__ import annotations

import concurrent.futures
import math
import multiprocessing
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import attrs

from memrules._cli.eval_figures import CACHE_RULE, budgeted
from memrules._config.load import load_config
from memrules._core.errors import MemrulesError
from memrules._core.repair import input_problems
from memrules._core.report import CompressionResult
from memrules._counting.cache import Sent, measure
from memrules._runtime.pipeline import Pipeline
from memrules._runtime.progress import Progress
from memrules._trace.header import pipeline_header
from memrules.datasets import (
    Trajectory,
    edited_paths,
    model_calls,
    o200k_tokens,
    probe,
    probe_facts,
    read_trajectory,
    trajectory_paths,
)

__all__ = [
    "SHAPES",
    "RequestProbe",
    "TrajectoryRow",
    "TrajectoryRun",
    "TrajectorySettings",
    "in_shape",
    "replay_trajectory",
    "run_trajectories",
]


@attrs.frozen(kw_only=True, slots=True)
class TrajectorySettings:
    """What ``memrules eval --trajectories`` was asked: the configs (paths),
    the trajectory files or directories, the budget override, the number of
    processes and the modules configs may import."""

    configs: tuple[Path, ...]
    trajectories: tuple[Path, ...]
    max_tokens: int | None = None
    jobs: int = 1
    allow_imports: bool | tuple[str, ...] = ()
    shape: str = "openai"
    """How tool results are sent: ``openai`` (``tool`` messages) or
    ``anthropic`` (each in a user-role message, as Anthropic's tool loop
    sends them, so a user message is not always the person's)."""


SHAPES = ("openai", "anthropic")


def in_shape(trajectory: Trajectory, shape: str) -> Trajectory:
    """``trajectory`` with its tool results sent as ``shape`` sends them: as
    they are for ``openai``, in user-role messages for ``anthropic``."""
    if shape == "openai":
        return trajectory
    messages = tuple(m.evolve(role="user") if m.role == "tool" else m for m in trajectory.messages)
    return attrs.evolve(trajectory, messages=messages)


@attrs.frozen(kw_only=True, slots=True)
class RequestProbe:
    """One request of one trajectory under one pipeline: its position
    (``index`` of the trajectory's requests, ``last`` for its final one),
    tokens before and after (the pipeline's count) and by ``o200k_base``
    (``o200k``; ``over_budget`` when above the budget's tokens), broken
    pairs in what was sent, the probes (None: nothing to keep yet),
    the cache columns and how long ``apply`` took."""

    trajectory: str
    index: int
    last: bool
    messages: int
    tokens_before: int
    tokens_after: int
    o200k: int
    over_budget: bool | None
    broken: int
    task: bool | None
    question: bool | None
    user_first: bool
    paths: int
    paths_kept: int
    error_line: bool | None
    test_command: bool | None
    sent: int = 0
    cached: int = 0
    cost: float = 0.0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "trajectory": self.trajectory,
            "request": self.index,
            "last": self.last,
            "messages": self.messages,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "o200k_tokens": self.o200k,
            "over_budget": self.over_budget,
            "broken_tool_pairs": self.broken,
            "task": self.task,
            "question": self.question,
            "user_first": self.user_first,
            "edited_paths": self.paths,
            "edited_paths_kept": self.paths_kept,
            "last_error_line": self.error_line,
            "last_test_command": self.test_command,
            "cache": {
                "sent_tokens": self.sent,
                "cached_tokens": self.cached,
                "cost_units": round(self.cost, 3),
            },
            "ms": round(self.seconds * 1000, 3),
        }


def _budget_tokens(pipeline: Pipeline) -> int | None:
    budget = pipeline.budget()
    return budget.limit if budget.kind == "tokens" else None


def replay_trajectory(
    pipeline: Pipeline, trajectory: Trajectory, *, clock: Callable[[], float] = time.perf_counter
) -> Iterator[RequestProbe]:
    """Each request of ``trajectory`` compacted by ``pipeline`` and probed
    (see the module docs), in order."""
    paths = edited_paths(trajectory)
    limit = _budget_tokens(pipeline)
    memo = pipeline.measure()
    requests = list(model_calls(trajectory))
    result: CompressionResult | None = None
    previous: Sent | None = None
    for index, request in enumerate(requests):
        started = clock()
        result = pipeline.apply(
            request,
            memo=memo,
            conversation_id=trajectory.id,
            previous=None if result is None else result.sent,
            cache=CACHE_RULE,
        )
        seconds = clock() - started
        out = result.messages
        counts = pipeline.counter.counts(out)
        framing = max(0, result.report.tokens_after - sum(counts))
        sent = Sent(messages=out, counts=counts, overhead=framing)
        cache = measure(previous, sent, CACHE_RULE)
        previous = sent
        found = probe(probe_facts(request, paths), out)
        o200k = o200k_tokens(out)
        yield RequestProbe(
            trajectory=trajectory.id,
            index=index,
            last=index == len(requests) - 1,
            messages=len(request),
            tokens_before=result.report.tokens_before,
            tokens_after=result.report.tokens_after,
            o200k=o200k,
            over_budget=None if limit is None else o200k > limit,
            broken=len(input_problems(out)),
            task=found.task,
            question=found.question,
            user_first=found.user_first,
            paths=found.paths,
            paths_kept=found.paths_kept,
            error_line=found.error_line,
            test_command=found.test_command,
            sent=cache.tokens,
            cached=cache.cached,
            cost=cache.cost,
            seconds=seconds,
        )


@attrs.frozen(kw_only=True, slots=True)
class TrajectoryRow:
    """One config's figures over every request of every trajectory: counts
    ``(kept, of)`` for each probe over all requests and at each
    trajectory's last request (see `row`)."""

    name: str
    config: str
    config_sha256: str
    budget: int | None
    trajectories: int
    requests: int
    tokens_before: int
    tokens_after: int
    task: tuple[int, int]
    task_last: tuple[int, int]
    question: tuple[int, int]
    question_last: tuple[int, int]
    non_user_first: int
    paths: tuple[int, int]
    paths_last: tuple[int, int]
    error_line: tuple[int, int]
    error_line_last: tuple[int, int]
    test_command: tuple[int, int]
    test_command_last: tuple[int, int]
    over_budget: int | None
    broken: int
    sent: int
    cached: int
    cost: float
    p50_ms: float
    p95_ms: float

    @property
    def without_task(self) -> int:
        """Requests that did not hold the task statement."""
        return self.task[1] - self.task[0]

    @property
    def cache_share(self) -> float | None:
        return self.cached / self.sent if self.sent else None


def _kept(values: Sequence[bool | None]) -> tuple[int, int]:
    known = [v for v in values if v is not None]
    return sum(known), len(known)


def _percentile(values: Sequence[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def row(
    name: str, config: str, sha: str, budget: int | None, requests: Sequence[RequestProbe]
) -> TrajectoryRow:
    """The figures of one config's ``requests`` (in order, every trajectory's)."""
    last = [r for r in requests if r.last]
    times = [r.seconds * 1000 for r in requests]
    over = [r.over_budget for r in requests if r.over_budget is not None]
    return TrajectoryRow(
        name=name,
        config=config,
        config_sha256=sha,
        budget=budget,
        trajectories=len(last),
        requests=len(requests),
        tokens_before=sum(r.tokens_before for r in requests),
        tokens_after=sum(r.tokens_after for r in requests),
        task=_kept([r.task for r in requests]),
        task_last=_kept([r.task for r in last]),
        question=_kept([r.question for r in requests]),
        question_last=_kept([r.question for r in last]),
        non_user_first=sum(not r.user_first for r in requests),
        paths=(sum(r.paths_kept for r in requests), sum(r.paths for r in requests)),
        paths_last=(sum(r.paths_kept for r in last), sum(r.paths for r in last)),
        error_line=_kept([r.error_line for r in requests]),
        error_line_last=_kept([r.error_line for r in last]),
        test_command=_kept([r.test_command for r in requests]),
        test_command_last=_kept([r.test_command for r in last]),
        over_budget=sum(over) if over or budget is not None else None,
        broken=sum(r.broken for r in requests),
        sent=sum(r.sent for r in requests),
        cached=sum(r.cached for r in requests),
        cost=sum(r.cost for r in requests),
        p50_ms=_percentile(times, 0.5),
        p95_ms=_percentile(times, 0.95),
    )


@attrs.frozen(kw_only=True, slots=True)
class TrajectoryRun:
    """A whole run: the settings, one row per config, and each config's
    requests in the trajectories' order."""

    settings: TrajectorySettings
    rows: tuple[TrajectoryRow, ...]
    requests: tuple[tuple[RequestProbe, ...], ...]


def _pipelines(settings: TrajectorySettings) -> list[Pipeline]:
    return [
        Pipeline.from_config(
            budgeted(load_config(p, allow_imports=settings.allow_imports), settings.max_tokens)
        )
        for p in settings.configs
    ]


_PIPELINES: list[Pipeline] = []


_SHAPE: list[str] = ["openai"]


def _start(settings: TrajectorySettings) -> None:
    _PIPELINES[:] = _pipelines(settings)
    _SHAPE[:] = [settings.shape]


def _one(path: str) -> list[list[RequestProbe]]:
    try:
        trajectory = in_shape(read_trajectory(path), _SHAPE[0])
        return [list(replay_trajectory(p, trajectory)) for p in _PIPELINES]
    except MemrulesError as exc:  # sent back as text: not every error pickles
        msg = f"{path}: {exc}"
        raise RuntimeError(msg) from None


def _units(
    settings: TrajectorySettings, files: Sequence[Path]
) -> Iterator[list[list[RequestProbe]]]:
    if settings.jobs == 1:
        _start(settings)
        for f in files:
            yield _one(str(f))
        return
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=settings.jobs, mp_context=context, initializer=_start, initargs=(settings,)
    ) as pool:
        yield from pool.map(_one, [str(f) for f in files])


def names(paths: Sequence[Path]) -> list[str]:
    """Each config's name: its file's stem, or its path when two stems are alike."""
    stems = [p.stem for p in paths]
    return [s if stems.count(s) == 1 else str(p) for s, p in zip(stems, paths, strict=True)]


def run_trajectories(
    settings: TrajectorySettings, progress: Progress | None = None
) -> TrajectoryRun:
    """Replay every trajectory through every config (see the module docs)."""
    if settings.shape not in SHAPES:
        msg = f"shape={settings.shape!r} is not one of {', '.join(SHAPES)}"
        raise ValueError(msg)
    pipelines = _pipelines(settings)
    files = trajectory_paths(settings.trajectories)
    collected: list[list[RequestProbe]] = [[] for _ in pipelines]
    for done, unit in enumerate(_units(settings, files), start=1):
        for i, requests in enumerate(unit):
            collected[i].extend(requests)
        if progress is not None:
            progress.update(f"eval: {done:,}/{len(files):,} trajectories", done / len(files))
    rows = []
    for label, path, pipeline, requests in zip(
        names(settings.configs), settings.configs, pipelines, collected, strict=True
    ):
        sha = str(pipeline_header(label, pipeline)["config_sha256"])
        rows.append(row(label, str(path), sha, _budget_tokens(pipeline), requests))
    return TrajectoryRun(
        settings=settings, rows=tuple(rows), requests=tuple(tuple(r) for r in collected)
    )
