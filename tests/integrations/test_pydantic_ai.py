"""pydantic-ai, against the real installed library: the history processor
runs inside agents driven by pydantic-ai's own TestModel and FunctionModel,
sync and async, and every model request keeps its tool pairs."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
from typing import Any

import pytest

from memrules import load_pipeline
from memrules._adapters.pydantic_ai import from_pydantic_ai

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pydantic_ai") is None,
    reason="needs the pydantic-ai extra: pip install 'memrules[pydantic-ai]'",
)

if importlib.util.find_spec("pydantic_ai") is not None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.test import TestModel

CONFIG = """
context_window_tokens: 100000
max_tokens: 700
strategies:
  - type: clear_tool_results
    keep_pairs: 2
  - type: sliding_window
    keep_messages: 14
"""


def pairing_problems(messages: list[Any]) -> list[str]:
    calls: set[str] = set()
    answered: set[str] = set()
    problems = []
    for i, message in enumerate(messages):
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                calls.add(part.tool_call_id)
            elif isinstance(part, ToolReturnPart):
                if part.tool_call_id not in calls:
                    problems.append(f"[{i}] return {part.tool_call_id} has no call before it")
                answered.add(part.tool_call_id)
    return problems + [f"call {c} has no return" for c in sorted(calls - answered)]


class Caller:
    """A FunctionModel function: calls ``read_file`` for ``steps`` turns, one
    or two calls at a time, then answers; records what it is sent."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.seen: list[list[Any]] = []

    def __call__(self, messages: list[Any], info: AgentInfo) -> Any:
        self.seen.append(list(messages))
        turn = len(self.seen) - 1
        if turn >= self.steps:
            return ModelResponse(parts=[TextPart("all read")])
        calls = [
            ToolCallPart("read_file", {"path": f"f{turn}_{k}.py"}, tool_call_id=f"c{turn}_{k}")
            for k in range(1 + turn % 2)
        ]
        return ModelResponse(parts=calls)


def _agent(model: Any, processor: Any) -> Any:
    """An agent with ``processor`` in ``history_processors`` (pydantic-ai 1.x)
    or in a ``ProcessHistory`` capability (2.x, which replaced the argument)."""
    if "history_processors" in inspect.signature(Agent.__init__).parameters:
        options: dict[str, Any] = {"history_processors": [processor]}
    else:
        from pydantic_ai.capabilities import ProcessHistory

        options = {"capabilities": [ProcessHistory(processor)]}
    agent = Agent(model, system_prompt="You read files.", **options)

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return f"{path}: " + "token " * 60

    return agent


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_function_model_agent_keeps_every_tool_pair(kind: str) -> None:
    from memrules.integrations.pydantic_ai import async_history_processor, history_processor

    pipeline = load_pipeline(CONFIG)
    make = history_processor if kind == "sync" else async_history_processor
    caller = Caller(steps=45)
    result = _agent(FunctionModel(caller), make(pipeline)).run_sync("Read every file.")
    assert result.output == "all read"
    assert len(caller.seen) == 46
    for k, sent in enumerate(caller.seen):
        assert pairing_problems(sent) == [], f"model request {k}"
        first = sent[0].parts[0]
        assert first.part_kind == "system-prompt", f"model request {k}"
        prompts = [p for m in sent for p in m.parts if isinstance(p, UserPromptPart)]
        assert prompts, f"model request {k}: the user's prompt was dropped"
        assert prompts[-1].content == "Read every file."
        # every model request of the one run is within the 700-token budget
        assert pipeline.count(from_pydantic_ai(sent)[0]) < 700, f"model request {k}"
    history = result.all_messages()
    assert pairing_problems(history) == []
    calls = sum(isinstance(p, ToolCallPart) for m in caller.seen[-1] for p in m.parts)
    assert calls < sum(1 + t % 2 for t in range(45))  # the model was sent less than the run made


def test_a_test_model_agent_runs_with_the_processor() -> None:
    from memrules.integrations.pydantic_ai import history_processor

    pipeline = load_pipeline(CONFIG)
    agent = _agent(TestModel(), history_processor(pipeline))
    result = agent.run_sync("Read a file.")
    assert "read_file" in result.output
    second = agent.run_sync("Again.", message_history=result.all_messages())
    assert pairing_problems(second.all_messages()) == []


def test_kept_messages_are_the_same_objects_and_cleared_returns_keep_their_part() -> None:
    from memrules.integrations.pydantic_ai import compact_pydantic_ai

    pipeline = load_pipeline(
        "max_tokens: 60\nstrategies:\n  - type: clear_tool_results\n    keep_pairs: 0\n"
        "    preview_chars: 0\n"  # a 200-character preview would be the whole result
    )
    history = [
        ModelRequest(parts=[UserPromptPart("read it")]),
        ModelResponse(parts=[ToolCallPart("read_file", {"path": "a"}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("read_file", "x " * 100, tool_call_id="c1")]),
        ModelResponse(parts=[TextPart("read")]),
        ModelRequest(parts=[UserPromptPart("and now?")]),
    ]
    out, result = compact_pydantic_ai(pipeline, history)
    assert result.report.compacted
    assert [m is h for m, h in zip(out, history, strict=True)] == [True, True, False, True, True]
    (cleared,) = out[2].parts
    assert isinstance(cleared, ToolReturnPart)
    assert cleared.tool_call_id == "c1"
    assert cleared.timestamp == history[2].parts[0].timestamp
    assert "cleared" in cleared.content


def test_an_unchanged_history_is_handed_back_as_it_was() -> None:
    from memrules.integrations.pydantic_ai import compact_pydantic_ai

    history = [ModelRequest(parts=[UserPromptPart("hi")])]
    out, _ = compact_pydantic_ai(load_pipeline(CONFIG), history)
    assert out == history
    assert out[0] is history[0]


def test_the_async_processor_does_not_block_the_loop() -> None:
    from memrules.integrations.pydantic_ai import async_history_processor

    process = async_history_processor(load_pipeline(CONFIG))
    history = [ModelRequest(parts=[UserPromptPart("hi")])]

    async def both() -> list[Any]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            for _ in range(3):
                await asyncio.sleep(0)
                ticks += 1

        out, _ = await asyncio.gather(process(history), ticker())
        assert ticks == 3
        return out

    assert asyncio.run(both()) == history


def test_the_capability_wraps_the_processor() -> None:
    pytest.importorskip("pydantic_ai.capabilities", reason="pydantic-ai 2.x capabilities")
    from memrules.integrations.pydantic_ai import history_capability

    caller = Caller(steps=30)
    agent = Agent(
        FunctionModel(caller),
        system_prompt="You read files.",
        capabilities=[history_capability(load_pipeline(CONFIG))],
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return f"{path}: " + "token " * 60

    assert agent.run_sync("Read every file.").output == "all read"
    for k, sent in enumerate(caller.seen):
        assert pairing_problems(sent) == [], f"model request {k}"


def test_the_pydantic_ai_conversion_is_an_adapter_that_imports_no_framework() -> None:
    """The conversion lives in ``memrules._adapters.pydantic_ai`` (re-exported here), and importing
    it imports no framework: only the hooks need one."""
    import subprocess
    import sys

    import memrules._adapters.pydantic_ai as adapter
    import memrules.integrations.pydantic_ai as integration

    for name in ("from_pydantic_ai", "to_pydantic_ai"):
        assert getattr(integration, name) is getattr(adapter, name)
    code = (
        "import sys, memrules._adapters.pydantic_ai; "
        "print(sorted(m.split('.')[0] for m in sys.modules if m.split('.')[0] in "
        "{'langchain_core', 'langchain', 'langgraph', 'agents', 'pydantic_ai', 'pydantic_core', "
        "'pydantic'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
