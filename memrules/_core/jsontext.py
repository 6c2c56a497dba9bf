"""Reading JSON text that a user hands memrules: the one place a file's
JSON is parsed, so every reader (``compact``'s input, a trace, a dataset,
a graph snapshot) refuses the same hostile input with the same one line.

`parse_json` returns the value, or raises `JSONTextError`
whose message says what is wrong without saying where; each reader puts
its file and line in front and raises its own error type. JSON nested too
deeply for Python's parser (``[[[[...]]]]`` 100,000 deep), which would
otherwise escape as a ``RecursionError`` traceback, is
`TOO_DEEP`.
"""

from __future__ import annotations

import json
from typing import Any

from memrules._core.errors import MemrulesError

__all__ = ["TOO_DEEP", "JSONTextError", "parse_json"]

TOO_DEEP = "invalid input: JSON nested too deeply to read"
"""What every reader says of JSON nested too deeply to read."""


class JSONTextError(MemrulesError, ValueError):
    """Text that is not JSON memrules can read; ``reason`` says why, and
    ``line`` and ``column`` where in the text, when known."""

    def __init__(self, reason: str, *, line: int | None = None, column: int | None = None) -> None:
        self.reason = reason
        self.line = line
        self.column = column
        super().__init__(reason)


def parse_json(text: str | bytes) -> Any:
    """The JSON value of ``text`` (bytes are read as UTF-8), or
    `JSONTextError`."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            msg = f"not UTF-8 text: {exc.reason} at byte {exc.start}"
            raise JSONTextError(msg) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONTextError(exc.msg, line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        raise JSONTextError(TOO_DEEP) from None
    except ValueError as exc:  # a number over Python's digit limit
        raise JSONTextError(" ".join(str(exc).split()).split(";")[0]) from None
