"""The trajectory benchmark: rows per config and budget on trajectories the
test builds, and, where the dev data is on this machine, a few of the real
ones read and replayed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.trajectories.run import main, run
from memrules._core.messages import ToolCall
from memrules._core.repair import input_problems
from memrules.datasets import HARNESS, model_calls, read_trajectories, trajectory_paths
from tests.support.trajectories import bug_run, write

ROOT = Path(__file__).resolve().parents[2]
DEV = Path("/work/shared/data/trajectories-dev")


def test_one_row_per_config_and_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = write(tmp_path / "trajs", bug_run("a", big=200), bug_run("b"))
    configs = [ROOT / "configs" / "coding_agent.yaml", ROOT / "configs" / "cache_aware.yaml"]
    rows = run([runs], configs=configs, budgets=[1200, 100000])
    assert [(r.name, r.budget) for r in rows] == [
        ("coding_agent", 1200),
        ("coding_agent", 100000),
        ("cache_aware", 1200),
        ("cache_aware", 100000),
    ]
    assert all(r.requests == 12 for r in rows)
    roomy = rows[1]
    assert roomy.task == (12, 12)
    assert roomy.tokens_after == roomy.tokens_before  # nothing to compact at 100,000
    assert rows[0].tokens_after < rows[0].tokens_before  # 1,200 compacts
    out = tmp_path / "figures.json"
    assert (
        main([str(runs), "--configs", str(configs[0]), "--budgets", "1200", "--json", str(out)])
        == 0
    )
    printed = capsys.readouterr().out
    assert printed.splitlines()[1].split()[:2] == ["coding_agent", "1,200"]
    assert "load average" in printed
    assert json.loads(out.read_text())[0]["budget_tokens"] == 1200


@pytest.mark.skipif(
    not DEV.is_dir(), reason=f"the dev trajectories are not on this machine ({DEV})"
)
def test_the_real_dev_trajectories_read_and_replay() -> None:
    files = trajectory_paths([DEV])
    assert len(files) == 60
    calls = harness = patches = 0
    for trajectory in read_trajectories([DEV]):
        assert trajectory.format == "mini-swe-agent"
        patches += trajectory.patch is not None
        assert input_problems(trajectory.messages) == ()  # every action answered
        calls += sum(isinstance(p, ToolCall) for m in trajectory.messages for p in m.parts)
        harness += sum(m.metadata.get(HARNESS) is True for m in trajectory.messages)
        assert list(model_calls(trajectory))
    assert calls > 2000
    assert patches >= 55  # one run submitted an empty patch
    assert harness > 0  # format-error replies, marked as the harness'
    rows = run(files[:3], configs=[ROOT / "configs" / "coding_agent.yaml"], budgets=[16000])
    (figures,) = rows
    assert figures.trajectories == 3
    assert figures.broken == 0
    assert figures.task_last[1] == 3
