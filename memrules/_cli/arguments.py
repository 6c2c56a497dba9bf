"""The argparse pieces every command shares: the parser class and the trust flags.

`Parser` is argparse with its errors on one line (no usage block) and
``--help``'s text flushed, so that a failure to write it is raised rather
than dropped. `add_trust` adds the two flags that say which modules a
config may import, and `allowed` reads them back as
`load_config` takes them. `whole_number`
is the type of every whole-number flag: bounded both ways, so that
``--sizes 99999999999999999999999`` is a one-line error, not a run that
never ends.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from memrules._cli.streams import one_line

__all__ = ["Parser", "add_trust", "allowed", "whole_number"]


class Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")

    def _print_message(self, message: str, file: Any = None) -> None:
        """Write ``message`` (``--help``'s text) and flush it, letting a
        failure be raised (argparse would drop it, and exit 0)."""
        if message:
            stream = file or sys.stderr
            if stream is not None:
                stream.write(message)
                stream.flush()


def add_trust(command: argparse.ArgumentParser) -> None:
    """Add ``--allow-imports MODULE`` (repeatable) and ``--trust-config``,
    which exclude each other, to ``command``."""
    trust = command.add_mutually_exclusive_group()
    trust.add_argument(
        "--allow-imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="let the config import strategies from MODULE and its submodules "
        '(type: "MODULE:function"); repeatable',
    )
    trust.add_argument(
        "--trust-config",
        action="store_true",
        help="let the config import any module: only for configs you trust as code",
    )


def allowed(args: argparse.Namespace) -> bool | tuple[str, ...]:
    """The imports the trust flags allow: True for any, else the modules listed."""
    return True if args.trust_config else tuple(args.allow_imports)


def whole_number(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number from ``minimum`` to
    ``maximum``; anything else is argparse's one-line error naming the
    range. The text is read only when it is short enough to be in range,
    so a number of a million digits costs nothing.

    >>> whole_number(2, 1_000_000)("40")
    40
    >>> whole_number(2, 1_000_000)("99999999999999999999999")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: '99999999999999999999999' is not a whole number from 2 to 1,000,000
    """

    def whole(text: str) -> int:
        stripped = text.strip()
        digits = stripped.removeprefix("-").removeprefix("+")
        value = None
        if digits.isascii() and digits.isdigit() and len(digits) <= len(str(maximum)) + 1:
            value = int(stripped)
        if value is None or not minimum <= value <= maximum:
            shown = text if len(text) <= 40 else f"{text[:40]}..."
            msg = f"{shown!r} is not a whole number from {minimum:,} to {maximum:,}"
            raise argparse.ArgumentTypeError(msg)
        return value

    whole.__name__ = "whole number"  # what argparse calls the type in its errors
    return whole
