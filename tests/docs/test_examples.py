"""Every code block of the docs site and the README runs as it is written.

The blocks are read from the Markdown itself (:mod:`tests.docs.blocks`), one
test each, named by file and line (``docs/guide/cli.md:42``). How a block is
run depends on its language:

- ``python``: executed in a fresh namespace, in a scratch directory that
  holds the checkout's ``configs/``, ``examples/`` and ``benchmarks/``;
- ``sh``: run by bash, with ``.venv/bin/memrules`` and ``.venv/bin/python``
  (and a bare ``memrules`` or ``python``) meaning this checkout's command and
  the running interpreter;
- ``console``: each ``$ `` line run the same way, and what it prints compared
  with the lines shown under it;
- ``yaml`` without a title: loaded with :func:`memrules.load_config`;
- a block with ``title="NAME"`` (YAML, JSON, JSON Lines) is a file: it is
  written into the scratch directory of every later block of its page, and a
  later block of the page must use it.

A ``text`` block with ``title="Output"`` right after a block is what that
block prints, compared line by line (``...`` on a line of its own stands for
any lines; ``...`` inside a line for any text). An HTML comment right before
a block changes how it runs: ``<!-- not run: REASON -->`` (installs, the
whole suite, servers that are not here), ``<!-- needs: MODULE ... (EXTRA) -->``
(skipped, naming the extra, when a module is missing), ``<!-- loopback: chat
-->`` (an OpenAI-compatible loopback server stands in for
``http://127.0.0.1:8080/v1``), ``<!-- timeout: SECONDS -->``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT, Block, all_blocks, page_blocks, runnable

BLOCKS = all_blocks()
RUNNABLE = [b for b in BLOCKS if runnable(b)]
SHIPPED = ("configs", "examples", "benchmarks")
LOOPBACK_URL = "http://127.0.0.1:8080/v1"


def _scratch(block: Block, tmp_path: Path) -> Path:
    """A directory with the checkout's shipped files and the page's file
    blocks that come before ``block``."""
    for name in SHIPPED:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    for earlier in page_blocks(block.page):
        if earlier.line < block.line and earlier.title and earlier.title != "Output":
            target = tmp_path / earlier.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(earlier.code, encoding="utf-8")
    return tmp_path


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.strip("\n").splitlines()]


def _matches(shown: str, printed: str) -> bool:
    """Whether ``printed`` is what ``shown`` shows: line by line, runs of
    blanks as one, ``...`` alone on a line for any lines (none included),
    ``...`` inside a line for any text."""
    pattern = ""
    for line in _lines(shown):
        if line == "...":
            pattern += r"(?:[^\n]*\n)*?"
        else:
            pattern += ".*".join(re.escape(piece) for piece in line.split("...")) + r"\n"
    return re.fullmatch(pattern, "".join(f"{line}\n" for line in _lines(printed))) is not None


def _bin(cwd: Path) -> Path:
    """A directory with ``python`` (the running interpreter) and ``memrules``
    (``python -m memrules``, this checkout's), standing for ``.venv/bin``."""
    bin_dir = cwd.parent / f"{cwd.name}-bin"
    if not bin_dir.is_dir():
        bin_dir.mkdir()
        for name, run in (("python", ""), ("memrules", " -m memrules")):
            command = bin_dir / name  # a script, not a link: a venv is found by its path
            command.write_text(f'#!/bin/sh\nexec "{sys.executable}"{run} "$@"\n')
            command.chmod(0o755)
    return bin_dir


def _environment(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{_bin(tmp_path)}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["TMPDIR"] = str(tmp_path)
    env["NO_COLOR"] = "1"
    return env


def _shell(command: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    script = command.replace(".venv/bin/", f"{_bin(cwd)}/")
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_environment(cwd),
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _run_python(block: Block, code: str, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("TMPDIR", str(cwd))
    namespace: dict[str, object] = {"__name__": "__main__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(block), "exec"), namespace)
    return out.getvalue()


def _run_console(block: Block, cwd: Path) -> None:
    for command, shown in block.console_steps():
        done = _shell(command, cwd, block.timeout)
        printed = done.stdout + done.stderr
        assert _matches(shown, printed), (
            f"{block}: `{command}` printed:\n{printed}\nthe docs show:\n{shown}"
        )


@pytest.mark.parametrize("block", RUNNABLE, ids=str)
def test_the_block_runs_as_written(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module, extra in block.needs:
        pytest.importorskip(module, reason=f"needs the {extra} extra")
    cwd = _scratch(block, tmp_path)
    code = block.code
    with contextlib.ExitStack() as stack:
        if block.loopback:
            from tests.support.chat_server import ChatServer

            server = stack.enter_context(ChatServer())
            code = code.replace(LOOPBACK_URL, server.url)
        if block.language == "python":
            printed = _run_python(block, code, cwd, monkeypatch)
        elif block.language == "sh":
            done = _shell(code, cwd, block.timeout)
            assert done.returncode == 0, f"{block}:\n{done.stdout}\n{done.stderr}"
            printed = done.stdout
        elif block.language == "console":
            _run_console(block, cwd)
            return
        else:  # yaml
            from memrules import load_config

            load_config(code)
            return
    if block.output is not None:
        assert _matches(block.output, printed), (
            f"{block} printed:\n{printed}\nthe docs show:\n{block.output}"
        )


def test_every_block_is_run_or_says_why_not() -> None:
    """Each block is run, a file a later block uses, shown output, or marked
    with the reason it is not run; the count is the docs' N of N."""
    problems = []
    for block in BLOCKS:
        if block.language not in ("python", "sh", "console", "yaml", "json", "jsonl", "text"):
            problems.append(f"{block}: a {block.language!r} block, which nothing runs")
        if block.title and block.title != "Output":
            later = [b for b in page_blocks(block.page) if b.line > block.line and runnable(b)]
            if not any(block.title in b.code for b in later):
                problems.append(f"{block}: the file {block.title} is used by no later block")
        if block.language in ("json", "jsonl") and not block.title:
            problems.append(f"{block}: JSON without a title (a file name) is run by nothing")
        if block.skip is not None and not block.skip.strip():
            problems.append(f"{block}: marked not run without a reason")
    assert not problems, "\n".join(problems)
    shown = sum(1 for b in BLOCKS if b.title == "Output")
    print(f"{len(RUNNABLE)} of {len(RUNNABLE)} runnable blocks collected; {shown} outputs shown")
    assert len(RUNNABLE) >= 50


def test_the_shown_outputs_follow_a_block_that_runs() -> None:
    orphans = [
        str(b)
        for b in BLOCKS
        if b.title == "Output" and not any(r.output_block is b for r in RUNNABLE)
    ]
    assert not orphans, orphans
