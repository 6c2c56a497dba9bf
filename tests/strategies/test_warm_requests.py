"""A warm request in the hook: the same conversation grown by a tool round
costs the tool-result strategies only what the round added, and their output
is what a cold run gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memrules import MemoryPlugin, load_config
from memrules._core.messages import Message
from memrules.strategies import file_reads, tool_results

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def agent_body(rounds: int) -> list[dict[str, Any]]:
    """A system prompt, a user request, then ``rounds`` read_file rounds
    (every fourth path read again, so reads go stale) with results long
    enough to clear, as OpenAI chat-completions dicts."""
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find where the parser loses the last token."},
    ]
    for r in range(rounds):
        path = f"src/module_{r % (rounds // 4 + 1)}.py"
        call = {
            "id": f"call_{r}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": path})},
        }
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        body = "\n".join(f"{k:4d}  value_{r}_{k} = compute({k}, 'x' * {k})" for k in range(80))
        out.append({"role": "tool", "tool_call_id": f"call_{r}", "content": body})
    return out


class Counted:
    """How often a memrules function ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> None:
        self.calls = 0
        inner = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return inner(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)


@pytest.mark.parametrize("config_name", ["default.yaml", "coding_agent.yaml", "tiny_budget.yaml"])
def test_a_warm_request_rewrites_only_the_new_tool_results(
    monkeypatch: pytest.MonkeyPatch, config_name: str
) -> None:
    rounds = 120
    history = agent_body(rounds + 1)
    first = {"model": "gpt-4o", "messages": history[:-2]}
    body = {"model": "gpt-4o", "messages": history}
    config = load_config(CONFIGS / config_name)
    plugin = MemoryPlugin.from_config(config)
    plugin.on_openai_request(json.loads(json.dumps(first)), conversation_id="warm")
    measured = [Counted(monkeypatch, m, "_not_longer") for m in (tool_results, file_reads)]
    rebuilt = Counted(monkeypatch, Message, "evolve")
    warm = plugin.on_openai_request(json.loads(json.dumps(body)), conversation_id="warm")
    # One round came: at most its result and the one it pushed out of the
    # kept pairs (and a stale read's stub) are new to each strategy.
    assert sum(m.calls for m in measured) <= 8
    assert rebuilt.calls <= 8
    # The same two requests in another conversation (whose measure keeps its
    # own states and memos) compute every rewrite again and give the same body.
    plugin.on_openai_request(json.loads(json.dumps(first)), conversation_id="cold")
    assert warm == plugin.on_openai_request(json.loads(json.dumps(body)), conversation_id="cold")
    assert sum(m.calls for m in measured) > 8
