"""The handlers of ``replay``, ``eval``, ``show``, ``check``, ``demo`` and ``mcp``.

Each takes the parsed command line, checks its flags and that its output
files can be written before any work, calls the module that does the work
(`memrules._replay.replay`, `memrules._cli.eval`,
`memrules._cli.show`, `memrules._cli.check`,
`memrules._cli.demo`, `memrules._cli.mcp_server`) and writes what
it made through `memrules._cli.streams`; it returns the exit status.
``compact`` is in `memrules._cli.compact`. The benchmark is a script
of the source checkout (``python benchmarks/run.py``), not a command.
"""

from __future__ import annotations

import argparse
import importlib.util

import attrs

from memrules._cli import eval as eval_command
from memrules._cli import eval_output, trajectory_output
from memrules._cli import report_html as eval_report
from memrules._cli import show as show_command
from memrules._cli.arguments import allowed
from memrules._cli.check import check_configs
from memrules._cli.demo import render as render_demo
from memrules._cli.errors import UsageError
from memrules._cli.eval_trajectories import TrajectorySettings, run_trajectories
from memrules._cli.streams import emit, progress_line, say, stdout, to_json, writable, write_file
from memrules._core.errors import ReplayMismatch
from memrules._replay.replay import replay_trace

__all__ = ["check", "demo", "eval_pipelines", "mcp", "replay", "show"]


def _requests(count: int) -> str:
    return f"{count:,} request" + ("" if count == 1 else "s")


def replay(args: argparse.Namespace) -> int:
    """``memrules replay``: 0 when the trace replays identically (or was
    rewritten with ``--update``), 1 with what differs on stdout."""
    stdout()
    with progress_line(args) as progress:
        try:
            summary = replay_trace(
                args.trace, update=args.update, allow_imports=allowed(args), progress=progress
            )
        except ReplayMismatch as exc:
            progress.clear()
            lines = [f"memrules replay: {args.trace}: differs from its replay", *exc.differences]
            emit("\n".join(lines) + "\n")
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
    emit("\n".join(lines) + "\n")
    return 0


def eval_pipelines(args: argparse.Namespace) -> int:
    """``memrules eval``: the table (or ``--json`` figures) on stdout, after
    the ``--per-question``, ``--csv`` and ``--html`` files."""
    if args.trajectories:
        return _eval_trajectories(args)
    if args.dataset is None:
        msg = "give a DATASET (JSON Lines) or --trajectories PATH..."
        raise UsageError(msg)
    if not args.dataset.is_file():
        msg = f"cannot read the dataset {args.dataset}: no such file"
        raise UsageError(msg)
    if args.trace is not None:
        writable(args.trace, "the trace", args.dataset, *args.config)
    settings = attrs.evolve(_eval_settings(args), trace=args.trace)
    stdout()
    with progress_line(args) as progress:
        run = eval_command.run_eval(settings, progress)
    _write_eval_files(args, run)
    rows, settings = run.rows, run.settings
    if args.json:
        figures = eval_command.figures_json(rows, settings, run.comparisons)
        output = to_json(figures, "the figures")
    else:
        output = eval_command.render_table(rows, k=args.k)
        output += eval_report.comparisons_text(run)
    emit(output)
    return 0


def _eval_trajectories(args: argparse.Namespace) -> int:
    """``memrules eval --trajectories``: the probe table (or ``--json``) on
    stdout, after the ``--per-question``, ``--csv`` and ``--html`` files."""
    unsupported = [
        flag
        for flag, given in (
            ("DATASET", args.dataset is not None),
            ("--trace", args.trace is not None),
            ("--bootstrap", args.bootstrap != 0),
            ("--answer-model", args.answer_model is not None),
            ("--judge-model", args.judge_model is not None),
        )
        if given
    ]
    if unsupported:
        msg = f"--trajectories does not take {', '.join(unsupported)}"
        raise UsageError(msg)
    for path in args.trajectories:
        if not path.exists():
            msg = f"cannot read the trajectories {path}: no such file or directory"
            raise UsageError(msg)
    outputs = ((args.per_question, "the per-request file"), (args.csv, "the CSV"),
               (args.html, "the HTML report"))  # fmt: skip
    for path, what in outputs:
        if path is not None:
            writable(path, what, *args.trajectories, *args.config)
    settings = TrajectorySettings(
        configs=tuple(args.config),
        trajectories=tuple(args.trajectories),
        max_tokens=args.max_tokens,
        jobs=args.jobs,
        allow_imports=allowed(args),
        shape=args.tool_results,
    )
    stdout()
    with progress_line(args) as progress:
        run = run_trajectories(settings, progress)
    if args.per_question is not None:
        lines = "".join(trajectory_output.per_request_lines(run))
        write_file(args.per_question, lines, "the per-request file")
    if args.csv is not None:
        write_file(args.csv, trajectory_output.table_csv(run), "the CSV")
    if args.html is not None:
        write_file(args.html, trajectory_output.report_html(run), "the HTML report")
    if args.json:
        emit(to_json(trajectory_output.figures_json(run), "the figures"))
    else:
        emit(trajectory_output.render_table(run.rows))
    return 0


def _eval_settings(args: argparse.Namespace) -> eval_command.EvalSettings:
    """The settings of ``memrules eval``, its output files checked writable first."""
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
            writable(path, what, args.dataset, *args.config)

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
        allow_imports=allowed(args),
        bootstrap=args.bootstrap,
        seed=args.seed,
        answer_model=endpoint(args.answer_model, args.answer_model_name),
        judge_model=endpoint(args.judge_model, args.judge_model_name),
    )


def _write_eval_files(args: argparse.Namespace, run: eval_command.EvalRun) -> None:
    """Eval's analysis outputs: per question, CSV, HTML (as asked for)."""
    if args.per_question is not None:
        lines = "".join(eval_output.per_question_lines(run))
        write_file(args.per_question, lines, "the per-question file")
    if args.csv is not None:
        write_file(args.csv, eval_output.table_csv(run), "the CSV")
    if args.html is not None:
        write_file(args.html, eval_report.report_html(run), "the HTML report")


def show(args: argparse.Namespace) -> int:
    """``memrules show``: one line per request on stdout, or the ``--html`` viewer."""
    if args.html is not None:
        writable(args.html, "the viewer", args.trace)
        write_file(args.html, show_command.viewer_html(args.trace), "the viewer")
        return 0
    stdout()
    emit(show_command.summary_text(args.trace))
    return 0


def check(args: argparse.Namespace) -> int:
    """``memrules check``: what each config resolves to on stdout, every
    problem on stderr; 2 when any config failed."""
    stdout()
    outcome = check_configs(args.configs, allow_imports=allowed(args))
    if outcome.report:
        emit("\n".join(outcome.report) + "\n")
    for problem in outcome.problems:
        say(f"memrules: error: {problem}")
    return 0 if outcome.ok else 2


def demo(args: argparse.Namespace) -> int:
    """``memrules demo``: the whole example, built before it is written."""
    if args.base_url is None and (args.model is not None or args.api_key_env is not None):
        msg = "--model and --api-key-env need --base-url"
        raise UsageError(msg)
    stdout()
    emit(render_demo(args))
    return 0


def mcp(args: argparse.Namespace) -> int:
    """``memrules mcp``: serve one route, user and tenant on stdio until it ends.
    The MCP SDK (the ``mcp`` extra) is imported only here."""
    from memrules._cli import mcp_server

    found = mcp_server.scope(args.user, args.tenant)
    if found is None:
        raise UsageError(mcp_server.SCOPE_MISSING)
    return mcp_server.serve(args.config, route=args.route, user=found[0], tenant=found[1])
