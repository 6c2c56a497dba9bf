"""Inputs written as deltas (``prefix``): an agent loop's trace stays small,
replays as a whole, and a trace whose prefix cannot be followed is a
TraceError naming the line; version 1 traces still replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

import memrules._trace.deltas
from benchmarks.harness.histories import agent_history
from memrules import (
    MemoryPlugin,
    ReplayMismatch,
    TraceError,
    load_config,
    load_pipeline,
    record_trace,
    replay_trace,
)
from memrules._core.messages import Conversation, message
from memrules._core.seam_records import message_json
from memrules._trace.record import TracedPipeline, TraceWriter, dump_line, read_trace

CONFIG = """
max_tokens: 3000
strategies:
  - type: clear_tool_results
    keep_pairs: 2
  - type: trim_to_budget
"""


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_lines(path: Path, found: list[dict[str, Any]]) -> None:
    path.write_bytes(b"".join(dump_line(line) for line in found))


def agent_loop(path: Path, requests: int = 60) -> Path:
    """Two interleaved conversations, each request the whole growing history."""
    a, b = agent_history(120, seed=1).messages, agent_history(120, seed=2).messages
    with record_trace(path, load_pipeline(CONFIG), name="agent") as traced:
        for i in range(requests):
            history, name = (a, "a") if i % 2 == 0 else (b, "b")
            traced.apply(history[: 4 + i], conversation_id=name)
        traced.compress(b[:70], conversation_id="b")  # another kind continues it too
    return path


def as_version_1(trace: Path, to: Path) -> Path:
    """``trace`` as version 1 wrote it: every input in full, no prefix."""
    header, found = read_trace(trace)
    full = [attrs.evolve(header, version=1).to_dict(), *(line.data for line in found)]
    write_lines(to, full)
    return to


def test_an_agent_loop_trace_holds_each_message_once(tmp_path: Path) -> None:
    trace = agent_loop(tmp_path / "t.jsonl")
    written = lines(trace)
    assert written[0]["version"] == 2
    requests = written[1:]
    assert "prefix" not in requests[0]  # each conversation's first line is whole
    assert "prefix" not in requests[1]
    for number, line in enumerate(requests[2:60], start=2):
        assert line["prefix"] == {"request": number - 2, "messages": number + 2}, number
        assert len(line["messages"]) == 2  # its conversation grew by two
    assert requests[-1]["kind"] == "compress"
    assert requests[-1]["prefix"] == {"request": 59, "messages": 63}
    assert list(requests[5]).index("prefix") + 1 == list(requests[5]).index("messages")
    full = as_version_1(trace, tmp_path / "v1.jsonl")
    assert trace.stat().st_size < full.stat().st_size / 5, (trace.stat(), full.stat())

    before = trace.read_bytes()
    summary = replay_trace(trace)
    assert summary.identical
    assert summary.requests == 61
    assert replay_trace(trace, update=True).updated
    assert trace.read_bytes() == before


def test_read_trace_gives_each_input_whole(tmp_path: Path) -> None:
    trace = agent_loop(tmp_path / "t.jsonl", requests=8)
    _, found = read_trace(trace)
    got = list(found)
    assert [len(line.data["messages"]) for line in got] == [4, 5, 6, 7, 8, 9, 10, 11, 70]
    assert all("prefix" not in line.data for line in got)
    assert [line.prefix for line in got][:3] == [None, None, {"request": 0, "messages": 4}]


def test_a_history_edited_in_the_middle_is_written_whole_and_replays(tmp_path: Path) -> None:
    history = list(agent_history(30, seed=3).messages)
    trace = tmp_path / "t.jsonl"
    with record_trace(trace, load_pipeline(CONFIG)) as traced:
        traced.apply(history[:20], conversation_id="c1")
        history[5] = message("user", "An edited turn.")
        traced.apply(history[:25], conversation_id="c1")
        traced.apply(history[:26], conversation_id="c1")
        traced.apply(history[:10], conversation_id="c1")  # shorter: not a continuation
        traced.apply(history[:12], conversation_id=None)  # its own conversation
        traced.apply(history[:13], conversation_id=None)
    found = lines(trace)[1:]
    assert [line.get("prefix") for line in found] == [
        None,
        None,
        {"request": 1, "messages": 25},
        None,
        None,
        {"request": 4, "messages": 12},
    ]
    assert len(found[1]["messages"]) == 25
    assert replay_trace(trace).identical


def test_a_plugin_writes_its_requests_as_deltas(tmp_path: Path) -> None:
    plugin = MemoryPlugin(
        load_config("max_tokens: 200\nstrategies:\n  - {type: sliding_window, keep_messages: 4}\n"),
        trace=tmp_path / "p.jsonl",
    )
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for i in range(5):
        history.append({"role": "user", "content": f"Turn {i}. Reply with: noted"})
        body = {"model": "m", "messages": history, "metadata": {"conversation_id": "c1"}}
        plugin.on_openai_request(body)
        history.append({"role": "assistant", "content": "noted"})
    plugin.close()
    found = lines(tmp_path / "p.jsonl")[1:]
    assert [line.get("prefix") for line in found] == [
        None,
        *({"request": i, "messages": 2 * i + 2} for i in range(4)),
    ]
    assert replay_trace(tmp_path / "p.jsonl").identical


def test_a_version_1_trace_still_replays_and_update_makes_it_version_2(tmp_path: Path) -> None:
    trace = agent_loop(tmp_path / "t.jsonl", requests=12)
    old = as_version_1(trace, tmp_path / "v1.jsonl")
    assert all("prefix" not in line for line in lines(old)[1:])
    # A version 1 writer writes the same bytes.
    header, _ = read_trace(trace)
    written = tmp_path / "written-v1.jsonl"
    a, b = agent_history(120, seed=1).messages, agent_history(120, seed=2).messages
    with TracedPipeline(
        TraceWriter(written, attrs.evolve(header, version=1)), load_pipeline(CONFIG)
    ) as traced:
        for i in range(12):
            history, name = (a, "a") if i % 2 == 0 else (b, "b")
            traced.apply(history[: 4 + i], conversation_id=name)
        traced.compress(b[:70], conversation_id="b")
    assert written.read_bytes() == old.read_bytes()

    assert replay_trace(old).identical
    assert replay_trace(old, update=True).updated
    assert old.read_bytes() == trace.read_bytes()


def test_a_prefix_that_cannot_be_followed_is_a_trace_error_naming_the_line(
    tmp_path: Path,
) -> None:
    trace = agent_loop(tmp_path / "t.jsonl", requests=6)
    good = lines(trace)
    assert good[5]["prefix"] == {"request": 2, "messages": 6}

    def broken(change: Any, name: str) -> Path:
        found = json.loads(json.dumps(good))
        change(found[5])
        path = tmp_path / name
        write_lines(path, found)
        return path

    cases = [
        (lambda d: d.update(prefix={"request": 99, "messages": 6}), "names request 99"),
        (lambda d: d.update(prefix={"request": 3, "messages": 6}), "names request 3"),
        (lambda d: d.update(conversation_id="zz"), "conversation 'zz' is none kept"),
        (lambda d: d.update(prefix={"request": 2, "messages": 7}), "takes 7 messages of"),
        (lambda d: d.update(prefix={"request": 2, "messages": -1}), "prefix="),
        (lambda d: d.update(prefix=[2, 6]), "prefix="),
        (lambda d: d.update(messages=None), "prefix="),
    ]
    for i, (change, words) in enumerate(cases):
        path = broken(change, f"b{i}.jsonl")
        with pytest.raises(TraceError, match=f"b{i}.jsonl:6: .*{words}"):
            replay_trace(path)


def test_an_edited_base_line_is_a_mismatch_of_the_whole_input(tmp_path: Path) -> None:
    trace = agent_loop(tmp_path / "t.jsonl", requests=6)
    found = lines(trace)
    # Request 0 is the base of 2, 2 of 4: editing its message 1 edits all three.
    found[1]["messages"][1] = message_json(message("user", "edited"))
    write_lines(trace, found)
    with pytest.raises(ReplayMismatch) as caught:
        replay_trace(trace)
    said = "\n".join(caught.value.differences)
    for number in (0, 2, 4):
        assert f"request {number} (apply, conversation a)" in said
    assert "conversation b" not in said


def test_a_changed_output_names_the_message_index_of_the_whole_input(tmp_path: Path) -> None:
    trace = agent_loop(tmp_path / "t.jsonl", requests=6)
    found = lines(trace)
    output = found[5]["output"]
    role = "user" if output[-1]["role"] == "assistant" else "assistant"
    output[-1] = {**output[-1], "role": role}
    write_lines(trace, found)
    with pytest.raises(ReplayMismatch) as caught:
        replay_trace(trace)
    assert f"request 4 (apply, conversation a): output message {len(output) - 1}" in str(
        caught.value
    )


def test_a_line_stored_whole_where_a_delta_belongs_is_said(tmp_path: Path) -> None:
    trace = agent_loop(tmp_path / "t.jsonl", requests=4)
    _, found = read_trace(trace)
    whole = [line.data for line in found]
    write_lines(trace, [lines(trace)[0], *whole])
    with pytest.raises(ReplayMismatch, match=r"request 2 .*stored with prefix=None"):
        replay_trace(trace)
    assert replay_trace(trace, update=True).updated
    assert replay_trace(trace).identical


def test_writer_and_reader_forget_the_same_conversations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memrules._trace.deltas, "KEPT_CONVERSATIONS", 2)
    history: Conversation = agent_history(40, seed=4).messages
    trace = tmp_path / "t.jsonl"
    with record_trace(trace, load_pipeline(CONFIG)) as traced:
        for i, name in enumerate("ababcac"):
            traced.apply(history[: 5 + i], conversation_id=name)
    found = lines(trace)[1:]
    assert [line.get("prefix") is not None for line in found] == [
        False, False, True, True, False, False, True,
    ]  # fmt: skip
    assert replay_trace(trace).identical


def test_a_line_that_cannot_be_written_is_no_base(tmp_path: Path) -> None:
    header, _ = read_trace(agent_loop(tmp_path / "t.jsonl", requests=1))
    said = [{"role": "user", "parts": [{"type": "text", "text": "hi"}]}]
    with TraceWriter(tmp_path / "w.jsonl", header) as writer:
        line = {"kind": "remember", "pipeline": 0, "conversation_id": "c", "messages": said}
        writer.write(line)
        with pytest.raises(TraceError, match="NaN"):
            writer.write({**line, "messages": said * 2, "write": float("nan")})
        writer.write({**line, "messages": said * 3})
    found = lines(tmp_path / "w.jsonl")[1:]
    assert [(line["request"], "prefix" in line) for line in found] == [(0, False), (1, False)]
