"""The fingerprint a saved index is trusted under changes with every write
through memrules, even one that leaves every file of the collection at the
size, modification time and inode it had: a write that rewrites a file in
place at the same size within one tick of the file system's clock (coarse:
milliseconds) does exactly that. Here the tick is made certain: the test
puts each file's modification time back to what it was when the index was
saved, after a write that left the sizes as they were (it reuses the pages
a deletion freed). Oracle: the exact scans of
:mod:`tests.seams.test_index_file`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memrules.seams import Scope
from tests.seams.test_index_file import HELD, _dense, _snapshot
from tests.seams.test_store_exact import bm25, same_ranking
from tests.support.index_process import loaded, open_store

pytest.importorskip("qdrant_client")

GONE = Scope(user="u4", tenant="t2")


def _files(place: Path) -> dict[str, os.stat_result]:
    root = place / "collection" / "kept"
    return {str(p): p.stat() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_same_size_write_within_one_clock_tick_is_never_hidden(tmp_path: Path) -> None:
    place = tmp_path / "store"
    held = HELD[:100]
    back = [r for r in held if r.scope.user == GONE.user and r.scope.tenant == GONE.tenant]
    kept = [r for r in held if r not in back]
    assert back
    assert kept
    store = open_store("qdrant", str(place))
    store.add(held)
    assert store.delete_scope(GONE) == len(back)  # frees their pages in the SQLite file
    store.search("budget", k=3, scope=Scope(user="u1", tenant="t1"))  # the index, without them
    store.close()  # saves it
    assert _snapshot("qdrant", place).is_file()
    before = _files(place)

    store = open_store("qdrant", str(place))
    store.add(back[:1])  # in a freed page; no search, so no index saved over the old one
    store.close()
    after = _files(place)
    assert {p: s.st_size for p, s in after.items()} == {p: s.st_size for p, s in before.items()}
    for path, seen in before.items():  # within the same tick as the save
        os.utime(path, ns=(after[path].st_atime_ns, seen.st_mtime_ns))

    now = kept + back[:1]
    store = open_store("qdrant", str(place))
    try:
        for query in ("where is the budget for Porto", "VPN host Lyon", "hanoi"):
            got = [(h.id, h.score) for h in store.search(query, k=10, scope=GONE, mode="dense")]
            same_ranking(got, _dense(now, query, GONE))
            got = [(h.id, h.score) for h in store.search(query, k=10, scope=GONE, mode="lexical")]
            same_ranking(got, bm25(now, query, GONE))
        assert not loaded(store)  # the saved index missed the write: built again
    finally:
        store.close()


def test_every_counted_write_changes_the_fingerprint(tmp_path: Path) -> None:
    """The counter alone tells writes apart: the same files, another value."""
    from memrules.seams._index_file import count_write, fingerprint, writes_path

    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "data").write_bytes(b"x" * 64)
    counter = writes_path(str(tmp_path), "kept")
    marks = [fingerprint(str(tmp_path / "files"), writes=counter)]
    for _ in range(3):
        count_write(str(tmp_path), "kept")
        marks.append(fingerprint(str(tmp_path / "files"), writes=counter))
    assert len({repr(m) for m in marks}) == 4
    assert [m[1:] for m in marks[1:] if m] == [marks[0]] * 3  # the files' part unchanged


@pytest.mark.parametrize("backend", ["milvus", "qdrant"])
def test_each_write_and_forget_counts(tmp_path: Path, backend: str) -> None:
    """Every write and forget through a store on disk gives the
    collection's write counter a new value (before it writes: see the
    module docs)."""
    if backend == "milvus":
        pytest.importorskip("pymilvus")
    place = tmp_path / "store"
    root = f"{place}.db" if backend == "milvus" else str(place)
    counter = Path(root) / "memrules-index" / "kept.writes"
    seen: list[str] = []
    store = open_store(backend, str(place))
    try:
        store.add(HELD[:20])
        seen.append(counter.read_text())
        store.add(HELD[20:40])
        seen.append(counter.read_text())
        store.delete_scope(Scope(user="u1", tenant="t1"))
        seen.append(counter.read_text())
        store.delete_scope(GONE)
        seen.append(counter.read_text())
    finally:
        store.close()
    assert len(set(seen)) == 4
