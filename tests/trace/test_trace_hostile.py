"""Traces and configs are untrusted input: a value of the wrong type, or
nested far too deep, anywhere in a trace or a config file, is a
:class:`~memrules.MemrulesError` that names where (the trace's file and
line, the config's YAML path), never a raw Python error.

Two tables of mutations name the places that raised ``AttributeError``,
``TypeError``, ``ValueError`` or ``RecursionError`` before (a trace's
``seams``, ``seams.summarizer``, ``config.strategies``,
``config.summarizer.type``, ``calls``, ``budget``; a config's section types
and ``block_patterns: null``); hypothesis then draws mutations anywhere in
a recorded trace and in every shipped config."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memrules import (
    ConfigError,
    MemoryPlugin,
    MemrulesError,
    TraceError,
    from_openai,
    load_config,
    load_pipeline,
    record_trace,
    replay_trace,
)
from tests.trace.test_trace import ODD, PLUGIN_CONFIG, SEAMED, _talk, history

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))

Path_ = tuple[str | int, ...]

WRONG: tuple[Any, ...] = (None, 0, -1, 1.5, True, "x", "", [], {}, [1], {"a": 1}, [None], [[1]])


def _deep(depth: int) -> Any:
    value: Any = 0
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def _paths(value: Any, at: Path_ = ()) -> Iterator[Path_]:
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):
            yield from _paths(item, (*at, i))


def _set(value: Any, at: Path_, new: Any) -> Any:
    if not at:
        return new
    out = copy.deepcopy(value)
    place = out
    for key in at[:-1]:
        place = place[key]
    place[at[-1]] = new
    return out


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Two recorded traces, as their parsed lines: a pipeline's (a
    summarizer, apply and compress lines) and a plugin's (state, graph,
    resolver and summarizer calls)."""
    folder = tmp_path_factory.mktemp("hostile")
    pipeline_trace = folder / "pipeline.jsonl"
    with record_trace(pipeline_trace, load_pipeline(SEAMED), name="seamed") as traced:
        traced.apply(history(), conversation_id="c1", user="ana")
        traced.compress(from_openai(ODD))
    plugin_trace = folder / "plugin.jsonl"
    plugin = MemoryPlugin(load_config(PLUGIN_CONFIG), trace=plugin_trace)
    _talk(plugin)
    plugin.close()
    return {
        name: [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for name, path in (("pipeline", pipeline_trace), ("plugin", plugin_trace))
    }


def _replay_mutated(
    lines: list[dict[str, Any]], line: int, at: Path_, new: Any, path: Path
) -> MemrulesError | None:
    """Replay ``lines`` with the value at ``at`` of line ``line`` replaced by
    ``new``: None when it replays, else the MemrulesError, which must name
    the file. Any other exception fails the test."""
    mutated = list(lines)
    mutated[line] = _set(lines[line], at, new)
    path.write_text("".join(json.dumps(x) + "\n" for x in mutated), encoding="utf-8")
    found: MemrulesError | None = None
    try:
        replay_trace(path)
    except MemrulesError as exc:
        found = exc
    assert found is None or str(path) in str(found), (at, new, str(found))
    return found


# Places that raised a raw Python error before, each with a value that did.
TRACE_MUTATIONS = [
    ("pipeline", 0, ("pipelines", 0, "seams"), -1),
    ("pipeline", 0, ("pipelines", 0, "seams"), "x"),
    ("pipeline", 0, ("pipelines", 0, "seams", "summarizer"), [1]),
    ("pipeline", 0, ("pipelines", 0, "seams", "summarizer"), "x"),
    ("plugin", 0, ("pipelines", 0, "seams"), [{}]),
    ("pipeline", 0, ("pipelines", 0, "config", "strategies"), "x"),
    ("pipeline", 0, ("pipelines", 0, "config", "strategies"), None),
    ("pipeline", 0, ("pipelines", 0, "config", "strategies"), [1]),
    ("pipeline", 0, ("pipelines", 0, "config", "strategies", 0), "x"),
    ("pipeline", 0, ("pipelines", 0, "config"), {}),
    ("plugin", 0, ("pipelines", 0, "config", "summarizer", "type"), []),
    ("plugin", 0, ("pipelines", 0, "config", "summarizer", "type"), {"a": 1}),
    ("pipeline", 1, ("calls",), "x"),
    ("pipeline", 1, ("calls",), -1),
    ("pipeline", 1, ("calls", 0), None),
    ("plugin", 1, ("calls", 0), "x"),
    ("plugin", 2, ("calls", 1), [1]),
    ("pipeline", 1, ("budget",), {}),
    ("pipeline", 1, ("budget",), "x"),
    ("pipeline", 1, ("budget",), {"kind": "tokens", "limit": "ten"}),
]


@pytest.mark.parametrize(("trace", "line", "at", "new"), TRACE_MUTATIONS)
def test_a_wrong_type_in_a_trace_is_a_trace_error_at_its_place(
    traces: dict[str, list[dict[str, Any]]],
    tmp_path: Path,
    trace: str,
    line: int,
    at: Path_,
    new: Any,
) -> None:
    found = _replay_mutated(traces[trace], line, at, new, tmp_path / "t.jsonl")
    assert isinstance(found, MemrulesError)
    assert "\n" not in str(found).split(": ", 1)[0]


@pytest.mark.parametrize(
    "at",
    [
        ("pipelines", 0, "config", "x-deep"),
        ("pipelines", 0, "config", "strategies", 0, "keep_pairs"),
        ("pipelines", 0, "seams", "summarizer", "repr"),
        ("pipelines", 0, "x-deep"),
    ],
)
def test_a_value_900_levels_deep_in_a_header_is_a_trace_error(
    traces: dict[str, list[dict[str, Any]]], tmp_path: Path, at: Path_
) -> None:
    found = _replay_mutated(traces["pipeline"], 0, at, _deep(900), tmp_path / "t.jsonl")
    assert isinstance(found, TraceError)
    assert "nested more than" in str(found)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_mutation_of_a_trace_replays_or_is_a_memrules_error_naming_the_file(
    traces: dict[str, list[dict[str, Any]]], tmp_path: Path, data: st.DataObject
) -> None:
    lines = traces[data.draw(st.sampled_from(sorted(traces)), label="trace")]
    line = data.draw(st.integers(0, len(lines) - 1), label="line")
    at = data.draw(st.sampled_from(list(_paths(lines[line]))), label="path")
    new = data.draw(st.sampled_from([*WRONG, _deep(900)]), label="value")
    _replay_mutated(lines, line, at, new, tmp_path / "t.jsonl")


# --- configs ---------------------------------------------------------------------------

CONFIG_MUTATIONS = [
    "summarizer: {type: [1]}",
    "summarizer: {type: {a: 1}}",
    "embedder: {type: [1]}",
    "stores: {memory: {backend: [1]}}\nmemory: {}",
    "stores: {memory: {embedding: {type: [1]}}}\nmemory: {}",
    "stores: {memory: {reflection: {block_patterns: 5}}}\nmemory: {}",
    "strategies: 5",
    "strategies: [5]",
    "strategies: [{type: [1]}]",
]


@pytest.mark.parametrize("text", CONFIG_MUTATIONS)
def test_a_wrong_type_in_a_config_is_a_config_error_at_its_yaml_path(text: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(text)
    assert raised.value.problems
    assert all(p.yaml_path for p in raised.value.problems)


def test_null_block_patterns_are_none() -> None:
    config = load_config("stores: {memory: {reflection: {block_patterns: null}}}\nmemory: {}")
    assert config.memory_store is not None
    assert config.memory_store.reflection.block_patterns == ()


def _config_mutation(path: Path, at: Path_, new: Any) -> None:
    text = yaml.safe_dump(_set(yaml.safe_load(path.read_text(encoding="utf-8")), at, new))
    problems = None
    try:
        load_config(text)
    except ConfigError as exc:
        problems = exc.problems
    if problems is not None:
        assert problems
        # A problem is at a YAML path, unless the whole file is the problem.
        assert all(p.yaml_path for p in problems) or at == (), problems


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_mutation_of_a_shipped_config_loads_or_is_a_config_error_at_a_path(
    data: st.DataObject,
) -> None:
    path = data.draw(st.sampled_from(CONFIGS), label="config")
    base = yaml.safe_load(path.read_text(encoding="utf-8"))
    at = data.draw(st.sampled_from(list(_paths(base))), label="path")
    new = data.draw(st.sampled_from(WRONG), label="value")
    _config_mutation(path, at, new)


@pytest.mark.parametrize("text", ["max_tokens: [1]", "repair: {a: 1}", "encoder_name: [[x]]"])
def test_a_setting_of_the_wrong_type_is_said_as_written(text: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(text)
    assert "Node(" not in str(raised.value)
