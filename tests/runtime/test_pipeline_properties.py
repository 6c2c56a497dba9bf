"""Property tests of whole pipelines: the default eight, variants, and random
pipelines drawn from the registry, under random budgets.

Whatever the pipeline, the invariants hold between input and output, the
report tells the truth (stop reason, counts, origin, each action), and the
same input gives the same output.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from memrules._config.load import MemoryConfig, default_strategies, load_config
from memrules._core.budget import Budget
from memrules._core.errors import ConfigError
from memrules._core.messages import Conversation
from memrules._core.report import CompressionResult, StopReason
from memrules._counting.tokens import TiktokenCounter
from memrules._engine.contract import DEFAULT_WARNING_MARKER
from memrules._engine.interpreter import MAX_PASSES, NamedStrategy
from memrules._runtime.pipeline import Pipeline
from memrules.seams import Seams, openai_summarizer
from memrules.strategies import (
    BUILTIN_ORDER,
    STRATEGIES,
    drop_observations,
    sliding_window,
    trim_to_budget,
)
from tests.support.chat_server import ChatServer
from tests.support.strategies import (
    ALL_BUILTINS,
    COUNTER,
    PARAMS,
    SUMMARIZERS,
    ExtractiveSummarizer,
    MemoryStore,
    agent_histories,
    agent_loops,
    assert_invariants,
    budgets_for,
    held,
    named_strategies,
    render,
    summarizer_of,
    terse_summary,
    total,
    with_observations,
)

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    """The loopback model the ``http`` summarizer asks."""
    with ChatServer(reply=terse_summary) as running:
        yield running


def _unavailable(messages: list[dict[str, Any]]) -> str:
    msg = "the model is loading"
    raise RuntimeError(msg)


@pytest.fixture(scope="module")
def down() -> Iterator[ChatServer]:
    """A loopback model that answers every request with HTTP 500."""
    with ChatServer(reply=_unavailable) as running:
        yield running


SEAMS = ("none", *SUMMARIZERS)
"""No seams, or an in-memory store with each summarizer."""


def pipeline(
    strategies: tuple[NamedStrategy, ...],
    *,
    seams: str = "memory",
    url: str = "",
    counter: TiktokenCounter | None = None,
) -> Pipeline:
    return Pipeline(
        config=MemoryConfig(strategies=strategies),
        counter=counter or COUNTER,
        seams=Seams()
        if seams == "none"
        else Seams(store=MemoryStore(), summarizer=summarizer_of(seams, url)),
    )


def over(budget: Budget, conversation: Conversation) -> bool:
    return budget.is_over(messages=len(conversation), tokens=total(conversation))


def check_compaction(
    conversation: Conversation,
    result: CompressionResult,
    strategies: tuple[NamedStrategy, ...],
    budget: Budget,
) -> None:
    """Everything the report says is true of the input and the output."""
    out, report = result.messages, result.report
    where = f"\ninput:\n{render(conversation)}\noutput:\n{render(out)}\n{report.to_dict()}"
    assert_invariants(conversation, out)
    assert report.errors == (), where  # built-ins with working seams never fail
    assert report.budget == budget
    assert (report.messages_before, report.tokens_before) == (
        len(conversation),
        total(conversation),
    )
    assert (report.messages_after, report.tokens_after) == (len(out), total(out))

    # origin maps each output message to the input message it is, or to None
    assert len(report.origin) == len(out)
    kept = [i for i in report.origin if i is not None]
    assert kept == sorted(set(kept))
    inputs = {id(m) for m in conversation}
    for j, i in enumerate(report.origin):
        if i is None:
            assert id(out[j]) not in inputs, f"output[{j}] is an input message{where}"
        else:
            assert out[j] is conversation[i], f"origin[{j}]={i} is wrong{where}"

    # the actions chain: each starts where the last change left off
    names = [s.name for s in strategies]
    messages, tokens = len(conversation), total(conversation)
    for k, action in enumerate(report.actions):
        assert action.strategy == names[k % len(names)]
        assert action.pass_number == k // len(names) + 1
        assert (action.messages_before, action.tokens_before) == (messages, tokens)
        assert action.messages_after == (
            action.messages_before - len(action.removed) + len(action.inserted)
        )
        if not action.changed:
            assert (action.messages_after, action.tokens_after) == (messages, tokens)
        messages, tokens = action.messages_after, action.tokens_after
        if action.changed and k < len(report.actions) - 1 and not budget.is_unlimited:
            # the interpreter stops as soon as it is under budget
            assert budget.is_over(messages=messages, tokens=tokens), where
    assert (messages, tokens) == (len(out), total(out))
    assert report.compacted == (out is not conversation)

    for p in range(1, report.passes):  # a pass that changes nothing ends the run
        assert any(a.changed for a in report.actions if a.pass_number == p), where
    stop = report.stop_reason
    event(f"stop: {stop.value}, passes: {report.passes}")
    if budget.is_unlimited:
        assert stop is StopReason.NO_TRIGGER
        assert out is conversation
        assert report.actions == ()
        return
    if stop is StopReason.UNDER_BUDGET:
        assert not over(budget, out), where
        if report.passes == 0:
            assert out is conversation
            assert report.actions == ()
        else:
            assert report.actions[-1].changed
        return
    assert over(budget, out), where
    last_pass = [a for a in report.actions if a.pass_number == report.passes]
    assert len(last_pass) == len(strategies)
    if stop is StopReason.NO_PROGRESS:
        assert not any(a.changed for a in last_pass), where
        assert report.passes <= 4
    else:
        assert stop is StopReason.PASS_LIMIT, stop
        assert report.passes == MAX_PASSES == 4  # the spec: at most 4 passes
        assert any(a.changed for a in last_pass)


def check_deterministic(
    conversation: Conversation,
    result: CompressionResult,
    strategies: tuple[NamedStrategy, ...],
    budget: Budget,
    seams: str,
    url: str,
) -> None:
    """A second run, on a cold counter cache and fresh seams, is identical."""
    fresh = TiktokenCounter.for_name("cl100k_base")
    again = pipeline(strategies, seams=seams, url=url, counter=fresh).apply(
        conversation, budget=budget
    )
    assert again.messages == result.messages
    assert again.report.to_dict() == result.report.to_dict()


PIPELINES = {
    "default": lambda: default_strategies(),
    "default+trim": lambda: (
        *default_strategies(),
        NamedStrategy(name="trim_to_budget", strategy=trim_to_budget()),
    ),
    "windows-first": lambda: (
        NamedStrategy(name="sliding_window", strategy=sliding_window(keep_messages=6)),
        *default_strategies(),
    ),
}


def _shipped() -> dict[str, tuple[NamedStrategy, ...]]:
    """The strategies of each shipped config (and of each route of one),
    those that differ from every other's."""
    found: dict[str, tuple[NamedStrategy, ...]] = {}
    for path in sorted(CONFIGS.glob("*.yaml")):
        try:
            config = load_config(path)
        except ConfigError as exc:
            if "pip install 'memrules[" not in str(exc):
                raise
            NEEDS_EXTRA[path.stem] = str(exc)  # its backend's extra is not installed
            continue
        named = {path.stem: config, **{f"{path.stem}.{n}": r for n, r in config.routes.items()}}
        for name, each in named.items():
            if repr(each.strategies) not in {repr(s) for s in found.values()}:
                found[name] = each.strategies
    return found


NEEDS_EXTRA: dict[str, str] = {}
SHIPPED = _shipped()


@pytest.mark.parametrize("name", sorted(NEEDS_EXTRA))
def test_shipped_configs_that_need_an_extra(name: str) -> None:
    pytest.skip(NEEDS_EXTRA[name])


def histories() -> st.SearchStrategy[Conversation]:
    """Generated histories, and agent loops: one instruction, many tool rounds."""
    return st.one_of(agent_histories(max_size=30, large_texts=True), agent_loops(large_texts=True))


@pytest.mark.parametrize("kind", sorted(PIPELINES))
@given(data=st.data())
def test_builtin_pipelines(kind: str, server: ChatServer, data: st.DataObject) -> None:
    conversation = data.draw(histories(), label="conversation")
    budget = data.draw(budgets_for(conversation), label="budget")
    seams = data.draw(st.sampled_from(SEAMS), label="seams")
    strategies = PIPELINES[kind]()
    result = pipeline(strategies, seams=seams, url=server.url).apply(conversation, budget=budget)
    check_compaction(conversation, result, strategies, budget)
    check_deterministic(conversation, result, strategies, budget, seams, server.url)


def test_the_shipped_configs_are_run_with_a_summarizer() -> None:
    """The default config (its YAML and its routes' included) has the
    ``summarize`` step the suites run with each summarizer."""
    assert "default" in SHIPPED
    assert repr(SHIPPED["default"]) == repr(default_strategies())
    assert [s.name for s in SHIPPED["default"]][:2] == ["offload", "summarize"]


@pytest.mark.parametrize("name", sorted(set(SHIPPED) - {"default"}))
@settings(max_examples=40)
@given(data=st.data())
def test_shipped_configs(name: str, server: ChatServer, data: st.DataObject) -> None:
    """Every other shipped config's strategies (the default's are above)."""
    conversation = data.draw(histories(), label="conversation")
    budget = data.draw(budgets_for(conversation), label="budget")
    seams = data.draw(st.sampled_from(SEAMS), label="seams")
    strategies = SHIPPED[name]
    result = pipeline(strategies, seams=seams, url=server.url).apply(conversation, budget=budget)
    check_compaction(conversation, result, strategies, budget)


@given(data=st.data())
def test_random_pipelines(server: ChatServer, data: st.DataObject) -> None:
    conversation = data.draw(histories(), label="conversation")
    budget = data.draw(budgets_for(conversation), label="budget")
    strategies = data.draw(named_strategies(), label="strategies")
    seams = data.draw(st.sampled_from(SEAMS), label="seams")
    result = pipeline(strategies, seams=seams, url=server.url).apply(conversation, budget=budget)
    check_compaction(conversation, result, strategies, budget)
    check_deterministic(conversation, result, strategies, budget, seams, server.url)


@given(data=st.data())
def test_a_final_window_meets_the_budget_when_the_survivors_do(
    server: ChatServer, data: st.DataObject
) -> None:
    """A pipeline that ends in trim_to_budget (or a sliding window no larger
    than a message budget) stops under budget whenever the survivors and
    their tool exchanges alone fit; and when it does not, only they are left."""
    conversation = data.draw(histories(), label="conversation")
    budget = data.draw(budgets_for(conversation, unlimited=False), label="budget")
    last = NamedStrategy(name="trim_to_budget", strategy=trim_to_budget())
    if budget.kind == "messages" and data.draw(st.booleans(), label="window"):
        keep = data.draw(st.integers(0, budget.limit), label="keep_messages")
        last = NamedStrategy(name="sliding_window", strategy=sliding_window(keep_messages=keep))
    strategies = (*data.draw(named_strategies(min_size=0, max_size=5), label="before"), last)
    seams = data.draw(st.sampled_from(SUMMARIZERS), label="seams")
    result = pipeline(strategies, seams=seams, url=server.url).apply(conversation, budget=budget)
    check_compaction(conversation, result, strategies, budget)
    out = result.messages
    must = [conversation[i] for i in held(conversation)]
    # Under user_first (the default) a request that led with a user message
    # keeps one leading: when the held messages start with another role (a
    # pinned assistant message), a user message before them stays too, and
    # the held ones alone fitting says nothing.
    first = next((m for m in must if m.role != "system"), None)
    leads = next((m for m in conversation if m.role != "system"), None)
    needs_lead = first is not None and first.role != "user" and leads is not None
    needs_lead = needs_lead and leads.role == "user"
    if not over(budget, must) and not needs_lead:
        assert result.report.stop_reason is StopReason.UNDER_BUDGET, render(out)
    if result.report.stop_reason is not StopReason.UNDER_BUDGET:
        extra = set(range(len(out))) - held(out)
        assert not extra or (needs_lead and all(out[j].role == "user" for j in extra)), render(out)


@given(data=st.data())
def test_compress_runs_each_strategy_once(server: ChatServer, data: st.DataObject) -> None:
    conversation = data.draw(histories(), label="conversation")
    strategies = data.draw(
        st.one_of(st.just(default_strategies()), named_strategies()), label="strategies"
    )
    seams = data.draw(st.sampled_from(SUMMARIZERS), label="seams")
    result = pipeline(strategies, seams=seams, url=server.url).compress(conversation)
    report = result.report
    assert report.stop_reason is StopReason.SINGLE_PASS
    assert report.passes == 1
    assert report.budget == Budget.UNLIMITED
    assert [a.strategy for a in report.actions] == [s.name for s in strategies]
    assert all(a.pass_number == 1 for a in report.actions)
    assert report.errors == ()
    assert_invariants(conversation, result.messages)
    assert (report.messages_after, report.tokens_after) == (
        len(result.messages),
        total(result.messages),
    )
    for j, i in enumerate(report.origin):
        if i is not None:
            assert result.messages[j] is conversation[i]
    again = pipeline(strategies, seams=seams, url=server.url).compress(conversation)
    assert again.messages == result.messages
    assert again.report.to_dict() == report.to_dict()


@given(data=st.data())
def test_failing_seams_are_recorded_and_the_pipeline_goes_on(
    down: ChatServer, data: st.DataObject
) -> None:
    conversation = data.draw(
        st.one_of(agent_histories(max_size=30), agent_loops()), label="conversation"
    )
    budget = data.draw(budgets_for(conversation, unlimited=False), label="budget")
    store = MemoryStore(down=True)
    summarizer = (
        openai_summarizer(base_url=down.url, model="loopback-model", retries=0)
        if data.draw(st.booleans(), label="http")
        else ExtractiveSummarizer(down=True)
    )
    strategies = default_strategies()
    pipe = Pipeline(
        config=MemoryConfig(strategies=strategies),
        counter=COUNTER,
        seams=Seams(store=store, summarizer=summarizer),
    )
    result = pipe.apply(conversation, budget=budget)
    assert_invariants(conversation, result.messages)
    assert store.batches == []
    for action in result.report.actions:
        if action.error is not None:
            assert action.strategy in ("offload", "summarize")
            assert not action.changed
            (call,) = action.seam_calls
            assert call.error is not None
    errors = result.report.errors
    assert all(e.startswith(("offload: ", "summarize: ")) for e in errors)
    assert result.report.last_error == (errors[-1] if errors else None)


def test_every_registered_strategy_has_parameters_to_draw() -> None:
    """Random pipelines cover the whole registry: a new built-in needs its
    parameters in tests/support/strategies.py."""
    assert set(PARAMS) == set(STRATEGIES) == set(ALL_BUILTINS)
    assert tuple(s.name for s in default_strategies()) == BUILTIN_ORDER


@given(conversation=with_observations(agent_histories(max_size=12), most=8))
def test_passes_stop_at_four_or_when_nothing_changes(conversation: Conversation) -> None:
    """One observation goes per pass and the budget is never met: the run
    takes min(observations, 4) passes that change something, plus one that
    changes nothing when they run out first."""
    strategies = (NamedStrategy(name="drop_observations", strategy=drop_observations(max_drop=1)),)
    budget = Budget.messages(0)
    result = pipeline(strategies).apply(conversation, budget=budget)
    check_compaction(conversation, result, strategies, budget)
    systems = [i for i, m in enumerate(conversation) if m.role == "system"]
    droppable = [
        i for i in systems[1:] if not conversation[i].text.startswith(DEFAULT_WARNING_MARKER)
    ]
    if not conversation:
        assert result.report.stop_reason is StopReason.UNDER_BUDGET
    elif len(droppable) >= 4:
        assert result.report.stop_reason is StopReason.PASS_LIMIT
        assert result.report.passes == 4
        assert len(result.messages) == len(conversation) - 4
    else:
        assert result.report.stop_reason is StopReason.NO_PROGRESS
        assert result.report.passes == len(droppable) + 1
        assert len(result.messages) == len(conversation) - len(droppable)
