"""The config check does not load a bundled tiktoken vocabulary itself: it
begins the load in a background thread (offline, so it cannot fail for the
network), and the first count waits for that load; counts stay exact.
Checked in a fresh interpreter, since this test process has loaded every
encoding already."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json, threading
    from memrules._counting import tokens

    real = tokens._load_encoding
    loaders = []

    def recorded(name):  # who built each encoding (a call that missed the cache)
        misses = real.cache_info().misses
        encoding = real(name)
        if real.cache_info().misses > misses:
            loaders.append((name, threading.current_thread().name))
        return encoding

    tokens._load_encoding = recorded
    from memrules import MemoryConfig

    MemoryConfig(encoder_name="o200k_base", max_messages=4)
    in_check = list(loaders)
    counter = tokens.TiktokenCounter.for_name("o200k_base")
    from memrules._core.messages import message

    said = "Übermorgen: 12,000 dollars for billing 🙂"
    counted = counter.count(message("user", said))
    exact = len(real.__wrapped__("o200k_base").encode_ordinary("user " + said))
    print(json.dumps({"in_check": in_check, "loaders": loaders, "counted": counted,
                      "exact": exact}))
    """
)


def test_the_config_check_leaves_a_bundled_vocabulary_to_a_background_load() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert [name for name, thread in out["in_check"] if thread == "MainThread"] == []
    builders = {thread for name, thread in out["loaders"] if name == "o200k_base"}
    assert builders == {"memrules-encoding"}, out["loaders"]  # built once, in the background
    assert out["counted"] == out["exact"] > 0
