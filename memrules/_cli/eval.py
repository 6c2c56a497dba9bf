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
- with a ``memory:`` entry in the config (retrieval memory, the memories
  a route injects), "recalled" is instead what that memory message would
  hold, asked of the same store: the route's ``retrieval_limit`` hits
  (not ``-k``), the route's threshold, the reflection gate, and, with
  ``retrieval_tokens``, inside the budget: the context is compacted to the
  budget less ``retrieval_tokens`` and the memories go in while the
  request with the memory message fits the whole budget
  (:func:`memrules.memory.retrieve.fill`), so the tokens after count the
  memory message too and never pass the budget. Without
  ``retrieval_tokens`` the memory message goes on top of the budget, as
  the plugin sends it;
- **kept or recalled**: the share of questions answerable either way;
  and in ``--json`` only, beside it, **any evidence kept or recalled**:
  the share with at least one evidence message in the context or among
  the hits (or kept or recalled), the looser count a benchmark such as
  LoCoMo reports (``any_evidence_kept_or_recalled_share``);
- **p50** and **p95** of the time ``apply`` took per request (with
  ``--trace``, recording it too), and in ``--json`` the p50 and p95 of
  the time recall took per question (the search, and for a ``memory:``
  entry the gate and the fill: ``recall_p50_ms``).

Conversations are independent: ``--jobs N`` runs them in N processes, with
results identical to one (only the timings move), and a trace (``--trace``)
of the same bytes. ``--max-tokens N`` puts every pipeline on one budget of N
tokens (replacing its trigger), to compare strategies where the configs'
own budgets are larger than the dataset's conversations.

Beyond the table (:mod:`memrules._cli.eval_figures` holds the values,
:mod:`memrules._cli.eval_output` the table, JSON, CSV and per-question
lines): where each evidence message went and which strategy removed it;
the cache columns, each request measured with
:func:`memrules._counting.cache.measure` against the conversation's
previous request under :data:`CACHE_RULE`; bootstrap intervals and paired
comparisons (``--bootstrap N``); and with ``--answer-model`` (and
``--judge-model``) the answer-level score of :mod:`memrules._replay.answers`,
whose model calls a trace records as ``answer`` lines.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from memrules._cli.arguments import whole_number
from memrules._cli.dataset import (
    EvalConversation,
    Question,
    parse_conversation,
    read_dataset,
)
from memrules._cli.eval_figures import (
    CACHE_RULE,
    Endpoint,
    EvalRun,
    EvalSettings,
    Evidence,
    PipelineFigures,
    RequestFigures,
    budgeted,
    comparisons,
    pipeline_figures,
)
from memrules._cli.eval_output import figures_json, render_table
from memrules._config.load import MemoryConfig, load_config
from memrules._core.budget import Budget
from memrules._core.errors import MemrulesError
from memrules._core.messages import Conversation, Message, message
from memrules._core.repair import input_problems
from memrules._core.report import CompressionResult
from memrules._core.seam_protocols import Seams, VectorStore
from memrules._counting.cache import Sent, measure
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
from memrules.memory.config import MAX_RETRIEVAL_LIMIT, RetrievalStoreConfig, RouteRetrieval
from memrules.memory.gate import Recalled, reflect
from memrules.memory.retrieve import fill, insert_memory_message, reserved, stored_at
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

MAX_JOBS = 256
"""The most processes ``--jobs`` may start."""
MAX_BUDGET = 1_000_000_000
"""The largest ``--max-tokens``: a budget no model's window comes near."""
MAX_RESAMPLES = 1_000_000
"""The most ``--bootstrap`` resamples."""


class EvalError(MemrulesError, RuntimeError):
    """An evaluation that could not run to its end (a seam failed, a worker
    process died); names the conversation."""


# --- one conversation, every pipeline -----------------------------------------------


def load_configs(settings: EvalSettings) -> list[MemoryConfig]:
    """The configs, read and checked (a :class:`ConfigError` names the file)."""
    return [
        budgeted(load_config(path, allow_imports=settings.allow_imports), settings.max_tokens)
        for path in settings.configs
    ]


def _memory(config: MemoryConfig) -> tuple[RouteRetrieval, RetrievalStoreConfig] | None:
    """The route's memory entry and store settings, when it injects memories."""
    route, store = config.memory, config.memory_store
    if route is None or not route.enabled or store is None:
        return None
    return route, store


@attrs.frozen(kw_only=True, slots=True)
class _Recall:
    """What recall gave one question: the messages that count as recalled
    (the hits, or those the memory message holds whole), the request as
    sent (with the memory message, when one went in) and how long it took."""

    found: tuple[Message, ...]
    sent: Conversation
    seconds: float


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
        memory = _memory(self.configs[index])
        budget = pipeline.budget()
        compact_to: Budget | None = None
        if memory is not None and memory[0].retrieval_tokens is not None:
            compact_to = reserved(budget, memory[0])
        for question, request in _requests(conversation):
            inputs = {
                **scope,
                "budget": None if compact_to is None else compact_to.to_dict(),
                "messages": messages_json(request),
            }

            def apply(request: Conversation = request) -> CompressionResult:
                return pipeline.apply(
                    request,
                    budget=compact_to,
                    conversation_id=conversation.id,
                    user=conversation.user,
                )

            started = time.perf_counter()
            result: CompressionResult = self._run("apply", index, inputs, apply, lines)
            seconds = time.perf_counter() - started
            report = result.report
            recall: _Recall | None = None
            if question is not None:
                recall = self._recall(index, pipeline, conversation, question, result, lines)
            messages = result.messages if recall is None else recall.sent
            tokens_after = report.tokens_after
            if messages is not result.messages:
                tokens_after = pipeline.count(messages)
            counts = pipeline.counter.counts(messages)
            framing = max(0, tokens_after - sum(counts))
            sent = Sent(messages=messages, counts=counts, overhead=framing)
            cache = measure(previous, sent, CACHE_RULE)
            previous = sent
            figures = RequestFigures(
                tokens_before=report.tokens_before,
                tokens_after=tokens_after,
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
                hits = None if recall is None else recall.found
                recalled = None if hits is None else _holds(question, hits, conversation)
                figures = attrs.evolve(
                    figures,
                    kept=kept,
                    recalled=recalled,
                    recall_seconds=None if recall is None else recall.seconds,
                    recall_count=None if hits is None else len(hits),
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
        result: CompressionResult,
        lines: list[dict[str, Any]],
    ) -> _Recall | None:
        """What recall gives ``question`` after the request compacted to
        ``result`` (None without a store): the ``k`` hits of
        ``recall(question)``, or with a ``memory:`` entry the memory
        message the route would inject (see the module docs)."""
        if pipeline.seams.store is None:
            return None
        memory = _memory(self.configs[index])
        k = self.settings.k if memory is None else memory[0].retrieval_limit
        scope = {"conversation_id": conversation.id, "user": conversation.user, "tenant": None}
        inputs = {"query": question.question, "k": k, "mode": None, **scope}

        def recall() -> Any:
            return pipeline.recall(
                question.question, k=k, conversation_id=conversation.id, user=conversation.user
            )

        started = time.perf_counter()
        hits = self._run("recall", index, inputs, recall, lines)
        if memory is None:
            found = tuple(h.message for h in hits)
            return _Recall(found=found, sent=result.messages, seconds=time.perf_counter() - started)
        route, settings = memory
        threshold = route.threshold_in(settings)
        by_id = {h.id: h.message for h in hits}
        candidates = [
            Recalled(id=h.id, text=h.message.text, score=h.score, stored_at=stored_at(h.message))
            for h in hits
            if h.score >= threshold
        ]
        gate = reflect(candidates, settings.reflection, now=None, marker=settings.marker)
        chosen = gate.memories
        sent = result.messages
        if route.retrieval_tokens is not None:
            sent, chosen = fill(
                result.messages,
                gate.memories,
                budget=pipeline.budget(),
                count=pipeline.count,
                marker=settings.marker,
                limit=route.retrieval_limit,
            )
        elif gate.message() is not None:
            block = gate.message()
            assert block is not None
            sent = insert_memory_message(result.messages, block)
        found = tuple(by_id[m.id] for m in chosen if m.id != gate.cut)
        return _Recall(found=found, sent=sent, seconds=time.perf_counter() - started)


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


def names(paths: Sequence[Path]) -> list[str]:
    """Each config's name in the table: its file's stem, or its path when
    two stems are alike."""
    stems = [p.stem for p in paths]
    return [s if stems.count(s) == 1 else str(p) for s, p in zip(stems, paths, strict=True)]


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
        pipeline_figures(
            label, path, entry["config_sha256"], requests, config.store is not None, settings
        )
        for label, path, entry, requests, config in zip(
            labels, settings.configs, entries, collected, configs, strict=True
        )
    ]
    return EvalRun(
        settings=settings,
        rows=tuple(rows),
        requests=tuple(tuple(r) for r in collected),
        comparisons=comparisons(rows, collected, settings),
    )


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
    parser.add_argument(
        "dataset", type=Path, nargs="?", metavar="DATASET", help="a JSON Lines dataset"
    )
    parser.add_argument(
        "--trajectories",
        type=Path,
        nargs="+",
        action="extend",
        metavar="PATH",
        help="replay agent trajectories (files or directories: mini-swe-agent or SWE-agent "
        ".traj, OpenAI or Anthropic messages, Claude Code or Codex sessions) instead of a "
        "dataset, and report the probes",
    )
    parser.add_argument(
        "--tool-results",
        choices=("openai", "anthropic"),
        default="openai",
        help="with --trajectories: send tool results as tool messages (openai) or inside "
        "user-role messages (anthropic)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--jobs",
        type=whole_number(1, MAX_JOBS),
        default=1,
        metavar="N",
        help="run conversations in N processes",
    )
    parser.add_argument(
        "-k",
        type=whole_number(1, MAX_RETRIEVAL_LIMIT),
        default=5,
        metavar="K",
        help="hits recall may use per question (5)",
    )
    parser.add_argument(
        "--max-tokens",
        type=whole_number(1, MAX_BUDGET),
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
        type=whole_number(0, MAX_RESAMPLES),
        default=0,
        metavar="N",
        help="95%% intervals on every rate from N resamples of the conversations",
    )
    parser.add_argument(
        "--seed",
        type=whole_number(0, 2**63 - 1),
        default=0,
        metavar="S",
        help="the bootstrap's random seed (0)",
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
