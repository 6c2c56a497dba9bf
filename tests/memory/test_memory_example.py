"""examples/route_memory.py runs end to end, offline, and shows what it says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.seams import HAS_MILVUS, needs_local

ROOT = Path(__file__).resolve().parents[2]

needs_milvus = pytest.mark.skipif(
    not HAS_MILVUS, reason="needs the milvus extra: pip install -e '.[milvus]'"
)


@needs_local
@needs_milvus
def test_the_route_memory_example_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "route_memory.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    sections = {block.split("\n", 1)[0]: block for block in out.split("== ")[1:]}
    ana = sections["ana asks the support route"]
    assert "retrieval: hit" in ana
    assert "Q: My sister Priya moved to Porto last spring." in ana
    assert "peanuts" not in ana
    bob = sections["bob asks the same"]
    assert "retrieval: miss" in bob
    assert "Porto" not in bob
    anonymous = sections["a request without a user or tenant"]
    assert "retrieval: skipped (no memory without a user and a tenant" in anonymous
    assert "(this route has no memory)" in sections["ana asks the code route"]
    assert "ana: 'thanks!' -> skipped" in out
    assert "forget ana: 2 memories deleted" in out
    assert "ana now has 0, bob has 1" in out
    assert not list(tmp_path.iterdir())  # it ran in a directory of its own
