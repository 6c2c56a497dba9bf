"""A traced pipeline takes what the pipeline takes: ``apply``'s prompt-cache
inputs (``previous``, ``cache``, ``now``, the time read from the traced
pipeline's clock through the seam log) and ``remember``'s ``session_time``
and ``context``, and a replay reproduces the runs byte for byte."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from memrules import IndexContext, ReplayMismatch, load_pipeline, record_trace, replay_trace
from memrules._core.messages import message
from memrules._counting.cache import AnthropicRule, OpenAIRule
from tests.support.chat_server import ChatServer
from tests.support.seams import HAS_QDRANT


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _clock(readings: list[float]) -> Any:
    times: Iterator[float] = iter(readings)
    return lambda: next(times)


def _history(turns: int) -> list[Any]:
    out = [message("system", "rules " * 1200)]
    for i in range(turns):
        out.append(message("user", f"question {i} " * 20))
        out.append(message("assistant", f"answer {i} " * 20))
    return out


CACHED = "{max_tokens: 100000, strategies: []}"
CACHE_SECTION = """
max_tokens: 3000
cache: {provider: openai, compact_to: 0.5}
strategies: [{type: sliding_window, keep_messages: 6}]
"""


def test_apply_with_the_cache_inputs_replays_byte_for_byte(tmp_path: Path) -> None:
    trace = tmp_path / "cache.jsonl"
    pipeline = load_pipeline(CACHED)
    # 0 s, 100 s (the cache is warm), 500 s (it has expired: OpenAI's 300 s)
    with record_trace(trace, pipeline, clock=_clock([0.0, 100.0, 500.0])) as traced:
        history = _history(1)
        results = [traced.apply(history, cache=OpenAIRule(), conversation_id="c")]
        for turn in (2, 3):
            history = _history(turn)
            results.append(
                traced.apply(
                    history, cache=OpenAIRule(), previous=results[-1].sent, conversation_id="c"
                )
            )
        # Given outright: a time, an Anthropic rule, a previous request from elsewhere.
        elsewhere = pipeline.apply(_history(1), cache=AnthropicRule(), now=5.0).sent
        traced.apply(
            _history(2), cache=AnthropicRule(), previous=elsewhere, now=50.0, conversation_id="d"
        )
    direct = load_pipeline(CACHED)
    expected = [direct.apply(_history(1), cache=OpenAIRule(), now=0.0)]
    for turn, when in ((2, 100.0), (3, 500.0)):
        expected.append(
            direct.apply(_history(turn), cache=OpenAIRule(), previous=expected[-1].sent, now=when)
        )
    assert [r.report.cache for r in results] == [r.report.cache for r in expected]
    warm, cold = results[1].report.cache, results[2].report.cache
    assert warm is not None
    assert cold is not None
    assert warm.cached > 0
    assert cold.cached == 0

    lines = _lines(trace)[1:]
    assert [line.get("previous") for line in lines[:3]] == [None, {"request": 0}, {"request": 1}]
    assert lines[1]["cache"]["provider"] == "openai"
    assert [c["seam"] for c in lines[1]["calls"]] == ["clock"]
    assert lines[3]["now"] == 50.0
    assert "received" in lines[3]["previous"]
    assert lines[3]["calls"] == []  # given the time: no clock read
    assert replay_trace(trace).requests == 4


def test_a_replay_answers_the_clock_from_the_trace(tmp_path: Path) -> None:
    trace = tmp_path / "clock.jsonl"
    with record_trace(trace, load_pipeline(CACHED), clock=_clock([0.0, 100.0])) as traced:
        first = traced.apply(_history(1), cache=OpenAIRule(), conversation_id="c")
        traced.apply(_history(2), cache=OpenAIRule(), previous=first.sent, conversation_id="c")
    text = trace.read_text(encoding="utf-8")
    assert '{"now":100.0}' in text
    trace.write_text(text.replace('{"now":100.0}', '{"now":900.0}'), encoding="utf-8")
    with pytest.raises(ReplayMismatch, match="request 1"):
        replay_trace(trace)  # the cache had expired by then: other figures


def test_a_cache_section_reads_the_clock_without_cache_arguments(tmp_path: Path) -> None:
    trace = tmp_path / "section.jsonl"
    pipeline = load_pipeline(CACHE_SECTION)
    with record_trace(trace, pipeline, clock=_clock([10.0, 20.0, 30.0])) as traced:
        previous = None
        for turn in (2, 3, 4):
            result = traced.apply(_history(turn), previous=previous, conversation_id="c")
            previous = result.sent
    lines = _lines(trace)[1:]
    assert all(line["calls"] and line["calls"][0]["seam"] == "clock" for line in lines)
    assert all(line["report"].get("cache") for line in lines)
    assert replay_trace(trace).requests == 3


def test_a_loop_handing_only_its_measure_records_the_previous_it_used(tmp_path: Path) -> None:
    """`previous` left out takes what `memo=` remembers: the line says
    which request that was, and the replay, which has no measure of the
    caller's, is handed the same one."""
    trace = tmp_path / "memo.jsonl"
    pipeline = load_pipeline(CACHE_SECTION)
    with record_trace(trace, pipeline, clock=_clock([10.0, 20.0, 30.0, 40.0])) as traced:
        memo = pipeline.measure()
        results = [traced.apply(_history(t), memo=memo, conversation_id="c") for t in (2, 3, 4)]
        # An explicit None is none, whatever the measure remembers.
        cold = traced.apply(_history(5), memo=memo, previous=None, conversation_id="c")
    lines = _lines(trace)[1:]
    assert [line.get("previous") for line in lines] == [None, {"request": 0}, {"request": 1}, None]
    direct, previous = load_pipeline(CACHE_SECTION), None
    for turn, when, result in zip((2, 3, 4), (10.0, 20.0, 30.0), results, strict=True):
        expected = direct.apply(_history(turn), previous=previous, now=when, conversation_id="c")
        assert (result.messages, result.report) == (expected.messages, expected.report)
        previous = expected.sent
    assert cold.report.cache == direct.apply(_history(5), now=40.0).report.cache
    assert replay_trace(trace).requests == 4


def test_a_trace_without_the_new_inputs_reads_as_before(tmp_path: Path) -> None:
    trace = tmp_path / "plain.jsonl"
    with record_trace(trace, load_pipeline(CACHED), clock=_clock([])) as traced:
        traced.apply(_history(1), conversation_id="c")  # nothing to measure: no clock read
    (line,) = _lines(trace)[1:]
    assert not {"previous", "cache", "now"} & set(line)
    assert line["calls"] == []
    assert replay_trace(trace).requests == 1


STORE = """
store: {{backend: qdrant, path: {path}, collection: remembered}}
embedder: {{type: openai, base_url: "{url}", model: loopback-embed, dimensions: 16}}
strategies: []
"""


@pytest.mark.skipif(not HAS_QDRANT, reason="needs the qdrant extra")
def test_remember_with_a_session_time_and_a_context_replays(tmp_path: Path) -> None:
    trace = tmp_path / "remember.jsonl"
    said = [message("user", "I moved to Porto yesterday."), message("assistant", "Noted.")]
    with ChatServer() as server:
        pipeline = load_pipeline(STORE.format(path=tmp_path / "store", url=server.url))
        with record_trace(trace, pipeline) as traced:
            first = traced.remember(said, conversation_id="c1", session_time=date(2023, 5, 8))
            second = traced.remember(
                said, conversation_id="c2", context=IndexContext(before=0, dates=False)
            )
            third = traced.remember(said, conversation_id="c3", context=None)
    assert len(first.added) == len(second.added) == len(third.added) == 2
    lines = _lines(trace)[1:]
    assert lines[0]["session_time"] == {"date": "2023-05-08"}
    assert "context" not in lines[0]
    assert lines[1]["context"]["before"] == 0
    assert lines[1]["context"]["dates"] is False
    assert lines[2]["context"] is None
    adds = [json.dumps(line["calls"]) for line in lines]
    assert "8 May 2023" in adds[0]
    assert "7 May 2023" in adds[0]
    assert "8 May 2023" not in adds[1]
    assert replay_trace(trace).requests == 3


def test_the_recorded_methods_are_the_pipelines_own(tmp_path: Path) -> None:
    """A traced pipeline's methods take what the pipeline's take (one
    signature, not a copy that falls behind: `memo` and `over_budget`
    included), and record what they were given."""
    pipeline = load_pipeline(CACHE_SECTION)
    with record_trace(tmp_path / "same.jsonl", pipeline, clock=_clock([100.0])) as traced:
        for name in ("apply", "compress", "remember", "recall"):
            assert inspect.signature(getattr(traced, name)) == inspect.signature(
                getattr(pipeline, name)
            ), name
        memo = pipeline.measure()
        result = traced.apply(_history(6), memo=memo, over_budget="send", conversation_id="c1")
    assert result == pipeline.apply(_history(6), now=100.0, conversation_id="c1")
    (line,) = _lines(tmp_path / "same.jsonl")[1:]
    assert line["calls"][0]["seam"] == "clock"
    assert replay_trace(tmp_path / "same.jsonl").requests == 1


INDEXED = STORE.rstrip() + "\nindex_context: {{before: 0, dates: false}}\n"


@pytest.mark.skipif(not HAS_QDRANT, reason="needs the qdrant extra")
def test_remember_under_the_configs_index_context_replays(tmp_path: Path) -> None:
    """`remember` without `context` indexes by the config's `index_context`,
    traced or not, and the replay does the same."""
    trace = tmp_path / "indexed.jsonl"
    said = [message("user", "I moved to Porto yesterday."), message("assistant", "Noted.")]
    with ChatServer() as server:
        pipeline = load_pipeline(INDEXED.format(path=tmp_path / "store", url=server.url))
        with record_trace(trace, pipeline) as traced:
            traced.remember(said, conversation_id="c1")
            traced.remember(said, conversation_id="c2", context=IndexContext())
    first, second = _lines(trace)[1:]
    assert "context" not in first  # the config's: a replay takes it without being told
    assert second["context"]["before"] == 1
    assert replay_trace(trace).requests == 2
