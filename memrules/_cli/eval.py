"""``memrules eval``: run pipelines over a dataset and score them.

Each conversation of the dataset (:mod:`memrules._cli.dataset`) becomes one
request per question: the messages before the question, then the question
as the latest user message, compacted by each pipeline as a request at that
point would be. A conversation without questions is one request of all its
messages. For each pipeline the figures are:

- **requests**, and **tokens before** and **after** compaction (summed over
  the requests, as the pipeline's counter counts them), and the
  **compression ratio**, before over after;
- **broken tool pairs** in what the pipeline sends: every tool call without
  its result and result without its call that a provider would reject
  (:func:`memrules._core.repair.input_problems` of the output, so pairs the input
  already broke count too). It must be 0;
- **facts kept**: the share of questions whose answer is still in the
  compacted context: every evidence message is there with its text
  unchanged, or the question's ``answer`` appears in the context's text
  (a summary that kept it counts; a stub or a cleared result does not);
- **recall@k**, when the config has a store: the share of questions whose
  answer the ``k`` hits of ``recall(question)`` in the conversation hold,
  in the same sense, after the request (what ``offload`` stored by then).
  Each conversation gets a fresh store of the config's backend, local (a
  Milvus Lite file in a temporary directory, Qdrant in memory), so the
  figures depend on nothing but the dataset and the config;
- **kept or recalled**: the share of questions answerable either way;
- **p50** and **p95** of the time ``apply`` took per request (with
  ``--trace``, recording it too).

Conversations are independent: ``--jobs N`` runs them in N processes, with
results identical to one (only the timings move), and a trace (``--trace``)
of the same bytes. ``--max-tokens N`` puts every pipeline on one budget of N
tokens (replacing its trigger), to compare strategies where the configs'
own budgets are larger than the dataset's conversations.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import math
import multiprocessing
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from memrules._cli.dataset import (
    EvalConversation,
    Question,
    parse_conversation,
    read_dataset,
)
from memrules._cli.stats import LEVEL, Paired, bootstrap_ratio, paired
from memrules._config.load import MemoryConfig, load_config
from memrules._core.errors import MemrulesError
from memrules._core.messages import Conversation, Message, message
from memrules._core.repair import input_problems
from memrules._core.report import CompressionResult
from memrules._core.seam_protocols import Seams, VectorStore
from memrules._counting.cache import OpenAIRule, Sent, measure
from memrules._replay.answers import (
    JUDGE_MAX_TOKENS,
    ChatModel,
    Scored,
    answer_line,
    chat_model,
    score_answer,
)
from memrules._runtime.logged import StandIn, logged_seams
from memrules._runtime.pipeline import Pipeline
from memrules._runtime.progress import Progress
from memrules._trace.record import TraceWriter, messages_json, pipeline_header, run_line
from memrules._trace.record import _header as trace_header
from memrules.seams._log import RecordingLog
from memrules.seams.embedders import local_embedder

__all__ = [
    "CACHE_RULE",
    "Endpoint",
    "EvalError",
    "EvalRun",
    "EvalSettings",
    "Evidence",
    "PipelineFigures",
    "RequestFigures",
    "add_arguments",
    "evaluate",
    "figures_json",
    "render_table",
    "run_eval",
]

CACHE_RULE = OpenAIRule()
"""The prompt cache the cache columns model: OpenAI's automatic cache, from
1,024 tokens in 128-token steps, each request right after the previous one."""


class EvalError(MemrulesError, RuntimeError):
    """An evaluation that could not run to its end (a seam failed, a worker
    process died); names the conversation."""


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

    @property
    def cache_share(self) -> float | None:
        return self.cached / self.sent if self.sent else None

    @property
    def answer_share(self) -> float | None:
        return self.correct / self.judged if self.judged else None

    def interval(self, rate: str) -> tuple[float, float] | None:
        """The bootstrap interval of ``rate`` (a :data:`RATES` name), if computed."""
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


# --- one conversation, every pipeline -----------------------------------------------


def _budgeted(config: MemoryConfig, max_tokens: int | None) -> MemoryConfig:
    if max_tokens is None:
        return config
    return attrs.evolve(
        config,
        max_tokens=max_tokens,
        max_fraction=None,
        max_messages=None,
        context_window_tokens=max(config.context_window_tokens, max_tokens),
    )


def load_configs(settings: EvalSettings) -> list[MemoryConfig]:
    """The configs, read and checked (a :class:`ConfigError` names the file)."""
    return [
        _budgeted(load_config(path, allow_imports=settings.allow_imports), settings.max_tokens)
        for path in settings.configs
    ]


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def _holds(question: Question, found: Sequence[Message], conversation: EvalConversation) -> bool:
    """Whether ``found`` (a compacted context, or what recall found) holds
    the answer: every evidence message, with its text unchanged (a stub or
    a cleared result in its place does not count), or the answer's text."""
    by_id = {m.id: m for m in found if m.id is not None}
    original = {m.id: m for m in conversation.messages if m.id in question.evidence}
    if all(
        e in by_id and by_id[e].countable_text == original[e].countable_text
        for e in question.evidence
    ):
        return True
    if question.answer is None:
        return False
    return _normal(question.answer) in _normal("\n".join(m.countable_text for m in found))


def _requests(conversation: EvalConversation) -> list[tuple[Question | None, Conversation]]:
    if not conversation.questions:
        return [(None, conversation.messages)]
    return [
        (
            q,
            (
                *conversation.messages[: q.after],
                message("user", q.question, id=f"question:{q.id}"),
            ),
        )
        for q in conversation.questions
    ]


@attrs.frozen(kw_only=True, slots=True)
class _Unit:
    """What one conversation gave: per pipeline its requests' figures, and
    the trace lines (when tracing), in order."""

    figures: tuple[tuple[RequestFigures, ...], ...]
    lines: tuple[dict[str, Any], ...] = ()


class _Stores:
    """Fresh local stores for each conversation, of each config's backend."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._embedders: dict[int, Any] = {}

    def make(self, index: int, config: MemoryConfig, name: str) -> VectorStore | None:
        settings = config.store
        if settings is None:
            return None
        embedder = self._embedders.get(index)
        if embedder is None:
            built = config.embedder.build() if config.embedder is not None else local_embedder()
            embedder = self._embedders.setdefault(index, built)
        params = dict(settings.params)
        for remote in ("uri", "url", "path", "api_key_env", "host", "port"):
            params.pop(remote, None)
        if settings.kind == "milvus":
            params["uri"] = str(self.workdir / f"{name}.db")
        else:
            params["path"] = ":memory:"
        local = attrs.evolve(settings, params=tuple(params.items()))
        store: VectorStore = local.build(embedder=embedder)
        return store


def _close(store: object) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        close()


class _Worker:
    """Runs conversations through every pipeline (in a worker process, or in
    this one for ``--jobs 1``): the same code either way."""

    def __init__(self, settings: EvalSettings, workdir: Path) -> None:
        self.settings = settings
        self.configs = load_configs(settings)
        self.pipelines = [
            Pipeline.from_config(c, seams=Seams(store=StandIn("store", "eval store")))
            for c in self.configs
        ]
        self.stores = _Stores(workdir)
        self.answer_model = _model("answer_model", settings.answer_model)
        self.judge_model = _model("judge_model", settings.judge_model)

    def run(self, number: int, line: int, data: Any) -> _Unit:
        conversation = parse_conversation(data, f"{self.settings.dataset}:{line}")
        figures: list[tuple[RequestFigures, ...]] = []
        lines: list[dict[str, Any]] = []
        for index, (config, base) in enumerate(zip(self.configs, self.pipelines, strict=True)):
            store = self.stores.make(index, config, f"c{number}-p{index}")
            try:
                seams = Seams(summarizer=base.seams.summarizer, store=store)
                if self.settings.trace is not None:
                    seams = logged_seams(seams)
                pipeline = attrs.evolve(base, seams=seams)
                figures.append(tuple(self._conversation(index, pipeline, conversation, lines)))
            except MemrulesError as exc:
                msg = f"conversation {conversation.id} (line {line}), {config.source}: {exc}"
                raise EvalError(msg) from None
            finally:
                _close(store)
        return _Unit(figures=tuple(figures), lines=tuple(lines))

    def _run(
        self,
        kind: str,
        index: int,
        inputs: dict[str, Any],
        run: Callable[[], Any],
        lines: list[dict[str, Any]],
    ) -> Any:
        """``run()``, and its trace line kept when tracing."""
        if self.settings.trace is None:
            return run()
        result, line = run_line(kind, index, inputs, run)
        lines.append(line)
        return result

    def _conversation(
        self,
        index: int,
        pipeline: Pipeline,
        conversation: EvalConversation,
        lines: list[dict[str, Any]],
    ) -> Iterator[RequestFigures]:
        scope = {"conversation_id": conversation.id, "user": conversation.user, "tenant": None}
        previous: Sent | None = None
        for question, request in _requests(conversation):
            inputs = {**scope, "budget": None, "messages": messages_json(request)}

            def apply(request: Conversation = request) -> CompressionResult:
                return pipeline.apply(
                    request, conversation_id=conversation.id, user=conversation.user
                )

            started = time.perf_counter()
            result: CompressionResult = self._run("apply", index, inputs, apply, lines)
            seconds = time.perf_counter() - started
            report = result.report
            counts = pipeline.counter.counts(result.messages)
            framing = max(0, report.tokens_after - sum(counts))
            sent = Sent(messages=result.messages, counts=counts, overhead=framing)
            cache = measure(previous, sent, CACHE_RULE)
            previous = sent
            figures = RequestFigures(
                tokens_before=report.tokens_before,
                tokens_after=report.tokens_after,
                broken=len(input_problems(result.messages)),
                question=question is not None,
                seconds=seconds,
                conversation=conversation.id,
                sent=cache.tokens,
                cached=cache.cached,
                cost=cache.cost,
            )
            if question is not None:
                kept = _holds(question, result.messages[:-1], conversation)
                hits = self._recall(index, pipeline, conversation, question, scope, lines)
                recalled = None if hits is None else _holds(question, hits, conversation)
                figures = attrs.evolve(
                    figures,
                    kept=kept,
                    recalled=recalled,
                    question_id=question.id,
                    category=question.category,
                    evidence=_evidence(question, result, conversation, hits),
                    scored=self._answer(index, conversation, question, result.messages, lines),
                )
            yield figures

    def _answer(
        self,
        index: int,
        conversation: EvalConversation,
        question: Question,
        context: Conversation,
        lines: list[dict[str, Any]],
    ) -> Scored | None:
        """The answer model's answer from ``context`` and the judge's score
        (None without an answer model); its trace line kept when tracing."""
        if self.answer_model is None:
            return None
        answer_model, judge_model = self.answer_model, self.judge_model
        log = RecordingLog()
        with log.active():
            scored = score_answer(
                context,
                question.question,
                question.answer,
                answer_model=answer_model,
                judge_model=judge_model,
            )
        if self.settings.trace is not None:
            inputs = {
                "conversation_id": conversation.id,
                "question": question.id,
                "query": question.question,
                "reference": question.answer,
                "context": messages_json(context),
                "answer_model": answer_model.model,
                "judge_model": None if judge_model is None else judge_model.model,
            }
            lines.append(answer_line(index, inputs, log.calls, scored))
        return scored

    def _recall(
        self,
        index: int,
        pipeline: Pipeline,
        conversation: EvalConversation,
        question: Question,
        scope: dict[str, Any],
        lines: list[dict[str, Any]],
    ) -> list[Message] | None:
        """The messages of the ``k`` hits of ``recall(question)`` (None without a store)."""
        if pipeline.seams.store is None:
            return None
        k = self.settings.k
        inputs = {"query": question.question, "k": k, "mode": None, **scope}

        def recall() -> Any:
            return pipeline.recall(
                question.question, k=k, conversation_id=conversation.id, user=conversation.user
            )

        hits = self._run("recall", index, inputs, recall, lines)
        return [h.message for h in hits]


def _model(seam: str, endpoint: Endpoint | None) -> ChatModel | None:
    if endpoint is None:
        return None
    tokens = JUDGE_MAX_TOKENS if seam == "judge_model" else None
    return chat_model(
        seam,
        endpoint.url,
        model=endpoint.model,
        api_key_env=endpoint.api_key_env,
        **({} if tokens is None else {"max_tokens": tokens}),
    )


def _evidence(
    question: Question,
    result: CompressionResult,
    conversation: EvalConversation,
    hits: Sequence[Message] | None,
) -> tuple[Evidence, ...]:
    """Where each evidence message of ``question`` went (see :class:`Evidence`)."""
    original = {m.id: m for m in conversation.messages if m.id in question.evidence}
    out = {m.id: m for m in result.messages if m.id is not None}
    found = {m.id: m for m in hits or () if m.id is not None}
    fates = []
    for e in question.evidence:
        text = original[e].countable_text
        where = "gone" if e not in out else "changed"
        if e in out and out[e].countable_text == text:
            where = "context"
        steps = []
        for a in result.report.actions:
            if e in a.replaced_ids:
                steps.append(("replaced", a.strategy))
            elif e in a.removed_ids:
                steps.append(("removed", a.strategy))
        removed = [name for how, name in steps if how == "removed"]
        replaced = [name for how, name in steps if how == "replaced"]
        by: str | None = None
        if where == "gone" and removed:
            by = removed[-1]
        elif where != "context" and replaced:
            by = replaced[0]
        recalled = None if hits is None else (e in found and found[e].countable_text == text)
        fates.append(
            Evidence(
                id=e,
                where=where,
                by=by,
                steps=tuple(f"{how} by {name}" for how, name in steps),
                recalled=recalled,
            )
        )
    return tuple(fates)


# --- running: in this process or in N ---------------------------------------------------

_WORKER: _Worker | None = None


def _start_worker(settings: EvalSettings, workdir: str) -> None:
    global _WORKER
    _WORKER = _Worker(settings, Path(workdir))


def _work(number: int, line: int, data: Any) -> _Unit:
    assert _WORKER is not None
    try:
        return _WORKER.run(number, line, data)
    except MemrulesError as exc:  # sent back as text: not every error pickles
        raise EvalError(str(exc)) from None
    except Exception as exc:
        msg = f"{_WORKER.settings.dataset}:{line}: {type(exc).__name__}: {exc}"
        raise EvalError(msg) from None


def _units(
    settings: EvalSettings, items: Iterable[tuple[int, int, Any]], workdir: Path
) -> Iterator[_Unit]:
    """Each conversation's unit, in the dataset's order."""
    if settings.jobs == 1:
        worker = _Worker(settings, workdir)
        for number, line, data in items:
            yield worker.run(number, line, data)
        return
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=settings.jobs,
        mp_context=context,
        initializer=_start_worker,
        initargs=(settings, str(workdir)),
    ) as pool:
        pending: list[concurrent.futures.Future[_Unit]] = []
        for item in items:
            pending.append(pool.submit(_work, *item))
            while len(pending) >= 2 * settings.jobs:
                yield _result(pending.pop(0))
        while pending:
            yield _result(pending.pop(0))


def _result(future: concurrent.futures.Future[_Unit]) -> _Unit:
    try:
        return future.result()
    except concurrent.futures.process.BrokenProcessPool as exc:
        msg = f"a worker process died: {exc}"
        raise EvalError(msg) from None


def _percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in (0, 1]); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def names(paths: Sequence[Path]) -> list[str]:
    """Each config's name in the table: its file's stem, or its path when
    two stems are alike."""
    stems = [p.stem for p in paths]
    return [s if stems.count(s) == 1 else str(p) for s, p in zip(stems, paths, strict=True)]


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


def _figures(
    name: str,
    path: Path,
    sha: str,
    requests: Sequence[RequestFigures],
    has_store: bool,
    settings: EvalSettings,
) -> PipelineFigures:
    asked = [r for r in requests if r.question]
    times = [r.seconds * 1000 for r in requests]
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
    )


@attrs.frozen(kw_only=True, slots=True)
class EvalRun:
    """A whole run: the settings (with model names resolved), one row per
    config, each config's requests in the dataset's order, and the paired
    comparisons of every config with the first."""

    settings: EvalSettings
    rows: tuple[PipelineFigures, ...]
    requests: tuple[tuple[RequestFigures, ...], ...]
    comparisons: tuple[Paired, ...] = ()


def _comparisons(
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


def _resolved(settings: EvalSettings) -> EvalSettings:
    """``settings`` with each model's name asked of its endpoint once, here,
    rather than in every worker."""
    changes: dict[str, Any] = {}
    for key in ("answer_model", "judge_model"):
        endpoint: Endpoint | None = getattr(settings, key)
        if endpoint is not None and endpoint.model is None:
            model = _model(key, endpoint)
            assert model is not None
            changes[key] = attrs.evolve(endpoint, model=model.model)
    return attrs.evolve(settings, **changes) if changes else settings


def evaluate(settings: EvalSettings, progress: Progress | None = None) -> list[PipelineFigures]:
    """Run every config over the dataset (see the module docs): one row per config."""
    return list(run_eval(settings, progress).rows)


def run_eval(settings: EvalSettings, progress: Progress | None = None) -> EvalRun:
    """Run every config over the dataset: the rows, every request's figures,
    and the paired comparisons."""
    settings = _resolved(settings)
    configs = load_configs(settings)
    labels = names(settings.configs)
    pipelines = [
        Pipeline.from_config(c, seams=Seams(store=StandIn("store", "eval store"))) for c in configs
    ]
    entries = []
    for label, config, pipeline in zip(labels, configs, pipelines, strict=True):
        without_store = Seams(summarizer=pipeline.seams.summarizer)
        entry = pipeline_header(label, attrs.evolve(pipeline, seams=without_store))
        if config.store is not None:
            backend = "Milvus Lite" if config.store.kind == "milvus" else "Qdrant in memory"
            entry["seams"]["store"] = f"a fresh {backend} store per conversation (memrules eval)"
        entries.append(entry)
    total = sum(1 for _ in read_dataset(settings.dataset))
    items = (
        (number, line, data) for number, (line, data) in enumerate(read_dataset(settings.dataset))
    )
    collected: list[list[RequestFigures]] = [[] for _ in configs]
    workdir = Path(tempfile.mkdtemp(prefix="memrules-eval-"))
    writer = None
    try:
        if settings.trace is not None:
            writer = TraceWriter(settings.trace, trace_header(entries), atomic=True)
        for done, unit in enumerate(_units(settings, items, workdir), start=1):
            for i, requests in enumerate(unit.figures):
                collected[i].extend(requests)
            if writer is not None:
                for line in unit.lines:
                    writer.write(line)
            if progress is not None:
                progress.update(f"eval: {done:,}/{total:,} conversations", done / total)
        if writer is not None:
            writer.close()
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rows = [
        _figures(label, path, entry["config_sha256"], requests, config.store is not None, settings)
        for label, path, entry, requests, config in zip(
            labels, settings.configs, entries, collected, configs, strict=True
        )
    ]
    return EvalRun(
        settings=settings,
        rows=tuple(rows),
        requests=tuple(tuple(r) for r in collected),
        comparisons=_comparisons(rows, collected, settings),
    )


# --- output -----------------------------------------------------------------------------


def _share(value: float | None, interval: tuple[float, float] | None = None) -> str:
    if value is None:
        return "—"
    if interval is None:
        return f"{value:.1%}"
    return f"{value:.1%} [{interval[0]:.1%}–{interval[1]:.1%}]"


def render_table(rows: Sequence[PipelineFigures], *, k: int) -> str:
    """The figures as a text table, one row per pipeline."""
    header: tuple[str, ...] = (
        "pipeline",
        "requests",
        "tokens before",
        "tokens after",
        "ratio",
        "broken pairs",
        "facts kept",
        f"recall@{k}",
        "kept or recalled",
        "p50 ms",
        "p95 ms",
    )
    answers = any(r.judged for r in rows)
    if answers:
        header = (*header, "answers correct")
    body = [
        (
            r.name,
            f"{r.requests:,}",
            f"{r.tokens_before:,}",
            f"{r.tokens_after:,}",
            f"{r.ratio:.2f}x",
            f"{r.broken:,}",
            _share(r.kept_share, r.interval("facts_kept")),
            _share(r.recall_share, r.interval("recall")),
            _share(r.kept_or_recalled_share, r.interval("kept_or_recalled")),
            f"{r.p50_ms:.2f}",
            f"{r.p95_ms:.2f}",
            *((_share(r.answer_share, r.interval("answer_correct")),) if answers else ()),
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in (header, *body)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return "  ".join((first, *rest)).rstrip()

    return "\n".join([line(header), *(line(row) for row in body)]) + "\n"


def _interval_json(row: PipelineFigures) -> dict[str, Any]:
    return {rate: None if found is None else list(found) for rate, found in row.intervals}


def figures_json(
    rows: Sequence[PipelineFigures],
    settings: EvalSettings,
    comparisons: Sequence[Paired] = (),
) -> dict[str, Any]:
    """The figures for machines (``--json``): per pipeline the table's
    figures, the cache columns, the answer-level score when models were
    given, and the bootstrap intervals when asked; the paired comparisons."""
    extra: dict[str, Any] = {}
    if settings.bootstrap:
        extra["bootstrap"] = {"resamples": settings.bootstrap, "seed": settings.seed,
                              "level": LEVEL, "resampled": "conversations"}  # fmt: skip
    if comparisons:
        extra["comparisons"] = [c.to_dict() for c in comparisons]
    if settings.answer_model is not None:
        judge = settings.judge_model
        extra["answer_model"] = settings.answer_model.model
        extra["judge_model"] = None if judge is None else judge.model
    return {
        "dataset": str(settings.dataset),
        "k": settings.k,
        "max_tokens": settings.max_tokens,
        **extra,
        "pipelines": [
            {
                "name": r.name,
                "config": r.config,
                "config_sha256": r.config_sha256,
                "requests": r.requests,
                "tokens_before": r.tokens_before,
                "tokens_after": r.tokens_after,
                "compression_ratio": round(r.ratio, 6),
                "broken_tool_pairs": r.broken,
                "facts": r.facts,
                "facts_kept": r.kept,
                "facts_kept_share": r.kept_share,
                "facts_recalled": r.recalled,
                "recall_share": r.recall_share,
                "facts_kept_or_recalled": r.kept_or_recalled,
                "kept_or_recalled_share": r.kept_or_recalled_share,
                "p50_ms": round(r.p50_ms, 3),
                "p95_ms": round(r.p95_ms, 3),
                "cache": {
                    "rule": CACHE_RULE.name,
                    "sent_tokens": r.sent,
                    "cached_tokens": r.cached,
                    "cache_share": r.cache_share,
                    "cost_units": round(r.cost, 3),
                },
                **(
                    {
                        "answers": {
                            "answered": r.answered,
                            "judged": r.judged,
                            "correct": r.correct,
                            "correct_share": r.answer_share,
                        }
                    }
                    if settings.answer_model is not None
                    else {}
                ),
                **({"intervals": _interval_json(r)} if r.intervals else {}),
            }
            for r in rows
        ],
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``memrules eval``'s arguments (the trust flags are the command line's own)."""
    parser.add_argument(
        "--config",
        action="append",
        required=True,
        type=Path,
        metavar="CONFIG",
        help="a YAML pipeline config; repeat to compare several",
    )
    parser.add_argument("dataset", type=Path, metavar="DATASET", help="a JSON Lines dataset")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="run conversations in N processes"
    )
    parser.add_argument(
        "-k", type=int, default=5, metavar="K", help="hits recall may use per question (5)"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="put every pipeline on a budget of N tokens (replacing its trigger)",
    )
    parser.add_argument(
        "--trace", type=Path, metavar="FILE", help="write a trace of every request to FILE"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    parser.add_argument(
        "--per-question",
        type=Path,
        metavar="FILE",
        help="write one JSON line per question and config to FILE: kept, recalled or lost, "
        "where each evidence message went and which strategy removed it, tokens, cache",
    )
    parser.add_argument(
        "--csv", type=Path, metavar="FILE", help="write the table (with intervals) as CSV to FILE"
    )
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="write a self-contained HTML report (table, plot, categories, comparisons) to FILE",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=0,
        metavar="N",
        help="95%% intervals on every rate from N resamples of the conversations",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S", help="the bootstrap's random seed (0)"
    )
    answers = parser.add_argument_group("answer-level scoring (OpenAI-compatible endpoints)")
    answers.add_argument(
        "--answer-model",
        metavar="URL",
        help="answer each question from the compacted context with the model at URL (…/v1)",
    )
    answers.add_argument(
        "--answer-model-name", metavar="NAME", help="its model name (default: the first listed)"
    )
    answers.add_argument(
        "--judge-model",
        metavar="URL",
        help="grade each answer against the dataset's with the model at URL (…/v1)",
    )
    answers.add_argument(
        "--judge-model-name", metavar="NAME", help="its model name (default: the first listed)"
    )
    answers.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="the environment variable holding both endpoints' API key (none by default)",
    )
