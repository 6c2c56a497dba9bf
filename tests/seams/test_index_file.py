"""The local index of an embedded store is saved beside the engine's files
and loaded by the next process, and is never trusted once the engine's
files changed: results are always those of the exact scan.

Each step runs in a process of its own (:mod:`tests.support.index_process`),
as applications run: one writes and exits (or is killed), the next
searches. Oracles: a numpy cosine scan of the toy embedder's vectors and
BM25 written out (:mod:`tests.seams.test_store_exact`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memrules._core.seam_records import StoredMessage
from memrules.seams import Scope
from memrules.seams._index_file import snapshot_path
from tests.seams.test_store_exact import QUERIES, bm25, in_scope, records, same_ranking, scopes
from tests.support.index_process import vector
from tests.support.seams import FILE_BACKENDS

ROOT = Path(__file__).resolve().parents[2]
HELD = records(240)


def _run(*args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.index_process", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if "--kill" in args:
        assert done.returncode == -9, done.stderr[-3000:]
        return {}
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


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


@pytest.mark.parametrize("backend", FILE_BACKENDS)
def test_the_next_process_loads_the_saved_index_and_finds_the_same(
    backend: str, tmp_path: Path
) -> None:
    place = tmp_path / "store"
    _run("write", backend, str(place), "0", "120")
    _run("write", backend, str(place), "120", "200", "--search-first")
    assert _snapshot(backend, place).is_file()
    first = _run("search", backend, str(place))
    assert first["loaded"] is True
    _exact(first, HELD[:200])
    # The same as an index built again from the engine.
    _snapshot(backend, place).unlink()
    rebuilt = _run("search", backend, str(place))
    assert rebuilt["loaded"] is False
    for key, hits in rebuilt["rankings"].items():
        same_ranking([tuple(h) for h in first["rankings"][key]], [tuple(h) for h in hits])
    # That process saved what it built: the next one loads it.
    assert _run("search", backend, str(place))["loaded"] is True


@pytest.mark.parametrize("backend", FILE_BACKENDS)
def test_a_write_the_saved_index_misses_is_never_hidden(backend: str, tmp_path: Path) -> None:
    """A writer killed before it saved, and a writer that wrote before
    searching: the engine changed after the save, so the next process
    builds the index again and finds every record."""
    place = tmp_path / "store"
    _run("write", backend, str(place), "0", "100")
    _run("write", backend, str(place), "100", "160", "--kill")  # no save
    after_kill = _run("search", backend, str(place))
    assert after_kill["loaded"] is False
    _exact(after_kill, HELD[:160])
    _run("write", backend, str(place), "160", "200", "--search-first", "--kill")  # loaded, no save
    after_second = _run("search", backend, str(place))
    assert after_second["loaded"] is False
    _exact(after_second, HELD[:200])
    forgotten = _run("forget", backend, str(place), "u1", "t1")["forgotten"]
    assert forgotten == len(in_scope(HELD[:200], Scope(user="u1", tenant="t1")))
    kept = [r for r in HELD[:200] if (r.scope.user, r.scope.tenant) != ("u1", "t1")]
    after_forget = _run("search", backend, str(place))
    _exact(after_forget, kept)
    again = _run("search", backend, str(place))
    assert again["loaded"] is True
    _exact(again, kept)


@pytest.mark.parametrize("damage", ["truncated", "flipped", "garbage", "foreign", "empty"])
@pytest.mark.parametrize("backend", FILE_BACKENDS)
def test_a_torn_corrupt_or_foreign_saved_index_is_built_again(
    backend: str, damage: str, tmp_path: Path
) -> None:
    place = tmp_path / "store"
    _run("write", backend, str(place), "0", "150")
    target = _snapshot(backend, place)
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
        other = tmp_path / "other"
        _run("write", backend, str(other), "150", "240")
        target.write_bytes(_snapshot(backend, other).read_bytes())
    found = _run("search", backend, str(place))
    assert found["loaded"] is False
    _exact(found, HELD[:150])
