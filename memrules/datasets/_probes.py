"""Probes: what an agent needs at each request, and whether a request kept it.

`probe_facts` reads, from the uncompacted messages before a request,
what the agent would need to go on:

- the **task**: the first user message with text that its harness did not
  write, unaltered;
- the **question**: the latest user message with text that its harness did
  not write (metadata ``harness: True``) and that is not only tool results;
- the **edited paths**: the files of the trajectory's final patch
  (``diff --git a/PATH`` lines), or the ``path`` arguments of its edit tool
  calls, those the request mentions;
- the **last error line**: the last non-empty line of the last tool output
  that failed (``is_error``: a non-zero return code) or holds a traceback,
  an ``…Error:`` line or a ``FAILED`` line, its output tags left out;
- the **last test command**: the last command run through a tool that runs
  tests (pytest, ``python -m unittest``, tox, ``runtests.py``,
  ``manage.py test``, nose, ``make test``).

`probe` scores a compacted request against them: a fact is present
when its text appears in the text of the request (message texts, tool
results, and tool-call arguments with their string values decoded).
`o200k_tokens` is an independent count of a request as OpenAI frames
it, with tiktoken's ``o200k_base`` (the encoding of the GPT-4o and later
models), for checking budgets against a tokenizer other than the pipeline's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from memrules._core.messages import Conversation, Message, Text, ToolCall, ToolResult, part_text
from memrules._counting.tokens import load_encoding
from memrules.datasets._trajectory import HARNESS, Trajectory

__all__ = [
    "Facts",
    "Probe",
    "edited_paths",
    "is_test_command",
    "o200k_tokens",
    "probe",
    "probe_facts",
    "request_text",
]

_DIFF = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)
_TEST = re.compile(
    r"(\bpytest\b|\bpy\.test\b|-m\s+unittest\b|\btox\b|runtests\.py|manage\.py\s+test\b"
    r"|\bnosetests\b|\bmake\s+test\b|\bbin/test\b)"
)
_ERROR_LINE = re.compile(
    r"^(Traceback \(most recent call last\)|FAILED\b|E\s+\w+|\w*(Error|Exception):|error:)",
    re.MULTILINE,
)
_TAG_LINE = re.compile(r"^\s*<(/?[a-z_]+|returncode>\s*-?\d+\s*</returncode)>\s*$")
_EDIT_TOOL = re.compile(r"edit|write|replace|create|patch|insert", re.IGNORECASE)
_PATH_KEYS = ("path", "file_path", "filename", "file")


@attrs.frozen(kw_only=True, slots=True)
class Facts:
    """What a request must hold (see the module docs); None where there is
    nothing to hold yet (no error seen, no test run)."""

    task: str | None = None
    question: str | None = None
    paths: tuple[str, ...] = ()
    error_line: str | None = None
    test_command: str | None = None


@attrs.frozen(kw_only=True, slots=True)
class Probe:
    """One compacted request scored against its `Facts`: each probe
    ``True`` (kept), ``False`` (lost) or None (nothing to keep); ``paths_kept``
    of ``paths`` edited paths; ``user_first``: the first message after the
    system messages is a user message."""

    task: bool | None
    question: bool | None
    user_first: bool
    paths: int
    paths_kept: int
    error_line: bool | None
    test_command: bool | None


def edited_paths(trajectory: Trajectory) -> tuple[str, ...]:
    """The files the run changed: the final patch's ``diff --git a/PATH``
    paths, or, without a patch, the path arguments of edit-like tool calls
    (a tool whose name says edit, write, replace, create, patch or insert),
    in order, once each.

    >>> from memrules import message
    >>> run = Trajectory(id="t", messages=(message("user", "go"),),
    ...                  patch="diff --git a/src/app.py b/src/app.py\\n+x\\n")
    >>> edited_paths(run)
    ('src/app.py',)
    """
    if trajectory.patch:
        return tuple(dict.fromkeys(_DIFF.findall(trajectory.patch)))
    found: list[str] = []
    for m in trajectory.messages:
        for p in m.parts:
            if isinstance(p, ToolCall) and _EDIT_TOOL.search(p.name):
                arguments = _arguments(p)
                for key in _PATH_KEYS:
                    value = arguments.get(key)
                    if isinstance(value, str) and value:
                        found.append(value)
    return tuple(dict.fromkeys(found))


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments) if call.arguments else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            yield " ".join(value)  # an argv, as a command line
        for v in value:
            yield from _strings(v)


def _command(value: object) -> str | None:
    """A command argument as typed: a string, or an argv (``["bash", "-lc",
    SCRIPT]`` gives the script)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if len(value) == 3 and value[1] in ("-c", "-lc"):
            return str(value[2])
        return " ".join(value)
    return None


def request_text(messages: Sequence[Message]) -> str:
    """Everything a probe may find in a request: each message's text, tool
    results and tool-call arguments, with the arguments' string values also
    decoded (a command holding quotes or newlines is found as typed)."""
    chunks: list[str] = []
    for m in messages:
        for p in m.parts:
            chunks.append(part_text(p))
            if isinstance(p, ToolCall):
                chunks.extend(_strings(_arguments(p)))
    return "\n".join(chunks)


def is_test_command(command: str) -> bool:
    """Whether ``command`` runs tests (see the module docs).

    >>> is_test_command("cd /testbed && python -m pytest tests/test_x.py -q")
    True
    >>> is_test_command("grep -rn pytest setup.cfg")
    False
    """
    if re.match(r"\s*(grep|rg|cat|sed|find|ls|head|tail|echo)\b", command):
        return False
    return bool(_TEST.search(command))


def _commands(message: Message) -> Iterator[str]:
    for p in message.parts:
        if isinstance(p, ToolCall):
            arguments = _arguments(p)
            for key in ("command", "cmd", "script"):
                value = _command(arguments.get(key))
                if value is not None:
                    yield value


def _error_line(result: ToolResult) -> str | None:
    text = part_text(result)
    if not result.is_error and not _ERROR_LINE.search(text):
        return None
    lines = [
        line for line in text.splitlines() if line.strip() and not _TAG_LINE.match(line.strip())
    ]
    return lines[-1].strip() if lines else None


def _is_question(message: Message) -> bool:
    if message.role != "user" or message.metadata.get(HARNESS) is True:
        return False
    return any(isinstance(p, Text) and p.text.strip() for p in message.parts)


def probe_facts(request: Conversation, paths: Sequence[str] = ()) -> Facts:
    """The facts of ``request`` (the messages before a model call,
    uncompacted; see the module docs); ``paths`` the run's edited paths,
    of which those the request mentions count."""
    users = [
        m
        for m in request
        if m.role == "user" and m.text.strip() and m.metadata.get(HARNESS) is not True
    ]
    questions = [m for m in request if _is_question(m)]
    error: str | None = None
    test: str | None = None
    for m in request:
        for p in m.parts:
            if isinstance(p, ToolResult):
                line = _error_line(p)
                if line is not None:
                    error = line
        for command in _commands(m):
            if is_test_command(command):
                test = command
    text = request_text(request)
    return Facts(
        task=users[0].text if users else None,
        question=questions[-1].text if questions else None,
        paths=tuple(p for p in paths if p in text),
        error_line=error,
        test_command=test,
    )


def _found(fact: str | None, text: str) -> bool | None:
    return None if fact is None else fact in text


def probe(facts: Facts, compacted: Sequence[Message]) -> Probe:
    """``compacted`` (what the pipeline sends) scored against ``facts``.

    >>> from memrules import message
    >>> before = (message("system", "s"), message("user", "fix app.py"),
    ...           message("assistant", "ok"), message("user", "now run the tests"))
    >>> facts = probe_facts(before, ["app.py"])
    >>> kept = probe(facts, (before[0], before[3]))
    >>> kept.task, kept.question, kept.paths_kept, kept.user_first
    (False, True, 0, True)
    """
    text = request_text(compacted)
    rest = [m for m in compacted if m.role != "system"]
    return Probe(
        task=_found(facts.task, text),
        question=_found(facts.question, text),
        user_first=bool(rest) and rest[0].role == "user",
        paths=len(facts.paths),
        paths_kept=sum(p in text for p in facts.paths),
        error_line=_found(facts.error_line, text),
        test_command=_found(facts.test_command, text),
    )


_PER_MESSAGE = 3
_PRIMING = 3


def o200k_tokens(messages: Sequence[Message]) -> int:
    """The request's tokens under ``o200k_base``, framed as OpenAI's guide
    counts chat messages (3 a message, its role and every text, each tool
    call's id, type, name and arguments, a tool message's call id, 3 for
    the reply's priming), counted here with tiktoken directly: a check on
    the pipeline's own counter, not a copy of it."""
    encoding = load_encoding("o200k_base")

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    total = _PRIMING
    for m in messages:
        for p in m.parts:
            if isinstance(p, ToolResult):
                total += _PER_MESSAGE + count("tool") + count(p.call_id) + count(part_text(p))
        rest = [p for p in m.parts if not isinstance(p, ToolResult)]
        if rest or not m.is_tool_carrier:
            total += _PER_MESSAGE + count(m.role)
            for p in rest:
                if isinstance(p, Text):
                    total += count(p.text)
                elif isinstance(p, ToolCall):
                    total += count(p.id) + count("function") + count(p.name) + count(p.arguments)
            if m.name:
                total += 1 + count(m.name)
    return total
