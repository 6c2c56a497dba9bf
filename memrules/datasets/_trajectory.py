"""Agent trajectories read into conversations: one `Trajectory` a run.

These shapes are read (`read_trajectory` tells them apart, or takes
``format=``, one of `FORMATS`):

- ``mini-swe-agent``: a mini-swe-agent ``.traj.json`` (``{"instance_id",
  "info": {"submission": the final patch, ...}, "messages": [...]}``), where
  every assistant reply holds a THOUGHT and one fenced ``bash`` block, the
  action, and the next user message holds its output (``<returncode>`` and
  ``<output>``). The action becomes a tool call (``bash``,
  ``{"command": ...}``) after the reply's text, and its output the tool
  result (``is_error`` for a non-zero return code or a time-out; the code in
  the result message's metadata as ``returncode``). A reply with no block or
  several gets a user message from the harness ("Please always provide
  EXACTLY ONE action…"): it stays a user message, with ``harness: True`` in
  its metadata. SWE-agent's ``.traj`` (``swe-agent``: a ``history`` of
  messages, each assistant one with its ``action``) is read the same way.
- ``openai``: a chat-completions ``messages`` list (with ``tool_calls`` and
  ``tool`` messages), as a JSON list, an object with ``messages``, or JSON
  Lines of messages.
- ``anthropic``: a Messages API ``messages`` list (``tool_use`` and
  ``tool_result`` blocks), or an object with ``messages`` and ``system``.
- ``claude-code``: a Claude Code session log (JSON Lines of events): the
  ``user`` and ``assistant`` events' messages, a streamed reply's events
  joined, side chains skipped, the tool's own ``isMeta`` and compaction
  summary messages marked ``harness: True``.
- ``codex``: a Codex CLI rollout (JSON Lines of ``{"type", "payload"}``):
  the ``response_item`` payloads, read as Responses API items, developer
  messages as system ones, and the environment and instructions messages
  Codex writes marked ``harness: True``.

Both session logs are read from files as the tools write them, which have
no published schema.

Every message gets an id (``m0``, ``m1``… in order); a message's metadata
keeps what the reader knew (``harness``, ``returncode``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from memrules._adapters import from_anthropic, from_openai
from memrules._core.errors import MemrulesError, MessageFormatError
from memrules._core.messages import Conversation, Message, Text, ToolCall, ToolResult
from memrules.datasets import _sessions

__all__ = [
    "FORMATS",
    "HARNESS",
    "Trajectory",
    "TrajectoryError",
    "mini_swe_agent_trajectory",
    "model_calls",
    "parse_trajectory",
    "read_trajectories",
    "read_trajectory",
    "trajectory_paths",
]

FORMATS = ("mini-swe-agent", "swe-agent", "openai", "anthropic", "claude-code", "codex")
"""The shapes `read_trajectory` reads."""

HARNESS = _sessions.HARNESS
"""The metadata key that marks a user message the agent's harness wrote."""

_ACTION = re.compile(r"```(?:bash|sh)?\s*\n(.*?)\n```", re.DOTALL)
_BASH_ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_TIMED_OUT = re.compile(r"^The last command <command>.*?</command> timed out", re.DOTALL)


class TrajectoryError(MemrulesError, ValueError):
    """A trajectory file that cannot be read or is not one of `FORMATS`:
    names the file and what is wrong."""


@attrs.frozen(kw_only=True, slots=True)
class Trajectory:
    """One agent run: its ``id`` (the file's instance id or name), the
    ``messages`` as the agent's model saw them, the final ``patch`` when the
    run recorded one (mini-swe-agent's ``info.submission``), the ``format``
    it was read from, and the ``source`` file."""

    id: str
    messages: Conversation
    patch: str | None = None
    format: str = "openai"
    source: str = ""


def model_calls(trajectory: Trajectory) -> Iterator[Conversation]:
    """Each request the agent made: the messages before each assistant
    reply, in order (an agent loop makes one model call per reply).

    >>> from memrules import message
    >>> run = Trajectory(id="t", messages=(
    ...     message("user", "fix it"), message("assistant", "done"),
    ...     message("user", "thanks"), message("assistant", "bye")))
    >>> tuple(len(r) for r in model_calls(run))
    (1, 3)
    """
    for i, m in enumerate(trajectory.messages):
        if m.role == "assistant" and i > 0:
            yield trajectory.messages[:i]


def _text(content: object, where: str) -> str:
    """A message's content as text: a string, or the text of a content list."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        texts = [str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p]
        return "\n".join(texts)
    msg = f"{where}.content: expected a string or a list of parts, got {type(content).__name__}"
    raise TrajectoryError(msg)


def _output(content: str, call_id: str) -> tuple[ToolResult, int | None]:
    found = _RETURNCODE.search(content)
    code = int(found.group(1)) if found else None
    failed = (code is not None and code != 0) or bool(_TIMED_OUT.match(content))
    return ToolResult(call_id=call_id, content=content, is_error=failed), code


def _turns(
    raw: Sequence[object], where: str, action: re.Pattern[str], actions: str | None
) -> list[Message]:
    """Messages of a bash-only agent (see the module docs). ``actions`` names
    a field holding the action itself (SWE-agent's ``action``), when there is one."""
    out: list[Message] = []
    pending: str | None = None  # the call id awaiting its output
    calls = 0
    for i, item in enumerate(raw):
        at = f"{where}: messages[{i}]"
        if not isinstance(item, Mapping) or item.get("role") not in ("system", "user", "assistant"):
            msg = f"{at}: expected a message with role system, user or assistant"
            raise TrajectoryError(msg)
        role, text = item["role"], _text(item.get("content"), at)
        mid = f"m{len(out)}"
        if role == "assistant":
            given = item.get(actions) if actions else None
            found = [given] if isinstance(given, str) and given.strip() else action.findall(text)
            if len(found) != 1:
                out.append(Message(role="assistant", parts=(Text(text=text),), id=mid))
                pending = None
                continue
            calls += 1
            pending = f"call_{calls}"
            thought = action.sub("", text).strip() if not given else text.strip()
            arguments = json.dumps({"command": found[0]}, ensure_ascii=False)
            parts: list[Text | ToolCall] = [Text(text=thought)] if thought else []
            parts.append(ToolCall(id=pending, name="bash", arguments=arguments))
            out.append(Message(role="assistant", parts=tuple(parts), id=mid))
        elif role == "user" and pending is not None:
            result, code = _output(text, pending)
            metadata = {} if code is None else {"returncode": code}
            out.append(Message(role="tool", parts=(result,), id=mid, metadata=metadata))
            pending = None
        elif role == "user" and any(m.role == "user" for m in out):
            out.append(Message(role="user", parts=(Text(text=text),), id=mid,
                               metadata={HARNESS: True}))  # fmt: skip
        else:
            out.append(Message(role=role, parts=(Text(text=text),), id=mid))
    return out


def mini_swe_agent_trajectory(data: Mapping[str, Any], *, source: str = "") -> Trajectory:
    """A mini-swe-agent ``.traj.json``, parsed (see the module docs).

    >>> run = mini_swe_agent_trajectory({"instance_id": "demo", "messages": [
    ...     {"role": "system", "content": "You are a shell agent."},
    ...     {"role": "user", "content": "Fix the bug in app.py"},
    ...     {"role": "assistant", "content": "THOUGHT: look\\n\\n```bash\\ncat app.py\\n```"},
    ...     {"role": "user", "content": "<returncode>1</returncode>\\n<output>\\nno file\\n"},
    ... ]})
    >>> tuple(m.role for m in run.messages)
    ('system', 'user', 'assistant', 'tool')
    >>> run.messages[2].parts[1].arguments, run.messages[3].parts[0].is_error
    ('{"command": "cat app.py"}', True)
    """
    where = source or "trajectory"
    raw = data.get("messages")
    if not isinstance(raw, list):
        msg = f"{where}: expected a messages list"
        raise TrajectoryError(msg)
    info = data.get("info")
    patch = info.get("submission") if isinstance(info, Mapping) else None
    return Trajectory(
        id=str(data.get("instance_id") or _stem(source) or "trajectory"),
        messages=tuple(_turns(raw, where, _BASH_ACTION, None)),
        patch=patch if isinstance(patch, str) and patch else None,
        format="mini-swe-agent",
        source=source,
    )


def _swe_agent(data: Mapping[str, Any], source: str) -> Trajectory:
    raw = data.get("history")
    if not isinstance(raw, list):
        msg = f"{source}: expected a history list"
        raise TrajectoryError(msg)
    info = data.get("info")
    patch = info.get("submission") if isinstance(info, Mapping) else None
    return Trajectory(
        id=str(data.get("instance_id") or _stem(source) or "trajectory"),
        messages=tuple(_turns(raw, source, _ACTION, "action")),
        patch=patch if isinstance(patch, str) and patch else None,
        format="swe-agent",
        source=source,
    )


def _stem(source: str) -> str:
    name = Path(source).name
    for suffix in (".traj.json", ".traj", ".jsonl", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _with_ids(messages: Sequence[Message]) -> Conversation:
    return tuple(m.evolve(id=f"m{i}") if m.id is None else m for i, m in enumerate(messages))


def _detect(data: object) -> str:
    session = _sessions.session_format(data)
    if session is not None:
        return session
    if isinstance(data, Mapping):
        if isinstance(data.get("history"), list) and "messages" not in data:
            return "swe-agent"
        kind = data.get("trajectory_format")
        if isinstance(kind, str) and kind.startswith("mini-swe-agent"):
            return "mini-swe-agent"
        if "system" in data:
            return "anthropic"
        data = data.get("messages")
    if isinstance(data, list):
        for m in data:
            content = m.get("content") if isinstance(m, Mapping) else None
            if isinstance(content, list) and any(
                isinstance(p, Mapping) and p.get("type") in ("tool_use", "tool_result")
                for p in content
            ):
                return "anthropic"
    return "openai"


def parse_trajectory(data: object, *, source: str = "", format: str | None = None) -> Trajectory:
    """A trajectory from parsed JSON (see the module docs); ``format`` one
    of `FORMATS`, or None to tell from the data."""
    kind = format or _detect(data)
    if kind not in FORMATS:
        msg = f"format={kind!r} is not one of {', '.join(FORMATS)}"
        raise TrajectoryError(msg)
    where = source or "trajectory"
    if kind == "mini-swe-agent":
        if not isinstance(data, Mapping):
            msg = f"{where}: a mini-swe-agent trajectory is an object with messages"
            raise TrajectoryError(msg)
        return mini_swe_agent_trajectory(data, source=source)
    if kind == "swe-agent":
        if not isinstance(data, Mapping):
            msg = f"{where}: a SWE-agent trajectory is an object with a history"
            raise TrajectoryError(msg)
        return _swe_agent(data, where)
    if kind in ("claude-code", "codex"):
        if not isinstance(data, list) or not all(isinstance(e, Mapping) for e in data):
            msg = f"{where}: a {kind} session is JSON Lines of events"
            raise TrajectoryError(msg)
        read = _sessions.claude_code_messages if kind == "claude-code" else _sessions.codex_messages
        try:
            messages = read(data, where)
        except ValueError as exc:
            raise TrajectoryError(str(exc)) from None
        return Trajectory(
            id=_stem(source) or "session",
            messages=_with_ids(messages),
            format=kind,
            source=source,
        )
    listed = data.get("messages") if isinstance(data, Mapping) else data
    if not isinstance(listed, list):
        msg = f"{where}: expected a list of messages or an object with messages"
        raise TrajectoryError(msg)
    try:
        if kind == "anthropic":
            system = data.get("system") if isinstance(data, Mapping) else None
            messages = from_anthropic(listed, system=system)
        else:
            messages = from_openai(listed)
    except MessageFormatError as exc:
        msg = f"{where}: {exc}"
        raise TrajectoryError(msg) from None
    named = data.get("id") if isinstance(data, Mapping) else None
    patch = data.get("patch") if isinstance(data, Mapping) else None
    return Trajectory(
        id=str(named or _stem(source) or "trajectory"),
        messages=_with_ids(messages),
        patch=patch if isinstance(patch, str) and patch else None,
        format=kind,
        source=source,
    )


def read_trajectory(path: str | os.PathLike[str], *, format: str | None = None) -> Trajectory:
    """One trajectory file (JSON, or JSON Lines of messages), parsed
    (see the module docs). `TrajectoryError` names the file."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"cannot read the trajectory {name}: {getattr(exc, 'strerror', None) or exc}"
        raise TrajectoryError(msg) from None
    try:
        data: object = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            msg = f"{name}: neither JSON nor JSON Lines: {exc.msg} (line {exc.lineno})"
            raise TrajectoryError(msg) from None
    return parse_trajectory(data, source=name, format=format)


_SUFFIXES = (".traj.json", ".traj", ".json", ".jsonl")


def trajectory_paths(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The trajectory files of ``paths``: each file as given, and each
    directory's ``.traj.json``, ``.traj``, ``.json`` and ``.jsonl`` files,
    sorted by name; each once. `TrajectoryError` for a path that is
    neither, or a directory with none."""
    out: dict[Path, None] = {}
    for path in paths:
        p = Path(path)
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file() and f.name.endswith(_SUFFIXES))
            if not files:
                msg = f"{p}: no trajectory files ({', '.join(_SUFFIXES)})"
                raise TrajectoryError(msg)
            out.update(dict.fromkeys(files))
        elif p.is_file():
            out[p] = None
        else:
            msg = f"cannot read the trajectory {p}: no such file or directory"
            raise TrajectoryError(msg)
    return list(out)


def read_trajectories(
    paths: Sequence[str | os.PathLike[str]], *, format: str | None = None
) -> Iterator[Trajectory]:
    """The trajectories of ``paths`` (`trajectory_paths`), one at a time."""
    for path in trajectory_paths(paths):
        yield read_trajectory(path, format=format)
