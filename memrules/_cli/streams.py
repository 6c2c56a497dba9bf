"""What the commands read and write: JSON inputs, stdout, stderr, output files.

Inputs are read whole (``-`` is stdin) and a failure is one
`UsageError` line naming the file and, where it
can, the place in it. Output is built whole before any of it is written:
`emit` writes stdout in one piece, `write_file` writes a file
whole or not at all (`write_atomic`), and
`writable` checks an output path before any work is done. Text is
written as UTF-8, a lone surrogate as its JSON escape. A full disk or a
closed stdout is an `OutputError`; a reader
that went away (``| head``) is the `BrokenPipeError` the caller
ends quietly on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from memrules._cli.errors import UsageError
from memrules._core.errors import OutputError
from memrules._core.jsontext import TOO_DEEP, JSONTextError, parse_json
from memrules._core.redaction import redact_text
from memrules._io.files import check_output, write_atomic
from memrules._runtime.progress import Progress

__all__ = [
    "emit",
    "encode",
    "one_line",
    "progress_line",
    "read_json",
    "say",
    "silence_stdout",
    "source_name",
    "stdout",
    "to_json",
    "writable",
    "write_all",
    "write_file",
]


def one_line(text: str) -> str:
    """``text`` with its line breaks turned into spaces."""
    return " ".join(text.splitlines())


def say(line: str) -> None:
    """One line on stderr, if there is a stderr."""
    if sys.stderr is not None:
        try:
            sys.stderr.write(redact_text(one_line(line)) + "\n")
            sys.stderr.flush()
        except OSError:
            pass


def progress_line(args: argparse.Namespace) -> Progress:
    """A progress line on stderr, when it is a terminal and not turned off."""
    return Progress(None if args.no_progress else sys.stderr)


# --- reading ----------------------------------------------------------------------


def source_name(source: str) -> str:
    """How messages name input ``source``: ``<stdin>`` for ``-``."""
    return "<stdin>" if source == "-" else source


def read_json(source: str) -> Any:
    """The JSON in file ``source`` (``-``: stdin); `UsageError` with
    one line naming the file, and the place in it where it can."""
    name = source_name(source)
    try:
        if source == "-":
            if sys.stdin is None:
                msg = "cannot read stdin: it is closed"
                raise UsageError(msg)
            buffer = getattr(sys.stdin, "buffer", None)
            raw = buffer.read() if buffer is not None else sys.stdin.read().encode("utf-8")
        else:
            raw = Path(source).read_bytes()
    except OSError as exc:
        msg = f"cannot read {name}: {exc.strerror or exc}"
        raise UsageError(msg) from None
    try:
        return parse_json(raw)
    except JSONTextError as exc:
        if exc.reason.startswith("not UTF-8"):
            msg = f"{name} is {exc.reason}"
        elif exc.reason == TOO_DEEP:
            msg = f"{name}: {exc.reason}"
        elif exc.line is not None:
            msg = f"{name}:{exc.line}:{exc.column}: invalid JSON: {exc.reason}"
        else:
            msg = f"{name}: invalid JSON: {exc.reason}"
        raise UsageError(msg) from None


# --- writing ----------------------------------------------------------------------


def to_json(value: Any, what: str) -> str:
    """``value`` as indented JSON text; `UsageError` naming ``what``
    when it holds NaN or Infinity, which JSON cannot say."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError as exc:  # NaN or Infinity: not JSON
        msg = f"cannot write {what}: {exc} (the input holds NaN or Infinity)"
        raise UsageError(msg) from None


def encode(text: str) -> bytes:
    """UTF-8, with a lone surrogate written as its JSON escape (``\\ud800``),
    which is what ``backslashreplace`` gives for one inside a JSON string."""
    return text.encode("utf-8", "backslashreplace")


def write_all(stream: Any, data: bytes) -> None:
    """Write all of ``data``: a pipe whose reader left may take part of it
    and say so, and the next write is the one that raises."""
    view = memoryview(data)
    while view:
        written = stream.write(view)
        if written is None:  # a non-blocking stream that is full
            msg = "the output would block"
            raise BlockingIOError(msg)
        view = view[written:]
    stream.flush()


def writable(path: Path, what: str, *inputs: str | os.PathLike[str] | None) -> None:
    """Raise `OutputError` unless ``path`` can be written (it is no
    input of the run, and no device or directory), before any work."""
    check_output(path, what, inputs=[i for i in inputs if i is not None])


def write_file(path: Path, text: str, what: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: into a temporary file
    beside it, synced, then renamed over it (`memrules._io.files`)."""
    write_atomic(path, encode(text), what)


def stdout() -> Any:
    """``sys.stdout``; `OutputError` when it is closed, so that a
    command can find out before it does any work."""
    if sys.stdout is None:
        msg = "cannot write the output: stdout is closed"
        raise OutputError(msg)
    return sys.stdout


def emit(text: str) -> None:
    """Write ``text`` to stdout in one piece, as UTF-8."""
    stream = stdout()
    data = encode(text)
    buffer = getattr(stream, "buffer", None)
    try:
        if buffer is None:
            stream.write(data.decode("utf-8"))
            stream.flush()
        else:
            stream.flush()
            write_all(buffer, data)
    except BrokenPipeError:
        raise
    except OSError as exc:
        msg = f"cannot write the output: {exc.strerror or exc}"
        raise OutputError(msg) from None


def silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush of what
    could not be written fails no more (and prints nothing)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass
