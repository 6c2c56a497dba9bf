"""``memrules compact``: read messages, run the config's pipeline, write the result.

The input (a JSON list of OpenAI messages, or a request object with a
``messages`` list; with ``--format anthropic``, Anthropic messages or a
request with its ``system`` parameter) is decoded, compacted with
`Pipeline.apply` (``--compress``: `Pipeline.compress`), and
written back in the same shape on stdout. ``--report FILE`` writes the
report as JSON, ``--trace FILE`` a trace of the run
(`memrules._trace.record`). Every output path is checked writable
before any work, and everything is built before anything is written: with
``--strict``, a failing strategy, or an output still over the budget,
writes nothing and exits 1 (so does an output over the budget under the
config's ``over_budget: raise``); without it, an output over the budget is
written with a warning on stderr (none under ``over_budget: send``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from memrules._adapters import from_anthropic, from_openai, to_anthropic, to_openai
from memrules._adapters.anthropic import to_anthropic_request
from memrules._cli.arguments import allowed
from memrules._cli.errors import UsageError
from memrules._cli.streams import (
    emit,
    progress_line,
    read_json,
    say,
    source_name,
    stdout,
    to_json,
    writable,
    write_file,
)
from memrules._config.load import load_config
from memrules._core.errors import MessageFormatError
from memrules._core.messages import Conversation
from memrules._core.report import CompressionReport, CompressionResult
from memrules._runtime.over_budget import over_budget_text
from memrules._runtime.pipeline import Pipeline
from memrules._runtime.progress import Progress, ProgressObserver
from memrules._trace.record import TracedPipeline, TraceWriter

__all__ = ["compact", "decode", "pipeline"]


def decode(data: Any, fmt: str) -> tuple[Conversation, Callable[[Conversation], Any]]:
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


def _failures(report: CompressionReport) -> list[tuple[str, str]]:
    """Each failing strategy once, with its first error."""
    seen: dict[str, str] = {}
    for action in report.actions:
        if action.error is not None and action.strategy not in seen:
            seen[action.strategy] = action.error
    return list(seen.items())


def pipeline(args: argparse.Namespace, progress: Progress | None = None) -> Pipeline:
    """The pipeline ``compact`` runs: the config, imports allowed as the flags
    say, and ``user_first`` on for the Anthropic format (whose API rejects a
    conversation that starts with an assistant message); shown on
    ``progress`` when that draws."""
    config = load_config(Path(args.config), allow_imports=allowed(args))
    if args.format == "anthropic" and not config.user_first:
        config = attrs.evolve(config, user_first=True)
    observers = [ProgressObserver(progress)] if progress is not None and progress.enabled else []
    return Pipeline.from_config(config, observers=observers)


def compact(args: argparse.Namespace) -> int:
    """Run ``memrules compact``; returns the exit status."""
    report_path = Path(args.report) if args.report else None
    if report_path is not None:
        writable(report_path, "the report", args.config, args.input)
    trace_path = Path(args.trace) if args.trace else None
    if trace_path is not None:
        writable(trace_path, "the trace", args.config, args.input, report_path)
    stdout()
    with progress_line(args) as progress:
        pipe = pipeline(args, progress)
        # An output over the budget is said in the command's own words (_finish).
        mode = pipe.config.over_budget
        if mode != "send":
            pipe = attrs.evolve(pipe, config=attrs.evolve(pipe.config, over_budget="send"))
        name = source_name(args.input)
        progress.update(f"reading {name}")
        data = read_json(args.input)
        try:
            progress.update(f"reading {name}: converting")
            conversation, encode = decode(data, args.format)
        except (MessageFormatError, UsageError) as exc:
            msg = f"{name}: {exc}"
            raise UsageError(msg) from None
        except RecursionError:
            msg = f"{name}: invalid input: nested too deeply to read"
            raise UsageError(msg) from None
        if trace_path is None:
            result = (pipe.compress if args.compress else pipe.apply)(conversation)
            return _finish(args, result, encode, report_path, progress, mode=mode)
        label = Path(args.config).stem
        with TraceWriter.for_pipelines(trace_path, [(label, pipe)], atomic=True) as writer:
            traced = TracedPipeline(writer, pipe)
            result = (traced.compress if args.compress else traced.apply)(conversation)
            status = _finish(args, result, encode, report_path, progress, writer, mode=mode)
            if status:
                writer.discard()
            return status


def _over_budget(args: argparse.Namespace, report: CompressionReport, mode: str) -> bool:
    """Say that the output is over its budget, unless the config says to send
    it in silence; whether the command fails for it (``--strict``, or the
    config's ``over_budget: raise``)."""
    if not report.over_budget or (mode == "send" and not args.strict):
        return False
    fails = args.strict or mode == "raise"
    why = "--strict" if args.strict else "over_budget: raise"
    text = over_budget_text(report)
    say(f"memrules: error: {text} ({why})" if fails else f"memrules: warning: {text}")
    return fails


def _finish(
    args: argparse.Namespace,
    result: CompressionResult,
    encode: Callable[[Conversation], Any],
    report_path: Path | None,
    progress: Progress,
    trace: TraceWriter | None = None,
    *,
    mode: str = "warn",
) -> int:
    """Write what ``compact`` made: the report, the trace, then stdout."""
    progress.update("writing")
    try:
        output = to_json(encode(result.messages), "the output")
    except (MessageFormatError, RecursionError) as exc:
        msg = f"{source_name(args.input)}: cannot write the output: {exc}"
        raise UsageError(msg) from None
    report = to_json(result.report.to_dict(), "the report") if report_path else ""
    progress.close()
    failures = _failures(result.report)
    if failures and args.strict:
        for name, error in failures:
            say(f"memrules: error: strategy {name} failed (--strict): {error}")
        return 1
    if _over_budget(args, result.report, mode):
        return 1
    if report_path is not None:
        write_file(report_path, report, "the report")
    if trace is not None:
        trace.close()
    emit(output)
    for name, error in failures:
        say(f"memrules: warning: strategy {name} failed, the others went on: {error}")
    return 0
