"""Writing the files memrules is asked to write: whole or not at all, never
over what it reads, never into a device.

Every file a command or the library writes (a report, a trace, figures, a
graph snapshot) goes through `check_output` first and then through
`AtomicFile` (or `write_atomic` for a value already whole):

- `check_output` refuses a path that is one of the run's inputs (the
  same file by ``samefile`` or by resolved path: ``--trace t.json t.json``
  would destroy the input), or that exists and is not a regular file (a
  device such as ``/dev/full``, a directory, a pipe): a rename over it
  would replace the device node, and writing into it is not a file.
- `AtomicFile` writes into a temporary file beside the target,
  named ``.NAME.memrules-PID-RANDOM.tmp``, flushes it to disk (``fsync``),
  and renames it over the target (``os.replace``); every failure (a full
  disk) is an `OutputError` naming the path, and
  the target is as it was. A writer killed outright (SIGKILL) leaves its
  temporary file behind; the next writer of the same target removes every
  such file whose process is gone (`sweep`).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from memrules._core.errors import OutputError

__all__ = ["TEMP_MARK", "AtomicFile", "check_output", "sweep", "write_atomic"]

TEMP_MARK = ".memrules-"
"""What every temporary file's name holds, after the target's name."""


def _describe(exc: OSError) -> str:
    return exc.strerror or str(exc)


def check_output(
    path: str | os.PathLike[str], what: str, *, inputs: Iterable[str | os.PathLike[str]] = ()
) -> Path:
    """``path`` as a `Path` if ``what`` (``"the trace"``)
    may be written there, else `OutputError` saying why: it is one of
    ``inputs``, it exists and is not a regular file, its directory is
    missing or not writable."""
    target = Path(path)
    where = f"cannot write {what} {target}"
    for source in inputs:
        if source == "-":
            continue
        if _same_file(target, Path(source)):
            msg = f"{where}: it is also an input ({source}); write it elsewhere"
            raise OutputError(msg)
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        msg = f"{where}: {_describe(exc)}"
        raise OutputError(msg) from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        msg = f"{where}: it is {kind}; give a file path"
        raise OutputError(msg)
    parent = target.parent
    if not parent.is_dir():
        msg = f"{where}: no directory {parent}"
        raise OutputError(msg)
    if not os.access(parent, os.W_OK | os.X_OK):
        msg = f"{where}: permission denied in {parent}"
        raise OutputError(msg)
    return target


def _same_file(a: Path, b: Path) -> bool:
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:
        pass
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):
        return False


def _temporary_pattern(target: Path) -> re.Pattern[str]:
    return re.compile(re.escape(f".{target.name}{TEMP_MARK}") + r"(\d+)-[0-9a-f]+\.tmp")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    except OSError:
        return True
    return True


def sweep(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files beside ``target`` that a writer of it left
    when it was killed (their process is gone); the paths removed."""
    target = Path(target)
    pattern = _temporary_pattern(target)
    removed: list[Path] = []
    try:
        names = os.listdir(target.parent)
    except OSError:
        return removed
    for name in names:
        match = pattern.fullmatch(name)
        if match is None or _alive(int(match.group(1))):
            continue
        stray = target.parent / name
        with contextlib.suppress(OSError):
            stray.unlink()
            removed.append(stray)
    return removed


def _mode(target: Path) -> int:
    """The permissions ``target`` has, or those a new file gets (a temporary
    file is private, which a report should not stay)."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


class AtomicFile:
    """A file written whole or not at all: bytes go to a temporary file
    beside ``target``; `commit` syncs it and renames it over
    ``target``, `abort` removes it. As a context manager it commits
    when the block ends normally and aborts when it raises. Every
    ``OSError`` is an `OutputError` naming ``target``."""

    def __init__(self, target: str | os.PathLike[str], what: str) -> None:
        self.target = Path(target)
        self.what = what
        sweep(self.target)
        name = f".{self.target.name}{TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}.tmp"
        self.temporary = self.target.parent / name
        try:
            fd = os.open(self.temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise self._error(exc) from None
        self._file = os.fdopen(fd, "wb")
        self.done = False

    def _error(self, exc: OSError) -> OutputError:
        return OutputError(f"cannot write {self.what} {self.target}: {_describe(exc)}")

    def write(self, data: bytes) -> None:
        """Append ``data`` (flushed to the operating system, so a full disk
        is found at the write that fills it)."""
        try:
            self._file.write(data)
            self._file.flush()
        except OSError as exc:
            self.abort()
            raise self._error(exc) from None

    def commit(self) -> None:
        """Sync the temporary file and rename it over the target."""
        if self.done:
            return
        try:
            self._file.flush()
            os.fchmod(self._file.fileno(), _mode(self.target))
            os.fsync(self._file.fileno())
            self._file.close()
            os.replace(self.temporary, self.target)
        except OSError as exc:
            self.abort()
            raise self._error(exc) from None
        self.done = True
        _sync_directory(self.target.parent)

    def abort(self) -> None:
        """Drop what was written; the target stays as it was."""
        if self.done:
            return
        self.done = True
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(OSError):
            self.temporary.unlink()

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def write_atomic(
    target: str | os.PathLike[str],
    data: bytes,
    what: str,
    *,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Write ``data`` to ``target`` whole or not at all, after
    `check_output`; `OutputError` naming ``target`` otherwise."""
    check_output(target, what, inputs=inputs)
    with AtomicFile(target, what) as file:
        file.write(data)


def _sync_directory(directory: Path) -> None:
    """Make a rename durable where the platform allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
