"""The local index of an embedded store is saved beside the engine's files
and loaded by the next process, and is never trusted once the engine's
files changed: results are always those of the exact scan.

Each step runs in a process of its own (:mod:`tests.support.index_process`),
as applications run: one writes and exits (or is killed), the next
searches. Where several stores take the same step (the damaged files), one
process takes it for all of them, each store in its own place. Oracles: a
numpy cosine scan of the toy embedder's vectors and BM25 written out
(:mod:`tests.seams.test_store_exact`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memrules._core.seam_records import StoredMessage
from memrules.seams import Scope
from memrules.seams._index_file import snapshot_path
from tests.seams.test_store_exact import QUERIES, bm25, in_scope, records, same_ranking, scopes
from tests.support.index_process import vector
from tests.support.processes import module_json
from tests.support.seams import FILE_BACKENDS, slow_but

ROOT = Path(__file__).resolve().parents[2]
HELD = records(240)


def _run(*args: str) -> Any:
    return module_json("tests.support.index_process", *args, killed="--kill" in args)


def _write(backend: str, place: Path, start: int, stop: int, *flags: str) -> None:
    _run("write", backend, str(start), str(stop), str(place), *flags)


def _search(backend: str, place: Path) -> dict[str, Any]:
    (found,) = _run("search", backend, str(place))
    assert isinstance(found, dict)
    return found


def _snapshot(backend: str, place: Path) -> Path:
    root = f"{place}.db" if backend == "milvus" else str(place)
    return Path(snapshot_path(root, "kept"))


def _dense(held: list[StoredMessage], query: str, scope: Scope) -> list[tuple[str, float]]:
    q = np.asarray(vector(query), dtype=np.float64)
    q /= np.linalg.norm(q)
    scored = []
    for r in in_scope(held, scope):
        v = np.asarray(vector(r.text), dtype=np.float64)
        scored.append((r.id, float(v @ q / np.linalg.norm(v))))
    return sorted(scored, key=lambda pair: -pair[1])[:10]


def _exact(found: dict[str, Any], held: list[StoredMessage]) -> None:
    """Every ranking of a search process is the exact scan's over ``held``."""
    for mode in ("dense", "lexical"):
        for query in QUERIES:
            for scope in scopes():
                key = f"{mode}|{query}|{scope.user}|{scope.tenant}|{scope.conversation_id}"
                got = [(i, s) for i, s in found["rankings"][key]]
                want = _dense(held, query, scope) if mode == "dense" else bm25(held, query, scope)
                same_ranking(got, want)


@pytest.mark.parametrize("backend", slow_but("milvus", FILE_BACKENDS))
def test_the_next_process_loads_the_saved_index_and_finds_the_same(
    backend: str, tmp_path: Path
) -> None:
    place = tmp_path / "store"
    _write(backend, place, 0, 120)
    _write(backend, place, 120, 200, "--search-first")
    assert _snapshot(backend, place).is_file()
    first = _search(backend, place)
    assert first["loaded"] is True
    _exact(first, HELD[:200])
    # The same as an index built again from the engine.
    _snapshot(backend, place).unlink()
    rebuilt = _search(backend, place)
    assert rebuilt["loaded"] is False
    for key, hits in rebuilt["rankings"].items():
        same_ranking([tuple(h) for h in first["rankings"][key]], [tuple(h) for h in hits])
    # That process saved what it built: the next one loads it.
    assert _search(backend, place)["loaded"] is True


@pytest.mark.parametrize("backend", slow_but("milvus", FILE_BACKENDS))
def test_a_write_the_saved_index_misses_is_never_hidden(backend: str, tmp_path: Path) -> None:
    """A writer killed before it saved, and a writer that wrote before
    searching: the engine changed after the save, so the next process
    builds the index again and finds every record."""
    place = tmp_path / "store"
    _write(backend, place, 0, 100)
    _write(backend, place, 100, 160, "--kill")  # no save
    after_kill = _search(backend, place)
    assert after_kill["loaded"] is False
    _exact(after_kill, HELD[:160])
    _write(backend, place, 160, 200, "--search-first", "--kill")  # loaded, no save
    after_second = _search(backend, place)
    assert after_second["loaded"] is False
    _exact(after_second, HELD[:200])
    forgotten = _run("forget", backend, str(place), "u1", "t1")["forgotten"]
    assert forgotten == len(in_scope(HELD[:200], Scope(user="u1", tenant="t1")))
    kept = [r for r in HELD[:200] if (r.scope.user, r.scope.tenant) != ("u1", "t1")]
    after_forget = _search(backend, place)
    _exact(after_forget, kept)
    again = _search(backend, place)
    assert again["loaded"] is True
    _exact(again, kept)


DAMAGES = ("truncated", "flipped", "garbage", "foreign", "empty")


def _damage(damage: str, target: Path, foreign: Path) -> None:
    data = target.read_bytes()
    if damage == "truncated":
        target.write_bytes(data[: len(data) // 2])
    elif damage == "flipped":
        flipped = bytearray(data)
        flipped[-100] ^= 0x40
        target.write_bytes(bytes(flipped))
    elif damage == "garbage":
        target.write_bytes(os.urandom(len(data)))
    elif damage == "empty":
        target.write_bytes(b"")
    else:  # another store's index of the same collection name, moved in
        target.write_bytes(foreign.read_bytes())


@pytest.fixture(scope="module", params=FILE_BACKENDS)
def damaged(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, dict[str, dict[str, Any]]]:
    """One store a damage, each written by one process and searched by the
    next after its saved index was damaged: what each search found."""
    backend: str = request.param
    root = tmp_path_factory.mktemp(f"damaged-{backend}")
    places = {damage: root / damage for damage in DAMAGES}
    other = root / "other"
    _run("write", backend, "0", "150", *(str(p) for p in places.values()))
    _write(backend, other, 150, 240)
    for damage, place in places.items():
        _damage(damage, _snapshot(backend, place), _snapshot(backend, other))
    found = _run("search", backend, *(str(p) for p in places.values()))
    return backend, dict(zip(DAMAGES, found, strict=True))


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_torn_corrupt_or_foreign_saved_index_is_built_again(
    damaged: tuple[str, dict[str, dict[str, Any]]], damage: str
) -> None:
    _backend, found = damaged
    assert found[damage]["loaded"] is False
    _exact(found[damage], HELD[:150])
