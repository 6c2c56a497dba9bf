"""``memrules`` commands started by forking one interpreter that has already
imported the command line, instead of a new interpreter each.

The docs tests run dozens of ``memrules ...`` lines as a user types them;
each fresh ``python -m memrules`` spends most of its time importing the
package before it reads its arguments. Here a server process imports
``memrules.__main__``'s modules once and, for each command, forks a child
that takes the caller's standard input, output and error (passed over a Unix
socket), working directory, environment, ``sys.path`` as a fresh
``python -m memrules`` there would have it, and arguments, runs the command
line as ``python -m memrules`` runs it, and sends back its exit status.

:func:`client_script` is the small program (no ``site`` import, so it starts
in milliseconds) that stands for ``memrules`` on a ``PATH``.

Run as ``python -m tests.support.cli_forkserver SOCKET``: it prints ``ready``
once it listens, and stops when its standard input closes (the test session
that started it ended, however it ended).
"""

from __future__ import annotations

import json
import os
import runpy
import select
import signal
import socket
import sys
import tempfile
import threading
import traceback
from pathlib import Path

_HEADER = 8  # the request's length, big-endian, sent with the three descriptors


def _recv_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            msg = "the client closed the connection mid-request"
            raise ConnectionError(msg)
        data += chunk
    return data


def _fresh_path(cwd: str, env: dict[str, str], base: list[str]) -> list[str]:
    """``sys.path`` as ``python -m memrules`` started in ``cwd`` with ``env``
    would have it: the directory, ``PYTHONPATH``'s entries, then the rest."""
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [cwd, *extra, *base]


def _child(
    conn: socket.socket, fds: list[int], request: dict[str, object], base: list[str]
) -> None:
    """Run one command in this forked process; never returns."""
    status = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        cwd = str(request["cwd"])
        env = {str(k): str(v) for k, v in dict(request["env"]).items()}  # type: ignore[call-overload]
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        tempfile.tempdir = None  # TMPDIR is read again, as a new process reads it
        sys.path[:] = _fresh_path(cwd, env, base)
        sys.argv = ["memrules", *map(str, request["argv"])]  # type: ignore[call-overload]
        try:
            runpy.run_module("memrules", run_name="__main__", alter_sys=True)
            status = 0
        except SystemExit as done:
            code = done.code
            if code is None:
                status = 0
            elif isinstance(code, int):
                status = code
            else:
                print(code, file=sys.stderr)
                status = 1
        except BaseException:  # what the interpreter prints for an uncaught error
            traceback.print_exc()
            status = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                status = status or 120  # as the interpreter exits when it cannot flush
    finally:
        try:
            conn.sendall(status.to_bytes(4, "big", signed=True))
        finally:
            os._exit(status & 0xFF)


def serve(path: Path) -> None:
    import memrules._cli.main  # noqa: F401  what ``python -m memrules`` imports first

    given = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    base = [p for p in sys.path[1:] if p not in given]
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(16)
    print("ready", flush=True)
    while True:
        readable, _, _ = select.select([listener, sys.stdin.fileno()], [], [])
        if sys.stdin.fileno() in readable and not os.read(sys.stdin.fileno(), 1):
            return  # the test session closed the pipe: it is over
        if listener not in readable:
            continue
        conn, _ = listener.accept()
        header, fds, _, _ = socket.recv_fds(conn, _HEADER, 3)
        request = json.loads(_recv_exactly(conn, int.from_bytes(header, "big")))
        if threading.active_count() != 1:
            msg = "the server started a thread: a fork of it would not be a fresh process"
            raise RuntimeError(msg)
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            _child(conn, fds, request, base)
        for fd in fds:
            os.close(fd)
        conn.close()


def client_script(python: str, path: Path) -> str:
    """An executable script that runs ``memrules ARGS`` on the
    server listening at ``path`` and exits with its status."""
    return f"""#!{python} -S
import json, os, socket, sys
request = json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect({str(path)!r})
socket.send_fds(conn, [len(request).to_bytes({_HEADER}, "big")], [0, 1, 2])
conn.sendall(request)
status = b""
while len(status) < 4:
    chunk = conn.recv(4 - len(status))
    if not chunk:
        sys.exit("memrules: the command's process ended without a status")
    status += chunk
sys.exit(int.from_bytes(status, "big", signed=True) & 0xFF)
"""


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
