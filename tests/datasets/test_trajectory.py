"""Reading agent trajectories: mini-swe-agent's actions become tool calls and
its outputs tool results, harness replies stay user messages marked as the
harness', and OpenAI, Anthropic and SWE-agent files read too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrules._core.messages import Text, ToolCall, ToolResult
from memrules._core.repair import input_problems
from memrules.datasets import (
    HARNESS,
    TrajectoryError,
    model_calls,
    parse_trajectory,
    read_trajectories,
    read_trajectory,
    trajectory_paths,
)
from tests.support.trajectories import FORMAT_ERROR, SUBMIT, bug_run, write


def test_mini_swe_agent_actions_become_tool_calls_and_outputs_their_results(
    tmp_path: Path,
) -> None:
    run = read_trajectory(write(tmp_path, bug_run()) / "demo__demo-1.traj.json")
    assert run.id == "demo__demo-1"
    assert run.format == "mini-swe-agent"
    assert run.patch is not None
    assert run.patch.startswith("diff --git a/src/parser.py")
    roles = [m.role for m in run.messages]
    assert roles == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    read = run.messages[2]
    assert read.parts == (
        Text(text="THOUGHT: Read the parser."),
        ToolCall(id="call_1", name="bash", arguments=json.dumps({"command": "cat src/parser.py"})),
    )
    failed = run.messages[5]
    assert failed.parts[0] == ToolResult(
        call_id="call_2", content=failed.parts[0].content, is_error=True
    )  # type: ignore[union-attr]
    assert failed.metadata["returncode"] == 1
    assert run.messages[3].metadata["returncode"] == 0
    assert not run.messages[3].parts[0].is_error  # type: ignore[union-attr]
    # Two actions in one reply: no call, and the harness' answer stays a user message.
    assert not run.messages[6].is_tool_carrier
    harness = run.messages[7]
    assert harness.text == FORMAT_ERROR
    assert harness.metadata[HARNESS] is True
    assert HARNESS not in run.messages[1].metadata  # the task is the person's
    assert json.loads(run.messages[12].parts[-1].arguments) == {"command": SUBMIT}  # type: ignore[union-attr]
    assert [m.id for m in run.messages] == [f"m{i}" for i in range(len(run.messages))]
    assert input_problems(run.messages) == ()


def test_each_model_call_is_the_messages_before_an_assistant_reply(tmp_path: Path) -> None:
    run = read_trajectory(write(tmp_path, bug_run()) / "demo__demo-1.traj.json")
    requests = list(model_calls(run))
    replies = [i for i, m in enumerate(run.messages) if m.role == "assistant"]
    assert [len(r) for r in requests] == replies
    assert all(r == run.messages[: len(r)] for r in requests)


def test_a_timed_out_command_is_an_error_result() -> None:
    run = parse_trajectory(
        {
            "trajectory_format": "mini-swe-agent-1",
            "messages": [
                {"role": "user", "content": "Fix the server."},
                {"role": "assistant", "content": "```bash\n./serve.sh\n```"},
                {
                    "role": "user",
                    "content": "The last command <command>./serve.sh</command> "
                    "timed out and has been killed.",
                },
            ],
        }
    )
    result = run.messages[2].parts[0]
    assert isinstance(result, ToolResult)
    assert result.is_error


def test_openai_json_and_json_lines_read(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is in app.py?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "app.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "print('hi')"},
        {"role": "assistant", "content": "It prints hi."},
    ]
    (tmp_path / "chat.json").write_text(json.dumps({"id": "chat-1", "messages": messages}))
    (tmp_path / "lines.jsonl").write_text("".join(json.dumps(m) + "\n" for m in messages))
    first, second = read_trajectories([tmp_path])
    assert (first.id, first.format) == ("chat-1", "openai")
    assert (second.id, second.format) == ("lines", "openai")
    assert first.messages == second.messages
    assert [m.role for m in first.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert len(list(model_calls(first))) == 2


def test_anthropic_messages_read(tmp_path: Path) -> None:
    data = {
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "List the files."},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}],
            },
            {"role": "assistant", "content": "One file."},
        ],
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    run = read_trajectory(path)
    assert run.format == "anthropic"
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert run.messages[3].result_ids == ("t1",)
    # a bare list of Anthropic messages is told apart by its blocks
    assert parse_trajectory(data["messages"]).format == "anthropic"


def test_swe_agent_history_reads_its_actions() -> None:
    run = parse_trajectory(
        {
            "history": [
                {"role": "system", "content": "You are SWE-agent."},
                {"role": "user", "content": "Fix the bug."},
                {"role": "assistant", "content": "Look first.\n```\nls\n```", "action": "ls\n"},
                {"role": "user", "content": "a.py b.py"},
                {"role": "assistant", "content": "Submit.", "action": "submit"},
                {"role": "user", "content": "diff --git a/a.py b/a.py"},
            ],
            "info": {"submission": "diff --git a/a.py b/a.py\n"},
        },
        source="run.traj",
    )
    assert run.format == "swe-agent"
    assert run.id == "run"
    assert [m.role for m in run.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    call = run.messages[2].parts[-1]
    assert isinstance(call, ToolCall)
    assert json.loads(call.arguments) == {"command": "ls\n"}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "neither JSON nor JSON Lines"),
        (json.dumps({"trajectory_format": "mini-swe-agent-1", "messages": 3}), "messages list"),
        (
            json.dumps(
                {
                    "trajectory_format": "mini-swe-agent-1",
                    "messages": [{"role": "robot", "content": "x"}],
                }
            ),
            "role system",
        ),
        (json.dumps([{"role": "user", "content": 3}]), "content"),
    ],
)
def test_a_file_that_is_no_trajectory_names_itself(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(TrajectoryError, match=problem) as caught:
        read_trajectory(path)
    assert str(path) in str(caught.value)


def test_unknown_format_and_missing_paths_are_errors(tmp_path: Path) -> None:
    with pytest.raises(TrajectoryError, match="format='aider' is not one of"):
        parse_trajectory([], format="aider")
    with pytest.raises(TrajectoryError, match="no such file"):
        trajectory_paths([tmp_path / "nope"])
    with pytest.raises(TrajectoryError, match="no trajectory files"):
        trajectory_paths([tmp_path])
    write(tmp_path, bug_run("a"), bug_run("b"))
    (tmp_path / "LICENSE.md").write_text("MIT")
    assert [p.name for p in trajectory_paths([tmp_path, tmp_path / "a.traj.json"])] == [
        "a.traj.json",
        "b.traj.json",
    ]
