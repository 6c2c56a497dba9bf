"""Run the memrules benchmark: ``python benchmarks/run.py [--quick] [--json FILE] ...``.

A script of the source checkout, not a command of the installed package
(`memrules` never imports `benchmarks/`): it puts this checkout first on the
path, so the harness measures the `memrules` beside it, reads the harness's
arguments and runs it; see benchmarks/README.md for what it measures.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import command  # noqa: E402
from memrules._cli.arguments import Parser  # noqa: E402
from memrules._cli.streams import progress_line, say, silence_stdout, stdout, writable, write_file  # noqa: E402  # noqa: E402
from memrules._core.errors import MemrulesError, OutputError  # noqa: E402

PROG = "benchmarks/run.py"

DESCRIPTION = (
    "Speed, budget use and memory of memrules against a plain tiktoken loop "
    "and LangChain's trim_messages, on generated agent histories (fixed random seeds)."
)


def _parser() -> Parser:
    parser = Parser(prog=PROG, description=DESCRIPTION)
    command.add_arguments(parser)
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress line on stderr (shown only on a terminal)",
    )
    return parser


def _run(argv: Sequence[str]) -> int:
    try:
        options = _parser().parse_args(list(argv))
    except SystemExit as exc:  # --help, or a bad argument (already said on stderr)
        return exc.code if isinstance(exc.code, int) else 2
    if options.json is not None:
        writable(options.json, "the figures")
    out = stdout()
    try:
        with progress_line(options) as progress:
            figures = command.run(command.settings(options), out, progress=progress)
    except BrokenPipeError:
        raise
    except OSError as exc:
        msg = f"cannot write the output: {exc.strerror or exc}"
        raise OutputError(msg) from None
    if options.json is not None:
        write_file(options.json, json.dumps(figures, indent=2, default=str) + "\n", "the figures")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark with ``argv`` (the command line's by default); the exit status."""
    try:
        return _run(sys.argv[1:] if argv is None else argv)
    except MemrulesError as exc:
        if isinstance(exc, OutputError):
            silence_stdout()
        say(f"{PROG}: error: {exc}")
        return 2
    except BrokenPipeError:  # the reader went away (``| head``)
        silence_stdout()
        return 1
    except KeyboardInterrupt:
        say(f"{PROG}: interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
