"""The ``memrules`` command: ``compact``, ``replay``, ``eval``, ``show``, ``check``, ``demo``,
``mcp``.

``memrules compact --config CONFIG INPUT`` reads OpenAI-format messages (a
JSON list, or a request object with a ``messages`` list) from INPUT (``-``
for stdin), compacts them, and prints them in the same shape on stdout; with
``--format anthropic`` it reads and writes Anthropic messages (a request's
``system`` parameter included) and keeps the first non-system message a user
message (the config's ``user_first``). ``--report FILE`` writes the report as JSON,
``--trace FILE`` a trace of the run (`memrules._trace.record`). A config imports no
module unless ``--allow-imports MODULE`` lists it, or ``--trust-config`` allows any.

``memrules replay TRACE`` runs a trace again with its recorded seam answers
(`memrules._replay.replay`): exit 0 when identical, 1 with what differs on
stdout; ``--update`` rewrites it. ``memrules eval --config A [--config B ...]
DATASET`` scores pipelines on a dataset (`memrules._cli.eval`); its
``--per-question``, ``--csv`` and ``--html`` files are written after the run.

``memrules show TRACE`` prints one line per request of a trace; ``--html
FILE`` writes a viewer page (`memrules._cli.show`).

Every failure is one line on stderr and exit status 2: a bad argument,
config or input, an output that cannot be written (a full disk, a closed
stdout). A strategy that fails is one warning line each, and exit status 1
with ``--strict``. On a terminal, long runs show a progress line on stderr
(``--no-progress`` turns it off). Output is built whole before any of it is written, so
stdout holds the whole result or nothing; a reader that goes away (``|
head``) ends the command quietly, with status 1.

This module is the entry point (``memrules = memrules._cli.main:main``) and
its error handling; the argparse tree is in `memrules._cli.parser`, the
handlers in `memrules._cli.compact` and `memrules._cli.commands`,
and the reading and writing of files and streams
in `memrules._cli.streams`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from memrules._cli.compact import pipeline as _pipeline  # noqa: F401 (see below)
from memrules._cli.errors import UsageError
from memrules._cli.parser import build_parser
from memrules._cli.streams import say, silence_stdout
from memrules._core.errors import MemrulesError, OutputError
from memrules._core.jsontext import TOO_DEEP

__all__ = ["UsageError", "main"]

# The names this module has always had for the parser and for compact's
# pipeline, which tests and scripts that drive the command line still use.
_parser = build_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a bad argument (already said on stderr)
        return exc.code if isinstance(exc.code, int) else 2
    except BrokenPipeError:
        silence_stdout()
        return 1
    except OSError as error:  # --help's text on a full disk: said, not lost
        silence_stdout()
        say(f"memrules: error: cannot write the output: {error.strerror or error}")
        return 2
    try:
        status: int = args.handler(args)
    except MemrulesError as exc:
        if isinstance(exc, OutputError):
            silence_stdout()
        say(f"memrules: error: {exc}")
        return 2
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as other tools do.
        silence_stdout()
        return 1
    except KeyboardInterrupt:
        say("memrules: interrupted")
        return 130
    except RecursionError:  # a value read whole but too deep for what is done with it
        say(f"memrules: error: {TOO_DEEP.replace('to read', 'to process')}")
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
