"""A real headless browser for the HTML tests: Debian's ``chromium``, driven
over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON
messages separated by NUL bytes on file descriptors 3 and 4), no client
library. :func:`load_page` opens a file, waits for its load event, runs an
optional script in it, and returns what the console said, the errors the
page raised and a PNG screenshot.

Tests that need it use :data:`needs_chromium`, which skips with the reason
when no ``chromium`` is on the PATH (CI installs it with
``apt-get install -y chromium``).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on the PATH: the HTML tests load pages in a real headless browser "
    "(apt-get install -y chromium)",
)


@attrs.frozen(kw_only=True)
class Loaded:
    """What a page did: console messages as ``(level, text)``, uncaught
    errors, the value the script returned, and a PNG screenshot."""

    console: tuple[tuple[str, str], ...]
    errors: tuple[str, ...]
    value: Any
    screenshot: bytes

    @property
    def console_errors(self) -> list[str]:
        return [text for level, text in self.console if level in ("error", "assert")]


class _Pipe:
    def __init__(self, write: Any, read: Any) -> None:
        self.write, self.read = write, read
        self.next_id = 0
        self.buffer = b""
        self.events: list[dict[str, Any]] = []

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self.write.write(json.dumps(message).encode() + b"\0")
        self.write.flush()
        while True:
            reply = self._receive()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    msg = f"{method}: {reply['error']}"
                    raise RuntimeError(msg)
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def _receive(self) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            chunk = os.read(self.read.fileno(), 1 << 16)
            if not chunk:
                msg = "chromium closed its DevTools pipe"
                raise RuntimeError(msg)
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        data: dict[str, Any] = json.loads(raw)
        return data

    def wait_for(self, method: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            if time.monotonic() > deadline:
                msg = f"no {method} within {timeout} s"
                raise TimeoutError(msg)
            self.events.append(self._receive())


def _high(fds: tuple[int, int]) -> tuple[int, int]:
    """The two descriptors moved to numbers above 9."""
    out = []
    for fd in fds:
        out.append(fcntl.fcntl(fd, fcntl.F_DUPFD, 10))
        os.close(fd)
    return out[0], out[1]


def _text(args: list[dict[str, Any]]) -> str:
    return " ".join(str(a.get("value", a.get("description", ""))) for a in args)


def load_page(
    path: Path,
    *,
    script: str | None = None,
    width: int = 1200,
    height: int = 900,
    timeout: float = 60.0,
) -> Loaded:
    """Open ``path`` in headless chromium; run ``script`` (an expression)
    after the load event; return what happened (see :class:`Loaded`)."""
    assert CHROMIUM is not None
    to_browser_r, to_browser_w = _high(os.pipe())
    from_browser_r, from_browser_w = _high(os.pipe())
    profile = tempfile.mkdtemp(prefix="memrules-chromium-")
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-extensions", "--remote-debugging-pipe", f"--user-data-dir={profile}",
               f"--window-size={width},{height}", "about:blank"]  # fmt: skip
    # A small Python launcher puts the pipe's ends on descriptors 3 and 4,
    # where chromium reads and writes DevTools messages (both ends start
    # above 9, so the two moves cannot clobber each other), then execs it.
    launcher = (
        "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
        "os.execv(sys.argv[3], sys.argv[3:])"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", launcher, str(to_browser_r), str(from_browser_w), *command],
        pass_fds=(to_browser_r, from_browser_w),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(to_browser_r)
    os.close(from_browser_w)
    writer = os.fdopen(to_browser_w, "wb")
    reader = os.fdopen(from_browser_r, "rb")
    try:
        pipe = _Pipe(writer, reader)
        target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            pipe.send(f"{domain}.enable", session=session)
        pipe.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        pipe.events.clear()
        pipe.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        pipe.wait_for("Page.loadEventFired", timeout)
        value = None
        if script is not None:
            evaluated = pipe.send(
                "Runtime.evaluate",
                {"expression": script, "returnByValue": True, "awaitPromise": True},
                session=session,
            )
            if "exceptionDetails" in evaluated:
                msg = f"the script raised: {evaluated['exceptionDetails']}"
                raise RuntimeError(msg)
            value = evaluated.get("result", {}).get("value")
        shot = pipe.send("Page.captureScreenshot", {"format": "png"}, session=session)
        console: list[tuple[str, str]] = []
        errors: list[str] = []
        for event in pipe.events:
            params = event.get("params", {})
            if event.get("method") == "Runtime.consoleAPICalled":
                console.append((params.get("type", ""), _text(params.get("args", []))))
            elif event.get("method") == "Log.entryAdded":
                entry = params.get("entry", {})
                console.append((entry.get("level", ""), entry.get("text", "")))
            elif event.get("method") == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                errors.append(str(details.get("exception", {}).get("description", details)))
        return Loaded(
            console=tuple(console),
            errors=tuple(errors),
            value=value,
            screenshot=base64.b64decode(shot["data"]),
        )
    finally:
        with contextlib.suppress(OSError):
            writer.close()
        reader.close()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(profile, ignore_errors=True)


def not_blank(png: bytes) -> tuple[int, float]:
    """How many distinct colours the screenshot has, and the share of its
    pixels that are not the background (its most common colour)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 24) or []
    total = image.width * image.height
    background = max(count for count, _ in colours)
    return len(colours), 1 - background / total
