"""A Milvus Lite store's first searches in a fresh process are answered by
the index saved beside the engine's files before the engine opens them
(importing its client and opening the file is most of a memory route's
first request), and never hide a write another process made: the
collection's files are checked against the fingerprint the index was
loaded under before every such search, and once more when the engine holds
the file's lock.

This test process is the fresh one (the file is new to it); the writers are
processes of their own (:mod:`tests.support.index_process`). Oracles: the
exact scans of :mod:`tests.seams.test_index_file`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memrules._core.seam_records import StoredMessage
from memrules.seams import MessageStore, Scope
from tests.seams.test_index_file import HELD, _exact, _run, _snapshot
from tests.support.index_process import loaded, open_store, rankings

pytest.importorskip("pymilvus")


def _engine_open(store: MessageStore) -> bool:
    """Whether the store's Milvus client (and so the engine) is open."""
    backend: Any = store._backend  # type: ignore[attr-defined]
    return backend._client is not None


def _found(store: MessageStore) -> dict[str, Any]:
    return {"rankings": rankings(store)}


def _stored(store: MessageStore, held: list[StoredMessage]) -> None:
    _exact(_found(store), held)


def test_the_saved_index_answers_before_the_engine_opens(tmp_path: Path) -> None:
    place = tmp_path / "store"
    _run("write", "milvus", "0", "120", str(place))
    assert _snapshot("milvus", place).is_file()
    store = open_store("milvus", str(place))
    try:
        assert store.check() is True  # the identity and dimension, from the saved file
        store.warm()
        assert not _engine_open(store)
        assert loaded(store)
        first = store.search("budget", k=5, scope=Scope(user="u1", tenant="t1"), mode="dense")
        assert first  # answered by the saved index
        _stored(store, HELD[:120])  # every ranking exact, before and after the engine opened
        store.add(HELD[120:160])  # a write waits for the engine, then the index follows it
        assert _engine_open(store)
        _stored(store, HELD[:160])
    finally:
        store.close()


# The killed writer leaves the saved index as it was and only the engine's
# files changed: only the check of those files against the fingerprint can
# see the write, so it runs by default; the writer that saved again (the
# index file changed too) runs with -m slow.
@pytest.mark.parametrize(
    "saved",
    [pytest.param(True, marks=pytest.mark.slow), False],
    ids=["writer-saved", "writer-killed"],
)
def test_a_write_made_after_the_saved_index_was_loaded_is_never_hidden(
    tmp_path: Path, saved: bool
) -> None:
    """Another process writes between this one loading the saved index and
    searching it (it can: this process's engine does not hold the file
    yet): the search sees the write, from the index that writer saved or
    from the engine."""
    place = tmp_path / "store"
    _run("write", "milvus", "0", "100", str(place))
    store = open_store("milvus", str(place))
    try:
        assert store.check() is True
        store.warm()
        assert loaded(store)
        assert not _engine_open(store)
        _run("write", "milvus", "100", "160", str(place), *(() if saved else ("--kill",)))
        _stored(store, HELD[:160])
    finally:
        store.close()


def test_a_write_before_the_engine_held_the_file_drops_the_loaded_index(tmp_path: Path) -> None:
    """The engine opens after another process wrote: the index loaded before
    is dropped when the engine takes the file (its fingerprint then is not
    the one the index was loaded under), and built from the engine."""
    place = tmp_path / "store"
    _run("write", "milvus", "0", "100", str(place))
    store = open_store("milvus", str(place))
    try:
        store.check()
        store.warm()
        assert loaded(store)
        assert not _engine_open(store)
        _run("write", "milvus", "100", "160", str(place), "--kill")
        store.add(HELD[160:200])  # opens the engine: the loaded index is settled first
        assert _engine_open(store)
        assert not loaded(store)
        _stored(store, HELD[:200])
    finally:
        store.close()


REMADE = """
import sys
from memrules.seams import milvus_store
from tests.support.index_process import Toy
from tests.seams.test_store_exact import records


class Other(Toy):
    identity = {"name": "another-embedder", "dimension": 8}


store = milvus_store(uri=sys.argv[1], collection="kept", embedder=Toy())
store._backend._open().drop_collection("kept")  # through the engine's own client
store.close()
again = milvus_store(uri=sys.argv[1], collection="kept", embedder=Other())
again.add(records(240)[:10])
again.close()
print("remade")
"""


def test_a_collection_made_again_before_the_engine_opened_is_refused(tmp_path: Path) -> None:
    """The start-up check was answered by the saved index; another process
    then drops the collection and makes it again for another embedder: the
    next search asks the engine, which refuses it (never scores of two
    models compared)."""
    import os
    import subprocess
    import sys

    from memrules._core.errors import StoreError
    from tests.seams.test_index_file import ROOT

    place = tmp_path / "store"
    _run("write", "milvus", "0", "60", str(place))
    store = open_store("milvus", str(place))
    try:
        assert store.check() is True
        assert not _engine_open(store)
        done = subprocess.run(
            [sys.executable, "-c", REMADE, f"{place}.db"],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        with pytest.raises(StoreError, match="made again"):
            store.search("budget", k=5, scope=Scope(user="u1", tenant="t1"), mode="dense")
    finally:
        store.close()


def test_a_record_another_process_forgot_before_the_engine_opened_is_written_again(
    tmp_path: Path,
) -> None:
    """The saved index was loaded before the engine opened the file; another
    process then forgets a scope; this process stores the same records
    again: they are written (the index that still held them is settled
    against the files before it says which records are new), and the
    engine holds every one of them."""
    place = tmp_path / "store"
    _run("write", "milvus", "0", "100", str(place))
    store = open_store("milvus", str(place))
    try:
        assert store.check() is True
        store.warm()
        assert loaded(store)
        assert not _engine_open(store)
        _run("forget", "milvus", str(place), "u1", "t1")
        forgotten = [r for r in HELD[:100] if (r.scope.user, r.scope.tenant) == ("u1", "t1")]
        assert forgotten
        store.add(HELD[:100])
        backend: Any = store._backend  # type: ignore[attr-defined]
        rows = backend._ready("kept").query(
            "kept", filter='user == "u1" and tenant == "t1"', output_fields=["id"]
        )
        assert {row["id"] for row in rows} == {r.id for r in forgotten}
    finally:
        store.close()
