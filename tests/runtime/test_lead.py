"""What a provider would reject is repaired by default (``repair: true``):
tool calls and results that do not pair, and a request that starts with
something other than a user message after the system messages; the report
says so, and ``repair: false`` sends the request as it came."""

from __future__ import annotations

from typing import Any

from memrules import MemoryPlugin, load_config, load_pipeline
from memrules._core.messages import Message, ToolCall, ToolResult, message
from memrules._runtime.lead import LEAD_NOTE

UNLIMITED = "{max_tokens: 100000, strategies: []}"


def _call(call_id: str) -> Message:
    return Message(
        role="assistant", parts=(ToolCall(id=call_id, name="read", arguments='{"p": 1}'),)
    )


def _result(call_id: str) -> Message:
    return Message(role="tool", parts=(ToolResult(call_id=call_id, content="data"),))


REPAIR = "{repair: true, max_tokens: 100000, strategies: []}"


def test_repair_is_on_by_default_in_the_hook_and_asked_for_in_a_pipeline() -> None:
    assert load_config("{}").repair is None
    assert load_config("repair: false\n").repair is False
    assert MemoryPlugin(load_config("{}")).pipeline.repairs is True
    assert MemoryPlugin(load_config("repair: false\n")).pipeline.repairs is False
    lead = (message("system", "rules"), message("assistant", "hello"), message("user", "q"))
    assert load_pipeline(UNLIMITED).apply(lead).messages == lead  # Pipeline.apply: as asked
    assert len(load_pipeline(REPAIR).apply(lead).messages) == 2


def test_an_orphan_call_and_an_orphan_result_are_taken_out_by_the_hook() -> None:
    body: dict[str, Any] = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "rules"},
            {"role": "user", "content": "first"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_lost",
                        "type": "function",
                        "function": {"name": "read", "arguments": "{}"},
                    }
                ],
            },
            {"role": "user", "content": "second"},
            {"role": "tool", "tool_call_id": "call_nobody", "content": "stray"},
            {"role": "user", "content": "third"},
        ],
    }
    plugin = MemoryPlugin(load_config(UNLIMITED))
    sent = plugin.on_openai_request(body)["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "user", "user"]
    report = plugin.last_report
    assert report is not None
    assert len(report.input_problems) == 2
    assert [a.strategy for a in report.actions] == ["repair"]

    passthrough = MemoryPlugin(load_config(UNLIMITED.replace("{", "{repair: false, ", 1)))
    assert passthrough.on_openai_request(body)["messages"] == body["messages"]
    assert passthrough.last_report is not None
    assert len(passthrough.last_report.input_problems) == 2


def test_a_request_starts_with_a_user_message_after_the_system_messages() -> None:
    pipeline = load_pipeline(REPAIR)
    messages = (
        message("system", "rules"),
        message("assistant", "Hello! How can I help?"),
        _call("c1"),
        _result("c1"),
        message("system", "an observation"),
        message("user", "question"),
        message("assistant", "answer"),
    )
    result = pipeline.apply(messages)
    assert [m.text for m in result.messages] == ["rules", "an observation", "question", "answer"]
    assert result.report.origin == (0, 4, 5, 6)
    last = result.report.actions[-1]
    assert (last.strategy, last.note) == ("repair", LEAD_NOTE)
    assert tuple(last.removed) == (1, 2, 3)
    assert last.closed_calls == ("c1",)
    assert result.report.tokens_after == pipeline.count(result.messages)
    assert result.report.messages_after == 4

    off = load_pipeline(UNLIMITED.replace("{", "{repair: false, ", 1))
    assert off.apply(messages).messages == messages


def test_a_result_left_behind_by_the_lead_goes_with_its_call() -> None:
    pipeline = load_pipeline(REPAIR)
    both = Message(
        role="tool",
        parts=(ToolResult(call_id="c1", content="a"), ToolResult(call_id="c2", content="b")),
    )
    messages = (
        message("system", "rules"),
        _call("c1"),
        message("user", "question"),
        Message(role="assistant", parts=(ToolCall(id="c2", name="read", arguments="{}"),)),
        both,
    )
    result = pipeline.apply(messages)
    roles = [m.role for m in result.messages]
    assert roles[:2] == ["system", "user"]
    ids = [p.call_id for m in result.messages for p in m.parts if isinstance(p, ToolResult)]
    assert "c1" not in ids


def test_with_no_user_message_the_request_is_sent_and_the_problem_reported() -> None:
    pipeline = load_pipeline(REPAIR)
    messages = (message("system", "rules"), message("assistant", "Hello!"))
    result = pipeline.apply(messages)
    assert result.messages == messages
    assert any("no user message follows" in p for p in result.report.input_problems)


def test_the_lead_is_repaired_after_compaction_too() -> None:
    pipeline = load_pipeline(
        "{repair: true, max_messages: 4, strategies: [{type: sliding_window, keep_messages: 3}]}"
    )
    messages = (
        message("system", "rules"),
        message("user", "one"),
        message("assistant", "two"),
        message("user", "three"),
        message("assistant", "four"),
        message("user", "five"),
    )
    result = pipeline.apply(messages)
    first = next(m for m in result.messages if m.role != "system")
    assert first.role == "user"
