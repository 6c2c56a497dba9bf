"""Milvus Lite starts quietly: its in-process gRPC server does not implement
a call pymilvus makes, and gRPC logged each as an ERROR with a traceback
(63 lines on every start, into whatever log the application configured:
the MCP server's stderr included). The records are kept as DEBUG records
of ``memrules.seams``; nothing else gRPC logs is touched."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.seams import HAS_MILVUS

ROOT = Path(__file__).resolve().parents[2]

START = """
import logging, sys
from memrules.seams import milvus_store
from tests.support.index_process import Toy
from tests.seams.test_store_exact import records

logging.basicConfig(level=logging.INFO, stream=sys.stderr)  # an application's own log
debug = logging.StreamHandler(sys.stdout)
debug.setLevel(logging.DEBUG)
seams = logging.getLogger("memrules.seams")
seams.setLevel(logging.DEBUG)
seams.addHandler(debug)
seams.propagate = False
store = milvus_store(uri=sys.argv[1], collection="kept", embedder=Toy())
store.add(records(20)[:5])
store.close()
print("closed")
"""


@pytest.mark.skipif(not HAS_MILVUS, reason="needs the milvus extra: pip install -e '.[milvus]'")
def test_a_milvus_lite_start_logs_no_error_and_keeps_it_at_debug(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", START, str(tmp_path / "m.db")],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "closed" in done.stdout
    assert "Method not implemented" not in done.stderr
    assert "Traceback" not in done.stderr
    assert "ERROR" not in done.stderr
    assert "does not implement a call pymilvus made" in done.stdout  # kept, at debug


def _record(error: BaseException | None, message: str = "Exception calling application") -> Any:
    exc_info = (type(error), error, None) if error is not None else None
    return logging.LogRecord("grpc._server", logging.ERROR, __file__, 1, message, (), exc_info)


def test_the_filter_drops_only_unimplemented_calls() -> None:
    from memrules.seams._milvus_lite import _Unimplemented

    keep = _Unimplemented()
    assert not keep.filter(_record(NotImplementedError("Method not implemented!")))
    assert keep.filter(_record(NotImplementedError("something else")))
    assert keep.filter(_record(RuntimeError("Method not implemented!")))
    assert keep.filter(_record(None, "a server error"))
