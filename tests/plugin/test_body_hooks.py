"""The Responses and Anthropic request hooks: each conversation's items are
converted once (memrules._adapters.conversion_cache), and their async variants
await the seams without blocking the event loop."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules import ConversionCache, MemoryConfig, MemoryPlugin, load_config
from memrules._adapters import anthropic as anthropic_adapter
from memrules._adapters import responses as responses_adapter
from memrules._adapters.responses import from_responses
from memrules.seams import openai_summarizer
from memrules.strategies import trim_to_budget
from tests.support.chat_server import ChatServer
from tests.support.responses_json import responses_items
from tests.support.strategies import COUNTER


def _responses_turns(count: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Fix the parser."}]
    for i in range(count):
        items.append(
            {"type": "function_call", "call_id": f"c{i}", "name": "read", "arguments": "{}"}
        )
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": f"line {i}"})
    return items


def _anthropic_turns(count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(count):
        out.append({"role": "user", "content": f"question {i}"})
        out.append({"role": "assistant", "content": f"answer {i}"})
    return out


def _plugin() -> MemoryPlugin:
    config = MemoryConfig(context_window_tokens=100_000, strategies=[trim_to_budget()])
    return MemoryPlugin(config, counter=COUNTER)


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_growing_responses_conversation_reads_each_item_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outputs = _counting(monkeypatch, responses_adapter, "_read_output")
    plugin = _plugin()
    items = _responses_turns(40)
    for n in range(1, len(items) + 1):
        body = json.loads(json.dumps({"model": "m", "input": items[:n]}))  # parsed afresh
        sent = plugin.on_responses_request(body, conversation_id="c")
        assert sent["input"] == items[:n]
    assert len(outputs) == 40  # each function_call_output read once, not once a request


def test_a_growing_anthropic_conversation_reads_each_message_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = _counting(monkeypatch, anthropic_adapter, "_read_message")
    plugin = _plugin()
    messages = _anthropic_turns(30)
    for n in range(1, len(messages) + 1):
        body = {"model": "m", "system": "Be brief.", "messages": messages[:n]}
        sent = plugin.on_anthropic_request(json.loads(json.dumps(body)), conversation_id="c")
        assert sent["messages"] == messages[:n]
    assert len(reads) == len(messages)


def test_one_conversation_in_two_body_formats_keeps_both() -> None:
    plugin = _plugin()
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    responses = {"model": "m", "input": [{"role": "user", "content": "hi"}]}
    anthropic = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    for _ in range(2):  # no conversation id: all three are the default conversation
        assert plugin.on_openai_request(chat)["messages"] == chat["messages"]
        assert plugin.on_responses_request(responses)["input"] == responses["input"]
        assert plugin.on_anthropic_request(anthropic)["messages"] == anthropic["messages"]


OPS = ("grow", "grow", "reparse", "truncate", "replace", "edit", "same")


@given(st.data(), responses_items(max_size=8), responses_items(max_size=10), st.booleans())
def test_responses_with_a_memo_is_responses_afresh(
    data: st.DataObject, first: list[Any], extra: list[Any], edits_in_place: bool
) -> None:
    memo = ConversionCache(edits_in_place=edits_in_place)
    items = first
    for _ in range(6):
        assert from_responses(items, memo=memo) == from_responses(copy.deepcopy(items))
        op = data.draw(st.sampled_from(OPS), label="op")
        if op == "grow":
            take = data.draw(st.integers(0, 3), label="take")
            items = [*items, *extra[:take]]
            del extra[:take]
        elif op == "reparse":
            items = json.loads(json.dumps(items))
        elif op == "truncate":
            items = items[: data.draw(st.integers(0, len(items)), label="keep")]
        elif op == "replace" and items and extra:
            at = data.draw(st.integers(0, len(items) - 1), label="at")
            items = [*items[:at], extra.pop(), *items[at + 1 :]]
        elif op == "edit" and edits_in_place and items:
            at = data.draw(st.integers(0, len(items) - 1), label="at")
            if isinstance(items[at].get("content"), str):
                items[at]["content"] += " (edited)"


# --- async -----------------------------------------------------------------------------

ASYNC_YAML = """
context_window_tokens: 400
max_fraction: 0.5
strategies:
  - type: summarize
    turns: 2
  - type: sliding_window
    keep_messages: 6
"""


async def _while_ticking(call: Any) -> tuple[Any, int]:
    """``await call`` and how often a 5 ms ticker ran meanwhile."""
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0.005)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        return await call, ticks
    finally:
        done.set()
        await task


def _long_responses(turns: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for i in range(turns):
        items.append({"role": "user", "content": f"Turn {i}: fix src/app{i}.py by May {i + 1}."})
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"Fixed app{i}.", "annotations": []}],
            }
        )
    return items


def _long_anthropic(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append({"role": "user", "content": f"Turn {i}: fix src/app{i}.py by May {i + 1}."})
        out.append({"role": "assistant", "content": [{"type": "text", "text": f"Fixed app{i}."}]})
    return out


def test_the_async_responses_and_anthropic_hooks_await_the_summarizer() -> None:
    config = load_config(ASYNC_YAML)
    responses = {"model": "m", "instructions": "Be brief.", "input": _long_responses(10)}
    anthropic = {"model": "m", "system": "Be brief.", "messages": _long_anthropic(10)}
    with ChatServer(delay=0.2) as server:
        sync = MemoryPlugin(config, summarizer=openai_summarizer(base_url=server.url, model="m"))
        expected_r = sync.on_responses_request(copy.deepcopy(responses), conversation_id="r")
        expected_a = sync.on_anthropic_request(copy.deepcopy(anthropic), conversation_id="a")
        asked = len(server.chat_requests)
        assert asked >= 2  # both bodies were over budget and summarized

        awaited = MemoryPlugin(config, summarizer=openai_summarizer(base_url=server.url, model="m"))

        async def main() -> tuple[Any, ...]:
            got_r, ticks_r = await _while_ticking(
                awaited.on_responses_request_async(copy.deepcopy(responses), conversation_id="r")
            )
            got_a, ticks_a = await _while_ticking(
                awaited.on_anthropic_request_async(copy.deepcopy(anthropic), conversation_id="a")
            )
            return got_r, ticks_r, got_a, ticks_a

        got_r, ticks_r, got_a, ticks_a = asyncio.run(main())
        assert len(server.chat_requests) == 2 * asked  # the same calls, made again
    assert got_r == expected_r
    assert got_a == expected_a
    assert awaited.state("r") == sync.state("r")
    assert awaited.last_edits == sync.last_edits
    # The summarizer's 0.2 s at the server was awaited: the loop ran meanwhile.
    assert ticks_r >= 10
    assert ticks_a >= 10


class Watched(dict[str, Any]):
    """A message dict that counts how often it is compared by value."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        Watched.compared += 1
        return dict.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]


@pytest.mark.parametrize("edits_in_place", [True, False])
def test_the_plugin_takes_the_callers_own_dicts_unread_when_told(edits_in_place: bool) -> None:
    # repair=False: the log starts with an assistant message, sent as it is
    config = MemoryConfig(
        context_window_tokens=100_000, strategies=[trim_to_budget()], repair=False
    )
    plugin = MemoryPlugin(config, counter=COUNTER, edits_in_place=edits_in_place)
    log: list[Any] = []
    Watched.compared = 0
    for i in range(60):
        log.append(Watched(role="user" if i % 2 else "assistant", content=f"message {i}"))
        sent = plugin.on_openai_request({"model": "m", "messages": log}, conversation_id="c")
        assert sent["messages"] == log
    if edits_in_place:
        assert Watched.compared >= 60 * 59 // 2  # every earlier dict, every request
    else:
        assert Watched.compared == 0  # none read again
