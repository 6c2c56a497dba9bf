"""The OpenAI Agents SDK, against the real installed SDK: items convert
losslessly, a wrapped SQLiteSession round-trips and compacts them, and
agent runs with a session (or a session_input_callback) send the model
valid tool pairs."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules import MessageFormatError, load_pipeline
from memrules.testing import texts

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("agents") is None,
    reason="needs the agents extra: pip install 'memrules[agents]'",
)

if importlib.util.find_spec("agents") is not None:
    from agents import (
        Agent,
        ModelSettings,
        RunConfig,
        Runner,
        SQLiteSession,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )
else:  # pragma: no cover - the module is skipped
    Model = object

# --- items ------------------------------------------------------------------------------

call_ids = st.text(alphabet="abcdef0123456789", min_size=4, max_size=8).map("call_".__add__)
text_parts = st.builds(lambda t: {"type": "input_text", "text": t}, texts(max_size=10))
image_parts = st.builds(
    lambda n: {"type": "input_image", "image_url": f"https://x/{n}.png", "detail": "auto"},
    st.integers(0, 9),
)
easy = st.builds(
    lambda r, c: {"role": r, "content": c},
    st.sampled_from(["user", "system", "developer", "assistant"]),
    texts(max_size=20) | st.lists(text_parts | image_parts, max_size=3),
)
output_message = st.builds(
    lambda i, t: {
        "id": f"msg_{i}",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": t, "annotations": [], "logprobs": []}],
    },
    st.integers(0, 99),
    texts(max_size=20),
)
function_call = st.builds(
    lambda c, n, a, extra: {
        "type": "function_call",
        "call_id": c,
        "name": n,
        "arguments": a,
        **extra,
    },
    call_ids,
    st.sampled_from(["read_file", "search"]),
    st.sampled_from(['{"path": "a.py"}', "{}", "not json {"]),
    st.sampled_from([{}, {"id": "fc_1", "status": "completed"}]),
)
function_output = st.builds(
    lambda c, o: {"type": "function_call_output", "call_id": c, "output": o},
    call_ids,
    texts(max_size=20) | st.lists(text_parts | image_parts, max_size=2),
)
reasoning = st.builds(
    lambda i, t: {
        "type": "reasoning",
        "id": f"rs_{i}",
        "summary": [{"type": "summary_text", "text": t}],
    },
    st.integers(0, 9),
    texts(max_size=10),
)
items = st.lists(
    st.one_of(easy, output_message, function_call, function_output, reasoning), max_size=8
)


@given(items)
def test_items_to_memrules_and_back_are_lossless(given_items: list[dict[str, Any]]) -> None:
    from memrules.integrations.openai_agents import from_openai_agents, to_openai_agents

    conversation = from_openai_agents(given_items)
    assert to_openai_agents(conversation) == given_items
    assert from_openai_agents(to_openai_agents(conversation)) == conversation


def test_what_the_items_mean() -> None:
    from memrules import Opaque, Text, ToolCall, ToolResult
    from memrules.integrations.openai_agents import from_openai_agents

    developer, call, output, thought = from_openai_agents(
        [
            {"role": "developer", "content": "be brief"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "42"},
            {"type": "reasoning", "id": "rs", "summary": []},
        ]
    )
    assert (developer.role, developer.parts) == ("system", (Text(text="be brief"),))
    assert (call.role, call.parts) == ("assistant", (ToolCall(id="c1", name="f", arguments="{}"),))
    assert (output.role, output.parts) == ("tool", (ToolResult(call_id="c1", content="42"),))
    assert thought.parts[0].kind == "reasoning"
    assert isinstance(thought.parts[0], Opaque)


def test_a_bad_item_is_named_by_index() -> None:
    from memrules.integrations.openai_agents import from_openai_agents

    with pytest.raises(MessageFormatError, match=r"messages\[1\]: an item is a mapping"):
        from_openai_agents([{"role": "user", "content": "hi"}, "hello"])
    with pytest.raises(MessageFormatError, match=r"messages\[0\]\.content: content must be"):
        from_openai_agents([{"role": "user", "content": 7}])


def _history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You read files."}]
    for i in range(turns):
        out.append({"role": "user", "content": f"read file {i}"})
        out.append(
            {
                "type": "function_call",
                "call_id": f"call_{i}",
                "name": "read_file",
                "arguments": f'{{"path": "f{i}.py"}}',
            }
        )
        out.append({"type": "function_call_output", "call_id": f"call_{i}", "output": "x " * 80})
        out.append({"role": "assistant", "content": f"file {i} read"})
    return out


CONFIG = """
context_window_tokens: 100000
max_tokens: 600
strategies:
  - type: clear_tool_results
    keep_pairs: 2
    preview_chars: 0  # a 200-character preview would be the whole 160-character output
  - type: sliding_window
    keep_messages: 14  # the system message, the task, then the last three turns
"""


def pairing_problems(given_items: list[Any]) -> list[str]:
    calls: set[str] = set()
    answered: set[str] = set()
    problems = []
    for i, item in enumerate(given_items):
        kind = item.get("type") if isinstance(item, dict) else getattr(item, "type", None)
        get = item.get if isinstance(item, dict) else lambda k, i=item: getattr(i, k)
        if kind == "function_call":
            calls.add(get("call_id"))
        elif kind == "function_call_output":
            if get("call_id") not in calls:
                problems.append(f"[{i}] output {get('call_id')} has no call before it")
            answered.add(get("call_id"))
    return problems + [f"call {c} has no output" for c in calls - answered]


def test_a_wrapped_sqlite_session_round_trips_and_compacts() -> None:
    from memrules.integrations.openai_agents import CompactingSession

    async def scenario() -> None:
        inner = SQLiteSession("user-42")
        session = CompactingSession(inner, load_pipeline(CONFIG))
        assert session.session_id == "user-42"
        history = _history(2)
        await session.add_items(history)
        assert await inner.get_items() == history  # stored as given
        assert await session.get_items() == history  # under budget: as it was
        more = _history(12)[len(history) :]
        await session.add_items(more)
        stored = await inner.get_items()
        assert stored == history + more  # the store keeps everything
        compacted = await session.get_items()
        assert compacted != stored
        cleared = [
            c for c in compacted if c.get("type") == "function_call_output" and c not in stored
        ]
        assert cleared
        assert all(set(c) == {"type", "call_id", "output"} for c in cleared)
        assert pairing_problems(compacted) == []
        assert compacted[0] == {"role": "system", "content": "You read files."}
        assert compacted[-1] == stored[-1]
        assert all(c in stored or c in cleared for c in compacted)
        report = session.last_result.report  # type: ignore[union-attr]
        assert report.tokens_after < 600 <= report.tokens_before
        assert await session.pop_item() == stored[-1]
        await session.clear_session()
        assert await session.get_items() == []

    asyncio.run(scenario())


# --- real runs ----------------------------------------------------------------------------


class ToolCallingModel(Model):  # type: ignore[misc,valid-type]
    """A fake model: on a new user turn it calls ``read_file`` once, then,
    given the output, answers. Records every input it is given."""

    def __init__(self) -> None:
        self.inputs: list[list[Any]] = []
        self.turn = 0

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> Any:
        given = [input] if isinstance(input, str) else list(input)
        self.inputs.append(given)
        last = given[-1]
        kind = last.get("type") if isinstance(last, dict) else None
        if kind == "function_call_output":
            output: list[Any] = [
                ResponseOutputMessage(
                    id=f"msg_{self.turn}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[
                        ResponseOutputText(
                            type="output_text", text=f"done {self.turn}", annotations=[]
                        )
                    ],
                )
            ]
        else:
            self.turn += 1
            output = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call_{self.turn}",
                    name="read_file",
                    arguments=f'{{"path": "f{self.turn}.py"}}',
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError


def _agent(model: ToolCallingModel) -> Any:
    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"{path}: " + "word " * 80

    return Agent(
        name="reader",
        instructions="Read files.",
        model=model,
        tools=[read_file],
        model_settings=ModelSettings(),
    )


def test_agent_runs_with_a_compacting_session_send_valid_pairs() -> None:
    from memrules.integrations.openai_agents import CompactingSession

    pipeline = load_pipeline(CONFIG)
    model = ToolCallingModel()
    agent = _agent(model)

    async def scenario() -> None:
        inner = SQLiteSession("runs")
        session = CompactingSession(inner, pipeline)
        for i in range(25):
            result = await Runner.run(agent, f"read file {i}", session=session)
            assert result.final_output == f"done {i + 1}"
        stored = await inner.get_items()
        assert len(stored) == 25 * 4
        assert pairing_problems(stored) == []

    asyncio.run(scenario())
    for k, sent in enumerate(model.inputs):
        assert pairing_problems(sent) == [], f"model call {k}"
    first_calls = model.inputs[::2]  # each run's first call: compacted history + input
    from memrules.integrations.openai_agents import from_openai_agents

    assert max(pipeline.count(from_openai_agents(g[:-1])) for g in first_calls) < 600
    assert len(first_calls[-1]) < 24 * 4
    assert first_calls[-1][-1]["content"] == "read file 24"


def test_agent_runs_with_the_session_input_callback_send_valid_pairs() -> None:
    from memrules.integrations.openai_agents import session_input_callback

    pipeline = load_pipeline(CONFIG)
    model = ToolCallingModel()
    agent = _agent(model)
    config = RunConfig(session_input_callback=session_input_callback(pipeline))

    async def scenario() -> None:
        session = SQLiteSession("callback")
        for i in range(20):
            await Runner.run(agent, f"read file {i}", session=session, run_config=config)

    asyncio.run(scenario())
    for k, sent in enumerate(model.inputs):
        assert pairing_problems(sent) == [], f"model call {k}"
    first_calls = model.inputs[::2]
    assert len(first_calls[-1]) < 20 * 4
    last = first_calls[-1][-1]
    assert (last.get("role"), last.get("content")) == ("user", "read file 19")


def test_the_agents_items_conversion_is_an_adapter_that_imports_no_framework() -> None:
    """The conversion lives in ``memrules._adapters.openai_agents`` (re-exported
    here), and importing it imports no framework: only the hooks need one."""
    import subprocess
    import sys

    import memrules._adapters.openai_agents as adapter
    import memrules.integrations.openai_agents as integration

    for name in ("from_openai_agents", "to_openai_agents", "KEY"):
        assert getattr(integration, name) is getattr(adapter, name)
    code = (
        "import sys, memrules._adapters.openai_agents; "
        "print(sorted(m.split('.')[0] for m in sys.modules if m.split('.')[0] in "
        "{'langchain_core', 'langchain', 'langgraph', 'agents', 'pydantic_ai', 'pydantic_core', "
        "'pydantic'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# --- every model call of a run ----------------------------------------------------------

EVERY_CALL = """
max_tokens: 2000
strategies:
  - type: clear_tool_results
    keep_pairs: 3
  - type: sliding_window
    keep_messages: 12
"""


class ManyCallsModel(Model):  # type: ignore[misc,valid-type]
    """A scripted model (the SDK's own ``Model`` interface): calls
    ``read_file`` ``calls - 1`` times in one run, then answers. Records the
    instructions and input of every call."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.inputs: list[tuple[Any, list[Any]]] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> Any:
        given = [input] if isinstance(input, str) else list(input)
        self.inputs.append((system_instructions, given))
        n = len(self.inputs)
        if n < self.calls:
            output: list[Any] = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call_{n}",
                    name="read_file",
                    arguments=f'{{"path": "f{n}.py"}}',
                )
            ]
        else:
            text = ResponseOutputText(type="output_text", text="all read", annotations=[])
            output = [
                ResponseOutputMessage(
                    id="msg_end",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[text],
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError


def _sent_tokens(pipeline: Any, instructions: Any, given: list[Any]) -> int:
    from memrules.integrations.openai_agents import from_openai_agents

    head = [{"role": "system", "content": instructions}] if instructions else []
    return int(pipeline.count(from_openai_agents([*head, *given])))


def test_the_input_filter_keeps_every_model_call_of_a_run_under_budget() -> None:
    from memrules.integrations.openai_agents import call_model_input_filter

    pipeline = load_pipeline(EVERY_CALL)
    model = ManyCallsModel(30)
    agent = _agent(model)  # type: ignore[arg-type]
    model_filter = call_model_input_filter(pipeline, over_budget="raise")
    config = RunConfig(call_model_input_filter=model_filter)

    async def scenario() -> Any:
        return await Runner.run(agent, "read thirty files", run_config=config, max_turns=40)

    result = asyncio.run(scenario())
    assert result.final_output == "all read"
    assert len(model.inputs) == 30
    sizes = [_sent_tokens(pipeline, i, given) for i, given in model.inputs]
    assert max(sizes) < 2000, sizes
    assert model_filter.last_result is not None
    assert model_filter.last_result.report.compacted
    for k, (instructions, sent) in enumerate(model.inputs):
        assert instructions == "Read files."
        assert pairing_problems(sent) == [], f"model call {k}"
        assert sent[0].get("content") == "read thirty files"  # the task is never dropped
    # Without the filter the same run's last calls are far over the budget:
    # what the session or the callback compacts at the start of a run is not enough.
    bare = ManyCallsModel(30)
    asyncio.run(Runner.run(_agent(bare), "read thirty files", max_turns=40))  # type: ignore[arg-type]
    assert max(_sent_tokens(pipeline, i, g) for i, g in bare.inputs) > 2000


def test_the_input_filter_passes_over_budget_through() -> None:
    from memrules import OverBudgetError
    from memrules.integrations.openai_agents import call_model_input_filter

    pipeline = load_pipeline("{max_tokens: 20, strategies: []}")
    model = ManyCallsModel(1)
    config = RunConfig(
        call_model_input_filter=call_model_input_filter(pipeline, over_budget="raise")
    )
    with pytest.raises(OverBudgetError):
        asyncio.run(Runner.run(_agent(model), "read " * 40, run_config=config))  # type: ignore[arg-type]
    assert model.inputs == []  # nothing was sent
