"""The request hook for Responses API bodies."""

from __future__ import annotations

import copy
from typing import Any

from memrules import MemoryConfig, MemoryPlugin, replay_trace
from memrules._adapters.responses import from_responses
from memrules._core.messages import message
from memrules._counting.framing import count_tokens


def _loop(rounds: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    for r in range(rounds):
        items.append(
            {"type": "reasoning", "id": f"rs_{r}", "summary": [], "encrypted_content": "gAAAA" * 4}
        )
        items.append(
            {
                "type": "function_call",
                "call_id": f"c{r}",
                "name": "read_file",
                "arguments": f'{{"path": "src/m{r}.py"}}',
            }
        )
        items.append(
            {
                "type": "function_call_output",
                "call_id": f"c{r}",
                "output": f"line {r} = value\n" * 60,
            }
        )
    return items


def test_a_body_under_budget_comes_back_as_it_came() -> None:
    body = {"model": "gpt-5", "instructions": "Be brief.", "input": _loop(2), "store": False}
    before = copy.deepcopy(body)
    with MemoryPlugin(MemoryConfig(context_window_tokens=100_000)) as plugin:
        out = plugin.on_responses_request(body)
        assert out == before
        assert body == before  # the input is not modified
        # Counted as the OpenAI rule counts the items, instructions included.
        usage = plugin.last_usage
        assert usage is not None
        instructions = message("system", "Be brief.")
        assert usage.tokens == count_tokens((instructions, *from_responses(body["input"])))
        assert usage.tokens > count_tokens(from_responses(body["input"]))


def test_a_string_input_stays_a_string() -> None:
    body = {"model": "gpt-5", "input": "hello"}
    with MemoryPlugin(MemoryConfig(context_window_tokens=100_000)) as plugin:
        assert plugin.on_responses_request(body) == body


def test_an_over_budget_body_is_compacted_with_pairs_kept() -> None:
    body = {"model": "gpt-5", "instructions": "Be brief.", "input": _loop(30)}
    with MemoryPlugin(MemoryConfig(max_tokens=3000)) as plugin:
        out = plugin.on_responses_request(body)
        report = plugin.last_report
    assert report is not None
    assert report.compacted
    assert report.tokens_after <= 3000
    assert out["instructions"] == "Be brief."
    assert out["model"] == "gpt-5"
    sent = out["input"]
    calls = [i["call_id"] for i in sent if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in sent if i.get("type") == "function_call_output"]
    assert calls == outputs
    # Each reasoning item goes with its call.
    for k, item in enumerate(sent):
        if item.get("type") == "reasoning":
            assert sent[k + 1]["type"] == "function_call"
            assert sent[k + 1]["call_id"] == "c" + item["id"][3:]
    assert sent[0] == {"role": "user", "content": "Fix the failing test."}


def test_a_traced_responses_request_replays_byte_for_byte(tmp_path: Any) -> None:
    path = tmp_path / "trace.jsonl"
    body = {"model": "gpt-5", "instructions": "Be brief.", "input": _loop(30)}
    with MemoryPlugin(MemoryConfig(max_tokens=3000), trace=path) as plugin:
        plugin.on_responses_request(body)
    summary = replay_trace(path)
    assert (summary.requests, summary.differed) == (1, 0)


def test_an_anthropic_body_under_budget_comes_back_as_it_came() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "Read a.py"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "ok", "signature": "sig"},
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "read_file",
                        "input": {"path": "a.py"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}],
            },
        ],
    }
    before = copy.deepcopy(body)
    with MemoryPlugin(MemoryConfig(context_window_tokens=100_000)) as plugin:
        assert plugin.on_anthropic_request(body) == before
        assert plugin.last_edits == ()
    assert body == before
