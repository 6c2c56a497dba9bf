"""LangChain and LangGraph, against the real installed frameworks: lossless
conversion both ways (hypothesis), and agent loops whose every model call
sees valid tool pairs under the hook."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrules import ConfigError, MessageFormatError, load_pipeline
from memrules._core.messages import Conversation
from memrules._engine.observe import RunInfo, StepInfo
from memrules.testing import conversations, texts

pytestmark = [
    # create_react_agent's pre_model_hook is what this integration plugs into;
    # LangGraph points new code at langchain's create_agent (tested too).
    pytest.mark.filterwarnings("ignore:create_react_agent has been moved"),
    pytest.mark.skipif(
        importlib.util.find_spec("langchain_core") is None
        or importlib.util.find_spec("langgraph") is None,
        reason="needs the langchain extra: pip install 'memrules[langchain]'",
    ),
]

pytest.importorskip(
    "langchain_core", reason="needs the langchain extra: pip install 'memrules[langchain]'"
)
pytest.importorskip(
    "langgraph", reason="needs the langchain extra: pip install 'memrules[langchain]'"
)

from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    AIMessageChunk,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from pydantic import Field  # noqa: E402

# --- lossless conversion -------------------------------------------------------------


@given(conversations(max_size=16))
def test_memrules_to_langchain_and_back_is_lossless(conversation: Conversation) -> None:
    from memrules.integrations.langchain import from_langchain, to_langchain

    lc = to_langchain(conversation)
    assert from_langchain(lc) == conversation
    assert to_langchain(from_langchain(lc)) == lc


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.text(max_size=8),
    st.floats(allow_nan=False, allow_infinity=False),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=3)
ids = st.none() | st.text(alphabet="abcdef0123456789-", min_size=1, max_size=8)


def _text_block() -> st.SearchStrategy[Any]:
    plain = st.builds(lambda t: {"type": "text", "text": t}, texts(max_size=12))
    annotated = st.builds(
        lambda t, i: {"type": "text", "text": t, "id": i, "annotations": []},
        texts(max_size=12),
        st.text(max_size=4),
    )
    return st.one_of(texts(max_size=12), plain, annotated)


def _other_block() -> st.SearchStrategy[Any]:
    image = st.builds(
        lambda n: {"type": "image_url", "image_url": {"url": f"https://x/{n}.png"}},
        st.integers(0, 9),
    )
    image_v1 = st.builds(lambda n: {"type": "image", "url": f"https://x/{n}.png"}, st.integers())
    thinking = st.builds(
        lambda t: {"type": "thinking", "thinking": t, "signature": "s"}, texts(max_size=8)
    )
    reasoning = st.builds(lambda t: {"type": "reasoning", "reasoning": t}, texts(max_size=8))
    untyped = st.builds(lambda o: {"data": o}, json_values)
    non_standard = st.builds(lambda o: {"type": "non_standard", "value": o}, json_objects)
    return st.one_of(image, image_v1, thinking, reasoning, untyped, non_standard)


def _content(*, results: bool = False) -> st.SearchStrategy[Any]:
    blocks = [_text_block(), _text_block(), _other_block()]
    if results:
        blocks.append(
            st.builds(
                lambda i, c, e: {"type": "tool_result", "tool_use_id": i, "content": c, **e},
                st.text(alphabet="abc123", min_size=1, max_size=5),
                texts(max_size=10) | st.lists(_text_block(), max_size=2),
                st.sampled_from([{}, {"is_error": True}, {"is_error": False}]),
            )
        )
    return texts(max_size=20) | st.lists(st.one_of(blocks), max_size=4)


def _tool_calls() -> st.SearchStrategy[list[dict[str, Any]]]:
    call = st.builds(
        lambda n, a, i: {"name": n, "args": a, "id": i, "type": "tool_call"},
        st.sampled_from(["read_file", "search", "run"]),
        json_objects,
        ids,
    )
    return st.lists(call, max_size=3)


def _invalid_calls() -> st.SearchStrategy[list[dict[str, Any]]]:
    call = st.builds(
        lambda n, a, i, e: {"name": n, "args": a, "id": i, "error": e, "type": "invalid_tool_call"},
        st.none() | st.sampled_from(["read_file", "search"]),
        st.none() | st.sampled_from(["not json {", '{"a": 1}', "[1, 2]", ""]),
        ids,
        st.none() | st.sampled_from(["bad JSON", "unknown tool"]),
    )
    return st.lists(call, max_size=2)


common = {
    "id": ids,
    "name": st.none() | st.sampled_from(["alice", "bob"]),
    "additional_kwargs": json_objects,
    "response_metadata": json_objects,
}


def _langchain_messages() -> st.SearchStrategy[Any]:
    if importlib.util.find_spec("langchain_core") is None:  # pragma: no cover
        return st.nothing()
    usage = st.none() | st.builds(
        lambda i, o: {"input_tokens": i, "output_tokens": o, "total_tokens": i + o},
        st.integers(0, 99),
        st.integers(0, 99),
    )
    return st.one_of(
        st.builds(SystemMessage, content=_content(), **common),
        st.builds(HumanMessage, content=_content(results=True), **common),
        st.builds(
            AIMessage,
            content=_content(),
            tool_calls=_tool_calls(),
            invalid_tool_calls=_invalid_calls(),
            usage_metadata=usage,
            **common,
        ),
        st.builds(
            ToolMessage,
            content=_content(),
            tool_call_id=st.text(alphabet="abc123", min_size=1, max_size=5),
            status=st.sampled_from(["success", "error"]),
            artifact=json_values,
            **common,
        ),
        st.builds(
            ChatMessage,
            content=_content(),
            role=st.sampled_from(["developer", "user", "assistant", "critic"]),
            **common,
        ),
        st.builds(FunctionMessage, content=_content(), name=st.sampled_from(["f", "g"])),
        st.builds(AIMessageChunk, content=_content(), **common),
    )


@settings(max_examples=150)
@given(st.lists(_langchain_messages(), max_size=6))
def test_langchain_to_memrules_and_back_is_lossless(messages: list[Any]) -> None:
    from memrules.integrations.langchain import from_langchain, to_langchain

    conversation = from_langchain(messages)
    back = to_langchain(conversation)
    assert back == messages
    assert [type(m) for m in back] == [type(m) for m in messages]
    assert from_langchain(back) == conversation


def test_what_the_conversion_means() -> None:
    from memrules import Text, ToolCall, ToolResult
    from memrules.integrations.langchain import from_langchain

    call = {"name": "read_file", "args": {"path": "a.py"}, "id": "c1", "type": "tool_call"}
    system, human, ai, result, anthropic = from_langchain(
        [
            SystemMessage("be brief", id="s"),
            HumanMessage("read a.py"),
            AIMessage("", tool_calls=[call]),
            ToolMessage("print(1)", tool_call_id="c1", status="error", name="read_file"),
            HumanMessage([{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}, "thanks"]),
        ]
    )
    assert (system.role, system.parts, system.id, system.metadata) == (
        "system",
        (Text(text="be brief"),),
        "s",
        {},
    )
    assert human.role == "user"
    assert ai.parts == (ToolCall(id="c1", name="read_file", arguments='{"path": "a.py"}'),)
    assert result.role == "tool"
    assert result.name == "read_file"
    assert result.parts == (ToolResult(call_id="c1", content="print(1)", is_error=True),)
    assert anthropic.parts == (ToolResult(call_id="c1", content="ok"), Text(text="thanks"))


def test_what_is_not_a_conversation_message_is_named_by_index() -> None:
    from memrules.integrations.langchain import from_langchain, to_langchain

    with pytest.raises(MessageFormatError, match=r"messages\[1\]: a RemoveMessage is an update"):
        from_langchain([HumanMessage("hi"), RemoveMessage(id="x")])
    with pytest.raises(
        MessageFormatError, match=r"messages\[0\]: expected a LangChain BaseMessage"
    ):
        from_langchain([{"role": "user", "content": "hi"}])
    from memrules import ToolResult
    from memrules._core.messages import message

    two = message("tool", ToolResult(call_id="a"), ToolResult(call_id="b"))
    with pytest.raises(
        MessageFormatError, match=r"messages\[0\]: a LangChain ToolMessage holds one"
    ):
        to_langchain([two])


# --- the hook, in real agent loops ------------------------------------------------------

CONFIG = """
context_window_tokens: 100000
max_tokens: 1500
strategies:
  - type: deduplicate_file_reads
  - type: clear_tool_results
    keep_pairs: 3
    preview_chars: 0  # a 200-character preview is most of a 300-character read
  - type: sliding_window
    keep_messages: 24
"""


def pairing_problems(messages: list[Any]) -> list[str]:
    """What a provider would reject: a tool result whose call is not before
    it, or a call with no result after it."""
    problems = []
    calls: dict[str, int] = {}
    answered: set[str] = set()
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage):
            for c in m.tool_calls:
                calls[c["id"]] = i
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in calls:
                problems.append(f"[{i}] result {m.tool_call_id} has no call before it")
            answered.add(m.tool_call_id)
    problems += [f"call {c} has no result" for c in calls if c not in answered]
    return problems


class ToolCallingModel(BaseChatModel):  # type: ignore[misc,valid-type]
    """A fake chat model that calls tools for ``steps`` turns (one to three
    calls at a time), then answers; it records every input it was given."""

    steps: int = 200
    inputs: list[list[Any]] = Field(default_factory=list)
    turns: int = 0

    @property
    def _llm_type(self) -> str:
        return "tool-calling-fake"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingModel:
        return self

    def _generate(
        self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        self.inputs.append(list(messages))
        turn = self.turns
        self.turns += 1
        if turn >= self.steps:
            reply = AIMessage("All files read.")
        else:
            calls = [
                {
                    "name": "read_file",
                    "args": {"path": f"src/file_{(turn * 3 + k) % 17}.py"},
                    "id": f"call_{turn}_{k}",
                    "type": "tool_call",
                }
                for k in range(turn % 3 + 1)
            ]
            reply = AIMessage(f"step {turn}: reading", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _read_file() -> Any:
    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path}: " + " ".join(f"line{i}" for i in range(40))

    return read_file


def _start() -> list[Any]:
    return [SystemMessage("You read files."), HumanMessage("Read every file, one by one.")]


def _check_inputs(model: ToolCallingModel, pipeline: Any) -> None:
    assert model.turns == model.steps + 1
    for k, seen in enumerate(model.inputs):
        assert pairing_problems(seen) == [], f"model call {k}"
        assert isinstance(seen[0], SystemMessage), f"model call {k}"
        assert seen[1].content == "Read every file, one by one.", f"model call {k}"
        assert pipeline.count(_from(seen)) < 1500, f"model call {k}"


def _from(messages: list[Any]) -> Conversation:
    from memrules.integrations.langchain import from_langchain

    return from_langchain(messages)


@pytest.mark.parametrize(
    "mode", [pytest.param("llm_input_messages", marks=pytest.mark.slow), "remove_messages"]
)
def test_a_200_step_langgraph_agent_keeps_every_tool_pair(mode: str) -> None:
    from langgraph.prebuilt import create_react_agent

    from memrules.integrations.langchain import PreModelHook

    pipeline = load_pipeline(CONFIG)
    model = ToolCallingModel(steps=200)
    agent = create_react_agent(
        model,
        [_read_file()],
        pre_model_hook=PreModelHook(pipeline, mode=mode),  # type: ignore[arg-type]
    )
    state = agent.invoke({"messages": _start()}, {"recursion_limit": 1000})
    _check_inputs(model, pipeline)
    history = state["messages"]
    assert pairing_problems(history) == []
    calls = sum(len(m.tool_calls) for m in history if isinstance(m, AIMessage))
    if mode == "llm_input_messages":
        assert calls == sum(k % 3 + 1 for k in range(200))  # the history is whole
        assert len(model.inputs[-1]) < len(history)
    else:  # the history itself was rewritten
        assert calls < sum(k % 3 + 1 for k in range(200))
        assert len(history) < 100
        assert history[-1].content == "All files read."


@pytest.mark.parametrize("mode", ["llm_input_messages", "remove_messages"])
def test_a_langchain_v1_agent_with_the_middleware_keeps_every_tool_pair(mode: str) -> None:
    pytest.importorskip("langchain.agents", reason="needs langchain >= 1.0 for middleware")
    from langchain.agents import create_agent

    from memrules.integrations.langchain import memrules_middleware

    pipeline = load_pipeline(CONFIG)
    model = ToolCallingModel(steps=60)
    agent = create_agent(
        model, [_read_file()], middleware=[memrules_middleware(pipeline, mode=mode)]
    )
    state = agent.invoke({"messages": _start()}, {"recursion_limit": 1000})
    _check_inputs(model, pipeline)
    history = state["messages"]
    assert pairing_problems(history) == []
    calls = sum(len(m.tool_calls) for m in history if isinstance(m, AIMessage))
    made = sum(k % 3 + 1 for k in range(60))
    assert calls == made if mode == "llm_input_messages" else calls < made


def test_kept_messages_are_handed_back_as_the_same_objects() -> None:
    from memrules.integrations.langchain import compact_langchain

    pipeline = load_pipeline(
        "max_messages: 3\nstrategies:\n  - type: sliding_window\n    keep_messages: 3\n"
    )
    messages = [SystemMessage("s"), *(HumanMessage(f"q{i}") for i in range(5))]
    out, result = compact_langchain(pipeline, messages)
    assert [m.content for m in out] == ["s", "q0", "q4"]  # the task, then the question
    assert all(any(m is k for k in messages) for m in out)
    assert result.report.compacted


def test_a_changed_message_keeps_its_class_id_and_fields() -> None:
    from memrules.integrations.langchain import compact_langchain

    pipeline = load_pipeline(
        "max_messages: 1\nstrategies:\n  - type: clear_tool_results\n    keep_pairs: 0\n"
    )
    call = {"name": "read_file", "args": {"path": "a"}, "id": "c1", "type": "tool_call"}
    result = ToolMessage(
        "x " * 200, tool_call_id="c1", id="t1", artifact={"rows": 3}, response_metadata={"k": 1}
    )
    out, _ = compact_langchain(
        pipeline, [HumanMessage("go"), AIMessage("", tool_calls=[call]), result, HumanMessage("?")]
    )
    cleared = out[2]
    assert type(cleared) is ToolMessage
    assert (cleared.id, cleared.artifact, cleared.response_metadata) == (
        "t1",
        {"rows": 3},
        {"k": 1},
    )
    assert cleared.content != result.content
    assert "cleared" in cleared.content


def test_remove_messages_mode_makes_no_update_when_nothing_changed() -> None:
    from memrules.integrations.langchain import PreModelHook

    hook = PreModelHook(load_pipeline(CONFIG), mode="remove_messages")
    assert hook({"messages": _start()}) == {}
    kept = PreModelHook(load_pipeline(CONFIG))({"messages": _start()})
    assert kept["llm_input_messages"] == _start()


def test_a_bad_mode_is_a_config_error() -> None:
    from memrules.integrations.langchain import PreModelHook, memrules_middleware

    with pytest.raises(ConfigError, match="mode='rewrite' must be one of"):
        PreModelHook(load_pipeline(CONFIG), mode="rewrite")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="mode='rewrite' must be one of"):
        memrules_middleware(load_pipeline(CONFIG), mode="rewrite")  # type: ignore[arg-type]


class Ids:
    def __init__(self) -> None:
        self.ids: list[str | None] = []

    def observe_run(self, run: RunInfo, proceed: Callable[[], Any]) -> None:
        self.ids.append(run.conversation_id)
        proceed()

    def observe_step(self, step: StepInfo, proceed: Callable[[], Any]) -> None:
        proceed()


def test_the_thread_id_names_the_conversation_to_observers() -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent

    from memrules.integrations.langchain import PreModelHook

    ids = Ids()
    pipeline = load_pipeline(CONFIG, observers=[ids])
    agent = create_react_agent(
        ToolCallingModel(steps=2),
        [_read_file()],
        pre_model_hook=PreModelHook(pipeline),
        checkpointer=InMemorySaver(),
    )
    agent.invoke({"messages": _start()}, {"configurable": {"thread_id": "thread-9"}})
    assert ids.ids == ["thread-9"] * 3


def test_arguments_that_langchain_would_rewrite_are_kept_verbatim() -> None:
    from memrules import ToolCall
    from memrules._core.messages import message
    from memrules.integrations.langchain import from_langchain, to_langchain

    calls = (
        ToolCall(id="a", name="f", arguments='{"q":"\\u4f60"}'),  # not json.dumps' spelling
        ToolCall(id="b", name="f", arguments="not json {"),
        ToolCall(id="c", name="f", arguments=json.dumps({"x": 1})),
    )
    conversation = (message("assistant", *calls),)
    (ai,) = to_langchain(conversation)
    assert [c["id"] for c in ai.tool_calls] == ["a", "c"]
    assert [c["id"] for c in ai.invalid_tool_calls] == ["b"]
    assert from_langchain([ai]) == conversation


def test_the_langgraph_example_runs_and_keeps_every_pair() -> None:
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "langgraph_agent.py"
    for mode in ("llm_input_messages", "remove_messages"):
        out = subprocess.run(
            [sys.executable, "-W", "ignore", str(example), "--mode", mode, "--turns", "30"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "broken tool pairs in any prompt: 0" in out
        assert "model calls: 31" in out
        largest = int(out.split("largest prompt sent: ")[1].split()[0])
        assert largest < 2000


def test_the_langchain_conversion_is_an_adapter_that_imports_no_framework() -> None:
    """The conversion lives in ``memrules._adapters.langchain`` (re-exported here), and importing
    it imports no framework: only the hooks need one."""
    import subprocess
    import sys

    import memrules._adapters.langchain as adapter
    import memrules.integrations.langchain as integration

    for name in ("from_langchain", "to_langchain"):
        assert getattr(integration, name) is getattr(adapter, name)
    code = (
        "import sys, memrules._adapters.langchain; "
        "print(sorted(m.split('.')[0] for m in sys.modules if m.split('.')[0] in "
        "{'langchain_core', 'langchain', 'langgraph', 'agents', 'pydantic_ai', 'pydantic_core', "
        "'pydantic'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("mode", ["llm_input_messages", "remove_messages"])
def test_the_middleware_converts_each_message_once_per_thread(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call converts what the turn added, not the history: over a whole
    agent run, conversions are about the messages the run made, not the sum
    of the history's lengths over its model calls."""
    pytest.importorskip("langchain.agents", reason="needs langchain >= 1.0 for middleware")
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    import memrules._adapters.langchain as adapter
    from memrules.integrations.langchain import memrules_middleware

    converted = 0
    one = adapter._one

    def counting(message: Any, index: int) -> Any:
        nonlocal converted
        converted += 1
        return one(message, index)

    monkeypatch.setattr(adapter, "_one", counting)
    model = ToolCallingModel(steps=40)
    agent = create_agent(
        model,
        [_read_file()],
        middleware=[memrules_middleware(load_pipeline(CONFIG), mode=mode)],
        checkpointer=InMemorySaver(),
    )
    config = {"recursion_limit": 1000, "configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": _start()}, config)  # type: ignore[arg-type]
    made = len(_start()) + sum(1 + k % 3 + 1 for k in range(40)) + 1  # calls, results, answer
    every_call = sum(len(seen) for seen in model.inputs)
    assert converted <= 2 * made, (converted, made, every_call)
    assert every_call > 5 * made  # what converting the history on every call would cost
