"""Probes: the facts a request must hold, read from the uncompacted history,
and a compacted request scored against them; an independent o200k count."""

from __future__ import annotations

import json
from pathlib import Path

from memrules._core.messages import Message, Text, ToolCall, ToolResult, message
from memrules._counting.tokens import load_encoding
from memrules.datasets import (
    HARNESS,
    Trajectory,
    edited_paths,
    is_test_command,
    model_calls,
    o200k_tokens,
    probe,
    probe_facts,
    read_trajectory,
)
from tests.support.trajectories import bug_run, task, write

ISSUE = "Parser.parse crashes on empty input with IndexError."


def _run(tmp_path: Path) -> Trajectory:
    return read_trajectory(write(tmp_path, bug_run()) / "demo__demo-1.traj.json")


def test_the_facts_of_the_last_request(tmp_path: Path) -> None:
    run = _run(tmp_path)
    last = list(model_calls(run))[-1]
    facts = probe_facts(last, edited_paths(run))
    assert facts.task == task(ISSUE)
    assert facts.question == task(ISSUE)  # the harness' reply is not the question
    assert facts.paths == ("src/parser.py",)
    assert facts.error_line == "1 failed in 0.02s"  # its output tags left out
    assert facts.test_command == "python -m pytest tests/test_parser.py -q"


def test_facts_grow_with_the_history(tmp_path: Path) -> None:
    run = _run(tmp_path)
    first, second, third, *_ = (probe_facts(r, edited_paths(run)) for r in model_calls(run))
    assert first.error_line is None
    assert first.test_command is None
    assert first.paths == ()  # the task does not name the file yet
    assert second.paths == ("src/parser.py",)  # the read did
    assert third.test_command is not None
    assert third.error_line == "1 failed in 0.02s"


def test_a_request_without_its_task_loses_the_task_probe(tmp_path: Path) -> None:
    run = _run(tmp_path)
    request = list(model_calls(run))[-1]
    facts = probe_facts(request, edited_paths(run))
    whole = probe(facts, request)
    assert (whole.task, whole.question, whole.user_first) == (True, True, True)
    assert (whole.paths, whole.paths_kept) == (1, 1)
    assert whole.error_line is True
    assert whole.test_command is True
    # what a window that kept only the last round sends: system, assistant, tool
    cut = (request[0], *request[-2:])
    lost = probe(facts, cut)
    assert (lost.task, lost.question, lost.user_first) == (False, False, False)
    assert lost.error_line is False
    assert lost.test_command is True  # the last call ran the tests


def test_a_harness_message_is_never_the_question() -> None:
    request = (
        message("user", "Fix the parser."),
        message("assistant", "two actions"),
        message("user", "Please always provide EXACTLY ONE action", metadata={HARNESS: True}),
        Message(role="user", parts=(ToolResult(call_id="x", content="ok"),)),
    )
    assert probe_facts(request).question == "Fix the parser."
    later = (*request, message("user", "Now also update the docs."))
    assert probe_facts(later).question == "Now also update the docs."
    assert probe_facts(later).task == "Fix the parser."


def test_error_lines_from_tracebacks_in_successful_outputs() -> None:
    request = (
        message("user", "go"),
        message("assistant", ToolCall(id="a", name="bash", arguments='{"command": "python x.py"}')),
        message(
            "tool",
            ToolResult(
                call_id="a",
                content="<returncode>0</returncode>\n<output>\n"
                "Traceback (most recent call last):\nValueError: bad\n</output>",
            ),
        ),
        message("assistant", ToolCall(id="b", name="bash", arguments='{"command": "grep -n E x"}')),
        message("tool", ToolResult(call_id="b", content="12: raise ValueError(x)")),
    )
    assert probe_facts(request).error_line == "ValueError: bad"


def test_test_commands() -> None:
    for command in (
        "pytest -q",
        "cd /testbed && python -m pytest a.py",
        "tox -e py311",
        "./tests/runtests.py auth",
        "python -m unittest discover",
        "python manage.py test app",
        "cd tests\npython3 runtests.py m",
    ):
        assert is_test_command(command), command
    for command in ("grep -rn pytest setup.cfg", "cat tests/test_x.py", "ls tests", "git diff"):
        assert not is_test_command(command), command


def test_edited_paths_from_edit_calls_without_a_patch() -> None:
    run = Trajectory(
        id="t",
        messages=(
            message("user", "go"),
            message(
                "assistant",
                ToolCall(
                    id="1", name="str_replace_editor", arguments='{"path": "a/b.py", "old": "x"}'
                ),
                ToolCall(id="2", name="read_file", arguments='{"path": "c.py"}'),
            ),
            message("tool", ToolResult(call_id="1", content="ok")),
            message("tool", ToolResult(call_id="2", content="ok")),
        ),
    )
    assert edited_paths(run) == ("a/b.py",)


def test_commands_are_found_as_typed_not_as_json() -> None:
    command = 'python -c "import x; print(1)"\npytest -k "a and b"'
    call = ToolCall(id="1", name="bash", arguments=json.dumps({"command": command}))
    request = (message("user", "go"), message("assistant", call))
    facts = probe_facts(request)
    assert facts.test_command == command
    assert probe(facts, request).test_command is True


def test_o200k_count_is_openais_framing_over_tiktoken() -> None:
    encoding = load_encoding("o200k_base")  # the bundled vocabulary: offline

    def n(text: str) -> int:
        return len(encoding.encode(text))

    call = ToolCall(id="c1", name="bash", arguments='{"command": "ls"}')
    messages = (
        message("system", "Be brief."),
        Message(role="assistant", parts=(Text(text="Looking."), call)),
        message("tool", ToolResult(call_id="c1", content="a.py")),
    )
    expected = 3  # the reply's priming
    expected += 3 + n("system") + n("Be brief.")
    expected += 3 + n("assistant") + n("Looking.") + n("c1") + n("function") + n("bash")
    expected += n('{"command": "ls"}')
    expected += 3 + n("tool") + n("c1") + n("a.py")
    assert o200k_tokens(messages) == expected
