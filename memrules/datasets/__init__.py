"""Agent trajectories as evaluation data: read them, replay them, probe them.

A `Trajectory` is one agent run read into memrules messages, from a
mini-swe-agent or SWE-agent trajectory, an OpenAI chat ``messages`` list
or an Anthropic one, or a Claude Code or Codex CLI session log
(`read_trajectory`, `read_trajectories`).
`model_calls` gives the requests an agent loop made (the messages
before each assistant reply); `probe_facts` what each needed to hold
(the task, the question, the edited files, the last error line, the last
test command) and `probe` whether a compacted request still does.
``memrules eval --trajectories`` replays them through pipelines and reports
the probes.

    from memrules import load_pipeline
    from memrules.datasets import model_calls, probe, probe_facts, read_trajectory

    run = read_trajectory("django__django-11099.traj.json")
    pipeline = load_pipeline("configs/coding_agent.yaml")
    for request in model_calls(run):
        sent = pipeline.apply(request).messages
        print(probe(probe_facts(request), sent).task)
"""

from __future__ import annotations

from memrules._core.public_names import report_public_module
from memrules.datasets._probes import (
    Facts,
    Probe,
    edited_paths,
    is_test_command,
    o200k_tokens,
    probe,
    probe_facts,
    request_text,
)
from memrules.datasets._trajectory import (
    FORMATS,
    HARNESS,
    Trajectory,
    TrajectoryError,
    mini_swe_agent_trajectory,
    model_calls,
    parse_trajectory,
    read_trajectories,
    read_trajectory,
    trajectory_paths,
)

__all__ = [
    "FORMATS",
    "HARNESS",
    "Facts",
    "Probe",
    "Trajectory",
    "TrajectoryError",
    "edited_paths",
    "is_test_command",
    "mini_swe_agent_trajectory",
    "model_calls",
    "o200k_tokens",
    "parse_trajectory",
    "probe",
    "probe_facts",
    "read_trajectories",
    "read_trajectory",
    "request_text",
    "trajectory_paths",
]

report_public_module(__name__, __all__, globals())
del report_public_module
