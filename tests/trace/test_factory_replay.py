"""A factory-built closure records its factory and parameters, so a replay
rebuilds it; one that cannot be rebuilt is named when the trace is recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import memrules
from memrules import MemoryConfig, load_config, record_trace, replay_trace
from memrules._core.errors import TraceError
from memrules._core.messages import Conversation, message
from memrules._trace.canonical import canonical_config, rebuild_config
from memrules._trace.header import UnreplayableStrategyWarning
from tests.support.custom_strategies import keep_newest


def _history() -> Conversation:
    return (
        message("system", "rules", id="s"),
        *(
            message("user" if i % 2 == 0 else "assistant", f"turn {i}", id=f"m{i}")
            for i in range(9)
        ),
    )


def _closure(keep: int) -> Any:
    def run(conversation: Conversation, context: Any) -> Conversation:
        return conversation if len(conversation) <= keep else conversation[-keep:]

    return run


def test_a_factory_built_closure_records_its_factory_and_parameters() -> None:
    config = MemoryConfig(strategies=[keep_newest(count=3)])
    canonical = canonical_config(config)
    (entry,) = canonical["strategies"]
    assert entry["factory"] == "tests.support.custom_strategies:keep_newest"
    assert entry["count"] == 3
    assert "parameters" not in entry
    rebuilt = rebuild_config(canonical, allow_imports=["tests"])
    assert canonical_config(rebuilt) == canonical
    assert rebuilt.strategies[0].name == config.strategies[0].name


def test_a_factory_built_closure_from_yaml_rebuilds_with_its_parameters() -> None:
    text = 'strategies:\n  - type: "tests.support.custom_strategies:keep_newest"\n    count: 4\n'
    config = load_config(text, allow_imports=["tests"])
    canonical = canonical_config(config)
    assert canonical["strategies"][0]["count"] == 4
    rebuilt = rebuild_config(canonical, allow_imports=["tests"])
    history = _history()
    pipeline = memrules.Pipeline.from_config(config)
    again = memrules.Pipeline.from_config(rebuilt)
    assert again.compress(history).messages == pipeline.compress(history).messages
    assert len(again.compress(history).messages) < len(history)


def test_a_trace_of_a_factory_built_closure_replays_without_the_pipeline(tmp_path: Path) -> None:
    pipeline = memrules.Pipeline.from_config(MemoryConfig(strategies=[keep_newest(count=3)]))
    trace = tmp_path / "t.jsonl"
    with record_trace(trace, pipeline) as traced:
        traced.compress(_history())
    header = json.loads(trace.read_text().splitlines()[0])
    assert "not_rebuildable" not in header["pipelines"][0]
    assert replay_trace(trace, allow_imports=["tests"]).identical


def test_an_unrebuildable_closure_is_named_when_the_trace_is_recorded(tmp_path: Path) -> None:
    pipeline = memrules.Pipeline.from_config(MemoryConfig(strategies=[_closure(3)]))
    trace = tmp_path / "t.jsonl"
    warned = pytest.warns(UnreplayableStrategyWarning, match=r"strategies\[0\] \(run, ")
    with warned, record_trace(trace, pipeline) as traced:
        traced.compress(_history())
    header = json.loads(trace.read_text().splitlines()[0])
    (named,) = header["pipelines"][0]["not_rebuildable"]
    assert named.startswith("strategies[0] (run, ")
    with pytest.raises(TraceError, match="closure whose parameters a trace cannot hold"):
        replay_trace(trace)
    assert replay_trace(trace, pipelines=[pipeline]).identical
