"""Every body format goes through one driver: each body hook and its async
twin send the same bodies, write the same state and plan the same context
edits, and every format reads whose a body is, and what is wrong with it,
the same way."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from memrules import MemoryConfig, MemoryPlugin, MessageFormatError
from memrules._adapters.context_editing import ClearToolUses, ProviderEditing
from memrules.strategies import trim_to_budget
from tests.support.strategies import COUNTER


def _openai(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i} " + "word " * 40})
        messages.append({"role": "assistant", "content": f"answer {i} " + "word " * 40})
    messages.append({"role": "user", "content": "and now?"})
    return {"model": "gpt-5", "messages": messages}


def _responses(turns: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Fix the parser."}]
    for i in range(turns):
        items.append(
            {"type": "function_call", "call_id": f"c{i}", "name": "read", "arguments": "{}"}
        )
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": "line\n" * 30})
    return {"model": "gpt-5", "instructions": "Be brief.", "input": items}


def _anthropic(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(turns):
        use = {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"cmd": "ls"}}
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": "file\n" * 30}
        messages.append({"role": "assistant", "content": [use]})
        messages.append({"role": "user", "content": [result]})
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "Be brief.",
        "messages": messages,
    }


BODIES = {"openai": _openai, "responses": _responses, "anthropic": _anthropic}


def _plugin() -> MemoryPlugin:
    config = MemoryConfig(
        context_window_tokens=700,
        max_fraction=0.9,
        warn_fraction=0.5,
        strategies=[trim_to_budget()],
        provider_editing=ProviderEditing(clear_tool_uses=ClearToolUses(trigger=1, keep=2)),
    )
    return MemoryPlugin(config, counter=COUNTER)


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_a_body_hook_and_its_async_twin_send_the_same_bodies(kind: str) -> None:
    with _plugin() as plain, _plugin() as awaited:
        hook = getattr(plain, f"on_{kind}_request")
        twin = getattr(awaited, f"on_{kind}_request_async")
        compacted = []
        for turns in (1, 3, 6, 9):
            body = BODIES[kind](turns)
            sent = hook(copy.deepcopy(body), conversation_id="c", user="u", tenant="t")
            assert asyncio.run(twin(copy.deepcopy(body), conversation_id="c")) == sent
            assert awaited.last_edits == plain.last_edits
            assert awaited.state("c") == plain.state("c")
            assert plain.last_result is not None
            compacted.append(plain.last_result.compacted)
        local = [plan for plan in plain.last_edits if plan.where == "local"]
        assert any(compacted) or local  # the bodies written back held changed messages


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_every_format_reads_whose_a_body_is_the_same_way(kind: str) -> None:
    body = {
        **BODIES[kind](1),
        "metadata": {"conversation_id": "x", "user_id": "u", "tenant_id": "t"},
    }
    with _plugin() as plugin:
        getattr(plugin, f"on_{kind}_request")(body)
        assert plugin.last_result is not None
        request = plugin.last_result.request
        assert (request.conversation_id, request.user, request.tenant) == ("x", "u", "t")
        getattr(plugin, f"on_{kind}_request")(body, conversation_id="y", user="v")
        assert plugin.last_result is not None
        request = plugin.last_result.request
        assert (request.conversation_id, request.user, request.tenant) == ("y", "v", "t")
        assert plugin.conversations == 2


@pytest.mark.parametrize("kind", sorted(BODIES))
@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"model": 5}, "expected a string, got int"),
        ({"metadata": {"conversation_id": 5}}, "must be a string naming the conversation"),
    ],
)
def test_every_format_refuses_a_malformed_body_the_same_way(
    kind: str, change: dict[str, Any], match: str
) -> None:
    with _plugin() as plugin:
        hook = getattr(plugin, f"on_{kind}_request")
        with pytest.raises(MessageFormatError, match="expected a request object"):
            hook(["not", "a", "body"])
        with pytest.raises(MessageFormatError, match=match):
            hook({**BODIES[kind](1), **change})
        assert plugin.last_result is None
        assert plugin.conversations == 0


def test_a_misspelt_keyword_of_a_body_hook_is_an_error_naming_it() -> None:
    """The body hooks take ``conversation_id``, ``user`` and ``tenant`` as
    one typed set of keywords; any other is refused, never ignored."""
    from memrules import MemoryConfig, MemoryPlugin
    from memrules._core.errors import MessageTypeError

    plugin = MemoryPlugin(MemoryConfig())
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(MessageTypeError, match="conversation") as caught:
        plugin.on_openai_request(body, conversation="a")  # type: ignore[call-arg]
    assert caught.value.field == "conversation"
    sent = plugin.on_openai_request(body, conversation_id="a", user="u", tenant="t")
    assert sent["messages"] == body["messages"]
