"""AutoGen: a real ``AssistantAgent`` run turn after turn, several tool
rounds a turn (parallel calls among them), with :class:`CompactingChatContext`
as its ``model_context`` and AutoGen's own scripted model
(``ReplayChatCompletionClient``, which records every request it was sent):
no mock of the framework."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat", reason="needs the autogen extra")
pytest.importorskip("autogen_ext.models.replay", reason="needs the autogen extra")

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import TextMessage, ToolCallExecutionEvent
from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    AssistantMessage,
    CreateResult,
    FunctionExecutionResultMessage,
    ModelFamily,
    ModelInfo,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from autogen_ext.models.replay import ReplayChatCompletionClient

from memrules import MemoryConfig, Pipeline, load_pipeline
from memrules.integrations.autogen import CompactingChatContext, compact_autogen, from_autogen
from memrules.seams import Seams, extractive_summarizer
from memrules.strategies import clear_tool_results, trim_to_budget

BUDGET = 1500
TURNS = 8
SYSTEM = "You read files."


def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}: " + " ".join(f"line{i}" for i in range(120))


def _calls(turn: int, step: int, paths: list[str]) -> CreateResult:
    calls = [
        FunctionCall(id=f"t{turn}s{step}c{j}", arguments=json.dumps({"path": p}), name="read_file")
        for j, p in enumerate(paths)
    ]
    usage = RequestUsage(prompt_tokens=0, completion_tokens=1)
    return CreateResult(
        finish_reason="function_calls",
        content=calls,
        usage=usage,
        cached=False,
        thought=f"reading {len(paths)} file(s)",
    )


def _script() -> list[CreateResult | str]:
    """Each turn: two files read in parallel, then a third, then the answer."""
    script: list[CreateResult | str] = []
    for t in range(TURNS):
        script.append(_calls(t, 0, [f"src/a{t}.py", f"src/b{t}.py"]))
        script.append(_calls(t, 1, [f"src/c{t}.py"]))
        script.append(f"Turn {t}: read a{t}, b{t} and c{t}.")
    return script


def _model() -> ReplayChatCompletionClient:
    info = ModelInfo(
        vision=False,
        function_calling=True,
        json_output=False,
        family=ModelFamily.UNKNOWN,
        structured_output=False,
    )
    return ReplayChatCompletionClient(_script(), model_info=info)


def _pipeline(strategies: list[Any], max_tokens: int = BUDGET) -> Pipeline:
    return Pipeline.from_config(
        MemoryConfig(strategies=strategies, max_tokens=max_tokens, max_fraction=None)
    )


def _agent(context: CompactingChatContext, model: ReplayChatCompletionClient) -> AssistantAgent:
    return AssistantAgent(
        "reader",
        model_client=model,
        tools=[read_file],
        model_context=context,
        system_message=SYSTEM,
        max_tool_iterations=3,
    )


def _check_pairing(seen: list[Any], where: str) -> None:
    """Each call message is followed at once by one result for each of its
    calls, and each result message answers the call message just before it."""
    for i, m in enumerate(seen):
        if isinstance(m, AssistantMessage) and isinstance(m.content, list):
            after = seen[i + 1] if i + 1 < len(seen) else None
            assert isinstance(after, FunctionExecutionResultMessage), f"{where}: unanswered calls"
            assert [r.call_id for r in after.content] == [c.id for c in m.content], where
        if isinstance(m, FunctionExecutionResultMessage):
            before = seen[i - 1]
            assert isinstance(before, AssistantMessage), f"{where}: results without their calls"
            assert isinstance(before.content, list), where


def test_an_assistant_agent_reads_a_compacted_context_and_keeps_every_pair() -> None:
    pipeline = _pipeline([clear_tool_results(keep_pairs=3), trim_to_budget()])
    context = CompactingChatContext(pipeline, conversation_id="t1")
    model = _model()
    agent = _agent(context, model)
    answers: list[str] = []
    outputs: list[list[str]] = []

    async def run() -> None:
        for turn in range(TURNS):
            result = await agent.run(task=f"Read three files, turn {turn}.")
            last = result.messages[-1]
            assert isinstance(last, TextMessage)
            answers.append(last.content)
            outputs.append(
                [
                    r.content
                    for m in result.messages
                    if isinstance(m, ToolCallExecutionEvent)
                    for r in m.content
                ]
            )

    asyncio.run(run())
    assert answers == [f"Turn {t}: read a{t}, b{t} and c{t}." for t in range(TURNS)]
    assert outputs == [[read_file(f"src/{f}{t}.py") for f in ("a", "b", "c")] for t in range(TURNS)]
    assert len(model.create_calls) == TURNS * 3

    stored = context.history()
    results = [
        r for m in stored if isinstance(m, FunctionExecutionResultMessage) for r in m.content
    ]
    assert len(results) == TURNS * 3  # the context keeps the whole history...
    assert all(r.content.startswith("contents of") for r in results)  # ...uncleared
    assert context.last_result is not None
    assert context.last_result.report.compacted

    for k, call in enumerate(model.create_calls):
        seen = list(call["messages"])
        where = f"model call {k}"
        assert seen[0] == SystemMessage(content=SYSTEM), where  # the agent's own, first
        _check_pairing(seen[1:], where)
        assert pipeline.count(from_autogen(seen[1:])) <= BUDGET, where
        turn, step = divmod(k, 3)
        this_turn = seen[-1 - 2 * step :]
        assert this_turn[0] == UserMessage(content=f"Read three files, turn {turn}.", source="user")
        # The results of this turn's rounds reach the model whole.
        for m in this_turn:
            if isinstance(m, FunctionExecutionResultMessage):
                assert [r.content for r in m.content] == [
                    read_file(json.loads(c.arguments)["path"])
                    for c in stored_calls(stored, [r.call_id for r in m.content])
                ], where
    last_seen = list(model.create_calls[-1]["messages"])
    assert len(last_seen) < len(stored) + 1  # older turns were dropped...
    cleared = [
        r
        for m in last_seen
        if isinstance(m, FunctionExecutionResultMessage)
        for r in m.content
        if not r.content.startswith("contents of")
    ]
    assert cleared  # ...or their results cleared, for the model only


def stored_calls(stored: list[Any], ids: list[str]) -> list[FunctionCall]:
    calls = {
        c.id: c
        for m in stored
        if isinstance(m, AssistantMessage) and isinstance(m.content, list)
        for c in m.content
    }
    return [calls[i] for i in ids]


def test_each_call_converts_only_what_the_agent_added_and_hands_back_the_same_objects() -> None:
    pipeline = _pipeline([clear_tool_results(keep_pairs=3), trim_to_budget()])
    context = CompactingChatContext(pipeline)
    model = _model()
    agent = _agent(context, model)
    converted: list[int] = []
    one = context._conversions.one

    def counting(message: Any, index: int) -> Any:
        converted.append(index)
        return one(message, index)

    context._conversions.one = counting

    async def run() -> tuple[list[Any], list[Any]]:
        for turn in range(4):
            await agent.run(task=f"Read three files, turn {turn}.")
        return await context.get_messages(), await context.get_messages()

    first, second = asyncio.run(run())
    stored = context.history()
    assert sorted(converted) == list(range(len(stored)))  # each message converted once
    assert len(first) == len(second)
    assert all(a is b for a, b in zip(first, second, strict=True))  # conversions back too
    assert any(m is s for m in first for s in stored)  # kept messages are the stored objects
    assert any(all(m is not s for s in stored) for m in first)  # changed ones are new


def test_the_agent_saves_and_loads_the_whole_history() -> None:
    pipeline = _pipeline([clear_tool_results(keep_pairs=3), trim_to_budget()])
    context = CompactingChatContext(pipeline)
    agent = _agent(context, _model())
    restored = CompactingChatContext(pipeline)

    async def run() -> tuple[Any, list[Any], list[Any], list[Any]]:
        for turn in range(3):
            await agent.run(task=f"Read three files, turn {turn}.")
        state = await agent.save_state()
        json.dumps(state)  # what AutoGen stores is JSON
        await _agent(restored, _model()).load_state(state)
        mine, theirs = await context.get_messages(), await restored.get_messages()
        await agent.on_reset(CancellationToken())
        return state, mine, theirs, await context.get_messages()

    state, mine, theirs, after_reset = asyncio.run(run())
    assert len(state["llm_context"]["messages"]) == len(restored.history()) == 3 * 6
    assert [m.model_dump() for m in restored.history()] == state["llm_context"]["messages"]
    assert [m.model_dump() for m in theirs] == [m.model_dump() for m in mine]
    assert [m.model_dump() for m in mine] != state["llm_context"]["messages"]  # compacted
    assert after_reset == []
    assert context.history() == []


def test_initial_messages_are_the_start_of_the_history() -> None:
    start = [UserMessage(content=f"note {i} " * 200, source="user") for i in range(6)]
    context = CompactingChatContext(_pipeline([trim_to_budget()], 600), start)
    compacted = asyncio.run(context.get_messages())
    assert context.history() == start
    assert 0 < len(compacted) < len(start)
    assert compacted[-1] is start[-1]


def test_compact_autogen_hands_kept_messages_back_as_the_same_objects() -> None:
    history = [UserMessage(content=f"m{i} " * 50, source="user") for i in range(9)]
    compacted, result = compact_autogen(_pipeline([trim_to_budget()], 200), history)
    assert result.report.compacted
    assert compacted[-1] is history[-1]
    assert all(any(m is h for h in history) for m in compacted)


def test_import_memrules_does_not_import_autogen() -> None:
    script = "import memrules, sys; print(sorted(m for m in sys.modules if 'autogen' in m))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


def test_a_summary_the_pipeline_writes_reaches_the_model_as_an_autogen_message() -> None:
    pipeline = load_pipeline(
        "{max_messages: 8, strategies: [{type: summarize, turns: 2}, {type: trim_to_budget}]}",
        seams=Seams(summarizer=extractive_summarizer()),
    )
    context = CompactingChatContext(pipeline)
    model = _model()
    agent = _agent(context, model)

    async def run() -> None:
        for turn in range(4):
            await agent.run(task=f"Read three files, turn {turn}.")

    asyncio.run(run())
    stored = context.history()
    made = [
        m
        for call in model.create_calls
        for m in call["messages"][1:]
        if all(m is not s for s in stored)
    ]
    summaries = [
        m
        for m in made
        # The task is kept, so the first message summarized is the agent's: the
        # summary takes its role.
        if isinstance(m, AssistantMessage) and str(m.content).startswith("[memrules summary]")
    ]
    assert summaries  # the model read the summary the pipeline wrote...
    assert all(isinstance(m, (SystemMessage, UserMessage, AssistantMessage)) for m in made)
    for k, call in enumerate(model.create_calls):
        seen = list(call["messages"])
        _check_pairing(seen[1:], f"model call {k}")
        assert len(seen) - 1 <= 8, f"model call {k}"
    assert len(stored) == 4 * 6  # ...and the context kept the history whole
