"""Child processes of the tests, run as a user runs them: ``python -m
memrules ...`` or one of the helper modules of :mod:`tests.support`, from
the checkout's root with the checkout first on the path.

One runner, so that every test that crosses a process boundary starts its
child the same way (the environment, the working directory, a timeout that
turns a hang into a failure)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_python(
    *args: str,
    seed: str | None = None,
    stdin: str | None = None,
    stdout: Any = subprocess.PIPE,
    unset: Sequence[str] = (),
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in the checkout's root: ``seed`` is the child's
    ``PYTHONHASHSEED``, ``unset`` names variables the child must not see."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if seed is not None:
        env["PYTHONHASHSEED"] = seed
    for name in unset:
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        input=stdin,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
        check=False,
    )


def memrules(*args: str, **how: Any) -> subprocess.CompletedProcess[str]:
    """The command line: ``python -m memrules ARGS`` (``how`` as :func:`run_python`)."""
    return run_python("-m", "memrules", *args, **how)


def module_json(module: str, *args: str, killed: bool = False) -> Any:
    """Run ``python -m MODULE ARGS``, which must exit 0 (or, ``killed``,
    die of SIGKILL), and read the last line it printed as JSON (None when
    killed: what it said before that is not its answer)."""
    done = run_python("-m", module, *args)
    if killed:
        assert done.returncode == -9, done.stderr[-4000:]
        return None
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
