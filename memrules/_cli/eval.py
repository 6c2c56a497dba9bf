"""``memrules eval``: run pipelines over a dataset and score them.

Each conversation of the dataset (`memrules._cli.dataset`) becomes one
request per question: the messages before the question, then the question
as the latest user message, compacted by each pipeline as a request at that
point would be. A conversation without questions is one request of all its
messages. For each pipeline the figures are:

- **requests**, and **tokens before** and **after** compaction (summed over
  the requests, as the pipeline's counter counts them), and the
  **compression ratio**, before over after;
- **broken tool pairs** in what the pipeline sends: every tool call without
  its result and result without its call that a provider would reject
  (`input_problems` of the output, so pairs the input
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
  (`fill`), so the tokens after count the
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

Beyond the table (`memrules._cli.eval_figures` holds the values,
`memrules._cli.eval_output` the table, JSON, CSV and per-question
lines): where each evidence message went and which strategy removed it;
the cache columns, each request measured with
`measure` against the conversation's
previous request under `CACHE_RULE`; bootstrap intervals and paired
comparisons (``--bootstrap N``); and with ``--answer-model`` (and
``--judge-model``) the answer-level score of `memrules._replay.answers`,
whose model calls a trace records as ``answer`` lines.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from memrules._cli.dataset import (
    read_dataset,
)
from memrules._cli.eval_arguments import add_arguments
from memrules._cli.eval_figures import (
    CACHE_RULE,
    Endpoint,
    EvalRun,
    EvalSettings,
    Evidence,
    PipelineFigures,
    RequestFigures,
    comparisons,
    pipeline_figures,
)
from memrules._cli.eval_output import figures_json, render_table
from memrules._cli.eval_worker import (
    EvalError,
    Unit,
    Worker,
    endpoint_model,
    load_configs,
)
from memrules._core.errors import MemrulesError
from memrules._core.seam_protocols import Seams
from memrules._runtime.logged import StandIn
from memrules._runtime.pipeline import Pipeline
from memrules._runtime.progress import Progress
from memrules._trace.record import TraceWriter, pipeline_header
from memrules._trace.record import _header as trace_header

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


# --- one conversation, every pipeline -----------------------------------------------


# --- running: in this process or in N ---------------------------------------------------

_WORKER: Worker | None = None


def _start_worker(settings: EvalSettings, workdir: str) -> None:
    global _WORKER
    _WORKER = Worker(settings, Path(workdir))


def _work(number: int, line: int, data: Any) -> Unit:
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
) -> Iterator[Unit]:
    """Each conversation's unit, in the dataset's order."""
    if settings.jobs == 1:
        worker = Worker(settings, workdir)
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
        pending: list[concurrent.futures.Future[Unit]] = []
        for item in items:
            pending.append(pool.submit(_work, *item))
            while len(pending) >= 2 * settings.jobs:
                yield _result(pending.pop(0))
        while pending:
            yield _result(pending.pop(0))


def _result(future: concurrent.futures.Future[Unit]) -> Unit:
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
            model = endpoint_model(key, endpoint)
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
