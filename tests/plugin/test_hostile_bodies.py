"""Hostile request bodies end in one :class:`~memrules.MemrulesError` line at
every hook, never a raw Python error: a message value nested past
:data:`~memrules._core.frozen.MAX_DEPTH` (a ``RecursionError`` in the
conversion memo's fingerprint before), and a ``metadata.conversation_id``
that is not a string (silently "no conversation" before)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memrules import MemoryConfig, MemoryPlugin, MemrulesError
from memrules._adapters.conversion_cache import fingerprint
from memrules._core.errors import MessageFormatError
from memrules._core.frozen import MAX_DEPTH

HOOKS = ("on_openai_request", "on_anthropic_request", "on_responses_request")


def _nested(depth: int, inner: Any = "x") -> Any:
    value = inner
    for i in range(depth):
        value = {"a": value} if i % 2 else [value]
    return value


def _body(hook: str, extra: Any) -> dict[str, Any]:
    message = {"role": "user", "content": "hi", "x-extra": extra}
    if hook == "on_responses_request":
        return {"model": "m", "input": [message]}
    if hook == "on_anthropic_request":
        return {"model": "m", "max_tokens": 5, "messages": [message]}
    return {"model": "m", "messages": [message]}


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1_200, 5_000])
@pytest.mark.parametrize("hook", HOOKS)
def test_a_deep_message_value_is_refused_in_one_line_at_every_hook(hook: str, depth: int) -> None:
    plugin = MemoryPlugin(MemoryConfig(max_messages=4))
    body = _body(hook, _nested(depth))
    for _ in range(2):  # the second time, the memo has seen the conversation
        with pytest.raises(MessageFormatError, match="nested more than"):
            getattr(plugin, hook)(body)
        with pytest.raises(MessageFormatError, match="nested more than"):
            asyncio.run(getattr(plugin, f"{hook}_async")(body))
    assert plugin.on_openai_request(_body("on_openai_request", "fine"))["messages"]


@pytest.mark.parametrize("hook", HOOKS)
def test_a_value_at_the_depth_limit_still_converts(hook: str) -> None:
    plugin = MemoryPlugin(MemoryConfig(max_messages=4))
    body = _body(hook, _nested(MAX_DEPTH - 8))
    for _ in range(2):
        assert getattr(plugin, hook)(body)


def test_the_fingerprint_of_a_deep_value_is_none_not_a_recursion_error() -> None:
    assert fingerprint(_nested(100_000)) is None
    assert fingerprint(_nested(MAX_DEPTH - 1)) is not None
    assert fingerprint({"a": [1, {"b": None}]}) == (
        dict,
        (("a", (list, ((int, 1), (dict, (("b", None),))))),),
    )


@pytest.mark.parametrize("value", [5, 1.5, True, {"a": 1}, ["c1"], ""])
def test_a_conversation_id_that_is_not_a_string_is_an_error_like_an_empty_one(
    value: object,
) -> None:
    plugin = MemoryPlugin(MemoryConfig(max_messages=4))
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "metadata": {"conversation_id": value},
    }
    with pytest.raises(MemrulesError, match="conversation_id") as raised:
        plugin.on_openai_request(body)
    assert "\n" not in str(raised.value)
    with pytest.raises(MemrulesError, match="conversation_id"):
        asyncio.run(plugin.on_openai_request_async(body))


def test_a_missing_or_null_conversation_id_is_the_default_conversation() -> None:
    plugin = MemoryPlugin(MemoryConfig(max_messages=4))
    for metadata in ({}, {"conversation_id": None}, {"user_id": "ana"}):
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "metadata": metadata}
        assert plugin.on_openai_request(body)["messages"] == body["messages"]


@pytest.mark.parametrize("where", ["additional_kwargs", "content"])
def test_a_deep_value_in_a_langchain_message_is_refused_at_its_index(where: str) -> None:
    messages = pytest.importorskip("langchain_core.messages")
    from memrules._adapters.langchain import LangChainConversions, from_langchain

    deep = _nested(3_000)
    hostile = (
        messages.HumanMessage("hi", additional_kwargs={"x": deep})
        if where == "additional_kwargs"
        else messages.HumanMessage([{"type": "text", "text": "hi", "x": deep}])
    )
    conversions = LangChainConversions()
    for convert in (from_langchain, conversions.convert, conversions.convert):
        with pytest.raises(MessageFormatError, match=r"^messages\[1\]: .*nested more than"):
            convert([messages.HumanMessage("a"), hostile])
