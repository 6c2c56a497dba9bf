"""Count rules (memrules._counting.framing): OpenAI's framing counted as OpenAI's guide
counts the request's own JSON, the Anthropic estimate, the unframed rule, and
the safety margin."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from benchmarks.harness.reference import openai_request_tokens
from memrules import (
    Budget,
    MemoryConfig,
    MessageFormatError,
    from_openai,
    load_pipeline,
    to_openai,
)
from memrules._core.messages import Message, Opaque, Text, ToolCall, ToolResult, message
from memrules._counting.framing import (
    ANTHROPIC,
    OPENAI,
    SEED,
    FramedCounter,
    count_tokens,
    framed,
    per_request_tokens,
)
from memrules._counting.tokens import TiktokenCounter
from memrules._runtime.pipeline import Pipeline
from memrules.testing import conversations
from tests.support.adapter_json import openai_messages
from tests.support.strategies import COUNTER

ENCODE = COUNTER.count_text


def framed_total(messages: tuple[Message, ...], rule: Any = OPENAI) -> int:
    counter = framed(COUNTER, rule)
    return sum(counter.counts(messages)) + per_request_tokens(counter)


def is_legacy(raw: dict[str, Any]) -> bool:
    return raw.get("role") == "function" or "function_call" in raw


@given(openai_messages())
def test_openai_rule_is_the_guides_count_of_the_json(raw: list[dict[str, Any]]) -> None:
    counted = framed_total(from_openai(raw))
    reference = openai_request_tokens(raw, ENCODE)
    if any(is_legacy(m) for m in raw):
        assert counted >= reference  # a legacy call's made-up id counts too
    else:
        assert counted == reference


@given(conversations(orphan_results=True))
def test_openai_rule_bounds_the_guides_count_of_what_is_sent(
    conversation: tuple[Message, ...],
) -> None:
    try:
        sent = to_openai(conversation)
    except MessageFormatError:  # a message OpenAI cannot express
        return
    assert framed_total(conversation) >= openai_request_tokens(sent, ENCODE)


def test_openai_rule_by_hand() -> None:
    call = ToolCall(id="call_1", name="read_file", arguments='{"path": "a.py"}')
    messages = (
        message("system", "Be brief."),
        message("user", "hi", name="ann"),
        Message(role="assistant", parts=(call,)),
        Message(role="tool", parts=(ToolResult(call_id="call_1", content="print(1)"),)),
    )
    n = ENCODE
    expected = (
        (3 + n("system") + n("Be brief."))
        + (3 + n("user") + n("hi") + 1 + n("ann"))
        + (3 + n("assistant") + n("call_1") + n("function") + n("read_file") + n(call.arguments))
        + (3 + n("tool") + n("call_1") + n("print(1)"))
        + 3
    )
    assert framed_total(messages) == expected
    # an image of unknown size counts the most gpt-4o's tiles bill (8 tiles)
    image = Opaque(kind="openai:image_url", payload={"type": "image_url"})
    with_image = Message(role="user", parts=(Text(text="see"), image))
    assert framed(COUNTER, OPENAI).count(with_image) == 3 + n("user") + n("see") + 85 + 8 * 170


def test_anthropic_rule_by_hand() -> None:
    call = ToolCall(id="toolu_1", name="grep", arguments='{"q": "x"}')
    result = ToolResult(call_id="toolu_1", content="a.py:1")
    messages = (
        Message(role="assistant", parts=(Text(text="Looking."), call)),
        Message(role="user", parts=(result, Text(text="go on"))),
    )
    n = ENCODE
    expected = (
        (3 + n("Looking.") + 3 + n("toolu_1") + n("grep") + n(call.arguments))
        + (3 + 3 + n("toolu_1") + n("a.py:1") + n("go on"))
        + 3
    )
    assert framed_total(messages, ANTHROPIC) == expected


def test_seed_rule_is_the_counter_itself() -> None:
    counter = TiktokenCounter.for_name("cl100k_base")
    assert framed(counter, SEED) is counter
    openai = framed(counter, OPENAI)
    assert isinstance(openai, FramedCounter)
    assert framed(openai, SEED) is counter  # never framed twice
    assert framed(openai, OPENAI) is openai
    assert framed(openai, ANTHROPIC).base is counter  # type: ignore[attr-defined]
    m = message("user", "hello there")
    assert framed(counter, SEED).count(m) == counter.count_text("user hello there")
    assert per_request_tokens(counter) == 0
    assert per_request_tokens(openai) == 3
    with pytest.raises(ValueError, match="frames nothing"):
        FramedCounter(counter, SEED)


def test_the_pipeline_frames_the_counter_it_is_given() -> None:
    base = TiktokenCounter.for_name("cl100k_base")
    framed_pipeline = Pipeline.from_config(MemoryConfig(), counter=base)
    assert isinstance(framed_pipeline.counter, FramedCounter)
    assert framed_pipeline.counter.base is base
    seed = Pipeline.from_config(MemoryConfig(count_rule="seed"), counter=base)
    assert seed.counter is base
    messages = (message("system", "Be brief."), message("user", "hi"))
    assert framed_pipeline.count(messages) == count_tokens(messages)
    assert seed.count(messages) == count_tokens(messages, count_rule="seed")


def test_count_rule_is_read_from_yaml() -> None:
    assert load_pipeline("count_rule: anthropic\n").config.count_rule == "anthropic"
    assert load_pipeline("{}").counter.rule.name == "openai"  # type: ignore[attr-defined]


def test_safety_margin_keeps_a_fraction_of_a_token_budget_free() -> None:
    assert load_pipeline("max_tokens: 1000\nsafety_margin: 0.05\n").budget() == Budget.tokens(950)
    windowed = load_pipeline("context_window_tokens: 1000\nsafety_margin: 0.1\n")
    assert windowed.budget() == Budget.tokens(720)  # 0.9 × 0.8 × 1000
    assert windowed.budget(window=2000) == Budget.tokens(1440)
    messages = "max_messages: 6\nsafety_margin: 0.5\n"
    assert load_pipeline(messages).budget() == Budget.messages(6)  # tokens only
    assert load_pipeline("max_tokens: 1\nsafety_margin: 0.9\n").budget() == Budget.tokens(1)


def test_a_window_under_the_budget_is_under_it_with_the_framing() -> None:
    """trim_to_budget measures what is sent: the messages framed, and the
    reply's priming."""
    pipeline = load_pipeline(
        "max_tokens: 40\nstrategies:\n  - type: trim_to_budget\n", counter=COUNTER
    )
    history = (
        message("system", "Be brief."),
        *(message("user" if i % 2 else "assistant", f"turn {i} " * 3) for i in range(1, 20)),
    )
    out = pipeline.apply(history).messages
    assert openai_request_tokens(to_openai(out), ENCODE) < 40
    assert pipeline.count(out) == openai_request_tokens(to_openai(out), ENCODE)


def test_a_user_message_of_tool_results_counts_what_to_openai_sends() -> None:
    """to_openai writes a user message holding only tool results as its tool
    messages and nothing else; one with anything more (a text, or an image a
    result moves out) is followed by a user message of its own. The rule
    counts exactly what is sent, so a window the pipeline sees as over the
    budget is not one that would fit."""
    call = Message(
        role="assistant",
        parts=(
            ToolCall(id="call_1", name="read_file", arguments='{"path": "a.py"}'),
            ToolCall(id="call_2", name="search", arguments='{"query": "x"}'),
        ),
    )
    results = (
        ToolResult(call_id="call_1", content="print(1)"),
        ToolResult(call_id="call_2", content=(Text(text="found"), Text(text="twice"))),
    )
    image = Opaque(
        kind="anthropic:image",
        payload={"type": "image", "source": {"type": "url", "url": "https://x/a.png"}},
    )
    cases = (
        Message(role="user", parts=results),
        Message(role="user", parts=results, name="ann"),
        Message(role="user", parts=(*results, Text(text="and now?"))),
        Message(
            role="user",
            parts=(ToolResult(call_id="call_1", content=(Text(text="see"), image)), results[1]),
        ),
    )
    for user in cases:
        messages = (message("user", "read it"), call, user)
        sent = to_openai(messages)
        assert framed_total(messages) == openai_request_tokens(sent, ENCODE), (user, sent)
    only = framed(COUNTER, OPENAI).count(cases[0])
    n = ENCODE
    assert only == (3 + n("tool") + n("call_1") + n("print(1)")) + (
        3 + n("tool") + n("call_2") + n("found") + n("twice")
    )
