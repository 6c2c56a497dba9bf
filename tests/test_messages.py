"""The data model: frozen, hashable values."""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import PMap

from memrules import Message, Opaque, Text, ToolCall, ToolResult
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
    with pytest.raises(ValueError, match="role='wizard'"):
        Message(role="wizard")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"parts\[1\] is str"):
        Message(role="user", parts=(Text(text="a"), "b"))  # type: ignore[arg-type]


def test_opaque_payload_is_deep_frozen_and_hashable() -> None:
    o = Opaque(kind="anthropic:thinking", payload={"thinking": "x", "list": [1, 2]})
    assert hash(o) == hash(
        Opaque(kind="anthropic:thinking", payload={"thinking": "x", "list": [1, 2]})
    )
