"""Small mini-swe-agent trajectories in the real ``.traj.json`` format, built
by the tests themselves (the real data is never in the repository)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SYSTEM = (
    "You are a helpful assistant that can interact multiple times with a computer shell to "
    "solve programming tasks.\nYour response must contain exactly ONE bash code block."
)
FORMAT_ERROR = (
    "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.\n\n"
    "Please format your action in triple backticks as shown in <response_example>."
)
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"


def task(issue: str) -> str:
    return (
        "<pr_description>\nConsider the following PR description:\n"
        f"{issue}\n</pr_description>\n\n<instructions>\nMake the tests pass.\n</instructions>"
    )


def reply(thought: str, *commands: str) -> dict[str, Any]:
    blocks = "".join(f"\n\n```bash\n{c}\n```" for c in commands)
    return {"role": "assistant", "content": f"THOUGHT: {thought}{blocks}"}


def output(text: str, returncode: int = 0) -> dict[str, Any]:
    return {
        "role": "user",
        "content": f"<returncode>{returncode}</returncode>\n<output>\n{text}\n</output>",
    }


def patch_of(paths: Sequence[str]) -> str:
    return "".join(
        f"diff --git a/{p} b/{p}\nindex 1111111..2222222 100644\n--- a/{p}\n+++ b/{p}\n"
        "@@ -1 +1 @@\n-old\n+new\n"
        for p in paths
    )


def trajectory(
    instance_id: str,
    issue: str,
    steps: Sequence[dict[str, Any]],
    paths: Sequence[str] = (),
) -> dict[str, Any]:
    """A whole run: system, the task, ``steps`` (replies and what answered
    them), then the submission and its output (the final patch)."""
    patch = patch_of(paths)
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": task(issue)},
        *steps,
        reply("Done, submitting.", SUBMIT),
        {"role": "user", "content": patch},
    ]
    return {
        "instance_id": instance_id,
        "trajectory_format": "mini-swe-agent-1",
        "info": {"exit_status": "Submitted", "submission": patch, "model_stats": {}},
        "messages": messages,
    }


def write(directory: Path, *runs: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for run in runs:
        path = directory / f"{run['instance_id']}.traj.json"
        path.write_text(json.dumps(run, indent=1), encoding="utf-8")
    return directory


def bug_run(instance_id: str = "demo__demo-1", *, big: int = 0) -> dict[str, Any]:
    """A run with everything the probes look at: a file read (``big`` lines
    of filler in it), a failing test with a traceback, a format error
    answered by the harness, an edit, and the tests passing."""
    filler = "\n".join(f"    value_{i} = compute({i})  # keep going" for i in range(big))
    return trajectory(
        instance_id,
        "Parser.parse crashes on empty input with IndexError.",
        [
            reply("Read the parser.", "cat src/parser.py"),
            output(f"def parse(text):\n    return text.split()[0]\n{filler}"),
            reply("Run the tests.", "python -m pytest tests/test_parser.py -q"),
            output(
                'Traceback (most recent call last):\n  File "src/parser.py", line 2\n'
                "IndexError: list index out of range\n1 failed in 0.02s",
                returncode=1,
            ),
            reply("Two things at once.", "ls", "pwd"),
            {"role": "user", "content": FORMAT_ERROR},
            reply("Fix it.", "sed -i 's/\\[0\\]/[0] if text else None/' src/parser.py"),
            output(""),
            reply("Run the tests again.", "python -m pytest tests/test_parser.py -q"),
            output("1 passed in 0.01s"),
        ],
        paths=["src/parser.py"],
    )
