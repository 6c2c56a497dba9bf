"""Every integration passes ``over_budget`` through to the pipeline: under
``"raise"`` a model call that cannot fit raises :class:`OverBudgetError`
before the model is called; by default it warns."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memrules import OverBudgetError, OverBudgetWarning, load_pipeline

TIGHT = "{max_tokens: 20, strategies: []}"
BIG = "word " * 60


def test_langchain_hook_and_middleware() -> None:
    messages_module = pytest.importorskip("langchain_core.messages")
    from memrules.integrations.langchain import PreModelHook, compact_langchain

    pipeline = load_pipeline(TIGHT)
    history = [messages_module.SystemMessage(BIG), messages_module.HumanMessage(BIG)]
    with pytest.raises(OverBudgetError):
        compact_langchain(pipeline, history, over_budget="raise")
    with pytest.raises(OverBudgetError):
        PreModelHook(pipeline, over_budget="raise")({"messages": history})
    with pytest.warns(OverBudgetWarning):
        PreModelHook(pipeline)({"messages": history})


def test_pydantic_ai_processor() -> None:
    pai = pytest.importorskip("pydantic_ai.messages")
    from memrules.integrations.pydantic_ai import history_processor

    pipeline = load_pipeline(TIGHT)
    history = [pai.ModelRequest(parts=[pai.UserPromptPart(BIG)])]
    with pytest.raises(OverBudgetError):
        history_processor(pipeline, over_budget="raise")(history)


def test_llama_index_memory() -> None:
    llms = pytest.importorskip("llama_index.core.llms")
    from memrules.integrations.llama_index import compacting_memory

    memory = compacting_memory(load_pipeline(TIGHT), over_budget="raise")
    memory.put(llms.ChatMessage(role="user", content=BIG))
    with pytest.raises(OverBudgetError):
        memory.get()


def test_autogen_context() -> None:
    models = pytest.importorskip("autogen_core.models")
    from memrules.integrations.autogen import CompactingChatContext

    context = CompactingChatContext(load_pipeline(TIGHT), over_budget="raise")

    async def run() -> Any:
        await context.add_message(models.UserMessage(content=BIG, source="user"))
        return await context.get_messages()

    with pytest.raises(OverBudgetError):
        asyncio.run(run())


def test_agents_session() -> None:
    agents = pytest.importorskip("agents")
    from memrules.integrations.openai_agents import CompactingSession

    session = CompactingSession(
        agents.SQLiteSession("tight"), load_pipeline(TIGHT), over_budget="raise"
    )

    async def run() -> Any:
        await session.add_items([{"role": "user", "content": BIG}])
        return await session.get_items()

    with pytest.raises(OverBudgetError):
        asyncio.run(run())
