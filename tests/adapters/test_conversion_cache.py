"""Converting with a conversation's memo (memrules._adapters.conversion_cache) gives
what converting afresh gives, whatever the conversation went through
between two requests; the request hook sends back what it kept as the
body's own objects and converts only the rest."""

from __future__ import annotations

import copy
import json
import operator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules import (
    MemoryConfig,
    MemoryPlugin,
    MessageFormatError,
    Request,
    from_anthropic,
    from_openai,
    to_anthropic,
    to_openai,
)
from memrules._adapters.conversion_cache import ConversionCache, fingerprint
from memrules._adapters.openai import write_back
from memrules._core.survivors import SurvivorRule
from memrules._runtime.pipeline import Pipeline
from memrules.strategies import sliding_window, trim_to_budget
from tests.support.adapter_json import anthropic_messages, openai_messages
from tests.support.strategies import COUNTER

OPS = ("grow", "grow", "reparse", "rotate", "edit", "drop_last", "same")


def next_request(data: st.DataObject, prev: list[Any], extra: list[Any]) -> list[Any]:
    """The next request's message list, made from the last one."""
    op = data.draw(st.sampled_from(OPS), label="op")
    take = data.draw(st.integers(0, 3), label="take")
    new, extra[:] = extra[:take], extra[take:]
    if op == "reparse":  # a client that parses its body afresh: every object new
        return [*json.loads(json.dumps(prev)), *new]
    if op == "rotate" and prev:
        return [*prev[data.draw(st.integers(1, len(prev)), label="drop") :], *new]
    if op == "edit" and prev:  # a client that edits a message it sent before, in place
        i = data.draw(st.integers(0, len(prev) - 1), label="at")
        prev[i]["content"] = f"edited {i}"
        return [*prev, *new]
    if op == "drop_last" and prev:
        return prev[:-1]
    if op == "same":
        return prev
    return [*prev, *new]


@given(st.data(), openai_messages(max_size=10), openai_messages(max_size=12))
def test_openai_with_a_memo_is_openai_afresh(
    data: st.DataObject, first: list[Any], extra: list[Any]
) -> None:
    memo = ConversionCache(size=data.draw(st.sampled_from([0, 3, 1_000]), label="size"))
    request = first
    for _ in range(6):
        remembered = from_openai(request, memo=memo)
        assert remembered == from_openai(copy.deepcopy(request))
        assert to_openai(remembered) == request
        request = next_request(data, request, extra)


@given(st.data(), anthropic_messages(max_size=8), anthropic_messages(max_size=10))
def test_anthropic_with_a_memo_is_anthropic_afresh(
    data: st.DataObject, first: list[Any], extra: list[Any]
) -> None:
    memo = ConversionCache()
    request = first
    seen: list[Any] = []
    for _ in range(5):
        seen.extend(copy.deepcopy(request))
        system = data.draw(st.none() | st.just("Be brief."), label="system")
        remembered = from_anthropic(request, system=system, memo=memo)
        afresh = from_anthropic(copy.deepcopy(request), system=system)
        assert to_anthropic(remembered) == to_anthropic(afresh)  # every key and value
        if not _reordered_twins(seen):
            assert remembered == afresh
        request = next_request(data, request, extra)


def _reordered_twins(messages: list[Any]) -> bool:
    """Whether two of ``messages`` are equal but for their keys' order: the
    memo takes one for the other in place, as its module docs say, and the
    key order it remembers is the first one's."""
    canonical = {json.dumps(m, sort_keys=True) for m in messages}
    return len({fingerprint(m) for m in messages}) > len(canonical)


def test_messages_known_before_come_back_as_the_same_objects() -> None:
    memo = ConversionCache()
    log = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
    first = from_openai(log, memo=memo)
    log.append({"role": "assistant", "content": "hello"})
    second = from_openai(log, memo=memo)
    assert all(map(operator.is_, first, second[:2]))
    reparsed = from_openai(json.loads(json.dumps(log)), memo=memo)  # equal, new objects
    assert all(map(operator.is_, second, reparsed))
    rotated = from_openai(log[1:], memo=memo)  # shifted: found by fingerprint
    assert all(map(operator.is_, second[1:], rotated))


def test_a_fingerprint_tells_key_order_and_number_types_apart() -> None:
    a = {"role": "user", "content": "hi", "x": 1}
    assert fingerprint(a) != fingerprint({"content": "hi", "role": "user", "x": 1})
    assert fingerprint(a) != fingerprint({"role": "user", "content": "hi", "x": True})
    assert fingerprint(a) != fingerprint({"role": "user", "content": "hi", "x": 1.0})
    assert fingerprint(a) == fingerprint(json.loads(json.dumps(a)))
    assert fingerprint({"x": {1, 2}}) is None  # not JSON: never looked up
    memo = ConversionCache()
    from_openai([{"role": "system", "content": "s"}, a], memo=memo)
    moved = from_openai([{"content": "hi", "role": "user", "x": 1}], memo=memo)
    assert moved == from_openai([{"content": "hi", "role": "user", "x": 1}])
    assert to_openai(moved) == [{"content": "hi", "role": "user", "x": 1}]


def test_an_edit_in_place_is_seen() -> None:
    memo = ConversionCache()
    log = [{"role": "user", "content": [{"type": "text", "text": "a"}]}]
    from_openai(log, memo=memo)
    log[0]["content"][0]["text"] = "b"  # the same objects, changed
    assert from_openai(log, memo=memo)[0].text == "b"


def test_legacy_function_messages_keep_their_context() -> None:
    call = {"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}
    answer = {"role": "function", "name": "f", "content": "42"}
    memo = ConversionCache()
    log = [{"role": "user", "content": "go"}, call, answer]
    assert from_openai(log, memo=memo) == from_openai(log)
    shifted = [{"role": "user", "content": "again"}, *log]
    assert from_openai(shifted, memo=memo) == from_openai(shifted)


def test_a_memo_holds_one_provider_and_a_bounded_table() -> None:
    memo = ConversionCache(size=2)
    from_openai([{"role": "user", "content": str(i)} for i in range(5)], memo=memo)
    assert len(memo) == 2
    with pytest.raises(ValueError, match="holds openai messages"):
        from_anthropic([{"role": "user", "content": "hi"}], memo=memo)
    with pytest.raises(ValueError, match="size=-1"):
        ConversionCache(size=-1)


def test_malformed_input_is_named_with_a_memo_too() -> None:
    memo = ConversionCache()
    from_openai([{"role": "user", "content": "hi"}], memo=memo)
    with pytest.raises(MessageFormatError, match=r"messages\[1\]\.role"):
        from_openai([{"role": "user", "content": "hi"}, {"role": "robot"}], memo=memo)
    assert from_openai([{"role": "user", "content": "hi"}], memo=memo)  # still usable


@given(openai_messages(max_size=12), st.integers(0, 8))
def test_write_back_is_to_openai(raw: list[Any], keep: int) -> None:
    source = from_openai(raw)
    pipeline = Pipeline.from_config(
        MemoryConfig(max_messages=keep or 1, strategies=[sliding_window(keep_messages=keep)]),
        counter=COUNTER,
    )
    result = pipeline.apply(source)
    try:
        expected = to_openai(result.messages)
    except MessageFormatError:  # closure left something OpenAI cannot say
        return
    sent = write_back(result.messages, source, raw, result.report.origin)
    assert sent == expected
    for j, i in enumerate(result.report.origin):
        if i is not None and result.messages[j] is source[i]:
            assert any(s is raw[i] for s in sent)
    assert write_back(result.messages, source, raw) == expected  # no hints: looked up


@given(openai_messages(max_size=12), st.data())
def test_write_back_takes_any_hints_and_earlier_dicts(raw: list[Any], data: st.DataObject) -> None:
    """Kept messages, equal copies, right, missing, wrong and out-of-range
    hints, and the dicts an earlier call kept: always what
    :func:`to_openai` writes, each kept message its very raw dict."""
    source = from_openai(raw)
    n = len(source)
    if not n:
        return
    conversation = []
    hints: list[int | None] = []
    for k in data.draw(st.lists(st.integers(0, n - 1), max_size=12)):
        kept = data.draw(st.booleans())
        conversation.append(source[k] if kept else copy.copy(source[k]))
        hints.append(data.draw(st.sampled_from([k, None, k + 1, -1, n, 0])))
    try:
        expected = to_openai(conversation)
    except MessageFormatError:
        return
    given_hints = hints[: data.draw(st.integers(0, len(hints)))]
    keep: dict[int, Any] = {}
    first = write_back(conversation, source, raw, given_hints, keep=keep)
    again = write_back(conversation, source, raw, hints, written=keep, keep={})
    assert first == expected
    assert again == expected
    for sent in (first, again):
        for m in conversation:
            at = [i for i in range(n) if source[i] is m]
            if at:
                assert any(s is raw[i] for s in sent for i in at)


NO_TASK = SurvivorRule(task=False)


def test_the_hook_sends_back_the_bodys_own_messages() -> None:
    plugin = MemoryPlugin(
        MemoryConfig(
            context_window_tokens=100,
            max_tokens=60,
            warn_fraction=0.5,
            strategies=[trim_to_budget()],
            survivors=NO_TASK,  # the task would leave no room for the warning
        ),
        counter=COUNTER,
    )
    messages = [{"role": "system", "content": "sys"}]
    messages += [
        {"role": "user" if i % 2 else "assistant", "content": f"message {i} " * 3}
        for i in range(1, 12)
    ]
    body = {"model": "m", "messages": messages, "temperature": 0}
    out = plugin.on_openai_request(body, conversation_id="c")
    assert out["temperature"] == 0
    kept = [m for m in out["messages"] if any(m is r for r in messages)]
    new = [m for m in out["messages"] if not any(m is r for r in messages)]
    assert kept[0] is messages[0]
    assert kept[-1] is messages[-1]
    assert len(new) == 1
    assert new[0]["content"].startswith("memrules context warning:")
    reference = MemoryPlugin(
        MemoryConfig(
            context_window_tokens=100,
            max_tokens=60,
            warn_fraction=0.5,
            strategies=[trim_to_budget()],
            survivors=NO_TASK,  # the task would leave no room for the warning
        ),
        counter=COUNTER,
    )
    request = reference.on_request(Request.from_openai(copy.deepcopy(body), conversation_id="c"))
    assert out["messages"] == request.to_openai()
    again = plugin.on_openai_request(json.loads(json.dumps(body)), conversation_id="c")
    second = reference.on_request(Request.from_openai(copy.deepcopy(body), conversation_id="c"))
    assert again["messages"] == second.to_openai()


def test_the_plugin_keeps_a_bounded_memo_per_conversation() -> None:
    from memrules._plugin.conversation_caches import ConversationCaches

    made: list[int] = []
    pipeline = Pipeline.from_config(MemoryConfig(), counter=COUNTER)

    def make() -> Any:
        from memrules._plugin.conversation_caches import ConversationCache

        made.append(1)
        return ConversationCache(pipeline)

    memos = ConversationCaches(make, cap=2)
    a, b = memos.get("a"), memos.get("b")
    assert memos.get("a") is a  # "a" is now the most recent
    memos.get("c")  # past the cap: "b", the least recently used, goes
    assert len(memos) == 2
    assert memos.get("a") is a
    assert memos.get("b") is not b  # made afresh
    assert len(made) == 4
    memos.forget("a")
    assert len(memos) == 1
