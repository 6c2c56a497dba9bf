"""Nothing counts 0: a part memrules does not know costs the tokens of its
JSON and is named in ``report.estimates``; a body of the wrong shape for
the hook it reached is refused, naming the hook that fits; a word with no
place to cut is counted in bounded chunks and named as an estimate."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings

from memrules import MemoryConfig, MemoryPlugin, MessageFormatError, from_anthropic, from_openai
from memrules._core.messages import Message, Opaque
from memrules._counting.framing import OPENAI, framed
from memrules._counting.named import counter_for
from memrules._counting.tokens import load_encoding
from memrules._runtime.pipeline import load_pipeline
from memrules.testing import messages

WEIRD = {"type": "weird_block", "data": "the quarterly figures were revised " * 140}


def _tokens(text: str) -> int:
    return len(load_encoding("cl100k_base").encode_ordinary(text))


def test_an_unknown_openai_part_counts_its_json_and_is_named() -> None:
    body = [{"role": "user", "content": [{"type": "text", "text": "hi"}, WEIRD]}]
    pipeline = load_pipeline("{encoder_name: cl100k_base, max_tokens: 100000, strategies: []}")
    messages = from_openai(body)
    assert pipeline.count(messages) >= _tokens(json.dumps(WEIRD)) > 700
    report = pipeline.apply(messages).report
    assert report.estimates == (
        "messages[0].parts[1]: unknown part 'weird_block': the tokens of its JSON (estimate)",
    )


def test_an_unknown_anthropic_block_counts_its_json_and_is_named() -> None:
    body = {"system": "be brief", "messages": [{"role": "user", "content": [WEIRD]}]}
    pipeline = load_pipeline(
        "{encoder_name: cl100k_base, count_rule: anthropic, max_tokens: 100000, strategies: []}"
    )
    messages = from_anthropic(body)
    assert pipeline.count(messages) >= _tokens(json.dumps(WEIRD))
    assert any("weird_block" in line for line in pipeline.apply(messages).report.estimates)


def test_the_hook_counts_an_unknown_part() -> None:
    with MemoryPlugin(MemoryConfig(encoder_name="cl100k_base", strategies=())) as plugin:
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": [WEIRD]}]}
        plugin.on_openai_request(body)
        result = plugin.last_result
        assert result is not None
        assert result.usage.tokens >= _tokens(json.dumps(WEIRD))
        assert any("weird_block" in line for line in result.report.estimates)


ANTHROPIC_BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "system": "be brief",
    "messages": [
        {"role": "user", "content": "list the files"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a b"}],
        },
    ],
}
OPENAI_BODY: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "list the files"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a b"},
    ],
}


def test_an_anthropic_body_on_the_openai_hook_names_the_hook_that_fits() -> None:
    with MemoryPlugin(MemoryConfig()) as plugin:
        with pytest.raises(MessageFormatError, match="on_anthropic_request"):
            plugin.on_openai_request(ANTHROPIC_BODY)
        without_system = {k: v for k, v in ANTHROPIC_BODY.items() if k != "system"}
        with pytest.raises(MessageFormatError, match=r"messages\[1\]\.content\[0\].*tool_use"):
            plugin.on_openai_request(without_system)
        assert plugin.last_result is None  # nothing was counted or sent on


def test_an_openai_body_on_the_anthropic_hook_names_the_hook_that_fits() -> None:
    with MemoryPlugin(MemoryConfig()) as plugin:
        with pytest.raises(
            MessageFormatError, match=r"messages\[2\]\.tool_calls.*on_openai_request"
        ):
            plugin.on_anthropic_request(OPENAI_BODY)
        image = {
            "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
            ]
        }
        with pytest.raises(MessageFormatError, match="on_openai_request"):
            plugin.on_anthropic_request(image)


def test_bodies_of_the_right_shape_pass_both_hooks() -> None:
    with MemoryPlugin(MemoryConfig()) as plugin:
        assert plugin.on_openai_request(OPENAI_BODY)["messages"]
        assert plugin.on_anthropic_request(ANTHROPIC_BODY)["messages"]
        plain = {"messages": [{"role": "user", "content": "hi"}]}
        assert plugin.on_openai_request(plain)["messages"]
        assert plugin.on_anthropic_request(plain)["messages"]


def test_a_word_with_no_place_to_cut_is_named_as_an_estimate() -> None:
    pipeline = load_pipeline("{encoder_name: cl100k_base, strategies: []}")
    word = "a1b2c3d4" * 100_000  # 800,000 characters, no space
    result = pipeline.apply(from_openai([{"role": "tool", "tool_call_id": "c", "content": word}]))
    (line,) = result.report.estimates
    assert line.startswith("messages[0].parts[0]: 800,000 characters with runs of no space")


# --- the property suites draw blocks of no known type ------------------------------


def test_the_shared_strategies_draw_unknown_blocks() -> None:
    from hypothesis import find

    from memrules.testing import parts

    found = find(parts(), lambda p: isinstance(p, Opaque) and p.kind.endswith("weird_block"))
    assert isinstance(found, Opaque)


@settings(max_examples=40, deadline=None)
@given(messages())
def test_no_drawn_part_counts_nothing(message: Message) -> None:
    counter = framed(counter_for("cl100k_base"), OPENAI)
    bare = Message(role=message.role, name=message.name)
    for part in message.parts:
        if isinstance(part, Opaque) and part.kind.endswith("weird_block"):
            alone = Message(role=message.role, parts=(part,), name=message.name)
            if part.kind.startswith("anthropic:"):
                continue  # to_openai drops another provider's block: not sent, not counted
            assert counter.count(alone) > counter.count(bare)


def test_json_values_python_holds_equal_are_different_messages_and_counts() -> None:
    """``1``, ``1.0`` and ``True`` are equal in Python but different JSON,
    counted differently: a count cache keyed by message values gave the
    count of whichever was counted first (a fuzzed framing property failed
    once, by test order)."""

    def one(value: object) -> tuple[Message, ...]:
        return from_openai([{"role": "user", "content": [{"type": "x", "v": value}]}])

    values = (1.0, 1, True, 0, -0.0, False)
    assert len({one(v) for v in values}) == len(values)
    assert one(1) == one(1)
    assert hash(one(1.0)) == hash(one(1.0))
    forward = framed(counter_for("cl100k_base"), OPENAI)
    backward = framed(counter_for("cl100k_base"), OPENAI)
    counts = [forward.counts(one(v)) for v in values]
    assert counts == [backward.counts(one(v)) for v in reversed(values)][::-1]
    assert counts[0] != counts[1]  # "1.0" is not "1"
