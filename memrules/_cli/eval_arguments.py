"""`memrules eval`'s arguments and their bounds."""

from __future__ import annotations

import argparse
from pathlib import Path

from memrules._cli.arguments import whole_number
from memrules.memory.config import MAX_RETRIEVAL_LIMIT

__all__ = ["MAX_BUDGET", "MAX_JOBS", "MAX_RESAMPLES", "add_arguments"]


MAX_JOBS = 256
"""The most processes ``--jobs`` may start."""


MAX_BUDGET = 1_000_000_000
"""The largest ``--max-tokens``: a budget no model's window comes near."""


MAX_RESAMPLES = 1_000_000
"""The most ``--bootstrap`` resamples."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``memrules eval``'s arguments (the trust flags are the command line's own)."""
    parser.add_argument(
        "--config",
        action="append",
        required=True,
        type=Path,
        metavar="CONFIG",
        help="a YAML pipeline config; repeat to compare several",
    )
    parser.add_argument(
        "dataset", type=Path, nargs="?", metavar="DATASET", help="a JSON Lines dataset"
    )
    parser.add_argument(
        "--trajectories",
        type=Path,
        nargs="+",
        action="extend",
        metavar="PATH",
        help="replay agent trajectories (files or directories: mini-swe-agent or SWE-agent "
        ".traj, OpenAI or Anthropic messages, Claude Code or Codex sessions) instead of a "
        "dataset, and report the probes",
    )
    parser.add_argument(
        "--tool-results",
        choices=("openai", "anthropic"),
        default="openai",
        help="with --trajectories: send tool results as tool messages (openai) or inside "
        "user-role messages (anthropic)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--jobs",
        type=whole_number(1, MAX_JOBS),
        default=1,
        metavar="N",
        help="run conversations in N processes",
    )
    parser.add_argument(
        "-k",
        type=whole_number(1, MAX_RETRIEVAL_LIMIT),
        default=5,
        metavar="K",
        help="hits recall may use per question (5)",
    )
    parser.add_argument(
        "--max-tokens",
        type=whole_number(1, MAX_BUDGET),
        metavar="N",
        help="put every pipeline on a budget of N tokens (replacing its trigger)",
    )
    parser.add_argument(
        "--trace", type=Path, metavar="FILE", help="write a trace of every request to FILE"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    parser.add_argument(
        "--per-question",
        type=Path,
        metavar="FILE",
        help="write one JSON line per question and config to FILE: kept, recalled or lost, "
        "where each evidence message went and which strategy removed it, tokens, cache",
    )
    parser.add_argument(
        "--csv", type=Path, metavar="FILE", help="write the table (with intervals) as CSV to FILE"
    )
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="write a self-contained HTML report (table, plot, categories, comparisons) to FILE",
    )
    parser.add_argument(
        "--bootstrap",
        type=whole_number(0, MAX_RESAMPLES),
        default=0,
        metavar="N",
        help="95%% intervals on every rate from N resamples of the conversations",
    )
    parser.add_argument(
        "--seed",
        type=whole_number(0, 2**63 - 1),
        default=0,
        metavar="S",
        help="the bootstrap's random seed (0)",
    )
    answers = parser.add_argument_group("answer-level scoring (OpenAI-compatible endpoints)")
    answers.add_argument(
        "--answer-model",
        metavar="URL",
        help="answer each question from the compacted context with the model at URL (…/v1)",
    )
    answers.add_argument(
        "--answer-model-name", metavar="NAME", help="its model name (default: the first listed)"
    )
    answers.add_argument(
        "--judge-model",
        metavar="URL",
        help="grade each answer against the dataset's with the model at URL (…/v1)",
    )
    answers.add_argument(
        "--judge-model-name", metavar="NAME", help="its model name (default: the first listed)"
    )
    answers.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="the environment variable holding both endpoints' API key (none by default)",
    )
