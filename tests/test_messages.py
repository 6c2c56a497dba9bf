"""The data model: frozen, hashable values."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from pyrsistent import PMap

from memrules import Message, Opaque, Text, ToolCall, ToolResult
from memrules._errors import MemrulesError, MessageFormatError, MessageTypeError
from memrules._frozen import FrozenDict
from memrules._messages import message


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
