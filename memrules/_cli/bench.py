"""``memrules bench``: the benchmark harness of the source checkout, run as a command.

The harness (``benchmarks/harness/command.py``) is not part of the installed
package: :func:`bench` finds it beside the ``memrules`` package it is
imported from, gives its arguments to the harness's own parser, and runs it;
without a checkout it is a :class:`~memrules._cli.errors.UsageError`. The
top-level parser takes ``bench``'s arguments as they are, so that
``import memrules._cli.main`` never imports the harness.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from types import ModuleType

from memrules._cli.arguments import Parser
from memrules._cli.errors import UsageError
from memrules._cli.streams import progress_line, stdout, writable, write_file
from memrules._core.errors import OutputError

__all__ = ["BENCH_HELP", "bench"]

BENCH_HELP = (
    "Speed, budget use and memory of memrules against a plain tiktoken loop "
    "and LangChain's trim_messages, on generated agent histories (fixed random seeds)."
)
"""The description of ``memrules bench`` (in ``memrules --help`` and its own)."""


def _harness() -> ModuleType:
    """The benchmark harness's command, ``benchmarks/harness/command.py`` of the
    source checkout this ``memrules`` is imported from. The harness is not
    part of the installed package: without a checkout, :class:`UsageError`."""
    root = Path(__file__).resolve().parents[2]  # memrules/_cli/bench.py
    command = root / "benchmarks" / "harness" / "command.py"
    if not command.is_file():
        msg = (
            "bench runs the benchmark harness of a source checkout (benchmarks/), "
            "which is not installed with memrules: run it in a clone of the repository"
        )
        raise UsageError(msg)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    module = importlib.import_module("benchmarks.harness.command")
    found = Path(module.__file__ or "").resolve()
    if found != command.resolve():
        msg = f"bench: benchmarks.harness.command is {found}, not the checkout's {command}"
        raise UsageError(msg)
    return module


def bench(args: argparse.Namespace) -> int:
    """Run ``memrules bench`` with ``args.arguments``; returns the exit status."""
    harness = _harness()
    parser = Parser(prog="memrules bench", description=BENCH_HELP)
    harness.add_arguments(parser)
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress line on stderr (shown only on a terminal)",
    )
    try:
        options = parser.parse_args(args.arguments)
    except SystemExit as exc:  # --help, or a bad argument (already said on stderr)
        return exc.code if isinstance(exc.code, int) else 2
    except BrokenPipeError:
        raise
    except OSError as exc:  # --help's text on a full disk
        msg = f"cannot write the output: {exc.strerror or exc}"
        raise OutputError(msg) from None
    if options.json is not None:
        writable(options.json, "the figures")
    out = stdout()
    try:
        with progress_line(options) as progress:
            figures = harness.run(harness.settings(options), out, progress=progress)
    except BrokenPipeError:
        raise
    except OSError as exc:
        msg = f"cannot write the output: {exc.strerror or exc}"
        raise OutputError(msg) from None
    if options.json is not None:
        write_file(options.json, json.dumps(figures, indent=2, default=str) + "\n", "the figures")
    return 0
