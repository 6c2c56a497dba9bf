"""Claude Code and Codex CLI session logs, in the shapes the tools write them:
streamed replies joined, side chains and bookkeeping events skipped, the
tool's own messages marked as the harness'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memrules._core.messages import ToolCall
from memrules.datasets import (
    HARNESS,
    edited_paths,
    model_calls,
    probe_facts,
    read_trajectory,
)


def _lines(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def _claude(kind: str, content: Any, **more: Any) -> dict[str, Any]:
    message = {"role": kind, "content": content, **more.pop("message", {})}
    return {
        "type": kind,
        "isSidechain": False,
        "sessionId": "s1",
        "uuid": "u",
        "message": message,
        **more,
    }


def test_a_claude_code_session(tmp_path: Path) -> None:
    events = [
        {"type": "summary", "summary": "Parser fix", "leafUuid": "x"},
        _claude("user", "<command-name>/clear</command-name>", isMeta=True),
        _claude("user", "Fix the crash in src/parser.py and run the tests."),
        _claude(
            "assistant", [{"type": "text", "text": "Running the tests."}], message={"id": "msg_1"}
        ),
        _claude(
            "assistant",
            [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Bash",
                    "input": {"command": "pytest -q tests/test_parser.py"},
                }
            ],
            message={"id": "msg_1"},
        ),
        _claude(
            "user",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "is_error": True,
                    "content": "E   IndexError: list index out of range\n1 failed",
                }
            ],
        ),
        _claude(
            "assistant",
            [{"type": "text", "text": "sub-agent"}],
            isSidechain=True,
            message={"id": "msg_side"},
        ),
        _claude(
            "assistant",
            [
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "Edit",
                    "input": {"file_path": "src/parser.py", "old_string": "a", "new_string": "b"},
                }
            ],
            message={"id": "msg_2"},
        ),
        _claude("user", [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "ok"}]),
        _claude("assistant", [{"type": "text", "text": "Fixed."}], message={"id": "msg_3"}),
    ]
    run = read_trajectory(_lines(tmp_path / "3f2a.jsonl", events))
    assert (run.id, run.format) == ("3f2a", "claude-code")
    roles = [m.role for m in run.messages]
    assert roles == ["user", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert run.messages[0].metadata[HARNESS] is True
    joined = run.messages[2]  # two streamed events of msg_1, one message
    assert joined.text == "Running the tests."
    assert joined.call_ids == ("toolu_1",)
    assert "sub-agent" not in "".join(m.text for m in run.messages)
    assert edited_paths(run) == ("src/parser.py",)  # from the Edit call, no patch
    facts = probe_facts(list(model_calls(run))[-1], edited_paths(run))
    assert facts.task == "Fix the crash in src/parser.py and run the tests."
    assert facts.error_line == "1 failed"
    assert facts.test_command == "pytest -q tests/test_parser.py"


def test_a_codex_rollout(tmp_path: Path) -> None:
    def item(payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2025-10-01T10:00:00Z", "type": "response_item", "payload": payload}

    events = [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "s", "cwd": "/repo"}},
        item(
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "You are Codex."}],
            }
        ),
        item(
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>",
                    }
                ],
            }
        ),
        item(
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Make the parser tests pass."}],
            }
        ),
        {"timestamp": "t", "type": "turn_context", "payload": {"cwd": "/repo"}},
        item(
            {
                "type": "function_call",
                "name": "shell",
                "call_id": "call_1",
                "arguments": json.dumps({"command": ["bash", "-lc", "python -m pytest -q"]}),
            }
        ),
        item(
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": "FAILED tests/test_parser.py::test_empty",
            }
        ),
        {"timestamp": "t", "type": "event_msg", "payload": {"type": "token_count"}},
        item(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "One test fails."}],
            }
        ),
    ]
    run = read_trajectory(_lines(tmp_path / "rollout-2025-10-01.jsonl", events))
    assert run.format == "codex"
    assert run.messages[0].role == "system"
    assert run.messages[1].metadata[HARNESS] is True
    calls = [p for m in run.messages for p in m.parts if isinstance(p, ToolCall)]
    assert [c.name for c in calls] == ["shell"]
    facts = probe_facts(list(model_calls(run))[-1])
    assert facts.task == "Make the parser tests pass."  # not Codex's environment message
    assert facts.test_command == "python -m pytest -q"
    assert facts.error_line == "FAILED tests/test_parser.py::test_empty"
