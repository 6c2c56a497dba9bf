"""The OpenAI and Anthropic adapters: lossless both ways, clear errors,
usable conversions between the two."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings

from memrules._adapters import (
    from_anthropic,
    from_openai,
    to_anthropic,
    to_anthropic_request,
    to_openai,
)
from memrules._core.errors import MessageFormatError
from memrules._core.messages import Message, Opaque, Text, ToolCall, ToolResult
from tests.support.adapter_json import (
    anthropic_messages,
    anthropic_requests,
    anthropic_system,
    openai_messages,
    shuffled,
)


def same_json(a: Any, b: Any) -> bool:
    """The same JSON bytes: types (``1`` is not ``1.0`` is not ``true``) and
    the order of every object's keys included."""
    return json.dumps(a) == json.dumps(b)


# --------------------------------------------------------------------------- round trips
# The inputs have every object's keys in a drawn order (shuffled), and the
# output must have the same bytes: providers' prompt caches match bytes.


@given(shuffled(openai_messages()))
def test_openai_round_trip(messages: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(messages)
    conversation = from_openai(messages)
    assert same_json(messages, before)  # input untouched
    assert same_json(to_openai(conversation), messages)


@given(shuffled(openai_messages()))
def test_openai_reverse_round_trip(messages: list[dict[str, Any]]) -> None:
    conversation = from_openai(messages)
    assert from_openai(to_openai(conversation)) == conversation


@given(shuffled(anthropic_messages(system_role=True)))
def test_anthropic_round_trip(messages: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(messages)
    conversation = from_anthropic(messages)
    assert same_json(messages, before)
    assert same_json(to_anthropic(conversation), messages)
    assert from_anthropic(to_anthropic(conversation)) == conversation


@given(shuffled(anthropic_requests()))
def test_anthropic_request_round_trip(request: dict[str, Any]) -> None:
    conversation = from_anthropic(request)
    written = to_anthropic_request(conversation)
    # The request object itself is written system first (documented); what
    # is inside keeps its order.
    assert list(written) == [k for k in ("system", "messages") if k in request]
    assert same_json(written["messages"], request["messages"])
    assert same_json(written.get("system"), request.get("system"))
    assert from_anthropic(to_anthropic_request(conversation)) == conversation
    # The message-list form keeps the system prompt as a system entry, and
    # reads back to the same conversation.
    assert from_anthropic(to_anthropic(conversation)) == conversation


@given(anthropic_requests())
def test_request_and_keyword_forms_agree(request: dict[str, Any]) -> None:
    assert from_anthropic(request) == from_anthropic(
        request["messages"], system=request.get("system")
    )


@given(anthropic_system())
def test_system_prompt_is_the_first_message(system: Any) -> None:
    conversation = from_anthropic([{"role": "user", "content": "hi"}], system=system)
    assert conversation[0].role == "system"
    assert len(conversation) == 2


@given(openai_messages())
def test_output_is_fresh(messages: list[dict[str, Any]]) -> None:
    """Mutating what a writer returned never reaches the conversation."""
    conversation = from_openai(messages)
    written = to_openai(conversation)
    for item in written:
        item.clear()
    assert same_json(to_openai(conversation), messages)


# --------------------------------------------------------------------------- OpenAI details


def test_openai_plain_messages_have_no_metadata() -> None:
    conversation = from_openai(
        [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi", "name": "ann"},
            {"role": "assistant", "content": "hello"},
        ]
    )
    assert conversation == (
        Message(role="system", parts=(Text(text="be brief"),)),
        Message(role="user", parts=(Text(text="hi"),), name="ann"),
        Message(role="assistant", parts=(Text(text="hello"),)),
    )


def test_openai_developer_role_is_kept() -> None:
    messages = [{"role": "developer", "content": "rules"}]
    (message,) = from_openai(messages)
    assert message.role == "system"
    assert message.metadata["openai_role"] == "developer"
    assert to_openai((message,)) == messages


def test_openai_tool_calls_and_results() -> None:
    messages: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": '{"x"'}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "2"}]},
    ]
    assistant, first, second = from_openai(messages)
    assert assistant.parts == (
        ToolCall(id="a", name="f", arguments="{}"),
        ToolCall(id="b", name="g", arguments='{"x"'),
    )
    assert assistant.metadata == {}
    assert first.parts == (ToolResult(call_id="a", content="1"),)
    assert second.parts == (ToolResult(call_id="b", content=(Text(text="2"),)),)
    assert to_openai((assistant, first, second)) == messages


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user", "content": ""},
        {"role": "user"},
        {"role": "user", "content": None},
        {"role": "user", "content": []},
        {"role": "user", "content": [{"type": "text", "text": "x"}]},
        {"role": "assistant", "content": ""},
        {"role": "assistant", "content": None},
        {"role": "assistant"},
        {"role": "assistant", "content": "", "tool_calls": []},
        {"role": "assistant", "tool_calls": None},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
            ],
        },
        {"role": "tool", "tool_call_id": "c"},
        {"role": "tool", "tool_call_id": "c", "content": None},
        {"role": "tool", "tool_call_id": "c", "content": ""},
        {"role": "tool", "tool_call_id": "c", "content": []},
    ],
)
def test_openai_content_forms_round_trip(message: dict[str, Any]) -> None:
    assert same_json(to_openai(from_openai([message])), [message])


def test_openai_unknown_fields_are_kept_in_metadata_and_extra() -> None:
    messages: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "x", "annotations": []},
                {"type": "refusal", "refusal": "no"},
            ],
            "refusal": "no",
            "x_trace": {"span": 1},
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "index": 0,
                    "function": {"name": "f", "arguments": "{}", "strict": True},
                },
            ],
        }
    ]
    (message,) = from_openai(messages)
    text, refusal, call = message.parts
    assert message.metadata["openai"] == {"refusal": "no", "x_trace": {"span": 1}}
    assert text == Text(text="x", extra={"openai": {"annotations": []}})
    assert refusal == Opaque(kind="openai:refusal", payload={"type": "refusal", "refusal": "no"})
    assert isinstance(call, ToolCall)
    assert call.extra == {
        "openai": {"index": 0},
        "openai_function": {"strict": True},
        "openai_keys": ("id", "type", "index", "function"),  # "index" came before "function"
    }
    assert to_openai((message,)) == messages


def test_openai_parts_of_other_types_are_opaque() -> None:
    parts = [
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
        {"type": "input_audio", "input_audio": {"data": "AAA", "format": "wav"}},
        {"type": "file", "file": {"file_id": "f1"}},
        {"type": "hologram", "depth": 3},
    ]
    (message,) = from_openai([{"role": "user", "content": parts}])
    assert [p.kind for p in message.parts if isinstance(p, Opaque)] == [
        "openai:image_url",
        "openai:input_audio",
        "openai:file",
        "openai:hologram",
    ]
    assert to_openai((message,)) == [{"role": "user", "content": parts}]


def test_openai_legacy_function_call_pairs_with_its_result() -> None:
    messages: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "lookup", "arguments": '{"q": 1}'},
        },
        {"role": "function", "name": "lookup", "content": "found"},
    ]
    assistant, result = from_openai(messages)
    (call,) = assistant.parts
    assert isinstance(call, ToolCall)
    assert call.name == "lookup"
    assert result.role == "tool"
    assert result.result_ids == assistant.call_ids  # the pairing invariant can see it
    assert result.name == "lookup"
    assert to_openai((assistant, result)) == messages


def test_openai_custom_tool_call() -> None:
    messages: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}
            ],
        }
    ]
    (message,) = from_openai(messages)
    assert message.parts == (
        ToolCall(id="c", name="sql", arguments="SELECT 1", extra={"openai_type": "custom"}),
    )
    assert to_openai((message,)) == messages


# --------------------------------------------------------------------------- Anthropic details


def test_anthropic_tool_use_and_result_stay_in_their_messages() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "checking"},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "weather",
                    "input": {"city": "Oslo", "days": [1, 2.5], "deep": {"ok": None}},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "rain"}],
                    "is_error": False,
                },
                {"type": "text", "text": "and tomorrow?", "cache_control": {"type": "ephemeral"}},
            ],
        },
    ]
    user, assistant, answer = from_anthropic(messages)
    assert [m.role for m in (user, assistant, answer)] == ["user", "assistant", "user"]
    thinking, text, call = assistant.parts
    assert isinstance(thinking, Opaque)
    assert thinking.kind == "anthropic:thinking"
    assert text == Text(text="checking")
    assert isinstance(call, ToolCall)
    assert json.loads(call.arguments) == messages[1]["content"][2]["input"]
    result, follow_up = answer.parts
    assert result == ToolResult(
        call_id="t1", content=(Text(text="rain"),), extra={"anthropic_is_error": False}
    )
    assert isinstance(follow_up, Text)
    assert follow_up.extra == {"anthropic": {"cache_control": {"type": "ephemeral"}}}
    assert answer.result_ids == assistant.call_ids
    assert to_anthropic((user, assistant, answer)) == messages


def test_anthropic_system_representation() -> None:
    system = [
        {"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "today is Monday"},
    ]
    request = {"system": system, "messages": [{"role": "user", "content": "hi"}]}
    conversation = from_anthropic(request)
    assert conversation[0].role == "system"
    assert conversation[0].text == "rules\ntoday is Monday"
    assert to_anthropic_request(conversation) == request
    listed = to_anthropic(conversation)
    assert listed[0] == {"role": "system", "content": system}
    assert from_anthropic(listed) == conversation


def test_anthropic_request_hoists_every_system_message() -> None:
    conversation = (
        Message(role="system", parts=(Text(text="a"),)),
        Message(role="user", parts=(Text(text="hi"),)),
        Message(role="system", parts=(Text(text="b"),)),
        Message(role="assistant", parts=(Text(text="yo"),)),
    )
    assert to_anthropic_request(conversation) == {
        "system": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
    }
    assert to_anthropic_request(conversation[1:2]) == {
        "messages": [{"role": "user", "content": "hi"}]
    }


def test_anthropic_request_settings_are_ignored() -> None:
    request = {"model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}
    assert from_anthropic(request) == (Message(role="user", parts=(Text(text="x"),)),)


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user", "content": ""},
        {"role": "user", "content": []},
        {"role": "user", "content": [{"type": "text", "text": "x"}]},
        {"role": "user"},
        {"role": "user", "content": None},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": ""}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": None}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": [], "is_error": True}
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}],
        },
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xx"}]},
    ],
)
def test_anthropic_content_forms_round_trip(message: dict[str, Any]) -> None:
    assert same_json(to_anthropic(from_anthropic([message])), [message])


# --------------------------------------------------------------------------- malformed input


def _ok_openai() -> list[Any]:
    return [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a"},
    ]


def _call(**function: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "c",
                "type": "function",
                "function": {"name": "f", "arguments": "{}", **function},
            }
        ],
    }


OPENAI_BAD: list[tuple[Any, str, str]] = [
    ("hi", "messages", "expected a list of messages, got str"),
    ({"role": "user"}, "messages", "expected a list of messages, got object"),
    ("hi", "", "expected an object, got str"),
    ({"content": "x"}, "role", "missing"),
    ({"role": "robot", "content": "x"}, "role", "unknown role 'robot'"),
    ({"role": 5}, "role", "unknown role 5"),
    ({"role": "user", "content": 5}, "content", "got int"),
    ({"role": "user", "content": {"text": "x"}}, "content", "got object"),
    ({"role": "user", "content": ["x"]}, "content[0]", "expected an object, got str"),
    ({"role": "user", "content": [{"text": "x"}]}, "content[0].type", "missing"),
    ({"role": "user", "content": [{"type": 1}]}, "content[0].type", "expected a string"),
    ({"role": "user", "content": [{"type": "text"}]}, "content[0].text", "missing"),
    (
        {"role": "user", "content": [{"type": "text", "text": None}]},
        "content[0].text",
        "expected a string, got null",
    ),
    ({"role": "user", "content": "x", "name": 3}, "name", "expected a string, got int"),
    ({"role": "tool", "content": "x"}, "tool_call_id", "missing"),
    ({"role": "tool", "tool_call_id": 7, "content": "x"}, "tool_call_id", "got int"),
    ({"role": "tool", "tool_call_id": "c", "content": 1.5}, "content", "got float"),
    ({"role": "assistant", "tool_calls": "f"}, "tool_calls", "expected a list of tool calls"),
    ({"role": "assistant", "tool_calls": {"id": "c"}}, "tool_calls", "got object"),
    ({"role": "assistant", "tool_calls": [None]}, "tool_calls[0]", "got null"),
    ({"role": "assistant", "tool_calls": [{"type": "function"}]}, "tool_calls[0].id", "missing"),
    (
        {"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]},
        "tool_calls[0].type",
        "missing",
    ),
    (
        {"role": "assistant", "tool_calls": [{"id": "c", "type": "retrieval"}]},
        "tool_calls[0].type",
        "unknown tool call type 'retrieval'",
    ),
    (
        {"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]},
        "tool_calls[0].function",
        "missing",
    ),
    (
        {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": "f"}]},
        "tool_calls[0].function",
        "expected an object",
    ),
    (_call(name=None), "tool_calls[0].function.name", "expected a string, got null"),
    (_call(arguments=5), "tool_calls[0].function.arguments", "expected a string, got int"),
    (_call(arguments={"a": 1}), "tool_calls[0].function.arguments", "got object"),
    ({"role": "assistant", "function_call": "f"}, "function_call", "expected an object"),
    ({"role": "assistant", "function_call": {"name": "f"}}, "function_call.arguments", "missing"),
]


@pytest.mark.parametrize(("bad", "field", "text"), OPENAI_BAD)
def test_openai_malformed(bad: Any, field: str, text: str) -> None:
    if field == "messages":
        messages, index = bad, None
    else:
        messages, index = [*_ok_openai(), bad], 3
    with pytest.raises(MessageFormatError) as caught:
        from_openai(messages)
    error = caught.value
    assert (error.index, error.field) == (index, field)
    assert text in str(error)
    prefix = "messages" if index is None else f"messages[{index}]"
    assert str(error).startswith(prefix + (f".{field}" if index is not None and field else ""))


def test_openai_error_message_reads_well() -> None:
    with pytest.raises(
        ValueError,
        match=r"^messages\[3\]\.tool_calls\[0\]\.function\."
        r"arguments: expected a string, got int$",
    ):
        from_openai([*_ok_openai(), _call(arguments=5)])


def _use(**block: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}, **block}],
    }


def _result(**block: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", **block}]}


ANTHROPIC_BAD: list[tuple[Any, str, str]] = [
    ("hi", "", "expected an object, got str"),
    ({"content": "x"}, "role", "missing"),
    ({"role": "tool", "content": "x"}, "role", "unknown role 'tool'"),
    ({"role": "user", "content": 3}, "content", "got int"),
    ({"role": "user", "content": [3]}, "content[0]", "expected an object, got int"),
    ({"role": "user", "content": [{"text": "x"}]}, "content[0].type", "missing"),
    ({"role": "user", "content": [{"type": None}]}, "content[0].type", "got null"),
    ({"role": "user", "content": [{"type": "text", "text": 1}]}, "content[0].text", "got int"),
    (_use(id=None), "content[0].id", "expected a string, got null"),
    (_use(name=4), "content[0].name", "got int"),
    (
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n"}]},
        "content[0].input",
        "missing",
    ),
    (_use(input=[1]), "content[0].input", "expected an object, got list"),
    (_use(input={"s": {1, 2}}), "content[0].input.s", "set is not a JSON value"),
    (_use(input={"x": float("nan")}), "content[0].input.x", "nan is not a JSON number"),
    ({"role": "user", "content": [{"type": "tool_result"}]}, "content[0].tool_use_id", "missing"),
    (_result(content=5), "content[0].content", "got int"),
    (_result(content=[{"text": "x"}]), "content[0].content[0].type", "missing"),
    (_result(content=["x"]), "content[0].content[0]", "expected an object"),
    (_result(is_error="yes"), "content[0].is_error", "expected a boolean, got str"),
]


@pytest.mark.parametrize(("bad", "field", "text"), ANTHROPIC_BAD)
def test_anthropic_malformed(bad: Any, field: str, text: str) -> None:
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}, bad]
    with pytest.raises(MessageFormatError) as caught:
        from_anthropic(messages)
    error = caught.value
    assert (error.index, error.field) == (2, field)
    assert text in str(error)


@pytest.mark.parametrize(
    ("call", "field", "text"),
    [
        (lambda: from_anthropic("hi"), "messages", "expected a list of messages, got str"),  # type: ignore[arg-type]
        (lambda: from_anthropic(None), "messages", "got null"),  # type: ignore[arg-type]
        (
            lambda: from_anthropic({"system": "s"}),
            "messages",
            "or a request with a 'messages' list",
        ),
        (lambda: from_anthropic([], system=3), "system", "got int"),  # type: ignore[arg-type]
        (lambda: from_anthropic([], system=[{"text": "x"}]), "system[0].type", "missing"),
        (
            lambda: from_anthropic({"system": "a", "messages": []}, system="b"),
            "system",
            "given both",
        ),
    ],
)
def test_anthropic_malformed_request(call: Any, field: str, text: str) -> None:
    with pytest.raises(MessageFormatError) as caught:
        call()
    assert (caught.value.index, caught.value.field) == (None, field)
    assert text in str(caught.value)


def test_writers_reject_what_the_format_cannot_hold() -> None:
    call = ToolCall(id="c", name="f", arguments="{}")
    with pytest.raises(MessageFormatError) as caught:
        to_openai(
            (Message(role="user", parts=(Text(text="x"),)), Message(role="user", parts=(call,)))
        )
    assert (caught.value.index, caught.value.field) == (1, "parts[0]")
    with pytest.raises(MessageFormatError):
        to_openai((Message(role="tool", parts=(Text(text="x"),)),))
    with pytest.raises(MessageFormatError):
        to_anthropic((Message(role="tool", parts=(call,)),))
    with pytest.raises(MessageFormatError):
        to_openai(("not a message",))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- across formats


def assert_valid_anthropic_request(request: dict[str, Any]) -> None:
    """The shape the Messages API accepts, tool pairing included."""
    assert set(request) <= {"system", "messages"}
    system = request.get("system", "")
    assert isinstance(system, str) or all(b["type"] == "text" for b in system)
    previous_calls: set[str] = set()
    for message in request["messages"]:
        assert set(message) == {"role", "content"}
        assert message["role"] in ("user", "assistant")
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        assert blocks, "empty content"
        ids = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        if message["role"] == "assistant":
            assert not ids
            previous_calls = {b["id"] for b in blocks if b["type"] == "tool_use"}
            assert all(isinstance(b["input"], dict) for b in blocks if b["type"] == "tool_use")
            continue
        assert all(b["type"] != "tool_use" for b in blocks)
        if ids:
            assert [b["type"] for b in blocks[: len(ids)]] == ["tool_result"] * len(ids)
            assert set(ids) == previous_calls
        previous_calls = set()
        for block in blocks:
            assert block["type"] in ("text", "image", "document", "tool_result")


def assert_valid_openai(messages: list[dict[str, Any]]) -> None:
    """The shape chat completions accepts, tool pairing included."""
    open_calls: set[str] = set()
    for message in messages:
        role = message["role"]
        assert role in ("system", "developer", "user", "assistant", "tool")
        if role == "tool":
            assert message["tool_call_id"] in open_calls
            open_calls.discard(message["tool_call_id"])
            content = message["content"]
            assert isinstance(content, str) or all(p["type"] == "text" for p in content)
            continue
        assert not open_calls, "a tool call left unanswered"
        if role == "assistant":
            calls = message.get("tool_calls", [])
            assert message.get("content") is not None or calls
            for call in calls:
                assert call["type"] == "function"
                assert isinstance(call["function"]["arguments"], str)
                json.loads(call["function"]["arguments"])
            open_calls = {c["id"] for c in calls}
        else:
            content = message["content"]
            assert isinstance(content, str) or all(
                p["type"] in ("text", "image_url", "input_audio", "file") for p in content
            )
    assert not open_calls


OPENAI_DIALOGUE: list[dict[str, Any]] = [
    {"role": "developer", "content": "You are terse."},
    {"role": "system", "content": "Use tools."},
    {
        "role": "user",
        "name": "ann",
        "content": [
            {"type": "text", "text": "What is on this picture, and the weather?"},
            {
                "type": "image_url",
                "image_url": {"url": "data:image/png;base64,iVBOR", "detail": "low"},
            },
        ],
    },
    {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "time", "arguments": ""}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "rain"},
    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "9:00"}]},
    {"role": "user", "content": "thanks"},
    {"role": "assistant", "content": None, "refusal": "I can't say more."},
    {"role": "user", "content": "ok"},
]


def test_openai_to_anthropic() -> None:
    request = to_anthropic_request(from_openai(OPENAI_DIALOGUE))
    assert_valid_anthropic_request(
        {**request, "messages": request["messages"][:-2] + request["messages"][-1:]}
    )
    assert request["system"] == [
        {"type": "text", "text": "You are terse."},
        {"type": "text", "text": "Use tools."},
    ]
    messages = request["messages"]
    assert messages[0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"},
    }
    assert messages[1]["content"][1:] == [
        {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}},
        {"type": "tool_use", "id": "call_2", "name": "time", "input": {}},
    ]
    # Consecutive tool messages become one user message of tool_result blocks.
    assert messages[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "rain"},
            {
                "type": "tool_result",
                "tool_use_id": "call_2",
                "content": [{"type": "text", "text": "9:00"}],
            },
        ],
    }
    # The refusal lives only in OpenAI's fields: the message is left empty.
    assert messages[4] == {"role": "assistant", "content": ""}


ANTHROPIC_DIALOGUE: dict[str, Any] = {
    "system": [{"type": "text", "text": "Be kind.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "image", "source": {"type": "url", "url": "https://x/cat.png"}},
                {"type": "text", "text": "Describe, then look up cats."},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "plan", "signature": "s"},
                {"type": "text", "text": "A cat."},
                {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "cats"}},
                {"type": "tool_use", "id": "toolu_2", "name": "shot", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "many cats",
                    "cache_control": {"type": "ephemeral"},
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "is_error": True,
                    "content": [
                        {"type": "text", "text": "screenshot"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                        },
                    ],
                },
                {"type": "text", "text": "Summarise."},
            ],
        },
        {"role": "assistant", "content": "Cats are many."},
    ],
}


def test_anthropic_to_openai() -> None:
    messages = to_openai(from_anthropic(ANTHROPIC_DIALOGUE))
    assert_valid_openai(messages)
    assert messages[0] == {"role": "system", "content": "Be kind."}
    assert messages[1]["content"][0] == {
        "type": "image_url",
        "image_url": {"url": "https://x/cat.png"},
    }
    assert messages[2] == {
        "role": "assistant",
        "content": "A cat.",
        "tool_calls": [
            {
                "id": "toolu_1",
                "type": "function",
                "function": {"name": "search", "arguments": '{"q": "cats"}'},
            },
            {"id": "toolu_2", "type": "function", "function": {"name": "shot", "arguments": "{}"}},
        ],
    }
    # One tool message per result, then a user message with the rest; the
    # image from the tool result moves there.
    assert messages[3] == {"role": "tool", "tool_call_id": "toolu_1", "content": "many cats"}
    assert messages[4] == {
        "role": "tool",
        "tool_call_id": "toolu_2",
        "content": [{"type": "text", "text": "screenshot"}],
    }
    assert messages[5] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Summarise."},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    }
    assert messages[6] == {"role": "assistant", "content": "Cats are many."}


def test_there_and_back_keeps_the_dialogue() -> None:
    """OpenAI -> Anthropic -> OpenAI keeps text, calls and results."""
    dialogue = OPENAI_DIALOGUE[1:7]
    back = to_openai(from_anthropic(to_anthropic_request(from_openai(dialogue))))
    assert_valid_openai(back)
    assert [m["role"] for m in back] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert back[2]["tool_calls"][0]["function"]["name"] == "weather"
    assert back[3] == {"role": "tool", "tool_call_id": "call_1", "content": "rain"}


# --------------------------------------------------------------------------- long conversations


def test_long_conversations_round_trip() -> None:
    """A router's 10,000-message request, read and written back whole. (Speed
    is measured by a benchmark, not asserted here: wall-clock limits fail on
    a busy machine and pass on a slow implementation.)"""
    unit: list[dict[str, Any]] = [
        {"role": "user", "content": "question " * 20},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "result " * 50},
        {"role": "assistant", "content": [{"type": "text", "text": "answer"}]},
    ]
    messages = unit * 2500
    conversation = from_openai(messages)
    assert len(conversation) == 10_000
    # Only the one-text-part list needs a note (its content form); nothing
    # else is recorded for input in the writer's own key order.
    assert {key for m in conversation for key in m.metadata} == {"openai_content"}
    assert same_json(to_openai(conversation), messages)


@settings(max_examples=25)
@given(anthropic_messages(max_size=3))
def test_anthropic_output_is_plain_json(messages: list[dict[str, Any]]) -> None:
    written = to_anthropic(from_anthropic(messages))
    assert json.loads(json.dumps(written)) == written


@pytest.mark.parametrize(
    ("openai", "anthropic"),
    [
        (
            {"type": "image_url", "image_url": {"url": "https://x/cat.png"}},
            {"type": "image", "source": {"type": "url", "url": "https://x/cat.png"}},
        ),
        (
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"},
            },
        ),
    ],
)
def test_images_convert_both_ways(openai: dict[str, Any], anthropic: dict[str, Any]) -> None:
    """Each adapter reads its own images into the neutral form and writes
    the other's from it."""
    as_anthropic = to_anthropic(from_openai([{"role": "user", "content": [openai]}]))
    assert as_anthropic == [{"role": "user", "content": [anthropic]}]
    as_openai = to_openai(from_anthropic([{"role": "user", "content": [anthropic]}]))
    assert as_openai == [{"role": "user", "content": [openai]}]


def test_images_the_other_format_cannot_say_are_dropped() -> None:
    file_image = {"type": "image", "source": {"type": "file", "file_id": "f"}}
    assert to_openai(from_anthropic([{"role": "user", "content": [file_image]}])) == [
        {"role": "user", "content": ""}
    ]
