"""Values no JSON writer can write back are refused at input, naming the place.

``NaN`` and infinities (``json.dumps`` writes a bare ``NaN``, which is not
JSON) and lone surrogates (``"\\ud800"``, as ``json.loads`` returns for the
escape; no UTF-8 writer can write one) raise ``MessageFormatError`` from
``from_openai``/``from_anthropic`` with the message index and the field,
never a ``UnicodeEncodeError`` when the output is written.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memrules._adapters import from_anthropic, from_openai, to_anthropic, to_openai
from memrules._core.errors import MessageFormatError
from tests.support.adapter_json import anthropic_messages, openai_messages

NAN = float("nan")
INF = float("inf")
LONE = "\ud800"

Path = tuple[str | int, ...]


# --------------------------------------------------------------------------- named cases


def _call(arguments: str = "{}", **extra: Any) -> dict[str, Any]:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [{**call, **extra}]}


OPENAI_BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"role": "user", "content": "hi " + LONE}, "content", "lone surrogate '\\ud800' at index 3"),
    ({"role": "user", "content": [{"type": "text", "text": LONE}]}, "content[0].text", "surrogate"),
    ({"role": "user", "content": "x", "name": "a\udc00"}, "name", "surrogate '\\udc00'"),
    ({"role": "tool", "tool_call_id": LONE, "content": "x"}, "tool_call_id", "surrogate"),
    ({"role": "tool", "tool_call_id": "c", "content": LONE}, "content", "surrogate"),
    (_call(arguments='{"a": "' + LONE + '"}'), "tool_calls[0].function.arguments", "surrogate"),
    (_call(x_vendor={"deep": [1, NAN]}), "tool_calls[0].x_vendor.deep[1]", "nan is not a JSON"),
    (
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u", "w": INF}}]},
        "content[0].image_url.w",
        "inf is not a JSON number",
    ),
    (
        {"role": "user", "content": [{"type": "text", "text": "t", "score": -INF}]},
        "content[0].score",
        "-inf is not a JSON number",
    ),
    ({"role": "assistant", "content": "a", "x_trace": {"span": NAN}}, "x_trace.span", "nan"),
    ({"role": "assistant", "content": "a", "x" + LONE: 1}, "['x\\ud800']", "the key has a lone"),
    ({"role": "assistant", "content": "a", "refusal": LONE}, "refusal", "surrogate"),
]


@pytest.mark.parametrize(("bad", "field", "text"), OPENAI_BAD)
def test_openai_refuses_nan_and_lone_surrogates(bad: dict[str, Any], field: str, text: str) -> None:
    with pytest.raises(MessageFormatError) as caught:
        from_openai([{"role": "system", "content": "s"}, bad])
    assert (caught.value.index, caught.value.field) == (1, field)
    assert text in str(caught.value)
    str(caught.value).encode("utf-8")  # the message itself can be printed


ANTHROPIC_BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"role": "user", "content": LONE}, "content", "surrogate"),
    ({"role": "user", "content": [{"type": "text", "text": LONE}]}, "content[0].text", "surrogate"),
    (
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {"q": [LONE]}}],
        },
        "content[0].input.q[0]",
        "surrogate",
    ),
    (
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {LONE: 1}}],
        },
        "content[0].input['\\ud800']",
        "the key has a lone surrogate",
    ),
    (
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {"x": INF}}],
        },
        "content[0].input.x",
        "inf is not a JSON number",
    ),
    (
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": LONE}]},
        "content[0].content",
        "surrogate",
    ),
    (
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": [{"type": "image", "source": {"data": LONE}}],
                }
            ],
        },
        "content[0].content[0].source.data",
        "surrogate",
    ),
    (
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "budget": NAN}]},
        "content[0].budget",
        "nan is not a JSON number",
    ),
    ({"role": "user", "content": "x", "x_meta": {"a": [NAN]}}, "x_meta.a[0]", "nan"),
]


@pytest.mark.parametrize(("bad", "field", "text"), ANTHROPIC_BAD)
def test_anthropic_refuses_nan_and_lone_surrogates(
    bad: dict[str, Any], field: str, text: str
) -> None:
    with pytest.raises(MessageFormatError) as caught:
        from_anthropic([{"role": "user", "content": "q"}, bad])
    assert (caught.value.index, caught.value.field) == (1, field)
    assert text in str(caught.value)
    str(caught.value).encode("utf-8")


def test_anthropic_system_prompt_is_checked_too() -> None:
    with pytest.raises(MessageFormatError) as caught:
        from_anthropic([], system=[{"type": "text", "text": "ok"}, {"type": "text", "text": LONE}])
    assert (caught.value.index, caught.value.field) == (None, "system[1].text")
    with pytest.raises(MessageFormatError, match=r"^system: has a lone surrogate"):
        from_anthropic({"system": LONE, "messages": []})


def test_surrogate_pairs_and_every_script_pass_and_write_as_utf8() -> None:
    # A pair of escapes is one character after json.loads: nothing is lone.
    emoji = json.loads('"\\ud83d\\ude00 \\u6f22 caf\\u00e9"')
    messages = [
        {"role": "user", "content": emoji, "x": {emoji: [emoji]}},
        {"role": "assistant", "content": None, "tool_calls": [_call(emoji)["tool_calls"][0]]},
    ]
    out = to_openai(from_openai(messages))
    assert json.dumps(out, ensure_ascii=False).encode("utf-8")
    assert out == messages
    blocks = [{"type": "tool_use", "id": "t", "name": "n", "input": {emoji: emoji, "n": 1.5}}]
    written = to_anthropic(from_anthropic([{"role": "assistant", "content": blocks}]))
    assert json.dumps(written, ensure_ascii=False).encode("utf-8")
    assert written == [{"role": "assistant", "content": blocks}]


@pytest.mark.parametrize(
    "arguments", ['{"x": NaN}', '{"x": -Infinity}', '{"x": "\\ud800"}', '{"\\udfff": 1}']
)
def test_openai_arguments_anthropic_cannot_carry_are_sent_as_text(arguments: str) -> None:
    """OpenAI arguments are text, kept exactly; as an Anthropic ``input``
    object they would hold a NaN or a lone surrogate, so they go as text."""
    conversation = from_openai([_call(arguments)])
    (message,) = to_anthropic(conversation)
    assert message["content"][0]["input"] == {"arguments": arguments}
    json.dumps(message, allow_nan=False, ensure_ascii=False).encode("utf-8")
    assert to_openai(conversation) == [_call(arguments)]


# --------------------------------------------------------------------------- anywhere at all


def _places(value: Any, path: Path = ()) -> tuple[list[Path], list[Path]]:
    """The paths of every scalar in ``value``, and of every object."""
    leaves: list[Path] = []
    objects: list[Path] = []
    if isinstance(value, dict):
        objects.append(path)
        for key, item in value.items():
            inner_leaves, inner_objects = _places(item, (*path, key))
            leaves += inner_leaves
            objects += inner_objects
    elif isinstance(value, list):
        for i, item in enumerate(value):
            inner_leaves, inner_objects = _places(item, (*path, i))
            leaves += inner_leaves
            objects += inner_objects
    else:
        leaves.append(path)
    return leaves, objects


def _at(value: Any, path: Path) -> Any:
    for key in path:
        value = value[key]
    return value


_TOKEN = re.compile(r"\.?([^\W\d]\w*)|\[(\d+)\]|\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\]")


def _parse(field: str) -> Path:
    """``content[1].image_url['a b']`` -> ``("content", 1, "image_url", "a b")``."""
    path: list[str | int] = []
    position = 0
    while position < len(field):
        match = _TOKEN.match(field, position)
        assert match, f"cannot read field {field!r} at {position}"
        if match[1] is not None:
            path.append(match[1])
        elif match[2] is not None:
            path.append(int(match[2]))
        else:
            path.append(ast.literal_eval(match[3]))
        position = match.end()
    return tuple(path)


def _spoil(value: Any) -> Any:
    if isinstance(value, str):
        return value + LONE
    return NAN


def _check_spoiled(
    data: st.DataObject, messages: list[dict[str, Any]], read: Callable[[Any], Any]
) -> None:
    leaves, objects = _places(messages)
    places = [("value", p) for p in leaves] + [("key", p) for p in objects if len(p) > 0]
    assume(places)
    what, path = data.draw(st.sampled_from(places))
    spoiled = copy.deepcopy(messages)
    if what == "value":
        parent = _at(spoiled, path[:-1])
        parent[path[-1]] = data.draw(st.sampled_from([_spoil(_at(spoiled, path)), NAN, INF]))
        expected = path
    else:
        _at(spoiled, path)["k" + LONE] = 1
        expected = (*path, "k" + LONE)
    with pytest.raises(MessageFormatError) as caught:
        read(spoiled)
    error = caught.value
    str(error).encode("utf-8")
    assert error.index is not None
    assert (error.index, *_parse(error.field)) == expected


@given(st.data(), openai_messages(max_size=4))
def test_openai_names_the_bad_value_wherever_it_is(
    data: st.DataObject, messages: list[dict[str, Any]]
) -> None:
    _check_spoiled(data, messages, from_openai)


@given(st.data(), anthropic_messages(max_size=4, system_role=True))
def test_anthropic_names_the_bad_value_wherever_it_is(
    data: st.DataObject, messages: list[dict[str, Any]]
) -> None:
    _check_spoiled(data, messages, from_anthropic)
