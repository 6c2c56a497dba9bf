"""A Qdrant local-mode store that closes saves its index with the
fingerprint of the collection's files, and the next process trusts the
index while the files match it. Local mode lets go of the directory's lock
when it closes: a process that opens the directory and writes before the
closing one took that fingerprint would be inside it, and missing from the
index saved with it. The fingerprint is taken while the lock is held (and
a write counted since is never saved over), so that write is always found.

Real processes, in a fixed order: the closing one stops right after local
mode released the lock (:mod:`tests.support.close_gap_process`) until the
writer (:mod:`tests.support.index_process`) has written and exited. Oracle:
the exact scans of :mod:`tests.seams.test_index_file`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.seams.test_index_file import HELD, _exact, _run, _search, _snapshot
from tests.support.processes import ROOT

pytest.importorskip("qdrant_client")


def test_a_write_made_while_another_process_closes_is_never_hidden(tmp_path: Path) -> None:
    place = tmp_path / "store"
    _run("write", "qdrant", "0", "100", str(place))
    closing = subprocess.Popen(
        [sys.executable, "-m", "tests.support.close_gap_process", "100", "140", str(place)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert closing.stdout is not None
        assert closing.stdin is not None
        said = closing.stdout.readline()  # the process stopped after the release
        assert said.strip() == "released", said
        # The lock is free and the closing process has not saved its index yet.
        _run("write", "qdrant", "140", "180", str(place))
        closing.stdin.write("go\n")
        closing.stdin.flush()
        out, err = closing.communicate(timeout=300)
        assert closing.returncode == 0, err[-4000:]
        assert json.loads(out.strip().splitlines()[-1]) == {"closed": True}
    finally:
        if closing.poll() is None:
            closing.kill()
            closing.wait()
    assert _snapshot("qdrant", place).is_file()
    found = _search("qdrant", place)
    _exact(found, HELD[:180])  # the writer's 40 records too, whatever index was loaded
