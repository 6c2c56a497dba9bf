"""A Qdrant local-mode store's first searches in a fresh process are
answered by the index saved beside local mode's files (with each record's
payload) before local mode opens them (importing ``qdrant_client`` and
reading every point back is most of a memory route's first request), and
never hide a write another process made: the collection's files and write
counter are checked against the fingerprint the index was loaded under
before every such search, and once more when local mode holds the
directory's lock.

This test process is the reader; the writers are processes of their own
(:mod:`tests.support.index_process`). Oracles: the exact scans of
:mod:`tests.seams.test_index_file`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memrules._core.errors import StoreError
from memrules.seams import MessageStore, Scope
from tests.seams.test_index_file import HELD, _exact, _run, _snapshot
from tests.support.index_process import loaded, open_store, rankings
from tests.support.processes import run_python

pytest.importorskip("qdrant_client")


def _engine_open(store: MessageStore) -> bool:
    """Whether the store's Qdrant client (and so local mode) is open."""
    backend: Any = store._backend  # type: ignore[attr-defined]
    return backend._client is not None


def test_the_saved_index_answers_before_local_mode_opens(tmp_path: Path) -> None:
    place = tmp_path / "store"
    _run("write", "qdrant", "0", "120", str(place))
    assert _snapshot("qdrant", place).is_file()
    store = open_store("qdrant", str(place))
    try:
        assert store.check() is True  # the identity and dimension, from the saved file
        store.warm()
        assert not _engine_open(store)
        assert loaded(store)
        first = store.search("budget", k=5, scope=Scope(user="u1", tenant="t1"), mode="dense")
        assert first  # answered by the saved index, its hits from the saved payloads
        _exact({"rankings": rankings(store)}, HELD[:120])  # before and after local mode opened
        store.add(HELD[120:160])  # a write waits for local mode, then the index follows it
        assert _engine_open(store)
        _exact({"rankings": rankings(store)}, HELD[:160])
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
    searching it (it can: local mode here does not hold the directory
    yet): the search sees the write."""
    place = tmp_path / "store"
    _run("write", "qdrant", "0", "100", str(place))
    store = open_store("qdrant", str(place))
    try:
        assert store.check() is True
        store.warm()
        assert loaded(store)
        assert not _engine_open(store)
        _run("write", "qdrant", "100", "160", str(place), *(() if saved else ("--kill",)))
        _exact({"rankings": rankings(store)}, HELD[:160])
    finally:
        store.close()


FIRST = """
import json, sys
from memrules.seams import Scope
from tests.support.index_process import open_store
store = open_store("qdrant", sys.argv[1])
checked = store.check()
store.warm()
before = "qdrant_client" in sys.modules
hits = store.search("budget", k=5, scope=Scope(user="u1", tenant="t1"), mode="dense")
print(json.dumps({"checked": checked, "imported": before, "hits": [h.id for h in hits]}))
store.close()
"""


def test_the_first_search_imports_no_qdrant_client(tmp_path: Path) -> None:
    """In a fresh process, checking the collection and answering the first
    search import nothing of ``qdrant_client`` (local mode opens after it),
    and the hits are those local mode answers when it opens first."""
    place = tmp_path / "store"
    _run("write", "qdrant", "0", "120", str(place))
    shutil.copytree(place, tmp_path / "unsaved")
    (tmp_path / "unsaved" / "memrules-index" / "kept.index").unlink()
    answers = []
    for where in (place, tmp_path / "unsaved"):
        done = run_python("-c", FIRST, str(where))
        assert done.returncode == 0, done.stderr[-4000:]
        answers.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert answers[0]["checked"] is True
    assert answers[0]["imported"] is False  # answered from the saved index
    assert answers[1]["imported"] is True  # no saved index: local mode opened first
    assert answers[0]["hits"] == answers[1]["hits"]
    assert answers[0]["hits"]


REMADE = """
import sys
from qdrant_client import QdrantClient
from memrules.seams import qdrant_store
from tests.seams.test_store_exact import records
from tests.support.index_process import Toy

client = QdrantClient(path=sys.argv[1])
client.delete_collection("kept")
client.close()


class Other(Toy):
    identity = {"name": "another-embedder", "dimension": 8}


store = qdrant_store(path=sys.argv[1], collection="kept", embedder=Other())
store.add(records(240)[:10])
store.close()
"""


def test_a_collection_made_again_before_local_mode_opens_is_refused(tmp_path: Path) -> None:
    """Another process drops the collection and makes it again for another
    embedder after this one checked it from the saved index: once local
    mode opens, the store refuses it (never searches it as the one checked)."""
    place = tmp_path / "store"
    _run("write", "qdrant", "0", "60", str(place))
    store = open_store("qdrant", str(place))
    try:
        assert store.check() is True
        store.warm()
        assert loaded(store)
        done = run_python("-c", REMADE, str(place))
        assert done.returncode == 0, done.stderr[-4000:]
        with pytest.raises(StoreError, match="dropped or made again"):
            store.search("budget", k=5, scope=Scope(user="u1", tenant="t1"), mode="dense")
    finally:
        store.close()
