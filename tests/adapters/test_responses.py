"""The Responses API format: lossless round trips, how items map, the
pairing invariant through the default pipeline, and conversions."""

from __future__ import annotations

import itertools
import json
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import memrules
from memrules import MemoryConfig, MessageFormatError, Pipeline, from_responses, to_responses
from memrules._core.messages import Opaque, Text, ToolCall, ToolResult, message
from tests.support.adapter_json import shuffled
from tests.support.responses_json import responses_items, responses_loops
from tests.support.strategies import COUNTER


@given(shuffled(responses_items()))
def test_responses_round_trip(items: list[dict[str, Any]]) -> None:
    written = to_responses(from_responses(items))
    assert written == items
    # Byte for byte: every object's keys in the order they came.
    assert json.dumps(written) == json.dumps(items)


@given(shuffled(responses_items()))
def test_responses_reverse_round_trip(items: list[dict[str, Any]]) -> None:
    conversation = from_responses(items)
    assert from_responses(to_responses(conversation)) == conversation


def test_items_map_to_messages() -> None:
    items: list[dict[str, Any]] = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "input_text", "text": "Read a.py"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
        {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "read_file", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "one"},
        {"type": "function_call_output", "call_id": "c2", "output": "two"},
        {"type": "compaction", "encrypted_content": "cccc"},
        {"type": "reasoning", "id": "rs_2", "summary": []},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        },
    ]
    conversation = from_responses(items)
    assert [m.role for m in conversation] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "assistant",
    ]
    assert conversation[0].metadata["responses_role"] == "developer"
    turn = conversation[2]
    assert isinstance(turn.parts[0], Opaque)
    assert turn.parts[0].kind == "responses_item:reasoning"
    assert turn.parts[0].payload["encrypted_content"] == "gAAA"
    assert turn.call_ids == ("c1", "c2")
    assert conversation[3].parts == (ToolResult(call_id="c1", content="one"),)
    # A reasoning item opens the message of the item it leads to.
    assert [p.kind for p in conversation[5].parts if isinstance(p, Opaque)] == [
        "responses_item:compaction"
    ]
    assert isinstance(conversation[6].parts[0], Opaque)
    assert conversation[6].text == "Done."
    assert to_responses(conversation) == items


def test_other_paired_calls_pair_by_call_id() -> None:
    items: list[dict[str, Any]] = [
        {
            "type": "local_shell_call",
            "id": "ls_1",
            "call_id": "s1",
            "status": "completed",
            "action": {"type": "exec", "command": ["ls"], "env": {}},
        },
        {"type": "local_shell_call_output", "id": "s1", "call_id": "s1", "output": "a.py"},
    ]
    call, output = from_responses(items)
    assert call.call_ids == ("s1",)
    assert output.result_ids == ("s1",)
    assert output.parts[0].content == "a.py"  # counted as text
    (result,) = output.parts
    assert isinstance(result, ToolResult)
    cleared = output.evolve(parts=(attrs.evolve(result, content="[cleared]"),))
    assert to_responses([call, cleared])[1]["output"] == "[cleared]"


def test_malformed_items_name_index_and_field() -> None:
    with pytest.raises(MessageFormatError, match=r"\[1\]\.call_id"):
        from_responses(
            [{"role": "user", "content": "x"}, {"type": "function_call_output", "output": "x"}]
        )
    with pytest.raises(MessageFormatError, match="role"):
        from_responses([{"type": "message", "role": "tool", "content": "x"}])
    with pytest.raises(MessageFormatError, match=r"NaN|nan"):
        from_responses([{"type": "x_item", "value": float("nan")}])
    with pytest.raises(MessageFormatError, match="input items"):
        from_responses({"role": "user"})  # type: ignore[arg-type]


def test_other_formats_write_as_responses_items() -> None:
    chat = memrules.from_openai(
        [
            {"role": "system", "content": "sys"},
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
        ]
    )
    assert to_responses(chat) == [
        {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "sys"}]},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"}
            ],
        },
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"},
    ]
    # And back: Responses images become chat images; kept items are dropped.
    back = memrules.to_openai(from_responses(to_responses(chat)))
    assert back[1]["content"] == [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    ]
    made = [message("assistant", "hi", ToolCall(id="x", name="n")), message("user", Text(text="q"))]
    # An assistant message of plain text is written as the SDK's easy form.
    assert to_responses(made)[0] == {"type": "message", "role": "assistant", "content": "hi"}


def _pairing_problems(items: list[dict[str, Any]], sent: list[dict[str, Any]]) -> list[str]:
    """What the Responses API would refuse in ``sent`` (made from
    ``items``): an output without its call before it, a call whose output
    was in ``items`` but not in ``sent``, a reasoning item without the item
    that followed it in ``items``, or that item without its reasoning."""
    problems: list[str] = []
    calls = {i["call_id"] for i in sent if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in sent if i.get("type") == "function_call_output"}
    answered = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
    seen: set[str] = set()
    for item in sent:
        if item.get("type") == "function_call":
            seen.add(item["call_id"])
        if item.get("type") == "function_call_output" and item["call_id"] not in seen:
            problems.append(f"output {item['call_id']} without its call before it")
    problems += [f"call {c} without its output" for c in sorted((calls & answered) - outputs)]
    follows = {
        a["id"]: b.get("call_id") or b.get("id")
        for a, b in itertools.pairwise(items)
        if a.get("type") == "reasoning" and b.get("type") != "reasoning"
    }
    sent_keys = {i.get("call_id") or i.get("id") for i in sent}
    for reasoning, after in follows.items():
        if (reasoning in sent_keys) != (after in sent_keys):
            problems.append(f"reasoning {reasoning} and its item {after} separated")
    return problems


@given(responses_loops(), st.floats(0.05, 1.0))
def test_default_pipeline_keeps_responses_pairs(
    items: list[dict[str, Any]], fraction: float
) -> None:
    conversation = from_responses(items)
    total = sum(COUNTER.counts(conversation))
    pipeline = Pipeline.from_config(
        MemoryConfig(max_tokens=max(1, int(total * fraction))), counter=COUNTER
    )
    result = pipeline.apply(conversation)
    sent = to_responses(result.messages)
    assert _pairing_problems(items, sent) == []
    # Everything sent is as it came, or new (a summary, a stub).
    assert all(isinstance(item, dict) for item in sent)
