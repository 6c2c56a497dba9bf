"""The in-place reading of :func:`enforce` (`memrules._core.in_place`) looks up the ids of a warm
request's input only where it holds other objects than the last input
the conversation's measure saw there (counted, not timed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import memrules._core.in_place as in_place
from memrules import MemoryConfig, MemoryPlugin
from memrules.strategies import clear_tool_results


def _messages(rounds: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find where the parser loses a token."},
    ]
    for r in range(rounds):
        call = {
            "id": f"call_{r}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{r}.py"})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{r}",
                "content": "\n".join(f"{k:4d}  value_{r}_{k} = compute({k})" for k in range(20)),
            }
        )
    return messages


CLEARED = "[memrules: read_file result cleared to save context ("


def test_warm_in_place_check_looks_up_the_new_messages_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = MemoryPlugin(
        MemoryConfig(
            max_tokens=20_000, strategies=[clear_tool_results(keep_pairs=2, preview_chars=0)]
        )
    )
    messages = _messages(400)
    plugin.on_openai_request({"model": "gpt-4o", "messages": messages[:-4]}, conversation_id="c")
    looked_up = 0

    def counted(value: object) -> int:
        nonlocal looked_up
        looked_up += 1
        return id(value)

    monkeypatch.setattr(in_place, "id", counted, raising=False)
    sent = plugin.on_openai_request({"model": "gpt-4o", "messages": messages}, conversation_id="c")
    cleared = sum(str(m.get("content")).startswith(CLEARED) for m in sent["messages"])
    assert cleared == 398
    # The replaced messages' ids, and the input's that it does not share
    # with the last input: the two new messages and the two whose result
    # was cleared since (a cold check looks up all 802 of the input's too).
    assert looked_up <= cleared + 10


def _reads(rounds: int, files: int) -> list[dict[str, Any]]:
    """An agent that reads ``files`` files over and over: every older read
    of a file goes stale, and every result but the newest few is cleared."""
    messages = _messages(0)
    for r in range(rounds):
        arguments = json.dumps({"path": f"src/m{r % files}.py"})
        call = {
            "id": f"call_{r}",
            "type": "function",
            "function": {"name": "read_file", "arguments": arguments},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        content = "\n".join(f"{k:4d}  value_{r}_{k} = compute({k})" for k in range(20))
        messages.append({"role": "tool", "tool_call_id": f"call_{r}", "content": content})
    return messages


def test_warm_in_place_checks_of_two_strategies_look_at_what_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two strategies that rewrite in place, one after the other, each
    checked from its own last rewrite: neither looks up the ids of the
    messages it replaced on an earlier request, nor those of the input
    the other one was handed."""
    from memrules.strategies import deduplicate_file_reads

    plugin = MemoryPlugin(
        MemoryConfig(
            max_tokens=20_000,
            strategies=[
                deduplicate_file_reads(),
                clear_tool_results(keep_pairs=2, preview_chars=0),
            ],
        )
    )
    messages = _reads(400, 25)
    for end in (len(messages) - 8, len(messages) - 4):
        plugin.on_openai_request(
            {"model": "gpt-4o", "messages": messages[:end]}, conversation_id="c"
        )
    looked_up = 0

    def counted(value: object) -> int:
        nonlocal looked_up
        looked_up += 1
        return id(value)

    monkeypatch.setattr(in_place, "id", counted, raising=False)
    sent = plugin.on_openai_request({"model": "gpt-4o", "messages": messages}, conversation_id="c")
    contents = [m.get("content") or "" for m in sent["messages"]]
    cleared = sum(c.startswith(CLEARED) for c in contents)
    assert cleared == 398  # stale or not, all but the newest two results
    # Per check: the new messages, the results whose stub or clearing
    # changed since the last request, and the messages they replace (a
    # check from scratch looks up all 802 inputs and every replaced one: 1,600
    # and more for the two).
    assert looked_up <= 250


def test_messages_that_recur_verbatim_keep_the_warm_in_place_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A harness that repeats the same reminder: the conversion cache hands
    back one object for the equal messages, so the input holds one object
    at several places. Each place still says what it holds, so the warm
    in-place check stays what it is for distinct messages (a general
    matching would look up every message's id, and more)."""
    plugin = MemoryPlugin(
        MemoryConfig(
            max_tokens=20_000, strategies=[clear_tool_results(keep_pairs=2, preview_chars=0)]
        )
    )
    messages = _messages(400)
    reminders = ("Keep going.", "Run the tests first.", "One action at a time.")
    for k, at in enumerate(range(10, len(messages) - 8, 20)):
        messages.insert(at, {"role": "user", "content": reminders[k % 3]})
    plugin.on_openai_request({"model": "gpt-4o", "messages": messages[:-4]}, conversation_id="c")
    looked_up = 0

    def counted(value: object) -> int:
        nonlocal looked_up
        looked_up += 1
        return id(value)

    monkeypatch.setattr(in_place, "id", counted, raising=False)
    body = json.loads(json.dumps({"model": "gpt-4o", "messages": messages}))
    sent = plugin.on_openai_request(body, conversation_id="c")
    cleared = sum(str(m.get("content")).startswith(CLEARED) for m in sent["messages"])
    assert cleared == 398
    assert looked_up <= cleared + 10
