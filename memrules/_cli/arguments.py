"""The argparse pieces every command shares: the parser class and the trust flags.

:class:`Parser` is argparse with its errors on one line (no usage block) and
``--help``'s text flushed, so that a failure to write it is raised rather
than dropped. :func:`add_trust` adds the two flags that say which modules a
config may import, and :func:`allowed` reads them back as
:func:`memrules._config.load.load_config` takes them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from memrules._cli.streams import one_line

__all__ = ["Parser", "add_trust", "allowed"]


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
