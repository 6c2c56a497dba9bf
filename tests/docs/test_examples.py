"""Every code block of the docs site and the README runs as it is written.

The blocks are read from the Markdown itself (:mod:`tests.docs.blocks`), one
test each, named by file and line (``docs/guide/cli.md:42``). How a block is
run depends on its language:

- ``python``: executed in a fresh namespace, in a scratch directory that
  holds the checkout's ``configs/``, ``examples/`` and ``benchmarks/``;
- ``sh``: run by bash, with ``.venv/bin/memrules`` and ``.venv/bin/python``
  (and a bare ``memrules`` or ``python``) meaning this checkout's command and
  the running interpreter; each ``memrules`` command is a fork of one
  interpreter that imported the command line once
  (:mod:`tests.support.cli_forkserver`), with the command's own standard
  streams, directory, environment and arguments, which prints and exits as a
  new ``python -m memrules`` does (checked below);
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
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT, Block, all_blocks, page_blocks, runnable
from tests.support.cli_forkserver import client_script

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


def _pythonpath() -> str:
    return os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


@pytest.fixture(scope="module")
def cli_server() -> Iterator[Path]:
    """The socket of a :mod:`tests.support.cli_forkserver` for this module's
    ``memrules`` commands (a short path: a socket's is at most 107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="memrules-cli-", dir="/tmp"))
    path = folder / "socket"
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.support.cli_forkserver", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": _pythonpath()},
    )
    assert server.stdout is not None
    assert server.stdin is not None
    try:
        assert server.stdout.readline() == "ready\n"
        yield path
    finally:
        server.stdin.close()
        server.wait(timeout=60)
        shutil.rmtree(folder)


def _bin(cwd: Path, server: Path) -> Path:
    """A directory with ``python`` (the running interpreter) and ``memrules``
    (this checkout's command, started by ``server``), standing for ``.venv/bin``."""
    bin_dir = cwd.parent / f"{cwd.name}-bin"
    if not bin_dir.is_dir():
        bin_dir.mkdir()
        python = bin_dir / "python"  # a script, not a link: a venv is found by its path
        python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        (bin_dir / "memrules").write_text(client_script(sys.executable, server))
        for command in bin_dir.iterdir():
            command.chmod(0o755)
    return bin_dir


def _environment(tmp_path: Path, server: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{_bin(tmp_path, server)}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = _pythonpath()
    env["TMPDIR"] = str(tmp_path)
    env["NO_COLOR"] = "1"
    return env


def _shell(
    command: str, cwd: Path, timeout: float, server: Path
) -> subprocess.CompletedProcess[str]:
    script = command.replace(".venv/bin/", f"{_bin(cwd, server)}/")
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_environment(cwd, server),
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


def _run_console(block: Block, cwd: Path, server: Path) -> None:
    for command, shown in block.console_steps():
        done = _shell(command, cwd, block.timeout, server)
        printed = done.stdout + done.stderr
        assert _matches(shown, printed), (
            f"{block}: `{command}` printed:\n{printed}\nthe docs show:\n{shown}"
        )


@pytest.mark.parametrize("block", RUNNABLE, ids=str)
def test_the_block_runs_as_written(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli_server: Path
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
            done = _shell(code, cwd, block.timeout, cli_server)
            assert done.returncode == 0, f"{block}:\n{done.stdout}\n{done.stderr}"
            printed = done.stdout
        elif block.language == "console":
            _run_console(block, cwd, cli_server)
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


MINE = """from memrules import strategy_factory


@strategy_factory
def keep_newest(*, count: int):
    def keep(conversation, context):
        if len(conversation) <= count + 1:
            return conversation
        return (conversation[0], *conversation[-count:])

    return keep
"""
# What a docs line relies on: standard input and output redirected, the exit
# status and stderr of a failure, the working directory and PYTHONPATH.
FORKED_OR_FRESH = [
    "memrules compact --config configs/tiny_budget.yaml - < examples/agent_history.json"
    ' > out.json; echo "status $?"; wc -c < out.json',
    "memrules check missing.yaml configs/tiny_budget.yaml",
    "memrules compact --no-such-option",
    "cd sub && PYTHONPATH=.. memrules compact --config ../mine.yaml --allow-imports mine"
    " ../examples/agent_history.json",
]


@pytest.mark.parametrize("command", FORKED_OR_FRESH)
def test_a_forked_command_prints_and_exits_as_a_new_interpreter_does(
    command: str, tmp_path: Path, cli_server: Path
) -> None:
    """The docs' ``memrules`` lines run as forks of one interpreter: what each
    prints on stdout and stderr, and its exit status, are a new ``python -m
    memrules``'s, wherever it runs, whatever its ``PYTHONPATH``."""
    cwd = tmp_path / "scratch"
    cwd.mkdir()
    for name in SHIPPED:
        (cwd / name).symlink_to(ROOT / name, target_is_directory=True)
    (cwd / "sub").mkdir()
    (cwd / "mine.py").write_text(MINE, encoding="utf-8")
    (cwd / "mine.yaml").write_text(
        'strategies:\n  - type: "mine:keep_newest"\n    count: 2\n', encoding="utf-8"
    )
    fresh = tmp_path / "fresh-bin"
    fresh.mkdir()
    (fresh / "memrules").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m memrules "$@"\n')
    (fresh / "memrules").chmod(0o755)
    env = _environment(cwd, cli_server)
    runs = []
    for path in (env["PATH"], f"{fresh}{os.pathsep}{env['PATH']}"):
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command],
            capture_output=True, text=True, cwd=cwd, env={**env, "PATH": path},
            timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        runs.append((done.returncode, done.stdout, done.stderr))
    forked, new = runs
    assert forked == new
    assert new[1] or new[2]  # each case prints something, to compare
