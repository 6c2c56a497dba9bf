"""LlamaIndex: the conversion both ways, and a real ``FunctionAgent`` run
turn after turn with :func:`compacting_memory` and a scripted
function-calling model (LlamaIndex's own base class, no mock of the
framework)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("llama_index.core", reason="needs the llama-index extra")

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    LLMMetadata,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.tools import FunctionTool, ToolSelection

from memrules import MemoryConfig, Pipeline
from memrules.integrations.llama_index import (
    compact_llama_index,
    compacting_memory,
    from_llama_index,
    to_llama_index,
)
from memrules.strategies import clear_tool_results, trim_to_budget

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


@st.composite
def chat_messages(draw: st.DrawFn) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    for k in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["system", "user", "assistant", "call", "tool", "thinking"]))
        if kind == "call":
            calls = [
                ToolCallBlock(
                    tool_call_id=f"c{k}_{j}",
                    tool_name="read",
                    tool_kwargs={"path": draw(TEXT)},
                )
                for j in range(draw(st.integers(1, 3)))
            ]
            out.append(ChatMessage(role="assistant", blocks=[TextBlock(text=draw(TEXT)), *calls]))
        elif kind == "tool":
            out.append(
                ChatMessage(
                    role="tool",
                    blocks=[TextBlock(text=draw(TEXT))],
                    additional_kwargs={"tool_call_id": f"c{k}_0"},
                )
            )
        elif kind == "thinking":
            out.append(
                ChatMessage(
                    role="assistant",
                    blocks=[ThinkingBlock(content=draw(TEXT)), TextBlock(text=draw(TEXT))],
                )
            )
        else:
            role = kind if kind != "system" else draw(st.sampled_from(["system", "developer"]))
            out.append(
                ChatMessage(
                    role=role,
                    blocks=[TextBlock(text=draw(TEXT))],
                    additional_kwargs=draw(st.sampled_from([{}, {"name": "ana"}])),
                )
            )
    return out


@given(chat_messages())
def test_llama_index_to_memrules_and_back_is_lossless(messages: list[ChatMessage]) -> None:
    assert to_llama_index(from_llama_index(messages)) == messages


def test_what_the_conversion_means() -> None:
    call = ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id="c1", tool_name="read", tool_kwargs={"p": 1})],
    )
    result = ChatMessage(role="tool", content="file body", additional_kwargs={"tool_call_id": "c1"})
    a, b = from_llama_index([ChatMessage(role="developer", content="rules"), call, result])[1:]
    first = from_llama_index([ChatMessage(role="developer", content="rules")])[0]
    assert first.role == "system"
    assert a.call_ids == ("c1",)
    assert json.loads(a.parts[0].arguments) == {"p": 1}  # type: ignore[union-attr]
    assert b.role == "tool"
    assert b.result_ids == ("c1",)


def test_kept_messages_are_handed_back_as_the_same_objects() -> None:
    history = [ChatMessage(role="system", content="s")] + [
        ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"m{i} " * 50)
        for i in range(9)
    ]
    compacted, result = compact_llama_index(_pipeline([trim_to_budget()], 200), history)
    assert result.report.compacted
    assert compacted[0] is history[0]
    assert compacted[-1] is history[-1]


def _pipeline(strategies: list[Any], max_tokens: int) -> Pipeline:
    return Pipeline.from_config(
        MemoryConfig(strategies=strategies, max_tokens=max_tokens, max_fraction=None)
    )


class ScriptedModel(FunctionCallingLLM):
    """Reads a file each call until it has read ``steps`` files this turn,
    then answers; records what it was sent."""

    steps: int = 3
    inputs: list[list[ChatMessage]] = []  # noqa: RUF012 (a pydantic field: copied per instance)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_function_calling_model=True, model_name="scripted")

    def _prepare_chat_with_tools(
        self, tools: Any, user_msg: Any = None, chat_history: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        messages = list(chat_history or [])
        if user_msg is not None:
            messages.append(
                user_msg
                if isinstance(user_msg, ChatMessage)
                else ChatMessage(role="user", content=user_msg)
            )
        return {"messages": messages}

    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        messages = list(messages)
        self.inputs.append(messages)
        since = max(i for i, m in enumerate(messages) if m.role.value == "user")
        done = sum(1 for m in messages[since:] if m.role.value == "tool")
        if done >= self.steps:
            return ChatResponse(message=ChatMessage(role="assistant", content="All read."))
        n = len(self.inputs)
        call = ToolCallBlock(
            tool_call_id=f"call_{n}", tool_name="read_file", tool_kwargs={"path": f"src/f{n}.py"}
        )
        return ChatResponse(message=ChatMessage(role="assistant", blocks=[call]))

    async def achat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        return self.chat(messages, **kwargs)

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        return [
            ToolSelection(
                tool_id=b.tool_call_id or "",
                tool_name=b.tool_name,
                tool_kwargs=b.tool_kwargs if isinstance(b.tool_kwargs, dict) else {},
            )
            for b in response.message.blocks
            if isinstance(b, ToolCallBlock)
        ]

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise NotImplementedError

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError

    def stream_chat(self, messages: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def astream_chat(self, messages: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}: " + " ".join(f"line{i}" for i in range(120))


def test_a_function_agent_reads_a_compacted_memory_and_keeps_every_pair() -> None:
    pipeline = _pipeline([clear_tool_results(keep_pairs=2), trim_to_budget()], 1500)
    inner = ChatMemoryBuffer.from_defaults(token_limit=10**9)
    memory = compacting_memory(pipeline, memory=inner, conversation_id="t1")
    model = ScriptedModel(inputs=[])
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(read_file)],
        llm=model,
        system_prompt="You read files.",
        streaming=False,
    )

    async def run() -> None:
        for turn in range(8):
            await agent.run(f"Read three files, turn {turn}.", memory=memory)

    asyncio.run(run())
    stored = inner.get_all()
    assert sum(1 for m in stored if m.role.value == "tool") == 8 * 3  # the store stays whole
    assert memory.last_result is not None
    assert memory.last_result.report.compacted
    for k, seen in enumerate(model.inputs):
        conversation = from_llama_index(seen)
        calls = {c for m in conversation for c in m.call_ids}
        results = {r for m in conversation for r in m.result_ids}
        assert results <= calls, f"model call {k}: a tool output without its call"
        assert calls <= results | {m.call_ids[0] for m in conversation[-1:] if m.call_ids}
        assert pipeline.count(conversation) < 1500 + 3 * 400, f"model call {k}"
    cleared = [m for m in model.inputs[-1] if "cleared" in (m.content or "")]
    assert cleared  # the model read cleared tool results...
    assert not any("cleared" in (m.content or "") for m in stored)  # ...that the store keeps whole
