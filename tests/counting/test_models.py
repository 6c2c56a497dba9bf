"""Counted for the model: the dated table (memrules._counting.models), the
config's ``model:`` key, the hook's reading of the body's ``model``, the
default for an unknown model, and only bundled encodings ever loaded."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from memrules import (
    ConfigError,
    EncodingError,
    MemoryConfig,
    MemoryPlugin,
    TraceError,
    from_openai,
    load_config,
    load_pipeline,
    replay_trace,
)
from memrules._core.errors import MemrulesError
from memrules._counting.framing import count_tokens
from memrules._counting.models import TABLE_DATE, model_counting
from memrules._counting.tokens import load_encoding

AGENT = [
    {"role": "system", "content": "You are a coding agent. Run one command per reply."},
    {"role": "user", "content": "Fix the failing test in utils/dates.py; the CI log says:"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "pytest -x -q"}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "".join(
            f"FAILED tests/test_dates.py::test_parse[{i}] - ValueError: month 13 out of range\n"
            for i in range(200)
        ),
    },
]


@pytest.mark.parametrize(
    ("model", "encoder", "exact"),
    [
        ("gpt-4o-2024-08-06", "o200k_base", True),
        ("gpt-4.1-mini", "o200k_base", True),
        ("gpt-4.5-preview", "o200k_base", True),
        ("gpt-5", "o200k_base", True),
        ("o1", "o200k_base", True),
        ("o3-mini", "o200k_base", True),
        ("o4-mini", "o200k_base", True),
        ("openai/gpt-4o", "o200k_base", True),
        ("gpt-4-turbo", "cl100k_base", True),
        ("gpt-3.5-turbo", "cl100k_base", True),
        ("claude-sonnet-4-5", "o200k_base", False),
        ("us.anthropic.claude-opus-4-6-v1:0", "o200k_base", False),
        ("google/gemini-3-pro-preview", "o200k_base", False),
    ],
)
def test_the_table_names_each_familys_encoding(model: str, encoder: str, exact: bool) -> None:
    row = model_counting(model)
    assert row is not None
    assert (row.encoder, row.exact) == (encoder, exact)
    assert model_counting("llama-3.1-70b") is None
    assert TABLE_DATE.year >= 2026


def test_an_o200k_model_is_counted_with_o200k_by_the_hook() -> None:
    messages = from_openai(AGENT)
    o200k = count_tokens(messages, "o200k_base")
    cl100k = count_tokens(messages, "cl100k_base")
    assert o200k != cl100k
    with MemoryPlugin(MemoryConfig(strategies=())) as plugin:
        for model, expected in (("gpt-4o", o200k), ("gpt-4", cl100k)):
            plugin.on_openai_request({"model": model, "messages": AGENT})
            assert plugin.last_result is not None
            assert plugin.last_result.usage.tokens == expected
        plugin.on_openai_request({"messages": AGENT})  # no model: the larger count
        assert plugin.last_result is not None
        assert plugin.last_result.usage.tokens >= max(o200k, cl100k)


def test_the_config_model_chooses_the_encoding() -> None:
    messages = from_openai(AGENT)
    pipeline = load_pipeline("model: gpt-4o\n")
    assert pipeline.count(messages) == count_tokens(messages, "o200k_base")
    assert load_pipeline("model: gpt-4\n").count(messages) == count_tokens(messages, "cl100k_base")
    default = load_pipeline("{}").count(messages)
    assert default >= max(count_tokens(messages, n) for n in ("o200k_base", "cl100k_base"))


def test_claude_and_gemini_are_a_stated_estimate_with_a_margin() -> None:
    messages = from_openai(AGENT)
    o200k = count_tokens(messages, "o200k_base")
    for model, rule in (("claude-sonnet-4-5", "anthropic"), ("gemini-2.5-pro", "openai")):
        row = model_counting(model)
        assert row is not None
        assert row.margin > 1.3
        pipeline = load_pipeline(f"model: {model}\nstrategies: []\n")
        assert pipeline.counter.rule.name == rule  # type: ignore[attr-defined]
        assert pipeline.count(messages) >= math.floor(o200k * row.margin) - 20
        (line,) = pipeline.apply(messages).report.estimates
        assert line.startswith(f"every message: {row.family}: o200k_base x ")
        assert TABLE_DATE.isoformat() in line


def test_a_model_the_table_does_not_know_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"<YAML text>:1: model: model='llama-3'.*encoder_name"):
        load_config("model: llama-3\n")


@pytest.mark.parametrize("name", ["gpt2", "r50k_base", "p50k_base", "text-davinci-003"])
def test_an_encoding_memrules_does_not_ship_is_a_config_error_at_its_line(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"max_tokens: 100\nencoder_name: {name}\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=rf"c\.yaml:2: encoder_name: encoder_name='{name}'.*never"
    ):
        load_config(path)
    with pytest.raises(EncodingError, match="never downloads"):
        load_encoding(name)


def test_a_trace_naming_another_encoding_ends_in_one_error(tmp_path: Path) -> None:
    from tests.trace.test_trace import record, rewrite

    trace = record(tmp_path / "t.jsonl")
    rewrite(trace, '"encoder_name":"cl100k_base"', '"encoder_name":"gpt2"', line=0)
    header = json.loads(trace.read_text(encoding="utf-8").splitlines()[0])
    assert header["pipelines"][0]["config"]["encoder_name"] == "gpt2"
    with pytest.raises((ConfigError, TraceError)) as caught:
        replay_trace(trace)
    assert isinstance(caught.value, MemrulesError)
    assert "gpt2" in str(caught.value)


def test_the_larger_of_two_encodings_encodes_a_text_twice_once() -> None:
    """With no model named, a text asked about again (a strategy's stub, a
    part measured on every request) is not encoded again."""
    from memrules._counting.models import LargerCounter
    from memrules._counting.tokens import TiktokenCounter

    asked: list[str] = []

    class Spy(TiktokenCounter):
        def count_text(self, text: str) -> int:
            asked.append(text)
            return super().count_text(text)

    first, second = Spy(load_encoding("cl100k_base")), Spy(load_encoding("o200k_base"))
    larger = LargerCounter(first, second)
    text = "def parse(tokens):\n    return tokens[:-1]  # loses the last one\n" * 3
    expected = max(first.count_text(text), second.count_text(text))
    asked.clear()
    assert [larger.count_text(text) for _ in range(4)] == [expected] * 4
    assert asked == [text, text]
