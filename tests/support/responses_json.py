"""Hypothesis strategies for OpenAI Responses API input items, as parsed JSON.

responses_items()     any valid item list, with the awkward corners: string
                      and list content, untyped messages, unknown keys and
                      item types, reasoning, compaction, other paired calls
responses_loops()     well-formed agent loops, each item one the OpenAI SDK's
                      ``ResponseInputParam`` accepts: every call answered,
                      reasoning before the calls it leads to
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.support.adapter_json import _obj, json_values

__all__ = ["responses_items", "responses_loops"]

Strategy = st.SearchStrategy[Any]

_text = st.text(max_size=12)
_ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=8)
_b64 = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", max_size=16
)
_status = st.sampled_from(["completed", "incomplete", "in_progress"])


def _input_text() -> Strategy:
    return _obj({"type": st.just("input_text"), "text": _text})


def _output_text(annotations: bool = True) -> Strategy:
    optional = {"annotations": st.just([])} if annotations else {}
    return _obj({"type": st.just("output_text"), "text": _text}, optional)


def _image() -> Strategy:
    url = st.builds(lambda d: f"data:image/png;base64,{d}", _b64) | st.just(
        "https://example.com/a.png"
    )
    return _obj(
        {"type": st.just("input_image"), "detail": st.sampled_from(["low", "high", "auto"])},
        {"image_url": url, "file_id": _ids},
    )


def _input_part() -> Strategy:
    unknown = _obj({"type": st.sampled_from(["input_file", "input_audio", "x_part"])})
    return st.one_of(_input_text(), _input_text(), _image(), unknown)


def _message(role: str) -> Strategy:
    parts = _output_part() if role == "assistant" else _input_part()
    content = _text | st.lists(parts, max_size=3)
    return _obj(
        {"role": st.just(role), "content": content},
        {"type": st.just("message"), "id": _ids, "status": _status, "phase": st.just("commentary")},
    )


def _output_part() -> Strategy:
    refusal = _obj({"type": st.just("refusal"), "refusal": _text})
    return st.one_of(_output_text(), _output_text(annotations=False), refusal, _input_text())


def _reasoning() -> Strategy:
    summary = st.lists(
        st.fixed_dictionaries({"type": st.just("summary_text"), "text": _text}), max_size=2
    )
    return _obj(
        {"type": st.just("reasoning"), "id": _ids, "summary": summary},
        {"encrypted_content": _b64, "status": _status},
    )


def _call(call_id: Strategy = _ids) -> Strategy:
    return _obj(
        {
            "type": st.just("function_call"),
            "call_id": call_id,
            "name": _ids,
            "arguments": st.sampled_from(["{}", '{"path": "a.py"}', "not json"]),
        },
        {"id": _ids, "status": _status},
    )


def _output(call_id: Strategy = _ids) -> Strategy:
    output = _text | st.lists(st.one_of(_input_text(), _image()), max_size=2)
    return _obj(
        {"type": st.just("function_call_output"), "call_id": call_id, "output": output},
        {"id": _ids, "status": _status},
    )


def _custom(call_id: Strategy = _ids) -> Strategy:
    return _obj(
        {"type": st.just("custom_tool_call"), "call_id": call_id, "name": _ids, "input": _text},
        {"id": _ids},
    )


def _custom_output(call_id: Strategy = _ids) -> Strategy:
    return _obj({"type": st.just("custom_tool_call_output"), "call_id": call_id, "output": _text})


def _other_pair_item() -> Strategy:
    call = _obj(
        {
            "type": st.just("local_shell_call"),
            "id": _ids,
            "call_id": _ids,
            "status": _status,
            "action": st.fixed_dictionaries(
                {
                    "type": st.just("exec"),
                    "command": st.lists(_text, max_size=2),
                    "env": st.just({}),
                }
            ),
        }
    )
    output = _obj({"type": st.just("local_shell_call_output"), "id": _ids, "output": _text})
    return call | output.map(lambda o: {**o, "call_id": o["id"]})


def _opaque_item() -> Strategy:
    compaction = _obj({"type": st.just("compaction"), "encrypted_content": _b64}, {"id": _ids})
    unknown = _obj({"type": st.sampled_from(["web_search_call", "item_reference", "x_future"])})
    return (
        compaction
        | unknown
        | st.fixed_dictionaries({"type": st.just("x_item"), "data": json_values(3)})
    )


def responses_items(max_size: int = 10) -> Strategy:
    """A list of Responses input items. Valid one by one; not a well-formed
    dialogue (outputs need not follow their calls)."""
    item = st.one_of(
        _message("user"),
        _message("system"),
        _message("developer"),
        _message("assistant"),
        _message("assistant"),
        _reasoning(),
        _call(),
        _call(),
        _output(),
        _custom(),
        _custom_output(),
        _other_pair_item(),
        _opaque_item(),
    )
    return st.lists(item, max_size=max_size)


# --------------------------------------------------------------------------- agent loops

_words = st.lists(
    st.sampled_from(["read", "the", "file", "fix", "bug", "test", "ok", "日本"]),
    min_size=1,
    max_size=30,
).map(" ".join)


# A real 1x1 PNG, so that image readers and counters see a valid header.
_PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8"
    "/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
)
_detail = st.sampled_from(["low", "high", "auto"])


@st.composite
def responses_loops(draw: st.DrawFn, max_turns: int = 6) -> list[dict[str, Any]]:
    """An agent loop as the SDK sends it: a system or developer message,
    then turns of a user message and rounds of the model's reasoning and
    parallel function calls, each answered, and a closing answer."""
    items: list[dict[str, Any]] = []
    counter = iter(range(10_000))
    if draw(st.booleans()):
        role = draw(st.sampled_from(["system", "developer"]))
        items.append({"role": role, "content": draw(_words)})
    for _ in range(draw(st.integers(1, max_turns))):
        if draw(st.integers(0, 3)) == 0:  # a screenshot beside the question
            image = {"type": "input_image", "image_url": _PNG, "detail": draw(_detail)}
            text = {"type": "input_text", "text": draw(_words)}
            items.append({"type": "message", "role": "user", "content": [text, image]})
        else:
            items.append({"role": "user", "content": draw(_words)})
        for _ in range(draw(st.integers(0, 3))):
            n = next(counter)
            if draw(st.booleans()):
                items.append(
                    {
                        "type": "reasoning",
                        "id": f"rs_{n}",
                        "summary": [],
                        "encrypted_content": draw(_b64),
                    }
                )
            calls = [f"call_{n}_{k}" for k in range(draw(st.integers(1, 3)))]
            for call in calls:
                items.append(
                    {
                        "type": "function_call",
                        "id": f"fc_{call}",
                        "call_id": call,
                        "name": "read_file",
                        "arguments": f'{{"path": "src/{call}.py"}}',
                    }
                )
            for call in calls:
                output = draw(_words) * draw(st.integers(1, 20))
                items.append({"type": "function_call_output", "call_id": call, "output": output})
        if draw(st.booleans()):
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{next(counter)}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": draw(_words), "annotations": []}],
                }
            )
    return items
