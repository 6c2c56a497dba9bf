"""The ``memrules`` command: ``compact``, ``demo`` and ``bench``.

``memrules compact --config CONFIG INPUT`` reads OpenAI-format messages (a
JSON list, or a request object with a ``messages`` list) from INPUT (``-``
for stdin), compacts them, and prints them in the same shape on stdout; with
``--format anthropic`` it reads and writes Anthropic messages (a request's
``system`` parameter included). ``--report FILE`` writes the report as JSON.
Exit status 0 on success, 2 with one line on stderr for a bad config or input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from memrules._adapters import from_anthropic, from_openai, to_anthropic, to_openai
from memrules._adapters.anthropic import to_anthropic_request
from memrules._errors import MemrulesError
from memrules._messages import Conversation
from memrules._pipeline import load_pipeline

__all__ = ["main"]


class UsageError(MemrulesError, ValueError):
    """A command line that cannot be carried out."""


def _read_json(source: str) -> Any:
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"cannot read {source}: {exc.strerror or exc}"
        raise UsageError(msg) from None
    except UnicodeDecodeError as exc:
        msg = f"{source} is not UTF-8 text: {exc.reason}"
        raise UsageError(msg) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{source}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"
        raise UsageError(msg) from None


def _decode(data: Any, fmt: str) -> tuple[Conversation, Callable[[Conversation], Any]]:
    """The conversation in ``data`` and a writer that puts a conversation back
    into the same shape (a list, or the request object with its other keys)."""
    if fmt == "anthropic":
        conversation = from_anthropic(data)
        if isinstance(data, dict):

            def write_request(c: Conversation) -> Any:
                out = {k: v for k, v in data.items() if k not in ("system", "messages")}
                return {**out, **to_anthropic_request(c)}

            return conversation, write_request
        return conversation, to_anthropic
    if isinstance(data, dict):
        if "messages" not in data:
            msg = "expected a list of messages or an object with a 'messages' list"
            raise UsageError(msg)
        conversation = from_openai(data["messages"])
        return conversation, lambda c: {**data, "messages": to_openai(c)}
    return from_openai(data), to_openai


def _compact(args: argparse.Namespace, out: TextIO) -> int:
    pipeline = load_pipeline(Path(args.config))
    conversation, encode = _decode(_read_json(args.input), args.format)
    result = pipeline.compress(conversation) if args.once else pipeline.apply(conversation)
    if args.report:
        report = json.dumps(result.report.to_dict(), indent=2, ensure_ascii=False)
        try:
            Path(args.report).write_text(report + "\n", encoding="utf-8")
        except OSError as exc:
            msg = f"cannot write report {args.report}: {exc.strerror or exc}"
            raise UsageError(msg) from None
    json.dump(encode(result.messages), out, indent=2, ensure_ascii=False)
    out.write("\n")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memrules", description="Keep LLM conversations inside their context budget."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    compact = commands.add_parser(
        "compact", help="compact a JSON file of messages with a YAML pipeline"
    )
    compact.add_argument("--config", required=True, help="the YAML pipeline config")
    compact.add_argument("input", metavar="INPUT", help="JSON messages file, or - for stdin")
    compact.add_argument(
        "--format", choices=("openai", "anthropic"), default="openai", help="message format"
    )
    compact.add_argument("--report", metavar="FILE", help="write the report as JSON to FILE")
    compact.add_argument(
        "--once", action="store_true", help="run every strategy once with no budget (compress)"
    )
    commands.add_parser("demo", help="the seed's four-turn example", add_help=False)
    commands.add_parser("bench", help="speed and budget-use benchmark", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "demo":
        from memrules._demo import main as demo_main

        return demo_main(args_list[1:])
    if args_list and args_list[0] == "bench":
        from memrules._bench import main as bench_main

        return bench_main(args_list[1:])
    args = _parser().parse_args(args_list)
    try:
        return _compact(args, sys.stdout)
    except MemrulesError as exc:
        print(f"memrules: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as other tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
