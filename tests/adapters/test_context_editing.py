"""Provider-side context editing: the config section, the edits written into
request bodies (validated against the SDKs' types), and local and provider
modes taking the same blocks, checked against an independent reading of
Anthropic's documented rule on the JSON bodies."""

from __future__ import annotations

import copy
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules import ConfigError, MemoryConfig, MemoryPlugin, from_responses, load_config
from memrules._adapters.context_editing import (
    CLEARED_RESULT,
    ClearThinking,
    ClearToolUses,
    Compaction,
    ProviderEditing,
    write_context_management,
)

beta = pytest.importorskip("anthropic.types.beta", reason="needs the anthropic SDK (test extra)")
responses_params = pytest.importorskip(
    "openai.types.responses.response_create_params", reason="needs the openai SDK (test extra)"
)

from pydantic import TypeAdapter  # noqa: E402

ANTHROPIC_CM = TypeAdapter(beta.BetaContextManagementConfigParam)
OPENAI_CM = TypeAdapter(list[responses_params.ContextManagement])


def _forced(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _forced(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ValidatorIterator":
        return [_forced(v) for v in value]
    return value


# --------------------------------------------------------------------------- settings


_tool_uses = st.none() | st.builds(
    ClearToolUses,
    trigger=st.integers(1, 200_000),
    trigger_tool_uses=st.none() | st.integers(1, 50),
    keep=st.integers(0, 10),
    clear_at_least=st.integers(0, 10_000),
    exclude_tools=st.lists(st.sampled_from(["web_search", "read_file", "bash"]), max_size=2),
    clear_tool_inputs=st.booleans(),
)
_thinking = st.none() | st.builds(ClearThinking, keep=st.integers(1, 5) | st.just("all"))
_compaction = st.none() | st.builds(Compaction, compact_threshold=st.integers(1000, 500_000))
editings = (
    st.tuples(_tool_uses, _thinking, _compaction)
    .filter(lambda edits: any(e is not None for e in edits))
    .map(lambda e: ProviderEditing(clear_tool_uses=e[0], clear_thinking=e[1], compaction=e[2]))
)


@given(editings)
def test_written_edits_validate_against_the_sdk_types(editing: ProviderEditing) -> None:
    body = {"model": "m", "messages": []}
    anthropic = write_context_management(body, editing, provider="anthropic")
    if editing.clear_tool_uses or editing.clear_thinking:
        written = anthropic["context_management"]
        assert _forced(ANTHROPIC_CM.validate_python(written)) == written
        # Thinking first: the API refuses the other order.
        types = [e["type"] for e in written["edits"]]
        assert types == sorted(types, key=lambda t: t != "clear_thinking_20251015")
    else:
        assert "context_management" not in anthropic
    openai = write_context_management({"model": "m", "input": []}, editing, provider="openai")
    if editing.compaction:
        written = openai["context_management"]
        assert OPENAI_CM.validate_python(written) == written
        assert written == [
            {"type": "compaction", "compact_threshold": editing.compaction.compact_threshold}
        ]
    else:
        assert "context_management" not in openai
    local = attrs.evolve(editing, local=True)
    assert write_context_management(body, local, provider="anthropic") == body


def test_the_callers_own_context_management_wins() -> None:
    mine = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
    body = {"model": "m", "messages": [], "context_management": mine}
    editing = ProviderEditing(clear_tool_uses=ClearToolUses())
    assert (
        write_context_management(body, editing, provider="anthropic")["context_management"] is mine
    )


def test_the_section_reads_from_yaml() -> None:
    config = load_config(
        "provider_editing:\n"
        "  clear_tool_uses:\n"
        "    trigger: {input_tokens: 30000}\n"
        "    keep: 2\n"
        "    clear_at_least: 5000\n"
        "    exclude_tools: [web_search]\n"
        "  clear_thinking: {keep: all}\n"
        "  compaction: {compact_threshold: 200000}\n"
    )
    assert config.provider_editing == ProviderEditing(
        clear_tool_uses=ClearToolUses(
            trigger=30000, keep=2, clear_at_least=5000, exclude_tools=("web_search",)
        ),
        clear_thinking=ClearThinking(keep="all"),
        compaction=Compaction(compact_threshold=200000),
    )
    defaults = load_config("provider_editing:\n  clear_tool_uses: true\n  local: true\n")
    assert defaults.provider_editing == ProviderEditing(clear_tool_uses=ClearToolUses(), local=True)
    assert load_config("{}").provider_editing is None


@pytest.mark.parametrize(
    ("text", "path", "line", "words"),
    [
        ("provider_editing: {}\n", "provider_editing", 1, "asks for no edit"),
        ("provider_editing:\n  clear: true\n", "provider_editing.clear", 2, "clear_tool_uses"),
        (
            "provider_editing:\n  clear_thinking:\n    keep: 0\n",
            "provider_editing.clear_thinking.keep",
            2,
            "tool-use loop in progress",
        ),
        (
            "x: 1\nprovider_editing:\n  clear_tool_uses:\n    trigger: {tokens: 5}\n",
            "provider_editing.clear_tool_uses.trigger",
            3,
            "input_tokens",
        ),
        (
            "provider_editing:\n  clear_tool_uses:\n    keep: -1\n",
            "provider_editing.clear_tool_uses.keep",
            2,
            "at least 0",
        ),
        (
            "provider_editing:\n  compaction: {compact_threshold: many}\n",
            "provider_editing.compaction.compact_threshold",
            2,
            "tokens",
        ),
        (
            "provider_editing:\n  clear_thinking: true\n  local: yes please\n",
            "provider_editing.local",
            3,
            "true or false",
        ),
    ],
)
def test_bad_sections_name_file_path_and_line(
    tmp_path: Any, text: str, path: str, line: int, words: str
) -> None:
    file = tmp_path / "memrules.yaml"
    file.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(file)
    problems = [p for p in caught.value.problems if p.yaml_path == path]
    assert problems, caught.value.problems
    assert problems[0].line == line
    assert words in problems[0].message
    assert str(file) in str(caught.value)


# --------------------------------------------------------------------------- local vs provider


@st.composite
def anthropic_loops(draw: st.DrawFn) -> dict[str, Any]:
    """An Anthropic agent loop with thinking, tool uses (some of tools to
    exclude) and results; sometimes ending inside a tool-use loop."""
    messages: list[dict[str, Any]] = []
    n = 0
    for turn in range(draw(st.integers(1, 5))):
        messages.append(
            {"role": "user", "content": f"Question {turn}: " + "why " * draw(st.integers(1, 30))}
        )
        for _ in range(draw(st.integers(0, 3))):
            content: list[dict[str, Any]] = []
            if draw(st.booleans()):
                content.append(
                    {
                        "type": "thinking",
                        "thinking": "hmm " * draw(st.integers(1, 40)),
                        "signature": f"sig{n}",
                    }
                )
            if draw(st.integers(0, 4)) == 0:
                content.append({"type": "redacted_thinking", "data": f"opaque{n}"})
            ids = [f"toolu_{n}_{k}" for k in range(draw(st.integers(1, 2)))]
            tools = [draw(st.sampled_from(["read_file", "bash", "web_search"])) for _ in ids]
            content += [
                {"type": "tool_use", "id": i, "name": t, "input": {"path": f"f{n}.py"}}
                for i, t in zip(ids, tools, strict=True)
            ]
            messages.append({"role": "assistant", "content": content})
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": i,
                    "content": "x = 1\n" * draw(st.integers(1, 80)),
                }
                for i in ids
            ]
            messages.append({"role": "user", "content": results})
            n += 1
        if draw(st.booleans()):
            thinking = (
                [{"type": "thinking", "thinking": "so", "signature": f"sig_a{turn}"}]
                if draw(st.booleans())
                else []
            )
            messages.append(
                {"role": "assistant", "content": [*thinking, {"type": "text", "text": "Answer."}]}
            )
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You fix code.",
        "messages": messages,
    }


def _expected(
    body: dict[str, Any], keep_tools: int, excluded: set[str], keep_turns: int
) -> tuple[set[str], set[str]]:
    """Anthropic's rule read off the JSON: (the tool_use ids whose results
    go, the signatures or data of the thinking blocks that go), triggers
    aside."""
    names = {
        b["id"]: b["name"]
        for m in body["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "tool_use"
    }
    results = [
        b["tool_use_id"]
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result" and names[b["tool_use_id"]] not in excluded
    ]
    tools = set(results[: max(0, len(results) - keep_tools)])
    turns: list[list[str]] = []
    for m in body["messages"]:
        opens = m["role"] == "user" and (
            isinstance(m["content"], str) or any(b["type"] != "tool_result" for b in m["content"])
        )
        if opens:
            turns.append([])
        elif m["role"] == "assistant":
            turns[-1] += [
                b.get("signature") or b["data"] for b in m["content"] if "thinking" in b["type"]
            ]
    with_thinking = [t for t in turns if t]
    thinking = {k for t in with_thinking[: max(0, len(with_thinking) - keep_turns)] for k in t}
    return tools, thinking


def _thinking_keys(body: dict[str, Any]) -> set[str]:
    return {
        b.get("signature") or b["data"]
        for m in body["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if "thinking" in b["type"]
    }


def _cleared(body: dict[str, Any]) -> set[str]:
    return {
        b["tool_use_id"]
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result" and b["content"] == CLEARED_RESULT
    }


@given(
    anthropic_loops(),
    st.integers(0, 4),
    st.integers(1, 3),
    st.sampled_from([set(), {"web_search"}]),
)
def test_local_and_provider_modes_take_the_same_blocks(
    body: dict[str, Any], keep: int, keep_turns: int, excluded: set[str]
) -> None:
    editing = ProviderEditing(
        clear_tool_uses=ClearToolUses(trigger=1, keep=keep, exclude_tools=tuple(sorted(excluded))),
        clear_thinking=ClearThinking(keep=keep_turns),
    )
    # No strategies: only the edits change anything.
    base = MemoryConfig(strategies=[], context_window_tokens=1_000_000, max_fraction=None)
    original = copy.deepcopy(body)
    with MemoryPlugin(attrs.evolve(base, provider_editing=editing)) as provider:
        sent = provider.on_anthropic_request(body)
        (plan,) = provider.last_edits
    with MemoryPlugin(
        attrs.evolve(base, provider_editing=attrs.evolve(editing, local=True))
    ) as local:
        edited = local.on_anthropic_request(body)
        (local_plan,) = local.last_edits
    assert body == original

    tools, thinking = _expected(body, keep, excluded, keep_turns)
    # Provider mode: the body goes as it came, with the edits to make.
    assert {k: v for k, v in sent.items() if k != "context_management"} == body
    assert sent["context_management"]["edits"] == [
        {
            "type": "clear_thinking_20251015",
            "keep": {"type": "thinking_turns", "value": keep_turns},
        },
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 1},
            "keep": {"type": "tool_uses", "value": keep},
            **({"exclude_tools": sorted(excluded)} if excluded else {}),
        },
    ]
    assert set(plan.cleared_tool_uses) == tools
    assert plan.where == "provider"
    # Local mode: those very blocks are gone from the body, nothing else.
    assert "context_management" not in edited
    assert _cleared(edited) == tools
    assert _thinking_keys(body) - _thinking_keys(edited) == thinking
    assert len(plan.cleared_thinking) == len(thinking)
    assert (local_plan.cleared_tool_uses, local_plan.cleared_thinking) == (
        plan.cleared_tool_uses,
        plan.cleared_thinking,
    )
    assert local_plan.cleared_tokens == plan.cleared_tokens
    # The turn in progress (after the last user question) keeps its thinking.
    last_question = max(
        i
        for i, m in enumerate(body["messages"])
        if m["role"] == "user" and isinstance(m["content"], str)
    )
    tail = {"messages": body["messages"][last_question:]}
    assert _thinking_keys(tail) <= _thinking_keys(edited)


def test_triggers_and_clear_at_least_hold_back_clearing() -> None:
    body = anthropic_body_with_results(6)
    base = MemoryConfig(strategies=[], context_window_tokens=1_000_000, max_fraction=None)
    for tools, clears in [
        (ClearToolUses(trigger=1_000_000, keep=1), False),  # under the trigger
        (ClearToolUses(trigger=1, keep=1, clear_at_least=1_000_000), False),  # too little to clear
        (ClearToolUses(trigger=None, trigger_tool_uses=10, keep=1), False),  # 6 uses of 10
        (ClearToolUses(trigger=None, trigger_tool_uses=5, keep=1), True),
        (ClearToolUses(trigger=1, keep=1, clear_at_least=100), True),
    ]:
        editing = ProviderEditing(clear_tool_uses=tools, local=True)
        with MemoryPlugin(attrs.evolve(base, provider_editing=editing)) as plugin:
            out = plugin.on_anthropic_request(body)
        assert (_cleared(out) == {f"t{k}" for k in range(5)}) is clears, tools
        assert bool(_cleared(out)) is clears


def anthropic_body_with_results(n: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for k in range(n):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"t{k}", "name": "bash", "input": {"cmd": "ls"}}
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{k}", "content": "file\n" * 100}
                ],
            }
        )
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages}


def test_a_responses_body_clears_locally_and_asks_for_server_compaction() -> None:
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for k in range(5):
        items.append(
            {"type": "function_call", "call_id": f"c{k}", "name": "bash", "arguments": "{}"}
        )
        items.append({"type": "function_call_output", "call_id": f"c{k}", "output": "file\n" * 100})
    body = {"model": "gpt-5", "input": items}
    editing = ProviderEditing(
        clear_tool_uses=ClearToolUses(trigger=1, keep=2),
        compaction=Compaction(compact_threshold=100),
    )
    base = MemoryConfig(strategies=[], context_window_tokens=1_000_000, max_fraction=None)
    with MemoryPlugin(attrs.evolve(base, provider_editing=editing)) as plugin:
        out = plugin.on_responses_request(body)
        local, provider = plugin.last_edits
        before = plugin.count_tokens(from_responses(items))
        after = plugin.count_tokens(from_responses(out["input"]))
    assert local.cleared_tokens == before - after > 0
    # OpenAI has no tool-result clearing: memrules clears; the server compacts.
    outputs = [i["output"] for i in out["input"] if i.get("type") == "function_call_output"]
    assert outputs == [CLEARED_RESULT] * 3 + ["file\n" * 100] * 2
    assert (local.where, local.cleared_tool_uses) == ("local", ("c0", "c1", "c2"))
    assert out["context_management"] == [{"type": "compaction", "compact_threshold": 100}]
    assert OPENAI_CM.validate_python(out["context_management"]) == out["context_management"]
    assert (provider.where, provider.compacts) == ("provider", True)


@pytest.mark.parametrize(
    ("build", "path"),
    [
        (lambda: ProviderEditing(), "provider_editing"),
        (lambda: ClearThinking(keep=0), "provider_editing.clear_thinking.keep"),
        (lambda: ClearToolUses(keep=-1), "provider_editing.clear_tool_uses.keep"),
        (lambda: ClearToolUses(trigger=None), "provider_editing.clear_tool_uses.trigger"),
        (lambda: Compaction(compact_threshold=0), "provider_editing.compaction.compact_threshold"),
    ],
)
def test_settings_built_in_python_are_checked(build: Any, path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build()
    assert caught.value.problems[0].yaml_path == path
