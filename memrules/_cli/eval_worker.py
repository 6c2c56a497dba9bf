"""One conversation scored by every pipeline of an evaluation, in a worker process.

A `Worker` holds the configs' pipelines, their stores and the answer and
judge models; `Worker.run` replays one conversation's requests through
each pipeline and returns its `Unit` of figures (and trace lines). Stores are
opened per worker and closed when it ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from memrules._cli.dataset import (
    EvalConversation,
    Question,
    parse_conversation,
)
from memrules._cli.eval_figures import (
    CACHE_RULE,
    Endpoint,
    EvalSettings,
    Evidence,
    RequestFigures,
    budgeted,
)
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
from memrules._trace.record import messages_json, run_line
from memrules.memory.config import RetrievalStoreConfig, RouteRetrieval
from memrules.memory.gate import Recalled, reflect
from memrules.memory.retrieve import fill, insert_memory_message, reserved, stored_at
from memrules.seams._log import RecordingLog
from memrules.seams.embedders import local_embedder

__all__ = ["EvalError", "Unit", "Worker", "endpoint_model", "load_configs"]


class EvalError(MemrulesError, RuntimeError):
    """An evaluation that could not run to its end (a seam failed, a worker
    process died); names the conversation."""


def load_configs(settings: EvalSettings) -> list[MemoryConfig]:
    """The configs, read and checked (a `ConfigError` names the file)."""
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
class Unit:
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


class Worker:
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
        self.answer_model = endpoint_model("answer_model", settings.answer_model)
        self.judge_model = endpoint_model("judge_model", settings.judge_model)

    def run(self, number: int, line: int, data: Any) -> Unit:
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
        return Unit(figures=tuple(figures), lines=tuple(lines))

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


def endpoint_model(seam: str, endpoint: Endpoint | None) -> ChatModel | None:
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
    """Where each evidence message of ``question`` went (see `Evidence`)."""
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
