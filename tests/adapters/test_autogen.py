"""AutoGen's model messages, both ways: lossless over generated histories
(parallel calls, images, thoughts, empty content), what each one means to
memrules, and what a strategy's change becomes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("autogen_core", reason="needs the autogen extra")

from autogen_core import FunctionCall, Image
from autogen_core.model_context import ChatCompletionContextState
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    SystemMessage,
    UserMessage,
)
from PIL import Image as PILImage

from memrules import MemoryConfig, Pipeline
from memrules._adapters.autogen import IMAGE, KEY, THOUGHT, from_autogen, to_autogen
from memrules._core.errors import MessageFormatError
from memrules._core.messages import Opaque, Text, ToolCall, ToolResult
from memrules.strategies import clear_tool_results

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
SOURCE = st.sampled_from(["user", "assistant", "coder", ""])


@st.composite
def images(draw: st.DrawFn) -> Image:
    size = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    mode = draw(st.sampled_from(["RGB", "RGBA", "L"]))
    picture = PILImage.new(mode, size)
    pixels = [draw(st.integers(0, 255)) for _ in range(size[0] * size[1])]
    picture.putdata(pixels if mode == "L" else [(p,) * len(mode) for p in pixels])
    return Image.from_pil(picture)


@st.composite
def llm_messages(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = []
    for k in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["system", "user", "images", "assistant", "calls", "results"]))
        if kind == "system":
            out.append(SystemMessage(content=draw(TEXT)))
        elif kind == "user":
            out.append(UserMessage(content=draw(TEXT), source=draw(SOURCE)))
        elif kind == "images":
            content = draw(st.lists(st.one_of(TEXT, images()), max_size=3))
            out.append(UserMessage(content=content, source=draw(SOURCE)))
        elif kind == "assistant":
            thought = draw(st.one_of(st.none(), TEXT))
            out.append(AssistantMessage(content=draw(TEXT), thought=thought, source="a"))
        elif kind == "calls":
            calls = [
                FunctionCall(id=f"c{k}_{j}", arguments=json.dumps({"p": draw(TEXT)}), name="read")
                for j in range(draw(st.integers(0, 3)))  # 0: an empty list; 2, 3: parallel
            ]
            thought = draw(st.one_of(st.none(), TEXT))
            out.append(AssistantMessage(content=calls, thought=thought, source=draw(SOURCE)))
        else:
            results = [
                FunctionExecutionResult(
                    content=draw(TEXT),
                    name=draw(st.sampled_from(["read", ""])),
                    call_id=f"c{k}_{j}",
                    is_error=draw(st.sampled_from([None, False, True])),
                )
                for j in range(draw(st.integers(0, 3)))
            ]
            out.append(FunctionExecutionResultMessage(content=results))
    return out


def dumped(messages: list[Any]) -> list[tuple[type, dict[str, Any]]]:
    """Each message's class and fields (an image as its PNG bytes, base64)."""
    return [(type(m), m.model_dump(mode="json")) for m in messages]


def has_image(message: Any) -> bool:
    return isinstance(message, UserMessage) and any(isinstance(c, Image) for c in message.content)


@given(llm_messages())
def test_autogen_to_memrules_and_back_is_lossless(messages: list[Any]) -> None:
    back = to_autogen(from_autogen(messages))
    assert dumped(back) == dumped(messages)
    # Images have no value equality (a new Image is another object); the rest is equal.
    assert [b for b in back if not has_image(b)] == [m for m in messages if not has_image(m)]


@given(llm_messages())
def test_the_conversion_is_the_same_after_the_framework_saves_and_loads_it(
    messages: list[Any],
) -> None:
    state = ChatCompletionContextState(messages=messages).model_dump()
    loaded = ChatCompletionContextState.model_validate(state).messages
    assert from_autogen(loaded) == from_autogen(messages)


def test_what_the_conversion_means() -> None:
    picture = Image.from_pil(PILImage.new("RGB", (64, 32)))
    messages = [
        SystemMessage(content="rules"),
        UserMessage(content=["look:", picture], source="user"),
        AssistantMessage(
            content=[
                FunctionCall(id="c1", arguments='{"p": 1}', name="read"),
                FunctionCall(id="c2", arguments='{"p": 2}', name="read"),
            ],
            thought="two files to read",
            source="coder",
        ),
        FunctionExecutionResultMessage(
            content=[
                FunctionExecutionResult(content="one", name="read", call_id="c1"),
                FunctionExecutionResult(content="boom", name="read", call_id="c2", is_error=True),
            ]
        ),
    ]
    system, user, calls, results = from_autogen(messages)
    assert (system.role, system.text) == ("system", "rules")
    assert user.role == "user"
    assert user.name == "user"
    assert user.parts[0] == Text(text="look:")
    image = user.parts[1]
    assert isinstance(image, Opaque)
    assert image.kind == IMAGE
    assert image.payload["image_url"]["url"] == picture.data_uri
    assert calls.role == "assistant"
    assert calls.name == "coder"
    assert calls.parts[0] == Text(text="two files to read", extra={KEY: THOUGHT})
    assert calls.call_ids == ("c1", "c2")
    assert isinstance(calls.parts[1], ToolCall)
    assert calls.parts[1].arguments == '{"p": 1}'
    assert results.role == "tool"
    assert results.result_ids == ("c1", "c2")
    first, second = results.parts
    assert isinstance(first, ToolResult)
    assert isinstance(second, ToolResult)
    assert (first.content, first.is_error, second.is_error) == ("one", False, True)


def test_the_image_is_priced_by_its_size() -> None:
    def cost(size: tuple[int, int]) -> int:
        message = UserMessage(content=[Image.from_pil(PILImage.new("RGB", size))], source="u")
        return pipeline.count(from_autogen([message]))

    pipeline = Pipeline.from_config(MemoryConfig(strategies=[], max_tokens=10**6))
    assert cost((2048, 2048)) > cost((64, 64)) > 0


def test_a_cleared_result_is_written_as_the_result_with_its_new_text() -> None:
    def round_(k: int) -> list[Any]:
        calls = AssistantMessage(
            content=[FunctionCall(id=f"c{k}_{i}", arguments="{}", name="read") for i in range(3)],
            source="coder",
        )
        results = FunctionExecutionResultMessage(
            content=[
                FunctionExecutionResult(content="body " * 300, name="read", call_id=f"c{k}_{i}")
                for i in range(3)
            ]
        )
        return [UserMessage(content="read", source="user"), calls, results]

    history = round_(0) + round_(1)
    # No preview: the stub would otherwise quote the result's first and last words.
    cleared = clear_tool_results(keep_pairs=3, preview_chars=0)
    config = MemoryConfig(strategies=[cleared], max_tokens=1000)
    compacted = Pipeline.from_config(config).apply(from_autogen(history)).messages
    back = to_autogen(compacted)
    assert back[1] == history[1]
    first = back[2]
    assert isinstance(first, FunctionExecutionResultMessage)
    assert [r.call_id for r in first.content] == ["c0_0", "c0_1", "c0_2"]
    assert [r.name for r in first.content] == ["read"] * 3
    assert [r.is_error for r in first.content] == [None] * 3
    assert all("body" not in r.content for r in first.content)
    assert back[3:] == history[3:]  # the newest three results kept whole


def test_a_message_memrules_made_is_written_with_its_role_as_source() -> None:
    made = Pipeline.from_config(MemoryConfig(strategies=[], max_tokens=100)).apply(
        from_autogen([UserMessage(content="hi", source="ana")])
    )
    summary = made.messages[0].evolve(name=None, metadata={}, parts=(Text(text="so far"),))
    assistant = summary.evolve(role="assistant")
    assert to_autogen([summary, assistant]) == [
        UserMessage(content="so far", source="user"),
        AssistantMessage(content="so far", source="assistant"),
    ]


def test_what_is_no_autogen_message_is_named_by_its_index() -> None:
    with pytest.raises(MessageFormatError, match="LLMMessage") as raised:
        from_autogen([SystemMessage(content="s"), {"role": "user", "content": "hi"}])
    assert raised.value.index == 1


def test_a_part_autogen_has_no_place_for_is_named_by_its_index() -> None:
    linked = Opaque(
        kind="openai:image_url",
        payload={"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
    )
    made = from_autogen([UserMessage(content="hi", source="u")])[0]
    with pytest.raises(MessageFormatError, match="'openai:image_url' part") as raised:
        to_autogen([made, made.evolve(parts=(Text(text="see"), linked))])
    assert raised.value.index == 1
