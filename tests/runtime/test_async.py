"""``Pipeline.apply_async`` and ``MemoryPlugin.handle_async``: the same
results as the sync path, every seam call made once, and the event loop free
while the seams work (a real loopback server that takes its time)."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrules import load_pipeline
from memrules._config.load import MemoryConfig
from memrules._core.budget import Budget
from memrules._core.messages import Conversation, message
from memrules._engine.interpreter import NamedStrategy
from memrules._plugin.plugin import MemoryPlugin, Request, StepResult
from memrules._runtime.pipeline import Pipeline
from memrules.seams import (
    Seams,
    extractive_summarizer,
    openai_embedder,
    openai_summarizer,
    qdrant_store,
)
from memrules.strategies import offload, sliding_window, summarize
from memrules.testing import conversations
from tests.support.chat_server import ChatServer
from tests.support.seams import HAS_QDRANT, config_params
from tests.support.strategies import COUNTER, ExtractiveSummarizer, MemoryStore, budgets_for

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
T = TypeVar("T")


def run(awaitable: Awaitable[T]) -> T:
    return asyncio.run(awaitable)  # type: ignore[arg-type]


def seamed(base: Pipeline) -> tuple[Pipeline, MemoryStore, ExtractiveSummarizer]:
    """``base`` with fresh in-memory seams, and those seams."""
    store, summarizer = MemoryStore(), ExtractiveSummarizer()
    return attrs.evolve(base, seams=Seams(store=store, summarizer=summarizer)), store, summarizer


def strategies(*named: tuple[str, Any]) -> tuple[NamedStrategy, ...]:
    return tuple(NamedStrategy(name=name, strategy=strategy) for name, strategy in named)


SEAMED = Pipeline(
    config=MemoryConfig(
        strategies=strategies(
            ("summarize", summarize(turns=2, keep_exchanges=1)),
            ("offload", offload(turns=1, keep_exchanges=1)),
            ("sliding_window", sliding_window(keep_messages=4)),
        )
    ),
    counter=COUNTER,
)


# --- async equals sync ---------------------------------------------------------------


@pytest.mark.parametrize("path", config_params(CONFIGS))
def test_apply_async_equals_apply_for_the_shipped_configs(path: Path) -> None:
    base = load_pipeline(path)

    @settings(max_examples=25)
    @given(st.data(), conversations(max_size=24))
    def check(data: st.DataObject, conversation: Conversation) -> None:
        budget = data.draw(budgets_for(conversation)) if conversation else None
        sync, sync_store, sync_summarizer = seamed(base)
        awaited, store, summarizer = seamed(base)
        expected = sync.apply(conversation, budget=budget, conversation_id="c")
        got = run(awaited.apply_async(conversation, budget=budget, conversation_id="c"))
        assert got == expected
        assert got.report.to_dict() == expected.report.to_dict()
        assert store.batches == sync_store.batches  # each write once, as in the sync run
        assert summarizer.seen == sync_summarizer.seen

    check()


@given(st.data(), conversations(min_size=4, max_size=30))
def test_apply_async_equals_apply_with_summarize_and_offload(
    data: st.DataObject, conversation: Conversation
) -> None:
    budget = data.draw(budgets_for(conversation, unlimited=False))
    sync, sync_store, _ = seamed(SEAMED)
    awaited, store, _ = seamed(SEAMED)
    expected = sync.apply(conversation, budget=budget)
    assert run(awaited.apply_async(conversation, budget=budget)) == expected
    assert store.batches == sync_store.batches


@given(st.data(), conversations(min_size=4, max_size=30))
def test_failing_seams_give_the_sync_report(
    data: st.DataObject, conversation: Conversation
) -> None:
    budget = data.draw(budgets_for(conversation, unlimited=False))
    down = Seams(store=MemoryStore(down=True), summarizer=ExtractiveSummarizer(down=True))
    pipeline = attrs.evolve(SEAMED, seams=down)
    expected = pipeline.apply(conversation, budget=budget)
    assert run(pipeline.apply_async(conversation, budget=budget)) == expected


@pytest.mark.skipif(not HAS_QDRANT, reason="needs the qdrant extra: pip install -e '.[qdrant]'")
def test_a_real_store_and_summarizer_give_the_sync_result() -> None:
    """Qdrant's local mode (in a worker thread), its embedder a loopback
    OpenAI-compatible endpoint, and the extractive summarizer."""

    def pipeline(server: ChatServer, name: str) -> Pipeline:
        embedder = openai_embedder(base_url=server.url, model="e", dimensions=16)
        store = qdrant_store(path=":memory:", collection=name, embedder=embedder)
        seams = Seams(store=store, summarizer=extractive_summarizer())
        return attrs.evolve(SEAMED, seams=seams)

    @settings(max_examples=15)
    @given(st.data(), conversations(min_size=6, max_size=30))
    def check(data: st.DataObject, conversation: Conversation) -> None:
        budget = data.draw(budgets_for(conversation, unlimited=False))
        with ChatServer() as server:
            expected = pipeline(server, "sync").apply(conversation, budget=budget)
            sync_embeddings = len(server.embedding_requests)
            got = run(pipeline(server, "async").apply_async(conversation, budget=budget))
            assert got == expected
            assert len(server.embedding_requests) == 2 * sync_embeddings

    check()


def test_a_store_write_happens_once_per_call() -> None:
    conversation = tuple(
        message(role, f"{role} message {i} about src/file{i}.py")
        for i in range(12)
        for role in ("user", "assistant")
    )
    config = MemoryConfig(strategies=strategies(("offload", offload(turns=2, keep_exchanges=0))))
    store = MemoryStore()
    pipeline = Pipeline(config=config, counter=COUNTER, seams=Seams(store=store))
    result = run(pipeline.apply_async(conversation, budget=Budget.messages(10)))
    offloads = [c for a in result.report.actions for c in a.seam_calls]
    # The core ran twice (stopped at the write, then with its answer); the store was written once.
    assert len(offloads) == 1
    assert [len(b) for b in store.batches] == [offloads[0].request["messages"]]  # type: ignore[index]
    ids = [r["id"] for r in offloads[0].request["records"]]  # type: ignore[index]
    assert offloads[0].response == {"added": ids, "existing": []}


def test_apply_async_runs_the_core_once() -> None:
    """Each strategy runs as often as in the sync path, whatever the number
    of seam calls: the core is not run again once a call is answered."""

    def runs_of(pipeline: Pipeline, awaited: bool) -> list[str]:
        ran: list[str] = []

        def noted(name: str, inner: Any) -> NamedStrategy:
            def strategy(conversation: Conversation, context: Any) -> Any:
                ran.append(name)
                return inner(conversation, context)

            return NamedStrategy(name=name, strategy=strategy)

        config = attrs.evolve(
            pipeline.config,
            strategies=[noted(s.name, s.strategy) for s in pipeline.config.strategies],
        )
        seamed_pipeline, store, _ = seamed(attrs.evolve(pipeline, config=config))
        conversation = _slow_conversation(0)
        budget = Budget.messages(4)
        if awaited:
            run(seamed_pipeline.apply_async(conversation, budget=budget, over_budget="send"))
        else:
            seamed_pipeline.apply(conversation, budget=budget, over_budget="send")
        assert len(store.batches) == 1  # offload wrote once
        return ran

    assert runs_of(SEAMED, awaited=True) == runs_of(SEAMED, awaited=False)


# --- the event loop stays free ------------------------------------------------------

DELAY = 0.5


def _slow_conversation(i: int) -> Conversation:
    return tuple(
        message(role, f"conversation {i}, turn {t}: the {role} talks about src/app{t}.py")
        for t in range(6)
        for role in ("user", "assistant")
    )


def _summarizing(server: ChatServer) -> Pipeline:
    config = MemoryConfig(strategies=strategies(("summarize", summarize(turns=3))))
    summarizer = openai_summarizer(base_url=server.url, model="loopback-model", retries=0)
    return Pipeline(config=config, counter=COUNTER, seams=Seams(summarizer=summarizer))


async def _ticking(work: Callable[[], Awaitable[T]]) -> tuple[T, float, list[float]]:
    """``work()``'s result, how long it took, and the gaps between the ticks
    of a coroutine that asks to wake every 10 ms meanwhile."""
    ticks: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        while not done.is_set():
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.05)
    start = time.perf_counter()
    result = await work()
    took = time.perf_counter() - start
    done.set()
    await ticker
    return result, took, [b - a for a, b in itertools.pairwise(ticks)]


def test_a_hundred_concurrent_calls_wait_for_their_summaries_together() -> None:
    """Concurrency by what the server sees, not by the clock: the hundred
    summaries are held at the server at the same time (a pipeline that
    blocked the loop, or awaited one call after another, would hold one at a
    time), and the event loop went on running other coroutines meanwhile."""
    budget = Budget.messages(8)
    with ChatServer(delay=DELAY) as server:
        pipeline = _summarizing(server)

        async def hundred() -> Any:
            calls = (pipeline.apply_async(_slow_conversation(i), budget=budget) for i in range(100))
            return await asyncio.gather(*calls)

        results, _, gaps = run(_ticking(hundred))
        requests = len(server.chat_requests)
        together = server.most_in_flight
    assert all(r.report.compacted and r.report.errors == () for r in results)
    assert requests == 100  # one summary per call
    assert together >= 50, together
    # The ticker woke while the summaries were awaited: the loop was not blocked.
    assert len(gaps) >= 10


def test_a_summarizer_that_fails_gives_the_sync_report() -> None:
    budget = Budget.messages(8)
    conversation = _slow_conversation(0)
    with ChatServer(fail=(500,) * 3, retry_after="0") as server:
        summarizer = openai_summarizer(base_url=server.url, model="m", retries=2)
        config = MemoryConfig(
            strategies=strategies(
                ("summarize", summarize(turns=3)), ("sliding_window", sliding_window())
            )
        )
        pipeline = Pipeline(config=config, counter=COUNTER, seams=Seams(summarizer=summarizer))
        expected = pipeline.apply(conversation, budget=budget)
        server.fail = [500] * 3
        got = run(pipeline.apply_async(conversation, budget=budget))
        assert len(server.chat_requests) == 6  # three attempts each way
    (error,) = expected.report.errors
    assert "HTTP 500" in error
    assert "the messages stay where they were" in error
    assert got == expected
    assert got.report.to_dict() == expected.report.to_dict()


def test_the_async_clients_send_and_answer_what_the_sync_ones_do() -> None:
    texts = ["vault key rotation", "the deploy is on friday", "Lisbon"]
    batch = tuple(message("user", t) for t in texts)
    with ChatServer() as server:
        embedder = openai_embedder(base_url=server.url, model="e", batch_size=2)
        summarizer = openai_summarizer(base_url=server.url, model="m")
        assert run(embedder.embed_async(texts)) == embedder.embed(texts)  # type: ignore[attr-defined]
        assert run(summarizer.summarize_async(batch)) == summarizer.summarize(batch)  # type: ignore[attr-defined]
        bodies = [r.body for r in server.requests]
    assert bodies[:2] == bodies[2:4]
    assert bodies[4] == bodies[5]


# --- the request hook ---------------------------------------------------------------

PLUGIN_YAML = """
context_window_tokens: 400
max_fraction: 0.5
warn_fraction: 0.3
strategies:
  - type: summarize
    turns: 2
  - type: sliding_window
    keep_messages: 6
"""


def _turns(n: int) -> list[Conversation]:
    history = [message("system", "You help with the deploy.")]
    requests = []
    for i in range(n):
        history.append(
            message("user", f"Turn {i}: fix src/app{i}.py by May {i + 1}; we decided on 3.{i}.")
        )
        requests.append(tuple(history))
        history.append(message("assistant", f"Done with step {i}, src/app{i}.py is fixed."))
    return requests


def test_the_plugin_async_path_equals_the_sync_path() -> None:
    from memrules import load_config

    config = load_config(PLUGIN_YAML)
    sync = MemoryPlugin(config, summarizer=extractive_summarizer())
    awaited = MemoryPlugin(config, summarizer=extractive_summarizer())

    async def main() -> list[StepResult]:
        seen = []
        for conversation_id in ("a", "b"):
            for messages in _turns(8):
                request = Request(messages=messages, conversation_id=conversation_id)
                expected = sync.handle(request, now=1.0)
                assert await awaited.handle_async(request, now=1.0) == expected
                assert awaited.state(conversation_id) == sync.state(conversation_id)
                seen.append(expected)
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert await awaited.on_openai_request_async(body) == sync.on_openai_request(body)
        request = Request(messages=_turns(3)[-1], conversation_id="c")
        assert await awaited.on_request_async(request) == sync.on_request(request)
        return seen

    seen = run(main())
    # The conversations crossed the warning, then the budget: the summarizer was asked.
    assert any(r.warned for r in seen)
    assert any(a.strategy == "summarize" and a.seam_calls for r in seen for a in r.report.actions)


def test_concurrent_async_requests_of_one_conversation_warn_once() -> None:
    from memrules import load_config

    plugin = MemoryPlugin(load_config(PLUGIN_YAML), summarizer=extractive_summarizer())
    messages = _turns(5)[-1]

    async def main() -> list[Any]:
        calls = (plugin.handle_async(Request(messages=messages), now=1.0) for _ in range(20))
        return await asyncio.gather(*calls)

    results = run(main())
    assert sum(r.warned for r in results) == 1
    assert plugin.state().warned


def test_a_traced_plugin_handles_async_requests_as_handle_does(tmp_path: Path) -> None:
    from memrules import load_config, replay_trace

    requests = [Request(messages=m, conversation_id="c1") for m in _turns(5)]
    traced = MemoryPlugin(
        load_config(PLUGIN_YAML), summarizer=extractive_summarizer(), trace=tmp_path / "a.jsonl"
    )
    plain = MemoryPlugin(load_config(PLUGIN_YAML), summarizer=extractive_summarizer())

    async def main() -> list[StepResult]:
        return [await traced.handle_async(r, now=1.0) for r in requests]

    got = run(main())
    traced.close()
    expected = [plain.handle(r, now=1.0) for r in requests]
    assert [g.request for g in got] == [e.request for e in expected]
    assert [g.report for g in got] == [e.report for e in expected]
    lines = (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + len(requests)
    assert replay_trace(tmp_path / "a.jsonl").identical


def test_observers_watch_one_run() -> None:
    class Runs:
        def __init__(self) -> None:
            self.runs: list[int] = []
            self.steps: list[str] = []

        def observe_run(self, run: Any, proceed: Callable[[], Any]) -> None:
            self.runs.append(run.messages)
            proceed()

        def observe_step(self, step: Any, proceed: Callable[[], Any]) -> None:
            self.steps.append(step.strategy)
            proceed()

    sync_runs, async_runs = Runs(), Runs()
    conversation = _slow_conversation(0)
    sync, _, summarizer = seamed(attrs.evolve(SEAMED, observers=(sync_runs,)))
    awaited, _, _ = seamed(attrs.evolve(SEAMED, observers=(async_runs,)))
    expected = sync.apply(conversation, budget=Budget.messages(6))
    assert run(awaited.apply_async(conversation, budget=Budget.messages(6))) == expected
    assert summarizer.seen  # a seam was called, so the core ran more than once
    assert async_runs.runs == sync_runs.runs == [len(conversation)]
    assert async_runs.steps == sync_runs.steps


def test_the_plugin_async_path_awaits_the_extractor_and_resolver_once_per_request() -> None:
    """The working graph's extractor and the window resolver are seam calls
    too: each request asks each once, and the result is the sync one."""
    from memrules.graph import GraphContext, offline_extractor

    asked: list[str | None] = []
    extracted: list[int] = []
    extractor = offline_extractor()

    def resolver(model: str | None) -> int | None:
        asked.append(model)
        return 300

    def counting(messages: Conversation) -> Any:
        extracted.append(len(messages))
        return extractor(messages)

    def plugin(extract: Any) -> MemoryPlugin:
        config = MemoryConfig(
            context_window_tokens=100_000,
            max_fraction=0.5,
            strategies=[summarize(turns=2), sliding_window(keep_messages=6)],
            graph_context=GraphContext(),
            graph_extractor=extract,
            context_window_resolver=resolver,
        )
        return MemoryPlugin(config, summarizer=extractive_summarizer())

    sync, awaited = plugin(extractor), plugin(counting)

    async def main() -> None:
        history = [message("system", "You are terse.")]
        for i in range(6):
            history.append(message("user", f"The vault{i} is in Lisbon. We decided on v{i}."))
            history.append(message("assistant", f"noted, vault{i} and src/app{i}.py"))
            request = Request(messages=tuple(history), model="m")
            expected = sync.handle(request, now=1.0)
            before = (len(asked), len(extracted))
            assert await awaited.handle_async(request, now=1.0) == expected
            assert (len(asked) - before[0], len(extracted) - before[1]) == (1, 1)
            compacted.append(expected.report.compacted)

    compacted: list[bool] = []
    run(main())
    assert any(compacted)  # the resolver's window, not context_window_tokens, set the budget
    assert sync.graph() == awaited.graph()
    assert sync.graph().nodes


def test_apply_async_takes_exactly_apply_s_arguments() -> None:
    """``apply_async``'s keywords are ``apply``'s, written once: type checkers
    and ``inspect.signature`` see ``apply``'s (the annotations included)."""
    import inspect

    sync = inspect.signature(Pipeline.apply)
    awaited = inspect.signature(Pipeline.apply_async)
    assert list(awaited.parameters.values()) == list(sync.parameters.values())
    assert awaited.return_annotation == sync.return_annotation
