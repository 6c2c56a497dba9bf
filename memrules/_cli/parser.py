"""The argparse tree of ``memrules``: each command, its flags and its handler.

`build_parser` builds it; each command's namespace carries ``handler``, the
function `main` calls with it. Building the tree
imports no command's heavy dependencies: ``eval`` and ``demo`` add their own
flags (`add_arguments`,
`add_arguments`), and ``mcp`` imports the MCP SDK only when it runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from memrules._cli import commands
from memrules._cli import eval as eval_command
from memrules._cli.arguments import Parser, add_trust
from memrules._cli.compact import compact
from memrules._cli.demo import add_arguments as add_demo_arguments
from memrules._io.version import memrules_version

__all__ = ["build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``memrules`` command line, with every command."""
    parser = Parser(
        prog="memrules", description="Keep LLM conversations inside their context budget."
    )
    parser.add_argument("--version", action="version", version=f"memrules {memrules_version()}")
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = subcommands.add_parser(
        "check",
        help="validate configs and print the pipeline, budget and seams they resolve to",
        description="Validate each config, opening nothing; print what it resolves to, or "
        "every problem with its file, line and YAML path (exit status 2).",
    )
    check.add_argument("configs", nargs="+", metavar="CONFIG", help="a YAML config file")
    add_trust(check)
    check.set_defaults(handler=commands.check)

    compacting = subcommands.add_parser(
        "compact",
        help="compact a JSON file of messages with a YAML pipeline",
        description="Compact OpenAI or Anthropic messages with a YAML pipeline; the result "
        "goes to stdout in the input's shape.",
    )
    compacting.add_argument("--config", required=True, help="the YAML pipeline config (a file)")
    compacting.add_argument("input", metavar="INPUT", help="JSON messages file, or - for stdin")
    compacting.add_argument(
        "--format", choices=("openai", "anthropic"), default="openai", help="message format"
    )
    compacting.add_argument("--report", metavar="FILE", help="write the report as JSON to FILE")
    compacting.add_argument(
        "--trace",
        metavar="FILE",
        help="write a trace of the run (JSON Lines) to FILE, for memrules replay",
    )
    compacting.add_argument(
        "--compress",
        action="store_true",
        help="run every strategy once with no budget (Pipeline.compress)",
    )
    compacting.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress line on stderr (shown only on a terminal, for runs over half a second)",
    )
    compacting.add_argument(
        "--strict",
        action="store_true",
        help="exit with status 1, writing nothing, when a strategy fails or the output is "
        "still over the budget",
    )
    add_trust(compacting)
    compacting.set_defaults(handler=compact)

    replay = subcommands.add_parser(
        "replay",
        help="run a trace again with its recorded seam answers, and compare",
        description="Run every request of a trace again, with the seam answers it recorded and "
        "no model, store or network; exit 1 with what differs (request, message, field).",
    )
    replay.add_argument("trace", metavar="FILE", help="a trace (memrules compact --trace, ...)")
    replay.add_argument(
        "--update", action="store_true", help="rewrite the trace from the replay, on purpose"
    )
    replay.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    add_trust(replay)
    replay.set_defaults(handler=commands.replay)

    evaluation = subcommands.add_parser(
        "eval",
        help="score pipelines on a dataset: tokens saved, facts kept, recall",
        description="Run each pipeline over a dataset of conversations with probe questions "
        "(JSON Lines; see the docs' Evaluation guide) and print one row per pipeline: "
        "requests, tokens before and after, compression ratio, broken tool pairs, facts kept "
        "in the compacted context, recall@k (with a store), p50/p95 time per request.",
    )
    eval_command.add_arguments(evaluation)
    add_trust(evaluation)
    evaluation.set_defaults(handler=commands.eval_pipelines)

    show = subcommands.add_parser(
        "show",
        help="read a trace: one line per request, or an HTML viewer",
        description="Show a trace: one line per request, or with --html a self-contained "
        "viewer page (what came in, what each strategy removed, replaced or inserted, the seam "
        "calls, the tokens), navigable by conversation and request.",
    )
    show.add_argument("trace", type=Path, metavar="TRACE", help="a trace (JSON Lines)")
    show.add_argument("--html", type=Path, metavar="FILE", help="write the viewer to FILE")
    show.set_defaults(handler=commands.show)

    demo = subcommands.add_parser(
        "demo",
        help="the four-turn example, offline or against an endpoint",
        description="The four-turn memory example: max_messages 6, a 256-token window, "
        "a warning at 20% and a sliding window of 4 messages. Offline by default.",
    )
    add_demo_arguments(demo)
    demo.set_defaults(handler=commands.demo)

    mcp = subcommands.add_parser(
        "mcp",
        help="serve retrieval memory and compaction over MCP (stdio)",
        description="An MCP server on stdio (the mcp extra) with the tools remember, recall, "
        "forget, list_memories and compact, for one route and one user and tenant, fixed "
        "when it starts: no tool takes a user, so a caller reaches no one else's memories.",
    )
    mcp.add_argument("config", metavar="CONFIG", help="the YAML config (a file)")
    mcp.add_argument(
        "--route", default="default", help="the route to serve (default: the top level)"
    )
    mcp.add_argument("--user", help="the user whose memories it serves (or MEMRULES_MCP_USER)")
    mcp.add_argument("--tenant", help="the user's tenant (or MEMRULES_MCP_TENANT)")
    mcp.set_defaults(handler=commands.mcp)
    return parser
