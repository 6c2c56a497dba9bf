"""Writing a trace file: the header, then one numbered line per request, each
written whole (flushed as it goes, or atomically renamed into place at the end)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from memrules._core.errors import OutputError, TraceError
from memrules._io.files import AtomicFile, check_output
from memrules._runtime.pipeline import Pipeline
from memrules._trace.deltas import InputDeltas
from memrules._trace.header import (
    TraceHeader,
    _header,
    pipeline_header,
)
from memrules._trace.lines import dump_line

__all__ = ["TraceWriter"]


class TraceWriter:
    """Writes a trace to ``path``: the header at once, then each line as
    `write` gets it, flushed, so a long-running process's trace is on
    disk as it goes (``atomic=False``); or into a temporary file beside
    ``path`` that `close` renames into place, so the trace is there
    whole or not at all (``atomic=True``, what the command line does).
    Thread-safe: each line is written whole, and numbered (``request``) in
    the order written; its input is written as a delta (``prefix``, see the
    module docs) when the header's version is 2 or later."""

    def __init__(
        self, path: str | os.PathLike[str], header: TraceHeader, *, atomic: bool = False
    ) -> None:
        self.path = Path(path)
        self.header = header
        self.atomic = atomic
        self.requests = 0
        self._deltas = InputDeltas(enabled=header.version >= 2)
        self._lock = threading.Lock()
        self._atomic: AtomicFile | None = None
        self._closed = False
        self._failed: str | None = None
        try:
            check_output(self.path, "the trace")
            if atomic:
                self._atomic = AtomicFile(self.path, "the trace")
            else:
                self._file: IO[bytes] = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        except OutputError as exc:
            raise TraceError(str(exc)) from None
        except OSError as exc:
            msg = f"cannot write the trace {self.path}: {exc.strerror or exc}"
            raise TraceError(msg) from None
        self._put(dump_line(header.to_dict()))

    @classmethod
    def for_pipelines(
        cls,
        path: str | os.PathLike[str],
        pipelines: Sequence[tuple[str, Pipeline]],
        *,
        atomic: bool = False,
        plugin: bool = False,
    ) -> TraceWriter:
        """A writer whose header describes ``pipelines`` (name, pipeline)."""
        entries = [pipeline_header(name, p, plugin=plugin) for name, p in pipelines]
        return cls(path, _header(entries), atomic=atomic)

    def _put(self, data: bytes) -> None:
        """Write ``data`` whole, or fail: the first failure (a full disk)
        ends the trace, and every later write raises it again."""
        if self._failed is not None:
            raise TraceError(self._failed)
        if self._closed:
            msg = f"cannot write the trace {self.path}: it is closed"
            raise TraceError(msg)
        try:
            if self._atomic is not None:
                self._atomic.write(data)
            else:
                self._file.write(data)
                self._file.flush()
        except OSError as exc:  # OutputError included
            if isinstance(exc, OutputError):
                self._failed = str(exc)
            else:
                self._failed = f"cannot write the trace {self.path}: {exc.strerror or exc}"
            self._give_up()
            raise TraceError(self._failed) from None

    def _give_up(self) -> None:
        """Drop what could not be written, and the file: nothing is retried."""
        self._closed = True
        if self._atomic is not None:
            self._atomic.abort()
            return
        with contextlib.suppress(OSError):
            self._file.close()

    def write(self, line: dict[str, Any]) -> int:
        """Write one request's line (numbered here); returns its number."""
        with self._lock:
            number = self.requests
            try:
                data = dump_line(self._deltas.encode(number, line))
            except TraceError:
                self._deltas.forget(line)  # no line numbered ``number`` to continue
                raise
            self._put(data)
            self.requests += 1
            return number

    def close(self) -> None:
        """Finish the trace (an atomic one is renamed into place)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._atomic is not None:
                    self._atomic.commit()
                else:
                    self._file.close()
            except OutputError as exc:
                raise TraceError(str(exc)) from None
            except OSError as exc:
                msg = f"cannot write the trace {self.path}: {exc.strerror or exc}"
                raise TraceError(msg) from None

    def discard(self) -> None:
        """Drop an atomic trace that will not be finished (nothing is renamed)."""
        with self._lock:
            self._closed = True
            if self._atomic is not None:
                self._atomic.abort()
            else:
                self._file.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None and self.atomic:
            self.discard()
        else:
            self.close()
