"""A progress line for long command-line runs, on a terminal only.

``memrules compact`` of a large file and ``memrules eval`` can take from
seconds to minutes. `Progress` draws one line on stderr (a bar when
the share done is known, the elapsed time always) and redraws it from a
background thread, so a single long step still shows the clock moving. It
draws nothing when stderr is not a terminal (a pipe, a file, CI), and
nothing for runs shorter than ``delay`` seconds, so quick runs and scripts
see exactly the output they always did. `Progress.clear` wipes the
line before anything else is written to the terminal.

`ProgressObserver` feeds it from a pipeline run: counting, then each
strategy run, with its pass and the tokens so far.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO

from memrules._core.report import CompressionAction, CompressionResult
from memrules._engine.observe import RunInfo, StepInfo

__all__ = ["Progress", "ProgressObserver", "is_terminal"]

WIDTH = 24
_CLEAR = "\r\x1b[K"


def is_terminal(stream: TextIO | None) -> bool:
    """Whether ``stream`` is a terminal (and so a progress line belongs on it)."""
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError, OSError):  # closed or not a real stream
        return False


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


class Progress:
    """One redrawn line on ``stream``: ``label [#####.....] 40% 0:12``.

    ``update(label, fraction)`` sets what it says (``fraction`` None when
    the share done is unknown); a thread redraws it every ``interval``
    seconds once ``delay`` seconds have passed. ``clear()`` wipes it until
    the next update; ``close()`` wipes it and stops the thread. On a stream
    that is not a terminal every method does nothing.
    """

    def __init__(
        self,
        stream: TextIO | None,
        *,
        delay: float = 0.5,
        interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.enabled = is_terminal(stream)
        self.delay = delay
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.label = ""
        self.fraction: float | None = None
        self._shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self.enabled:
            self._thread = threading.Thread(
                target=self._tick, daemon=True, name="memrules-progress"
            )
            self._thread.start()

    def render(self) -> str:
        """The line as it would be drawn now."""
        elapsed = _elapsed(self.clock() - self.started)
        if self.fraction is None:
            return f"{self.label} {elapsed}"
        done = max(0.0, min(1.0, self.fraction))
        filled = round(done * WIDTH)
        bar = "#" * filled + "." * (WIDTH - filled)
        return f"{self.label} [{bar}] {done:4.0%} {elapsed}"

    def update(self, label: str, fraction: float | None = None) -> None:
        if not self.enabled:
            return
        with self._lock:
            self.label = label
            self.fraction = fraction
            if self._shown:
                self._draw()

    def _draw(self) -> None:
        assert self.stream is not None
        try:
            self.stream.write(_CLEAR + self.render())
            self.stream.flush()
            self._shown = True
        except (OSError, ValueError):  # the terminal went away
            self.enabled = False

    def _tick(self) -> None:
        if self._stop.wait(self.delay):
            return
        while not self._stop.is_set():
            with self._lock:
                if self.label:
                    self._draw()
            self._stop.wait(self.interval)

    def clear(self) -> None:
        """Wipe the line (before other output); it comes back on the next tick."""
        if not self.enabled:
            return
        with self._lock:
            if self._shown:
                assert self.stream is not None
                try:
                    self.stream.write(_CLEAR)
                    self.stream.flush()
                except (OSError, ValueError):
                    self.enabled = False
                self._shown = False

    def close(self) -> None:
        """Stop redrawing and wipe the line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.clear()
        self.enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ProgressObserver:
    """Shows a pipeline run on a `Progress`: counting first, then each
    strategy run as ``pass 1/4 clear_tool_results (2/8) 183,204 tokens``."""

    __slots__ = ("progress",)

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def observe_run(self, run: RunInfo, proceed: Callable[[], CompressionResult]) -> None:
        self.progress.update(f"{run.operation}: counting {run.messages:,} messages")
        proceed()

    def observe_step(self, step: StepInfo, proceed: Callable[[], CompressionAction]) -> None:
        run = step.run
        total = len(run.strategies) * run.max_passes
        done = max(0, (step.pass_number - 1) * len(run.strategies) + step.index)
        label = (
            f"{run.operation}: pass {max(step.pass_number, 1)}/{run.max_passes} "
            f"{step.strategy} ({step.index + 1}/{len(run.strategies)}) {step.tokens:,} tokens"
        )
        self.progress.update(label, done / total if total else None)
        proceed()
