"""Bodies memrules writes are ones the official SDKs would build: every
produced message list validates against the SDK's typed request params
(``openai.types.chat.ChatCompletionMessageParam``,
``openai.types.responses.ResponseInputParam``, ``anthropic.types.MessageParam``),
read through pydantic, over generated histories and what the default
pipeline makes of them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

openai_types = pytest.importorskip("openai.types", reason="needs the openai SDK (test extra)")
anthropic_types = pytest.importorskip(
    "anthropic.types", reason="needs the anthropic SDK (test extra)"
)

from pydantic import TypeAdapter  # noqa: E402

from memrules import (  # noqa: E402
    MemoryConfig,
    Pipeline,
    from_anthropic,
    from_openai,
    from_responses,
    to_anthropic_request,
    to_openai,
    to_responses,
)
from memrules._core.messages import Conversation, Message, Opaque, Part, ToolResult  # noqa: E402
from memrules.testing import conversations  # noqa: E402
from tests.support.responses_json import responses_loops  # noqa: E402
from tests.support.strategies import COUNTER  # noqa: E402

CHAT = TypeAdapter(list[openai_types.chat.ChatCompletionMessageParam])
RESPONSES = TypeAdapter(openai_types.responses.ResponseInputParam)
ANTHROPIC_MESSAGES = TypeAdapter(list[anthropic_types.MessageParam])
ANTHROPIC_SYSTEM = TypeAdapter(str | list[anthropic_types.TextBlockParam])


def _forced(value: Any) -> Any:
    """``value`` with every lazily validated iterable (the SDKs type many
    lists as ``Iterable``, which pydantic checks item by item as they are
    read) read to the end, so that a bad item raises now."""
    if isinstance(value, dict):
        return {k: _forced(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_forced(v) for v in value]
    if isinstance(value, Iterator) or type(value).__name__ == "ValidatorIterator":
        return [_forced(v) for v in value]
    return value


def _validate(adapter: TypeAdapter[Any], value: Any) -> None:
    _forced(adapter.validate_python(value))


def _check_all_formats(conversation: Conversation) -> None:
    _validate(CHAT, to_openai(conversation))
    _validate(RESPONSES, to_responses(conversation))
    request = to_anthropic_request(conversation)
    _validate(ANTHROPIC_MESSAGES, request["messages"])
    if "system" in request:
        _validate(ANTHROPIC_SYSTEM, request["system"])


def test_the_checks_can_fail() -> None:
    with pytest.raises(ValueError, match="function_call"):
        _validate(RESPONSES, [{"type": "function_call", "call_id": "c", "name": "f"}])
    # A bad item inside an Iterable-typed field is caught too.
    bad_summary = [{"type": "reasoning", "id": "r", "summary": [{"type": "nope"}]}]
    with pytest.raises(ValueError, match="summary"):
        _validate(RESPONSES, bad_summary)
    with pytest.raises(ValueError, match="tool_use_id"):
        _validate(ANTHROPIC_MESSAGES, [{"role": "user", "content": [{"type": "tool_result"}]}])


def _without_opaque(conversation: Conversation) -> Conversation:
    """The generic histories' opaque parts are placeholders of no provider
    (written as they are, which no SDK type describes): left out."""

    def part(p: Part) -> Part:
        if isinstance(p, ToolResult) and not isinstance(p.content, str):
            return attrs.evolve(p, content=tuple(c for c in p.content if not isinstance(c, Opaque)))
        return p

    def keep(message: Message) -> Message:
        parts = tuple(part(p) for p in message.parts if not isinstance(p, Opaque))
        return message if parts == message.parts else message.evolve(parts=parts)

    out = [keep(m) for m in conversation]
    # A message left with no parts writes as an empty message, which the
    # SDKs accept; an empty tool message has nothing to answer and goes.
    return tuple(
        m for m in out if m.role != "tool" or any(isinstance(p, ToolResult) for p in m.parts)
    )


@given(conversations(max_size=14, unanswered_calls=False))
def test_generated_histories_write_sdk_valid_bodies(conversation: Conversation) -> None:
    _check_all_formats(_without_opaque(conversation))


@given(responses_loops(), st.floats(0.05, 1.0))
def test_compacted_responses_loops_write_sdk_valid_bodies(
    items: list[dict[str, Any]], fraction: float
) -> None:
    _validate(RESPONSES, items)  # the generator's own items are valid
    conversation = from_responses(items)
    total = sum(COUNTER.counts(conversation))
    pipeline = Pipeline.from_config(
        MemoryConfig(max_tokens=max(1, int(total * fraction))), counter=COUNTER
    )
    compacted = pipeline.apply(conversation).messages
    _check_all_formats(compacted)
    # Read back from each provider's own format, and written again.
    _validate(CHAT, to_openai(from_openai(to_openai(compacted))))
    again = from_anthropic(to_anthropic_request(compacted))
    _validate(ANTHROPIC_MESSAGES, to_anthropic_request(again)["messages"])
