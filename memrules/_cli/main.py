"""The ``memrules`` command: ``compact``, ``replay``, ``eval``, ``check``, ``demo``, ``bench``.

``memrules compact --config CONFIG INPUT`` reads OpenAI-format messages (a
JSON list, or a request object with a ``messages`` list) from INPUT (``-``
for stdin), compacts them, and prints them in the same shape on stdout; with
``--format anthropic`` it reads and writes Anthropic messages (a request's
``system`` parameter included) and keeps the first non-system message a user
message (the config's ``user_first``). ``--report FILE`` writes the report as JSON,
``--trace FILE`` a trace of the run (:mod:`memrules._trace.record`). A config imports no
module unless ``--allow-imports MODULE`` lists it, or ``--trust-config`` allows any.

``memrules replay TRACE`` runs a trace again with its recorded seam answers
(:mod:`memrules._replay.replay`): exit 0 when identical, 1 with what differs on
stdout; ``--update`` rewrites it. ``memrules eval --config A [--config B ...]
DATASET`` scores pipelines on a dataset (:mod:`memrules._cli.eval`); its
``--per-question``, ``--csv`` and ``--html`` files are written after the run.

``memrules show TRACE`` prints one line per request of a trace; ``--html
FILE`` writes a viewer page (:mod:`memrules._cli.show`).

Every failure is one line on stderr and exit status 2: a bad argument,
config or input, an output that cannot be written (a full disk, a closed
stdout). A strategy that fails is one warning line each, and exit status 1
with ``--strict``. On a terminal, long runs show a progress line on stderr
(``--no-progress`` turns it off). Output is built whole before any of it is written, so
stdout holds the whole result or nothing; a reader that goes away (``|
head``) ends the command quietly, with status 1.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import attrs

from memrules._adapters import from_anthropic, from_openai, to_anthropic, to_openai
from memrules._adapters.anthropic import to_anthropic_request
from memrules._cli import eval as eval_command
from memrules._cli import eval_output
from memrules._cli import report_html as eval_report
from memrules._cli import show as show_command
from memrules._cli.check import check_configs
from memrules._cli.demo import add_arguments as add_demo_arguments
from memrules._cli.demo import render as render_demo
from memrules._config.load import load_config
from memrules._core.errors import MemrulesError, MessageFormatError, OutputError, ReplayMismatch
from memrules._core.jsontext import TOO_DEEP, JSONTextError, parse_json
from memrules._core.messages import Conversation
from memrules._core.redaction import redact_text
from memrules._core.report import CompressionReport, CompressionResult
from memrules._io.files import check_output, write_atomic
from memrules._io.version import memrules_version
from memrules._replay.replay import replay_trace
from memrules._runtime.pipeline import Pipeline
from memrules._runtime.progress import Progress, ProgressObserver
from memrules._trace.record import TracedPipeline, TraceWriter

__all__ = ["UsageError", "main"]


class UsageError(MemrulesError, ValueError):
    """A command line that cannot be carried out."""


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


def _say(line: str) -> None:
    """One line on stderr, if there is a stderr."""
    if sys.stderr is not None:
        try:
            sys.stderr.write(redact_text(_one_line(line)) + "\n")
            sys.stderr.flush()
        except OSError:
            pass


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")

    def _print_message(self, message: str, file: Any = None) -> None:
        """Write ``message`` (``--help``'s text) and flush it, letting a
        failure be raised (argparse would drop it, and exit 0)."""
        if message:
            stream = file or sys.stderr
            if stream is not None:
                stream.write(message)
                stream.flush()


# --- reading ----------------------------------------------------------------------


def _source_name(source: str) -> str:
    return "<stdin>" if source == "-" else source


def _read_json(source: str) -> Any:
    """The JSON in file ``source`` (``-``: stdin); :class:`UsageError` with
    one line naming the file, and the place in it where it can."""
    name = _source_name(source)
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


# --- writing ----------------------------------------------------------------------


def _to_json(value: Any, what: str) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError as exc:  # NaN or Infinity: not JSON
        msg = f"cannot write {what}: {exc} (the input holds NaN or Infinity)"
        raise UsageError(msg) from None


def _encode(text: str) -> bytes:
    """UTF-8, with a lone surrogate written as its JSON escape (``\\ud800``),
    which is what ``backslashreplace`` gives for one inside a JSON string."""
    return text.encode("utf-8", "backslashreplace")


def _write_all(stream: Any, data: bytes) -> None:
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


def _writable(path: Path, what: str, *inputs: str | os.PathLike[str] | None) -> None:
    """Raise :class:`OutputError` unless ``path`` can be written (it is no
    input of the run, and no device or directory), before any work."""
    check_output(path, what, inputs=[i for i in inputs if i is not None])


def _write_file(path: Path, text: str, what: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: into a temporary file
    beside it, synced, then renamed over it (:mod:`memrules._io.files`)."""
    write_atomic(path, _encode(text), what)


def _stdout() -> Any:
    if sys.stdout is None:
        msg = "cannot write the output: stdout is closed"
        raise OutputError(msg)
    return sys.stdout


def _emit(text: str) -> None:
    """Write ``text`` to stdout in one piece, as UTF-8."""
    stream = _stdout()
    data = _encode(text)
    buffer = getattr(stream, "buffer", None)
    try:
        if buffer is None:
            stream.write(data.decode("utf-8"))
            stream.flush()
        else:
            stream.flush()
            _write_all(buffer, data)
    except BrokenPipeError:
        raise
    except OSError as exc:
        msg = f"cannot write the output: {exc.strerror or exc}"
        raise OutputError(msg) from None


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush of what
    could not be written fails no more (and prints nothing)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


# --- the commands ------------------------------------------------------------------


def _failures(report: CompressionReport) -> list[tuple[str, str]]:
    """Each failing strategy once, with its first error."""
    seen: dict[str, str] = {}
    for action in report.actions:
        if action.error is not None and action.strategy not in seen:
            seen[action.strategy] = action.error
    return list(seen.items())


def _pipeline(args: argparse.Namespace, progress: Progress | None = None) -> Pipeline:
    """The pipeline ``compact`` runs: the config, imports allowed as the flags
    say, and ``user_first`` on for the Anthropic format (whose API rejects a
    conversation that starts with an assistant message); shown on
    ``progress`` when that draws."""
    config = load_config(Path(args.config), allow_imports=_allowed(args))
    if args.format == "anthropic" and not config.user_first:
        config = attrs.evolve(config, user_first=True)
    observers = [ProgressObserver(progress)] if progress is not None and progress.enabled else []
    return Pipeline.from_config(config, observers=observers)


def _progress(args: argparse.Namespace) -> Progress:
    """A progress line on stderr, when it is a terminal and not turned off."""
    return Progress(None if args.no_progress else sys.stderr)


def _compact(args: argparse.Namespace) -> int:
    report_path = Path(args.report) if args.report else None
    if report_path is not None:
        _writable(report_path, "the report", args.config, args.input)
    trace_path = Path(args.trace) if args.trace else None
    if trace_path is not None:
        _writable(trace_path, "the trace", args.config, args.input, report_path)
    _stdout()
    with _progress(args) as progress:
        pipeline = _pipeline(args, progress)
        name = _source_name(args.input)
        progress.update(f"reading {name}")
        data = _read_json(args.input)
        try:
            progress.update(f"reading {name}: converting")
            conversation, encode = _decode(data, args.format)
        except (MessageFormatError, UsageError) as exc:
            msg = f"{name}: {exc}"
            raise UsageError(msg) from None
        except RecursionError:
            msg = f"{name}: invalid input: nested too deeply to read"
            raise UsageError(msg) from None
        if trace_path is None:
            result = (pipeline.compress if args.compress else pipeline.apply)(conversation)
            return _finish_compact(args, result, encode, report_path, progress)
        label = Path(args.config).stem
        with TraceWriter.for_pipelines(trace_path, [(label, pipeline)], atomic=True) as writer:
            traced = TracedPipeline(writer, pipeline)
            result = (traced.compress if args.compress else traced.apply)(conversation)
            status = _finish_compact(args, result, encode, report_path, progress, writer)
            if status:
                writer.discard()
            return status


def _finish_compact(
    args: argparse.Namespace,
    result: CompressionResult,
    encode: Callable[[Conversation], Any],
    report_path: Path | None,
    progress: Progress,
    trace: TraceWriter | None = None,
) -> int:
    """Write what ``compact`` made: the report, the trace, then stdout."""
    progress.update("writing")
    try:
        output = _to_json(encode(result.messages), "the output")
    except (MessageFormatError, RecursionError) as exc:
        msg = f"{_source_name(args.input)}: cannot write the output: {exc}"
        raise UsageError(msg) from None
    report = _to_json(result.report.to_dict(), "the report") if report_path else ""
    progress.close()
    failures = _failures(result.report)
    if failures and args.strict:
        for name, error in failures:
            _say(f"memrules: error: strategy {name} failed (--strict): {error}")
        return 1
    if report_path is not None:
        _write_file(report_path, report, "the report")
    if trace is not None:
        trace.close()
    _emit(output)
    for name, error in failures:
        _say(f"memrules: warning: strategy {name} failed, the others went on: {error}")
    return 0


def _allowed(args: argparse.Namespace) -> bool | tuple[str, ...]:
    return True if args.trust_config else tuple(args.allow_imports)


def _requests(count: int) -> str:
    return f"{count:,} request" + ("" if count == 1 else "s")


def _replay(args: argparse.Namespace) -> int:
    _stdout()
    with _progress(args) as progress:
        try:
            summary = replay_trace(
                args.trace, update=args.update, allow_imports=_allowed(args), progress=progress
            )
        except ReplayMismatch as exc:
            progress.clear()
            lines = [f"memrules replay: {args.trace}: differs from its replay", *exc.differences]
            _emit("\n".join(lines) + "\n")
            return 1
    lines = [f"memrules replay: note: {note}" for note in summary.notes]
    if summary.updated:
        changed = f", {summary.differed} of them changed" if summary.differed else ", unchanged"
        rewrote = f"rewrote {_requests(summary.requests)}{changed}"
        lines.append(f"memrules replay: {args.trace}: {rewrote}")
        lines.extend(summary.differences)
    else:
        lines.append(
            f"memrules replay: {args.trace}: {_requests(summary.requests)} replayed, identical"
        )
    _emit("\n".join(lines) + "\n")
    return 0


def _add_trust(command: argparse.ArgumentParser) -> None:
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


def _eval(args: argparse.Namespace) -> int:
    for name, value, minimum in (("--jobs", args.jobs, 1), ("-k", args.k, 1)):
        if value < minimum:
            msg = f"{name} {value} must be at least {minimum}"
            raise UsageError(msg)
    if args.max_tokens is not None and args.max_tokens < 1:
        msg = f"--max-tokens {args.max_tokens} must be at least 1"
        raise UsageError(msg)
    if not args.dataset.is_file():
        msg = f"cannot read the dataset {args.dataset}: no such file"
        raise UsageError(msg)
    if args.trace is not None:
        _writable(args.trace, "the trace", args.dataset, *args.config)
    settings = attrs.evolve(_eval_settings(args), trace=args.trace)
    _stdout()
    with _progress(args) as progress:
        run = eval_command.run_eval(settings, progress)
    _write_eval_files(args, run)
    rows, settings = run.rows, run.settings
    if args.json:
        figures = eval_command.figures_json(rows, settings, run.comparisons)
        output = _to_json(figures, "the figures")
    else:
        output = eval_command.render_table(rows, k=args.k)
        output += eval_report.comparisons_text(run)
    _emit(output)
    return 0


# --- eval's analysis outputs (per question, CSV, HTML, intervals, answer models) -----


def _eval_settings(args: argparse.Namespace) -> eval_command.EvalSettings:
    """The settings of ``memrules eval``, its output files checked writable first."""
    if args.bootstrap < 0:
        msg = f"--bootstrap {args.bootstrap} must be at least 0"
        raise UsageError(msg)
    if args.judge_model is not None and args.answer_model is None:
        msg = "--judge-model needs --answer-model (the judge grades its answers)"
        raise UsageError(msg)
    for flag, url, name in (
        ("--answer-model", args.answer_model, args.answer_model_name),
        ("--judge-model", args.judge_model, args.judge_model_name),
    ):
        if url is None and name is not None:
            msg = f"{flag}-name needs {flag}"
            raise UsageError(msg)
    if args.html is not None and importlib.util.find_spec("matplotlib") is None:
        msg = "--html draws its plot with matplotlib: pip install 'memrules[report]'"
        raise UsageError(msg)
    for path, what in ((args.per_question, "the per-question file"), (args.csv, "the CSV"),
                       (args.html, "the HTML report")):  # fmt: skip
        if path is not None:
            _writable(path, what, args.dataset, *args.config)

    def endpoint(url: str | None, name: str | None) -> eval_command.Endpoint | None:
        if url is None:
            return None
        return eval_command.Endpoint(url=url, model=name, api_key_env=args.api_key_env)

    return eval_command.EvalSettings(
        configs=tuple(args.config),
        dataset=args.dataset,
        k=args.k,
        max_tokens=args.max_tokens,
        jobs=args.jobs,
        allow_imports=_allowed(args),
        bootstrap=args.bootstrap,
        seed=args.seed,
        answer_model=endpoint(args.answer_model, args.answer_model_name),
        judge_model=endpoint(args.judge_model, args.judge_model_name),
    )


def _write_eval_files(args: argparse.Namespace, run: eval_command.EvalRun) -> None:
    if args.per_question is not None:
        lines = "".join(eval_output.per_question_lines(run))
        _write_file(args.per_question, lines, "the per-question file")
    if args.csv is not None:
        _write_file(args.csv, eval_output.table_csv(run), "the CSV")
    if args.html is not None:
        _write_file(args.html, eval_report.report_html(run), "the HTML report")


def _show(args: argparse.Namespace) -> int:
    if args.html is not None:
        _writable(args.html, "the viewer", args.trace)
        _write_file(args.html, show_command.viewer_html(args.trace), "the viewer")
        return 0
    _stdout()
    _emit(show_command.summary_text(args.trace))
    return 0


def _check(args: argparse.Namespace) -> int:
    _stdout()
    outcome = check_configs(args.configs, allow_imports=_allowed(args))
    if outcome.report:
        _emit("\n".join(outcome.report) + "\n")
    for problem in outcome.problems:
        _say(f"memrules: error: {problem}")
    return 0 if outcome.ok else 2


def _demo(args: argparse.Namespace) -> int:
    if args.base_url is None and (args.model is not None or args.api_key_env is not None):
        msg = "--model and --api-key-env need --base-url"
        raise UsageError(msg)
    _stdout()
    _emit(render_demo(args))
    return 0


_BENCH_HELP = (
    "Speed, budget use and memory of memrules against a plain tiktoken loop "
    "and LangChain's trim_messages, on generated agent histories (fixed random seeds)."
)


def _bench_harness() -> ModuleType:
    """The benchmark harness's command, ``benchmarks/harness/command.py`` of the
    source checkout this ``memrules`` is imported from. The harness is not
    part of the installed package: without a checkout, :class:`UsageError`."""
    root = Path(__file__).resolve().parents[2]  # memrules/_cli/main.py
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


def _bench(args: argparse.Namespace) -> int:
    harness = _bench_harness()
    parser = _Parser(prog="memrules bench", description=_BENCH_HELP)
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
        _writable(options.json, "the figures")
    out = _stdout()
    try:
        with _progress(options) as progress:
            figures = harness.run(harness.settings(options), out, progress=progress)
    except BrokenPipeError:
        raise
    except OSError as exc:
        msg = f"cannot write the output: {exc.strerror or exc}"
        raise OutputError(msg) from None
    if options.json is not None:
        _write_file(options.json, json.dumps(figures, indent=2, default=str) + "\n", "the figures")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="memrules", description="Keep LLM conversations inside their context budget."
    )
    parser.add_argument("--version", action="version", version=f"memrules {memrules_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser(
        "check",
        help="validate configs and print the pipeline, budget and seams they resolve to",
        description="Validate each config, opening nothing; print what it resolves to, or "
        "every problem with its file, line and YAML path (exit status 2).",
    )
    check.add_argument("configs", nargs="+", metavar="CONFIG", help="a YAML config file")
    _add_trust(check)
    check.set_defaults(handler=_check)

    compact = commands.add_parser(
        "compact",
        help="compact a JSON file of messages with a YAML pipeline",
        description="Compact OpenAI or Anthropic messages with a YAML pipeline; the result "
        "goes to stdout in the input's shape.",
    )
    compact.add_argument("--config", required=True, help="the YAML pipeline config (a file)")
    compact.add_argument("input", metavar="INPUT", help="JSON messages file, or - for stdin")
    compact.add_argument(
        "--format", choices=("openai", "anthropic"), default="openai", help="message format"
    )
    compact.add_argument("--report", metavar="FILE", help="write the report as JSON to FILE")
    compact.add_argument(
        "--trace",
        metavar="FILE",
        help="write a trace of the run (JSON Lines) to FILE, for memrules replay",
    )
    compact.add_argument(
        "--compress",
        action="store_true",
        help="run every strategy once with no budget (Pipeline.compress)",
    )
    compact.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress line on stderr (shown only on a terminal, for runs over half a second)",
    )
    compact.add_argument(
        "--strict",
        action="store_true",
        help="exit with status 1, writing nothing, when a strategy fails",
    )
    _add_trust(compact)
    compact.set_defaults(handler=_compact)

    replay = commands.add_parser(
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
    _add_trust(replay)
    replay.set_defaults(handler=_replay)

    evaluation = commands.add_parser(
        "eval",
        help="score pipelines on a dataset: tokens saved, facts kept, recall",
        description="Run each pipeline over a dataset of conversations with probe questions "
        "(JSON Lines; see the docs' Evaluation guide) and print one row per pipeline: "
        "requests, tokens before and after, compression ratio, broken tool pairs, facts kept "
        "in the compacted context, recall@k (with a store), p50/p95 time per request.",
    )
    eval_command.add_arguments(evaluation)
    _add_trust(evaluation)
    evaluation.set_defaults(handler=_eval)

    show = commands.add_parser(
        "show",
        help="read a trace: one line per request, or an HTML viewer",
        description="Show a trace: one line per request, or with --html a self-contained "
        "viewer page (what came in, what each strategy removed, replaced or inserted, the seam "
        "calls, the tokens), navigable by conversation and request.",
    )
    show.add_argument("trace", type=Path, metavar="TRACE", help="a trace (JSON Lines)")
    show.add_argument("--html", type=Path, metavar="FILE", help="write the viewer to FILE")
    show.set_defaults(handler=_show)

    demo = commands.add_parser(
        "demo",
        help="the four-turn example, offline or against an endpoint",
        description="The four-turn memory example: max_messages 6, a 256-token window, "
        "a warning at 20% and a sliding window of 4 messages. Offline by default.",
    )
    add_demo_arguments(demo)
    demo.set_defaults(handler=_demo)

    # The harness is in a source checkout, not in the package: the bench
    # command's arguments are read by its own parser once the harness is found
    # (_bench), so here they are taken as they are (no prefix chars: no options).
    bench = commands.add_parser(
        "bench",
        help="speed and budget-use benchmark (in a source checkout)",
        description=_BENCH_HELP,
        add_help=False,
        prefix_chars="\0",
    )
    bench.add_argument("arguments", nargs="*", help=argparse.SUPPRESS)
    bench.set_defaults(handler=_bench)

    mcp = commands.add_parser(
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
    mcp.set_defaults(handler=_mcp)
    return parser


def _mcp(args: argparse.Namespace) -> int:
    from memrules._cli import mcp_server

    found = mcp_server.scope(args.user, args.tenant)
    if found is None:
        raise UsageError(mcp_server.SCOPE_MISSING)
    return mcp_server.serve(args.config, route=args.route, user=found[0], tenant=found[1])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a bad argument (already said on stderr)
        return exc.code if isinstance(exc.code, int) else 2
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except OSError as error:  # --help's text on a full disk: said, not lost
        _silence_stdout()
        _say(f"memrules: error: cannot write the output: {error.strerror or error}")
        return 2
    try:
        status: int = args.handler(args)
    except MemrulesError as exc:
        if isinstance(exc, OutputError):
            _silence_stdout()
        _say(f"memrules: error: {exc}")
        return 2
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as other tools do.
        _silence_stdout()
        return 1
    except KeyboardInterrupt:
        _say("memrules: interrupted")
        return 130
    except RecursionError:  # a value read whole but too deep for what is done with it
        _say(f"memrules: error: {TOO_DEEP.replace('to read', 'to process')}")
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
