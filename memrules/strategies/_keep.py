"""What clearing and clamping keep: the stub a cleared tool result leaves
(the tool, the size, a head and tail preview), which output reads as an
error, and the messages no content rewrite touches (the first few, the
latest turns or tool exchanges).

Shared by ``clear_tool_results`` and ``clamp_oversized_messages``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeGuard

from memrules._core.conversation import is_turn_start
from memrules._core.errors import ConfigError
from memrules._core.messages import Conversation, Message, Part, ToolResult, part_text

__all__ = [
    "ERROR_PATTERN",
    "cleared_stub",
    "error_check",
    "first_kept",
    "holds_error",
    "is_cleared",
    "recent_start",
]

ERROR_PATTERN = re.compile(
    r"<returncode>\s*-?[1-9]\d*\s*</returncode>"  # mini-swe-agent, SWE-agent
    r"|\bexit(?:ed with)? (?:code|status)[:= ]*-?[1-9]"
    r"|^Traceback \(most recent call last\)"
    r"|^FAILED\b|^=+ .*\b\d+ (?:failed|errors?)\b"  # pytest
    r"|^(?:[\w.]*Error|error|fatal|ERROR)(?:\[\w+\])?:",  # ValueError: / error: / error[E0308]:
    re.MULTILINE,
)
"""What reads as a failed command: a non-zero exit code, a Python
traceback, a pytest failure, or a line that starts ``SomethingError:``,
``error:`` or ``fatal:``. Anchored at a line start where it can be, so
that source code that merely mentions ``ValueError:`` indented inside an
``except`` does not count."""

ErrorCheck = Callable[[str], bool]
"""Whether a tool output's text reads as an error."""


def error_check(pattern: str | None) -> ErrorCheck:
    """`ERROR_PATTERN`, and ``pattern`` (a regular expression,
    searched line by line) when given; raises `ConfigError`
    naming ``error_pattern`` when it does not compile."""
    if pattern is None:
        return _Search(ERROR_PATTERN, None)
    try:
        extra = re.compile(pattern, re.MULTILINE)
    except re.error as e:
        msg = f"error_pattern={pattern!r} is not a regular expression: {e}"
        raise ConfigError.single(msg, yaml_path="error_pattern") from None
    return _Search(ERROR_PATTERN, extra)


class _Search:
    """The built-in pattern and an optional extra one, as one check."""

    __slots__ = ("_extra", "_pattern")

    def __init__(self, pattern: re.Pattern[str], extra: re.Pattern[str] | None) -> None:
        self._pattern = pattern
        self._extra = extra

    def __call__(self, text: str) -> bool:
        if self._pattern.search(text) is not None:
            return True
        return self._extra is not None and self._extra.search(text) is not None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Search) and (self._pattern, self._extra) == (
            other._pattern,
            other._extra,
        )

    def __hash__(self) -> int:
        return hash((self._pattern, self._extra))


def holds_error(part: Part, check: ErrorCheck) -> TypeGuard[ToolResult]:
    """Whether ``part`` is a tool result marked ``is_error`` or whose text
    reads as an error by ``check``."""
    return isinstance(part, ToolResult) and (part.is_error or check(part_text(part)))


def cleared_stub(tool: str, tokens: int, text: str, head: int, tail: int) -> str:
    """What a cleared tool result leaves: the tool's name, its size in
    tokens, and its first ``head`` and last ``tail`` characters (none when
    both are 0).

    >>> print(cleared_stub("run_tests", 812, "collected 3 items ... 1 failed", 9, 8))
    [memrules: run_tests result cleared to save context (812 tokens); head and tail:]
    collected
    […]
    1 failed
    """
    label = f"[memrules: {tool} result cleared to save context ({tokens} tokens)"
    if head <= 0 and tail <= 0:
        return label + "]"
    if len(text) <= head + tail:
        return f"{label}; whole:]\n{text}"
    start = text[:head]
    end = text[len(text) - tail :] if tail > 0 else ""
    return f"{label}; head and tail:]\n{start}\n[…]\n{end}"


def is_cleared(text: str) -> bool:
    """Whether ``text`` is already a stub `cleared_stub` made (a
    request that sends back an earlier output): clearing it again would
    only count the stub."""
    return text.startswith(_STUB_START) and _STUB_MIDDLE in text[:_STUB_REACH]


_STUB_START = "[memrules: "
_STUB_MIDDLE = " result cleared to save context ("
_STUB_REACH = 400


def first_kept(conversation: Conversation, count: int) -> frozenset[int]:
    """The positions of the first ``count`` messages that are not system
    messages (OpenHands' ``keep_first``)."""
    if count <= 0:
        return frozenset()
    found: list[int] = []
    for i, m in enumerate(conversation):
        if m.role != "system":
            found.append(i)
            if len(found) == count:
                break
    return frozenset(found)


def recent_start(conversation: Conversation, recent: int) -> int:
    """Where the latest ``recent`` units start: every message from there
    on is the current work and is neither cleared nor clamped.

    A unit is a tool exchange of the latest turn (an assistant message and
    what follows it up to the next one; the first exchange takes in the
    user message that opens the turn), or a whole turn before it (see
    `turns`): an agent loop, one long
    turn, protects its last tool rounds, and a chat its last turns.
    ``len(conversation)`` when ``recent`` is 0; read from the end, so an
    agent loop reads only its last few rounds."""
    n = len(conversation)
    if recent <= 0:
        return n
    count = 0
    cut = n
    latest = True
    exchanges = False  # whether the latest turn has an assistant message
    for i in range(n - 1, -1, -1):
        m: Message = conversation[i]
        if is_turn_start(m):
            if latest:
                latest = False
                if not exchanges:
                    count += 1  # a turn with no answer yet is one unit
            else:
                count += 1
            cut = i
            if count >= recent:
                return cut
        elif latest and m.role == "assistant":
            if count >= recent:
                return cut  # the unit counted last is not the turn's first exchange
            count += 1
            exchanges = True
            cut = i
    return cut
