"""The data model: frozen, hashable values."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from pyrsistent import PMap

from memrules import (
    Message,
    Opaque,
    Text,
    ToolCall,
    ToolResult,
    count_tokens,
    from_anthropic,
    from_openai,
    load_pipeline,
)
from memrules._core.errors import MemrulesError, MessageFormatError, MessageTypeError
from memrules._core.frozen import FrozenDict
from memrules._core.messages import message


def test_messages_are_frozen_values() -> None:
    a = message("user", "hi", metadata={"k": [1, {"x": 2}]})
    b = message("user", "hi", metadata={"k": [1, {"x": 2}]})
    assert a == b
    assert hash(a) == hash(b)
    assert isinstance(a.metadata, PMap)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        a.role = "system"  # type: ignore[misc]
    assert {a: 1}[b] == 1


def test_evolve_returns_a_new_message_and_keeps_the_old() -> None:
    a = message("user", "hi")
    b = a.evolve(parts=(Text(text="bye"),))
    assert a.text == "hi"
    assert b.text == "bye"


def test_derived_tool_ids() -> None:
    m = Message(
        role="assistant",
        parts=(
            Text(text="two calls"),
            ToolCall(id="a", name="f", arguments="{}"),
            ToolCall(id="b", name="g", arguments="{}"),
        ),
    )
    assert m.call_ids == ("a", "b")
    assert m.result_ids == ()
    r = message("user", ToolResult(call_id="a", content="1"), "and some text")
    assert r.result_ids == ("a",)
    assert r.is_tool_carrier
    assert not message("user", "plain").is_tool_carrier


def test_countable_text_includes_tool_traffic_but_not_opaque() -> None:
    m = Message(
        role="user",
        parts=(
            Text(text="look"),
            ToolResult(call_id="a", content=(Text(text="inner"), Opaque(kind="image"))),
            Opaque(kind="anthropic:image", payload={"source": "data"}),
        ),
    )
    assert m.countable_text == "look\ninner"
    assert m.text == "look"


def test_bad_role_and_bad_parts_are_refused() -> None:
    with pytest.raises(MessageFormatError, match=r"^role: unknown role 'wizard', expected") as bad:
        Message(role="wizard")  # type: ignore[arg-type]
    assert isinstance(bad.value, ValueError)
    assert bad.value.field == "role"
    with pytest.raises(MessageTypeError, match=r"^parts\[1\]: expected Text, .*got str$") as wrong:
        Message(role="user", parts=(Text(text="a"), "b"))  # type: ignore[arg-type]
    assert isinstance(wrong.value, TypeError)
    assert isinstance(wrong.value, MemrulesError)


def test_opaque_payload_is_deep_frozen_and_hashable() -> None:
    o = Opaque(kind="anthropic:thinking", payload={"thinking": "x", "list": [1, 2]})
    assert hash(o) == hash(
        Opaque(kind="anthropic:thinking", payload={"thinking": "x", "list": [1, 2]})
    )


def test_nested_metadata_is_frozen_so_every_message_hashes() -> None:
    m = Message(role="user", metadata={"k": ({"a": 1},), "s": {1, 2}, "l": [[{"b": []}]]})
    hash(m)
    assert m.metadata["k"] == (FrozenDict({"a": 1}),)
    assert m.metadata["s"] == frozenset({1, 2})
    assert m.metadata["l"] == ((FrozenDict({"b": ()}),),)
    assert m == Message(role="user", metadata={"k": [{"a": 1}], "s": {2, 1}, "l": [[{"b": ()}]]})
    assert hash(m) == hash(Message(role="user", metadata=dict(reversed(list(m.metadata.items())))))


def test_nested_values_keep_their_key_order() -> None:
    m = Message(role="user", metadata={"openai": {"z": 1, "a": {"y": 2, "b": 3}}})
    assert list(m.metadata["openai"]) == ["z", "a"]
    assert list(m.metadata["openai"]["a"]) == ["y", "b"]
    image = Opaque(
        kind="openai:image_url", payload={"type": "image_url", "image_url": {"url": "u"}}
    )
    assert list(image.payload) == ["type", "image_url"]
    text = Text(text="x", extra={"anthropic": {"citations": None, "cache_control": {}}})
    assert list(text.extra["anthropic"]) == ["citations", "cache_control"]


def test_frozen_values_are_kept_as_they_are() -> None:
    m = Message(role="user", metadata={"a": {"b": [1]}, "s": {1, (2, 3)}, "t": (1, [2])})
    assert Message(role="user", metadata=m.metadata).metadata is m.metadata
    o = Opaque(kind="x", payload={"a": [1]})
    assert Opaque(kind="x", payload=o.payload).payload is o.payload


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (
            lambda: Message(role="user", metadata={"k": ({"b": bytearray()},)}),
            r"metadata\.k\[0\]\.b",
        ),
        (lambda: Message(role="user", metadata={"a b": [bytearray()]}), r"metadata\['a b'\]\[0\]"),
        (lambda: Opaque(kind="x", payload={"x": [1, bytearray()]}), r"payload\.x\[1\]"),
        (lambda: Text(text="t", extra={"openai": {"y": bytearray()}}), r"extra\.openai\.y"),
        (lambda: Message(role="user", metadata=[("a", 1)]), "metadata"),
    ],
)
def test_what_cannot_be_frozen_is_refused_naming_the_field(build: Any, field: str) -> None:
    with pytest.raises(MessageTypeError, match=f"^{field}: ") as caught:
        build()
    assert isinstance(caught.value, MemrulesError)
    assert isinstance(caught.value, TypeError)


def test_tool_result_content_is_text_or_a_tuple_of_content_parts() -> None:
    listed = ToolResult(call_id="a", content=[Text(text="x"), Opaque(kind="image")])  # type: ignore[arg-type]
    assert listed.content == (Text(text="x"), Opaque(kind="image"))
    hash(Message(role="tool", parts=(listed,)))
    with pytest.raises(
        MessageTypeError, match=r"^content\[0\]: expected Text or Opaque, got ToolCall"
    ):
        ToolResult(call_id="a", content=(ToolCall(id="c", name="f"),))  # type: ignore[arg-type]
    with pytest.raises(MessageTypeError, match=r"^content: expected a tuple, got int"):
        ToolResult(call_id="a", content=3)  # type: ignore[arg-type]


# --- bad values, refused where they are given ---------------------------------------


def _nested(depth: int) -> dict[str, Any]:
    """``{"a": {"a": ... {}}}``, ``depth`` levels deep (built without recursion)."""
    top: dict[str, Any] = {}
    inner = top
    for _ in range(depth):
        inner["a"] = {}
        inner = inner["a"]
    return top


_PIPELINE = load_pipeline("{max_messages: 3, strategies: [{type: sliding_window}]}")
_HI = message("user", "hi")
_DEEP = _nested(50_000)

_TYPE, _FORMAT = MessageTypeError, MessageFormatError

# (what is called, the error it raises, where the error says it is, a fragment of
# what it says), for every field of every part and of Message, and every entry
# point that takes messages. Besides the fields that were always checked (role,
# parts, a tool result's content), each value was accepted and failed later (in
# apply, a writer, a trace), or failed as an AttributeError, a TypeError from inside
# counting or a RecursionError.
BAD_VALUES: list[tuple[Callable[[], object], type[MessageFormatError], str, str]] = [
    (lambda: Text(text=None), _TYPE, "text", "got NoneType"),
    (lambda: Text(text=5), _TYPE, "text", "got int"),
    (lambda: Text(text=b"abc"), _TYPE, "text", "decode it"),
    (lambda: Text(text="a\ud800b"), _FORMAT, "text", "lone surrogate"),
    (lambda: Text(text="t", extra={"k": "\udfff"}), _TYPE, "extra.k", "surrogate"),
    (lambda: Text(text="t", extra={"k": _DEEP}), _TYPE, "extra.k.a", "128 levels"),
    (lambda: ToolCall(id=None, name=None, arguments=None), _TYPE, "id", "got NoneType"),
    (lambda: ToolCall(id="c1", name=None), _TYPE, "name", "got NoneType"),
    (lambda: ToolCall(id="c1", name="f", arguments=None), _TYPE, "arguments", "JSON text"),
    (lambda: ToolCall(id="c", name="f", arguments={"x": 1}), _TYPE, "arguments", "json.dumps"),
    (lambda: ToolCall(id="c", name="f", arguments='"\ud800"'), _FORMAT, "arguments", "surrogate"),
    (lambda: ToolCall(id="c\udc00", name="f"), _FORMAT, "id", "surrogate"),
    (lambda: ToolResult(call_id=None), _TYPE, "call_id", "got NoneType"),
    (lambda: ToolResult(call_id="c1", content=None), _TYPE, "content", "got NoneType"),
    (lambda: ToolResult(call_id="c1", content=b"out"), _TYPE, "content", "got bytes"),
    (lambda: ToolResult(call_id="c1", content="out \ud800"), _FORMAT, "content", "surrogate"),
    (lambda: ToolResult(call_id="c1", is_error="yes"), _TYPE, "is_error", "True or False"),
    (lambda: ToolResult(call_id="c1", is_error=1), _TYPE, "is_error", "True or False"),
    (lambda: Opaque(kind=None), _TYPE, "kind", "got NoneType"),
    (lambda: Opaque(kind="x", payload={"p": ["\ud800"]}), _TYPE, "payload.p[0]", "surrogate"),
    (lambda: Opaque(kind="x", payload=_DEEP), _TYPE, "payload.a", "128 levels"),
    (lambda: Message(role=None), _FORMAT, "role", "unknown role None"),
    (lambda: Message(role="user", parts=None), _TYPE, "parts", "got NoneType"),
    (lambda: Message(role="user", parts=(None,)), _TYPE, "parts[0]", "got NoneType"),
    (lambda: Message(role="user", id=5), _TYPE, "id", "a str or None, got int"),
    (lambda: Message(role="user", name=b"ana"), _TYPE, "name", "decode it"),
    (lambda: Message(role="user", name="an\ud800"), _FORMAT, "name", "surrogate"),
    (lambda: Message(role="user", metadata={"k": "\ud800"}), _TYPE, "metadata.k", "surrogate"),
    (lambda: Message(role="user", metadata={"k\ud800": 1}), _TYPE, "metadata['k", "the key has"),
    (lambda: Message(role="user", metadata={"k": _DEEP}), _TYPE, "metadata.k.a", "128 levels"),
    (lambda: count_tokens([1, 2]), _TYPE, "messages[0]", "expected a Message, got int"),
    (lambda: count_tokens([_HI, "hi"]), _TYPE, "messages[1]", "expected a Message, got str"),
    (lambda: count_tokens(None), _TYPE, "messages", "got NoneType"),
    (lambda: _PIPELINE.apply(None), _TYPE, "messages", "got NoneType"),
    (lambda: _PIPELINE.apply(_HI), _TYPE, "messages", "got Message"),
    (lambda: _PIPELINE.apply("hi"), _TYPE, "messages", "got str"),
    (lambda: _PIPELINE.apply([_HI, {"role": "user"}]), _TYPE, "messages[1]", "got dict"),
    (lambda: _PIPELINE.compress(None), _TYPE, "messages", "got NoneType"),
    (lambda: _PIPELINE.count(None), _TYPE, "messages", "got NoneType"),
    (lambda: asyncio.run(_PIPELINE.apply_async(None)), _TYPE, "messages", "got NoneType"),
    (lambda: from_openai([{"role": "user", "x": _DEEP}]), _FORMAT, "messages[0].x.a", "128 levels"),
    (lambda: from_anthropic([{"role": "user", "x": _DEEP}]), _FORMAT, "messages[0].x.a", "128"),
]


@pytest.mark.parametrize(
    ("call", "error", "where", "says"), BAD_VALUES, ids=[str(i) for i in range(len(BAD_VALUES))]
)
def test_bad_values_are_refused_naming_the_field(
    call: Callable[[], object], error: type[MessageFormatError], where: str, says: str
) -> None:
    with pytest.raises(error) as caught:
        call()
    raised = caught.value
    assert type(raised) is error
    assert isinstance(raised, MemrulesError)
    assert isinstance(raised, ValueError)
    assert isinstance(raised, TypeError) == (error is MessageTypeError)
    text = str(raised)
    assert text.startswith(where), text
    assert says in text.partition(": ")[2], text
    named = f"messages[{raised.index}]" if raised.index is not None else ""
    if raised.field:
        named += f".{raised.field}" if named else raised.field
    assert text.startswith(f"{named}: ")
    assert len(text) < 600  # a deep value's place is named, not dumped


def test_good_values_are_kept() -> None:
    class Name(str):
        pass

    emoji = Text(text="naïve café 😀, 你好")
    assert emoji.text == "naïve café 😀, 你好"
    assert Message(role="user", parts=(emoji,), name=Name("ana")).name == "ana"
    deep = _nested(100)
    assert Message(role="user", metadata={"k": deep}).metadata["k"] == deep
    assert ToolResult(call_id="c1", content=[Text(text="x")], is_error=True).is_error
    assert ToolCall(id="c1", name="f").arguments == ""


def test_starts_with_compares_by_value_position_by_position_without_ordering_messages() -> None:
    from memrules._core.messages import starts_with

    a, b, c = (message("user", t) for t in "abc")
    equal_a = message("user", "a")
    assert starts_with((a, b, c), (a, b))
    assert starts_with((a, b), (a, b))
    assert starts_with((a, b), ())
    assert starts_with((equal_a, b, c), (a, b))  # an equal message stands for it
    assert starts_with([a, b, c], [a, b])  # any sequence
    assert not starts_with((a,), (a, b))  # longer than the conversation
    assert not starts_with((a, c, c), (a, b))  # messages are not ordered: no TypeError
    assert not starts_with((b, a), (a,))
    assert not starts_with((a, "b"), (a, b))  # not a message where one stood
    assert not starts_with((a, b), (b,))
