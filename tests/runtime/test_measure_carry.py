"""A conversation's `Measure` carries the request it sent last: a loop
that hands `memo=` and no `previous=` keeps the prompt-cache prefix as one
that hands `previous=result.sent`; an explicit `previous=None` is none."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchmarks.harness.histories import agent_history, request_points
from memrules import OpenAIRule, OverBudgetError, load_pipeline, message
from memrules._core.budget import Budget
from memrules._core.report import CompressionResult

CACHE_AWARE = Path(__file__).resolve().parents[2] / "configs" / "cache_aware.yaml"
BUDGET = Budget.tokens(12000)


def _loop(*, hand_previous: bool, requests: int = 60) -> list[CompressionResult]:
    """A generated agent loop through `configs/cache_aware.yaml`, one
    measure for the conversation, with or without `previous=`."""
    history = agent_history(200, seed=5).messages
    pipeline = load_pipeline(CACHE_AWARE)
    memo = pipeline.measure()
    results: list[CompressionResult] = []
    for k, n in enumerate(request_points(agent_history(200, seed=5))[:requests]):
        if hand_previous:
            previous = results[-1].sent if results else None
            result = pipeline.apply(
                history[:n], budget=BUDGET, memo=memo, previous=previous, now=k * 20.0
            )
        else:
            result = pipeline.apply(history[:n], budget=BUDGET, memo=memo, now=k * 20.0)
        results.append(result)
    return results


def test_a_loop_with_its_measure_sends_what_a_loop_handing_previous_sends() -> None:
    memo_only, handed = _loop(hand_previous=False), _loop(hand_previous=True)
    assert [r.messages for r in memo_only] == [r.messages for r in handed]
    assert [r.report.carried for r in memo_only] == [r.report.carried for r in handed]
    assert [r.report.cache for r in memo_only] == [r.report.cache for r in handed]
    # The loop does append: most requests carry what the one before sent.
    assert sum(r.report.carried is not None for r in memo_only) > len(memo_only) // 2


def test_an_explicit_previous_none_compacts_afresh() -> None:
    history = agent_history(200, seed=5)
    points = request_points(history)
    pipeline = load_pipeline(CACHE_AWARE)
    memo = pipeline.measure()
    carried = 0
    for k, n in enumerate(points[:40]):
        result = pipeline.apply(
            history.messages[:n], budget=BUDGET, memo=memo, previous=None, now=k * 20.0
        )
        fresh = load_pipeline(CACHE_AWARE).apply(
            history.messages[:n], budget=BUDGET, previous=None, now=k * 20.0
        )
        assert result.report.carried is None
        assert result.messages == fresh.messages
        carried += (
            pipeline.apply(
                history.messages[:n], budget=BUDGET, memo=memo, now=k * 20.0
            ).report.carried
            is not None
        )
    assert carried  # the same measure, no previous= given: it carries


def test_a_measure_carries_only_into_a_conversation_that_continues_its_last() -> None:
    pipeline = load_pipeline(CACHE_AWARE)
    one = agent_history(120, seed=1).messages
    other = agent_history(120, seed=2).messages
    memo = pipeline.measure()
    first = pipeline.apply(one, budget=BUDGET, memo=memo, now=0.0)
    assert memo.previous(one) is first.sent
    assert memo.previous(other) is None
    assert memo.previous(one[:-1]) is None  # shorter than what it was given
    result = pipeline.apply(other, budget=BUDGET, memo=memo, now=20.0)
    assert result.report.carried is None
    assert result.messages == load_pipeline(CACHE_AWARE).apply(other, budget=BUDGET).messages


def test_the_pipelines_own_measure_carries_nothing() -> None:
    history = agent_history(200, seed=5)
    points = request_points(history)
    pipeline = load_pipeline(CACHE_AWARE)
    results = [
        pipeline.apply(history.messages[:n], budget=BUDGET, now=k * 20.0)
        for k, n in enumerate(points[:30])
    ]
    assert all(r.report.carried is None for r in results)


def test_apply_async_carries_as_apply_does() -> None:
    history = agent_history(200, seed=5)
    pipeline = load_pipeline(CACHE_AWARE)
    memo = pipeline.measure()

    async def loop() -> list[CompressionResult]:
        return [
            await pipeline.apply_async(history.messages[:n], budget=BUDGET, memo=memo, now=k * 20.0)
            for k, n in enumerate(request_points(history)[:60])
        ]

    results = asyncio.run(loop())
    assert [r.messages for r in results] == [r.messages for r in _loop(hand_previous=True)]


def test_a_refused_request_is_not_the_measures_previous() -> None:
    """``over_budget="raise"`` refuses the request: nothing is sent, so the
    next request's prefix is carried from the last one that was."""
    pipeline = load_pipeline("{max_messages: 3, strategies: []}")
    memo = pipeline.measure()
    history = [message("user", "one"), message("assistant", "two")]
    sent = pipeline.apply(history, memo=memo, cache=OpenAIRule()).sent
    assert memo.previous(tuple(history)) is sent
    history += [message("user", "three"), message("assistant", "four")]
    with pytest.raises(OverBudgetError):
        pipeline.apply(history, memo=memo, cache=OpenAIRule(), over_budget="raise")
    assert memo.previous(tuple(history)) is sent
