"""Observers: called around every run and strategy run; they watch, never change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules import (
    CompressionAction,
    CompressionResult,
    MemoryConfig,
    ObserverError,
    Pipeline,
    load_pipeline,
)
from memrules._core.messages import Conversation, message
from memrules._engine.observe import PipelineObserver, RunInfo, StepInfo
from memrules.strategies import sliding_window
from memrules.testing import conversations

CONFIG = """
context_window_tokens: 1000
max_messages: 4
strategies:
  - type: clear_tool_results
    keep_pairs: 0
  - type: sliding_window
    keep_messages: 3
"""


def _history(n: int = 10) -> Conversation:
    out = [message("system", "sys")]
    for i in range(n):
        out.append(message("user", f"question {i}"))
        out.append(message("assistant", f"answer {i}"))
    return tuple(out)


class Recorder:
    """Records what it is told, and the nesting of the calls."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log
        self.runs: list[tuple[RunInfo, CompressionResult]] = []
        self.steps: list[tuple[StepInfo, CompressionAction]] = []

    def observe_run(self, run: RunInfo, proceed: Callable[[], CompressionResult]) -> None:
        self.log.append(f"{self.name} run in")
        self.runs.append((run, proceed()))
        self.log.append(f"{self.name} run out")

    def observe_step(self, step: StepInfo, proceed: Callable[[], CompressionAction]) -> None:
        self.log.append(f"{self.name} step {step.strategy} in")
        self.steps.append((step, proceed()))
        self.log.append(f"{self.name} step {step.strategy} out")


def test_a_recorder_is_a_pipeline_observer() -> None:
    assert isinstance(Recorder("a", []), PipelineObserver)


def test_observers_see_the_run_and_every_strategy_run_in_order() -> None:
    log: list[str] = []
    outer, inner = Recorder("outer", log), Recorder("inner", log)
    pipeline = load_pipeline(CONFIG, observers=[outer, inner])
    history = _history()
    result = pipeline.apply(history, conversation_id="conv-7")

    assert len(outer.runs) == 1
    info, seen = outer.runs[0]
    assert seen is result
    assert info.operation == "apply"
    assert info.counter == "max(cl100k_base,o200k_base)"
    assert info.messages == len(history)
    assert info.strategies == ("clear_tool_results", "sliding_window")
    assert info.conversation_id == "conv-7"
    assert info.budget == pipeline.budget()

    actions = result.report.actions
    assert [a for _, a in outer.steps] == list(actions)
    assert [(s.strategy, s.pass_number, s.index) for s, _ in outer.steps] == [
        (a.strategy, a.pass_number, ("clear_tool_results", "sliding_window").index(a.strategy))
        for a in actions
    ]
    for step, action in outer.steps:
        assert step.run is info
        assert (step.messages, step.tokens) == (action.messages_before, action.tokens_before)
    # The first observer is outermost, for the run and for each step.
    assert log[:3] == ["outer run in", "inner run in", "outer step clear_tool_results in"]
    assert log[-2:] == ["inner run out", "outer run out"]
    assert log.index("inner step sliding_window out") < log.index("outer step sliding_window out")


def test_compress_is_observed_as_compress() -> None:
    recorder = Recorder("r", [])
    pipeline = load_pipeline(CONFIG, observers=[recorder])
    result = pipeline.compress(_history())
    ((info, _),) = recorder.runs
    assert info.operation == "compress"
    assert [s.strategy for s, _ in recorder.steps] == ["clear_tool_results", "sliding_window"]
    assert result.report.stop_reason == "single_pass"


def test_the_repair_step_is_observed_as_pass_zero() -> None:
    recorder = Recorder("r", [])
    config = MemoryConfig(max_messages=3, repair=True, strategies=[sliding_window(keep_messages=2)])
    pipeline = Pipeline.from_config(config, observers=[recorder])
    from memrules import ToolResult

    orphan = message("tool", ToolResult(call_id="nobody", content="x"))
    pipeline.apply((message("user", "a"), orphan, message("user", "b"), message("user", "c")))
    first, _ = recorder.steps[0]
    assert (first.strategy, first.pass_number, first.index) == ("repair", 0, -1)


def test_under_budget_runs_are_observed_with_no_steps() -> None:
    recorder = Recorder("r", [])
    pipeline = load_pipeline(CONFIG, observers=[recorder])
    result = pipeline.apply(_history(1))
    assert recorder.runs[0][1] is result
    assert recorder.steps == []


class Meddler:
    """Returns things, calls proceed twice: none of it changes the result."""

    def __init__(self) -> None:
        self.calls = 0

    def observe_run(self, run: RunInfo, proceed: Callable[[], Any]) -> Any:
        first = proceed()
        assert proceed() is first
        return "not a result"

    def observe_step(self, step: StepInfo, proceed: Callable[[], Any]) -> Any:
        self.calls += 1
        first = proceed()
        assert proceed() is first
        return None


def test_observers_cannot_change_the_result_or_run_a_step_twice() -> None:
    plain = load_pipeline(CONFIG)
    calls: list[int] = []

    def counting(conversation: Conversation, context: Any) -> Conversation:
        calls.append(1)
        return conversation

    meddler = Meddler()
    watched = load_pipeline(CONFIG, observers=[meddler])
    expected = plain.apply(_history())
    result = watched.apply(_history())
    assert result.report.to_dict() == expected.report.to_dict()
    assert result.messages == expected.messages
    assert meddler.calls == len(result.report.actions)

    config = MemoryConfig(max_messages=1, strategies=[counting])
    Pipeline.from_config(config, observers=[Meddler()]).apply(_history(2))
    assert len(calls) == 1  # one pass: the strategy changed nothing, run once


class Skipper:
    def observe_run(self, run: RunInfo, proceed: Callable[[], Any]) -> None:
        proceed()

    def observe_step(self, step: StepInfo, proceed: Callable[[], Any]) -> None:
        return None


def test_an_observer_that_never_proceeds_fails_the_run() -> None:
    pipeline = load_pipeline(CONFIG, observers=[Skipper()])
    with pytest.raises(ObserverError, match=r"Skipper.*did not call proceed\(\) in observe_step"):
        pipeline.apply(_history())


class Raiser:
    def observe_run(self, run: RunInfo, proceed: Callable[[], Any]) -> None:
        proceed()
        raise RuntimeError("exporter down")

    def observe_step(self, step: StepInfo, proceed: Callable[[], Any]) -> None:
        proceed()


def test_an_observer_error_fails_the_run() -> None:
    with pytest.raises(RuntimeError, match="exporter down"):
        load_pipeline(CONFIG, observers=[Raiser()]).apply(_history())


def test_the_report_names_the_counter() -> None:
    assert load_pipeline(CONFIG).apply(_history()).report.counter == "max(cl100k_base,o200k_base)"
    estimate = load_pipeline("encoder_name: estimate\n" + CONFIG)
    report = estimate.apply(_history()).report
    assert report.counter == "estimate"
    assert report.to_dict()["counter"] == "estimate"


@given(conversations(max_size=14), st.integers(1, 8))
def test_observed_runs_equal_unobserved_ones(conversation: Conversation, keep: int) -> None:
    config = f"context_window_tokens: 1000\nmax_messages: {keep}\n"
    recorder = Recorder("r", [])
    plain = load_pipeline(config).apply(conversation)
    watched = load_pipeline(config, observers=[recorder]).apply(conversation)
    assert watched.messages == plain.messages
    assert watched.report.to_dict() == plain.report.to_dict()
    assert [a for _, a in recorder.steps] == list(watched.report.actions)
