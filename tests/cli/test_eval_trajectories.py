"""``memrules eval --trajectories``: an agent loop replayed request by
request; a pipeline that keeps everything scores 100%, a request that lost
the task counts in the row; the table, JSON, CSV, per-request and HTML
outputs agree with the run."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import attrs
import pytest

from memrules._cli.eval_trajectories import (
    RequestProbe,
    TrajectorySettings,
    in_shape,
    row,
    run_trajectories,
)
from memrules._cli.main import main
from memrules._cli.trajectory_output import render_table
from memrules.datasets import edited_paths, model_calls, probe, probe_facts, read_trajectory
from tests.support.trajectories import bug_run, write

KEEP_ALL = "encoder_name: o200k_base\nmax_tokens: 1000000\nstrategies: []\n"
# Keeps the last four messages: loses the task once the loop is longer.
WINDOW = "max_messages: 4\nstrategies:\n  - type: sliding_window\n    keep_messages: 4\n"


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return write(tmp_path / "trajs", bug_run("demo__demo-1"), bug_run("demo__demo-2", big=150))


def _configs(tmp_path: Path) -> tuple[Path, Path]:
    keep, window = tmp_path / "keep_all.yaml", tmp_path / "window.yaml"
    keep.write_text(KEEP_ALL)
    window.write_text(WINDOW)
    return keep, window


def test_keeping_everything_scores_every_probe(tmp_path: Path, runs: Path) -> None:
    keep, _ = _configs(tmp_path)
    run = run_trajectories(TrajectorySettings(configs=(keep,), trajectories=(runs,)))
    (full,) = run.rows
    assert (full.trajectories, full.requests) == (2, 12)  # six model calls each
    assert full.task == (12, 12)
    assert full.task_last == (2, 2)
    assert full.question == (12, 12)
    assert full.non_user_first == 0
    assert full.paths_last == (2, 2)
    assert full.error_line_last == (2, 2)
    assert full.test_command_last == (2, 2)
    assert full.broken == 0
    assert full.over_budget == 0
    assert full.cached > 0  # each request extends the last: the cache serves the prefix
    assert full.cost < full.sent


def test_a_request_that_lost_the_task_counts_in_the_row(tmp_path: Path) -> None:
    run = read_trajectory(write(tmp_path, bug_run()) / "demo__demo-1.traj.json")
    requests = list(model_calls(run))
    paths = edited_paths(run)
    probes = []
    for i, request in enumerate(requests):
        sent = request if i < 3 else (request[0], *request[-2:])  # system, assistant, tool
        found = probe(probe_facts(request, paths), sent)
        probes.append(
            RequestProbe(
                trajectory=run.id,
                index=i,
                last=i == len(requests) - 1,
                messages=len(request),
                tokens_before=0,
                tokens_after=0,
                o200k=0,
                over_budget=False,
                broken=0,
                **attrs.asdict(found),
            )
        )
    figures = row("cut", "cut.yaml", "", None, probes)
    assert figures.without_task == 3
    assert figures.task_last == (0, 1)
    assert figures.non_user_first == 3
    assert figures.error_line_last == (0, 1)
    assert "50%" in render_table([figures])  # requests without the task: 3 of 6


def test_a_window_keeps_the_task_when_the_harness_speaks(tmp_path: Path, runs: Path) -> None:
    _, window = _configs(tmp_path)
    run = run_trajectories(TrajectorySettings(configs=(window,), trajectories=(runs,)))
    (cut,) = run.rows
    assert cut.broken == 0
    assert cut.without_task == 0
    assert cut.task_last == (2, 2)
    assert cut.non_user_first == 0


def test_requests_over_budget_by_o200k(tmp_path: Path, runs: Path) -> None:
    keep, _ = _configs(tmp_path)
    run = run_trajectories(
        TrajectorySettings(configs=(keep,), trajectories=(runs,), max_tokens=400)
    )
    (row,) = run.rows
    assert row.budget == 400
    over = [r for r in run.requests[0] if r.o200k > 400]
    assert over  # nothing compacts, so the long run goes over
    assert row.over_budget == len(over)


def test_the_command_writes_every_output(
    tmp_path: Path, runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keep, window = _configs(tmp_path)
    run = run_trajectories(TrajectorySettings(configs=(keep, window), trajectories=(runs,)))
    out = {name: tmp_path / name for name in ("t.csv", "t.jsonl", "t.html")}
    args = ["eval", "--trajectories", str(runs), "--config", str(keep), "--config", str(window)]
    args += ["--csv", str(out["t.csv"]), "--per-question", str(out["t.jsonl"])]
    args += ["--html", str(out["t.html"]), "--no-progress"]
    assert main(args) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:4] == ["config", "budget", "runs", "requests"]
    assert table[1].startswith("keep_all")
    assert table[1].split()[4:6] == ["0%", "2"]  # without task, task at last "2 / 2"
    rows = list(csv.DictReader(io.StringIO(out["t.csv"].read_text())))
    assert [r["pipeline"] for r in rows] == ["keep_all", "window"]
    for written, figures in zip(rows, run.rows, strict=True):
        assert int(written["task_last_kept"]) == figures.task_last[0]
        assert int(written["requests_without_task"]) == figures.without_task
        assert int(written["non_user_first"]) == figures.non_user_first
        assert int(written["paths_kept"]) == figures.paths[0]
        assert int(written["cached_tokens"]) == figures.cached
    lines = [json.loads(line) for line in out["t.jsonl"].read_text().splitlines()]
    assert len(lines) == 24  # 12 requests, two configs
    assert [line["config"] for line in lines[:2]] == ["keep_all", "window"]
    expected = [r.to_dict() for pair in zip(*run.requests, strict=True) for r in pair]
    assert [{**line, "ms": 0} for line in lines] == [
        {"config": name, **line, "ms": 0}
        for name, line in zip(["keep_all", "window"] * 12, expected, strict=True)
    ]
    page = out["t.html"].read_text()
    assert page.count("<tr>") == 3
    assert "keep_all: none" in page  # no run lost anything
    assert main([*args[:7], "--json", "--no-progress"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["pipelines"][0]["task_at_last"] == {"kept": 2, "of": 2, "share": 1.0}
    assert figures["pipelines"][0]["requests_not_starting_with_user"] == 0
    assert figures["pipelines"][1]["task"]["kept"] == run.rows[1].task[0]


def test_jobs_change_nothing_but_the_timings(tmp_path: Path, runs: Path) -> None:
    keep, window = _configs(tmp_path)
    settings = TrajectorySettings(configs=(keep, window), trajectories=(runs,))
    one = run_trajectories(settings)
    two = run_trajectories(TrajectorySettings(configs=(keep, window), trajectories=(runs,), jobs=2))

    def fixed(run: object) -> list[list[dict[str, object]]]:
        return [[{**r.to_dict(), "ms": 0} for r in rs] for rs in run.requests]  # type: ignore[attr-defined]

    assert fixed(one) == fixed(two)
    assert render_table(one.rows).count("\n") == 3


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        (["DATASET.jsonl"], "does not take DATASET"),
        (["--bootstrap", "10"], "does not take --bootstrap"),
        (["--trace", "t.jsonl"], "does not take --trace"),
    ],
)
def test_flags_that_do_not_apply_are_refused(
    tmp_path: Path,
    runs: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    problem: str,
) -> None:
    keep, _ = _configs(tmp_path)
    assert main(["eval", *extra, "--trajectories", str(runs), "--config", str(keep)]) == 2
    assert problem in capsys.readouterr().err


def test_no_dataset_and_no_trajectories_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keep, _ = _configs(tmp_path)
    assert main(["eval", "--config", str(keep)]) == 2
    assert "give a DATASET" in capsys.readouterr().err
    assert main(["eval", "--trajectories", str(tmp_path / "nope"), "--config", str(keep)]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_tool_results_in_user_role_messages_are_not_the_question(
    tmp_path: Path, runs: Path
) -> None:
    keep, _ = _configs(tmp_path)
    trajectory = read_trajectory(runs / "demo__demo-1.traj.json")
    shaped = in_shape(trajectory, "anthropic")
    assert "tool" not in {m.role for m in shaped.messages}
    assert [m.result_ids for m in shaped.messages] == [m.result_ids for m in trajectory.messages]
    assert in_shape(trajectory, "openai") is trajectory
    settings = TrajectorySettings(configs=(keep,), trajectories=(runs,), shape="anthropic")
    (full,) = run_trajectories(settings).rows
    assert full.question == (12, 12)  # the task, never a user message of tool results
    assert full.task_last == (2, 2)
    assert full.broken == 0
    with pytest.raises(ValueError, match="shape='xml' is not one of openai, anthropic"):
        run_trajectories(attrs.evolve(settings, shape="xml"))


def test_the_command_sends_tool_results_in_user_messages_when_asked(
    tmp_path: Path, runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keep, _ = _configs(tmp_path)
    lines = tmp_path / "requests.jsonl"
    args = ["eval", "--trajectories", str(runs), "--config", str(keep), "--no-progress"]
    assert main([*args, "--tool-results", "anthropic", "--per-question", str(lines)]) == 0
    capsys.readouterr()
    settings = TrajectorySettings(configs=(keep,), trajectories=(runs,), shape="anthropic")
    expected = [r.to_dict() for r in run_trajectories(settings).requests[0]]
    written = [json.loads(line) for line in lines.read_text().splitlines()]
    assert [{**w, "ms": 0} for w in written] == [
        {"config": "keep_all", **e, "ms": 0} for e in expected
    ]
