"""The request hook's warm request converts back to dicts only the messages
its conversation's last request did not already write: a result cleared
last time is sent as a copy of what it became then. Counted here: the
messages converted back, never time; and the bodies equal a cold plugin's,
whatever the caller did to an earlier one."""

from __future__ import annotations

import json
from typing import Any

import pytest

import memrules._adapters.openai_write as openai_adapter
from memrules import MemoryConfig, MemoryPlugin
from memrules.strategies import clear_tool_results


def _round(r: int) -> list[dict[str, Any]]:
    call = {
        "id": f"call_{r}",
        "type": "function",
        "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{r}.py"})},
    }
    source = "\n".join(f"{k:4d}  value_{r}_{k} = compute({k})" for k in range(40))
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{r}", "content": source},
    ]


def _plugin() -> MemoryPlugin:
    config = MemoryConfig(max_tokens=5_000, strategies=[clear_tool_results(keep_pairs=2)])
    return MemoryPlugin(config)


def _body(rounds: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find where the parser loses a token."},
    ]
    for r in range(rounds):
        messages.extend(_round(r))
    # A router hands the hook a freshly parsed body on every request.
    return json.loads(json.dumps({"model": "gpt-4o", "messages": messages}))


def test_a_warm_request_converts_back_only_what_it_newly_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written: list[int] = []
    real = openai_adapter._write_one

    def counting(message: Any, index: int, out: list[dict[str, Any]]) -> None:
        written.append(index)
        real(message, index, out)

    monkeypatch.setattr(openai_adapter, "_write_one", counting)
    plugin = _plugin()
    first = plugin.on_openai_request(_body(60), conversation_id="c")
    cleared = [m for m in first["messages"] if "cleared" in str(m.get("content"))]
    assert len(cleared) == 58
    assert len(written) == 58
    cleared[0]["content"] = "the caller edited the body it was sent"
    written.clear()
    warm = plugin.on_openai_request(_body(61), conversation_id="c")
    # One result left the kept pairs: it alone is converted.
    assert written == [119]
    cold = _plugin().on_openai_request(_body(61), conversation_id="c")
    assert json.dumps(warm) == json.dumps(cold)
