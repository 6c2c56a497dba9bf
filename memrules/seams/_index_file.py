"""The local index of an embedded collection, saved beside the engine's
files so that a new process loads it instead of reading every record back.

Building `LocalIndex` from the engine
reads every record of the collection through the engine's Python client:
seconds at 10,000 memories, a minute at 100,000. When a store closes, the
index is written to one file in ``memrules-index/`` inside the store's
directory (atomically: `AtomicFile`), with the
**fingerprint** of the engine's files for the collection as they are then:
each file's path, size, modification time and inode. A process that opens
the store takes the fingerprint again once its engine holds the files (the
engine's lock keeps every other process out from then on), and loads the
saved index only when it is the same, so a snapshot is never trusted for an
engine that changed after it was saved: a write by another
process, a writer killed before it saved, a collection dropped and made
again, or a directory copied elsewhere (its inodes differ) all change the
fingerprint, and the index is built from the engine as before. A file's
size and modification time alone miss a write that rewrites it in place
at the same size within one tick of the file system's clock, so the
fingerprint also holds the collection's **write counter**
(``memrules-index/<collection>.writes``): a random value a store gives it
(`count_write`), under the engine's lock, before each write it
makes, so every write through memrules changes the fingerprint whatever
the files' times say. A file that
is torn, corrupt (its checksum is kept), of another format version, engine,
collection or dimension is ignored the same way: loading never fails a
search, it only saves the build.

The file: `MAGIC`, the header's length (8 bytes, little-endian), the
header (JSON: the format, what it is of, the fingerprint, the CRC-32 of the
body and where each array is in it), then the body (the arrays' bytes).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from memrules._core.errors import StoreError
from memrules._io.files import AtomicFile
from memrules.seams._local_index import Frozen, LocalIndex

__all__ = [
    "FORMAT",
    "MAGIC",
    "count_write",
    "counted",
    "fingerprint",
    "header",
    "load",
    "save",
    "snapshot_path",
    "writes_path",
]

log = logging.getLogger("memrules.seams")

FORMAT = 1
"""The version of the file's layout; a file of another is rebuilt."""

MAGIC = b"memrules local index\n"

_SKIPPED = ("-shm",)  # SQLite's shared memory: rewritten by every reader
_EMPTY_SKIPPED = ("-wal",)  # an empty SQLite log: made by opening, holds nothing
# Milvus Lite's segment indexes: built in the background from the segment's
# data files (which the fingerprint holds), so one may appear after the save
# without any record changing.
_DERIVED_FOLDERS = ("indexes",)


def snapshot_path(root: str, collection: str) -> str:
    """Where the index of ``collection`` of the store in directory ``root``
    is saved."""
    return os.path.join(root, "memrules-index", f"{collection}.index")


def writes_path(root: str, collection: str) -> str:
    """Where the write counter of ``collection`` of the store in directory
    ``root`` is kept."""
    return os.path.join(root, "memrules-index", f"{collection}.writes")


_COUNTER = "memrules write counter"  # the counter's entry in a fingerprint


def count_write(root: str, collection: str) -> str:
    """Give the write counter of ``collection`` (in the store directory
    ``root``) a new random value, and return it. A store calls this while
    its engine holds the files and **before** it writes, so a fingerprint
    taken after the write began differs from every one taken before, even
    when the write leaves each file's size and time as they were. The value
    is replaced atomically (a new file renamed over the old one) but not
    synced: the engine's own files carry the write across a crash. Raises
    `StoreError` when it cannot be written (the write is not made:
    a saved index could otherwise hide it)."""
    target = writes_path(root, collection)
    value = os.urandom(16).hex()
    temporary = f"{target}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(temporary, "w", encoding="ascii") as file:
            file.write(value)
        os.replace(temporary, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        msg = f"could not count a write of collection {collection!r} in {target}: {exc}"
        raise StoreError(msg) from exc
    return value


def counted(mark: list[list[Any]] | None) -> str | None:
    """The write counter's value in the fingerprint ``mark`` (None when it
    has none: no write was counted yet, or no counter was read)."""
    if mark and mark[0] and mark[0][0] == _COUNTER:
        return str(mark[0][1])
    return None


def fingerprint(directory: str, *, writes: str | None = None) -> list[list[Any]] | None:
    """Every file under ``directory`` as ``[relative path, size, mtime in
    ns, inode]``, in path order (``[]`` when it does not exist), but for
    SQLite's shared memory, an empty SQLite log and the folders of indexes
    an engine derives from its data files; None when it cannot be read
    whole (a file vanished while it was walked). With ``writes`` (the path
    of the collection's write counter, `writes_path`), the counter's
    value comes first, as ``["memrules write counter", value]``, when it
    has one; it is read before the files are walked (a write counted after
    that changes the next fingerprint, whichever files it reached). Without
    the directory there is no fingerprint to trust, counter or not: ``[]``."""
    found: list[list[Any]] = []
    if writes is not None:
        try:
            with open(writes, encoding="ascii") as file:
                found.append([_COUNTER, file.read()])
        except FileNotFoundError:
            pass
        except (OSError, ValueError):
            return None
    if not os.path.isdir(directory):
        return []
    for where, folders, names in os.walk(directory):
        folders[:] = sorted(f for f in folders if f not in _DERIVED_FOLDERS)
        for name in sorted(names):
            if name.endswith(_SKIPPED):
                continue
            path = os.path.join(where, name)
            try:
                seen = os.stat(path)
            except OSError:
                return None
            if seen.st_size == 0 and name.endswith(_EMPTY_SKIPPED):
                continue
            relative = os.path.relpath(path, directory)
            found.append([relative, seen.st_size, seen.st_mtime_ns, seen.st_ino])
    return found


def save(
    target: str,
    index: LocalIndex,
    *,
    of: dict[str, Any],
    mark: list[list[Any]],
    extra: Sequence[bytes] | None = None,
    about: dict[str, Any] | None = None,
) -> None:
    """Write ``index`` to ``target`` with the fingerprint ``mark`` and what
    it is ``of`` (engine, collection: compared on load), ``extra`` bytes
    per live row, in row order (what a hit is made of, for Milvus Lite),
    and ``about`` the collection as it was then (its embedder identity:
    what a store checks at start-up, read back by `header` while the
    files are unchanged). Any failure is logged and leaves the file as it
    was (or absent): the next process builds the index from the engine."""
    try:
        frozen = index.frozen()
        if extra is not None and len(extra) != len(frozen.ids):
            msg = "extra rows do not match the index"
            raise ValueError(msg)
        arrays: dict[str, np.ndarray] = {
            "vectors": np.ascontiguousarray(frozen.vectors, dtype=np.float32),
            "scope": np.ascontiguousarray(frozen.scope, dtype=np.int64),
            "sparse_at": frozen.sparse_at.astype(np.int64),
            "sparse_index": frozen.sparse_index.astype(np.int64),
            "sparse_value": frozen.sparse_value.astype(np.float64),
            "lengths": frozen.lengths.astype(np.float64),
            "ids": np.frombuffer(json.dumps(frozen.ids).encode("utf-8"), dtype=np.uint8),
            "codes": np.frombuffer(json.dumps(frozen.codes).encode("utf-8"), dtype=np.uint8),
        }
        if extra is not None:
            sizes = np.fromiter((len(e) for e in extra), dtype=np.int64, count=len(extra))
            at: np.ndarray = np.zeros(len(extra) + 1, dtype=np.int64)
            np.cumsum(sizes, out=at[1:])
            arrays["extra_at"] = at
            arrays["extra"] = np.frombuffer(b"".join(extra), dtype=np.uint8)
        layout = []
        offset = 0
        crc = 0
        for name, array in arrays.items():
            data = array.tobytes()
            crc = zlib.crc32(data, crc)
            layout.append([name, array.dtype.str, list(array.shape), offset, len(data)])
            offset += len(data)
        header = json.dumps(
            {
                "format": FORMAT,
                "of": of,
                "dimension": index.dimension,
                "total": frozen.total,
                "mark": mark,
                "about": about,
                "crc": crc,
                "arrays": layout,
            }
        ).encode("utf-8")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with AtomicFile(target, "local index") as out:
            out.write(MAGIC + len(header).to_bytes(8, "little") + header)
            for array in arrays.values():
                out.write(array.tobytes())
    except Exception as exc:  # saving only spares the next process a build
        log.warning("could not save the local index to %s (%s); it is built again", target, exc)


def header(target: str, *, of: dict[str, Any]) -> dict[str, Any] | None:
    """The header of the index saved at ``target`` (its ``mark``,
    ``dimension`` and ``about``, unchecked against the body), when it is of
    this format, engine and collection; else None. Reads the header only."""
    try:
        with open(target, "rb") as file:
            start = file.read(len(MAGIC) + 8)
            if len(start) != len(MAGIC) + 8 or not start.startswith(MAGIC):
                return None
            size = int.from_bytes(start[len(MAGIC) :], "little")
            if size > 1 << 26:  # no header is this long: not a file this module wrote
                return None
            found = json.loads(file.read(size))
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or found.get("format") != FORMAT or found.get("of") != of:
        return None
    return found


def load(
    target: str,
    *,
    of: dict[str, Any],
    mark: list[list[Any]],
    dimension: int,
) -> tuple[LocalIndex, list[bytes] | None] | None:
    """The index saved at ``target`` and its extra bytes per row, when the
    file is whole and was saved for this engine, collection and dimension
    with the fingerprint ``mark``; else None (build it)."""
    try:
        with open(target, "rb") as file:
            data = file.read()
    except OSError:
        return None
    try:
        return _parse(data, of=of, mark=mark, dimension=dimension)
    except Exception as exc:  # a torn or foreign file is rebuilt, never an error
        log.info("the local index at %s is not usable (%s); building it", target, exc)
        return None


def _parse(
    data: bytes,
    *,
    of: dict[str, Any],
    mark: list[list[Any]],
    dimension: int,
) -> tuple[LocalIndex, list[bytes] | None] | None:
    if not data.startswith(MAGIC):
        msg = "not a local index file"
        raise ValueError(msg)
    start = len(MAGIC) + 8
    size = int.from_bytes(data[len(MAGIC) : start], "little")
    header = json.loads(data[start : start + size])
    body = memoryview(data)[start + size :]
    if header["format"] != FORMAT or header["of"] != of or header["dimension"] != dimension:
        msg = "saved for another format, engine, collection or dimension"
        raise ValueError(msg)
    if header["mark"] != mark:
        return None  # the engine's files changed since: stale
    if zlib.crc32(body) != header["crc"]:
        msg = "checksum mismatch"
        raise ValueError(msg)
    arrays: dict[str, np.ndarray] = {}
    for name, dtype, shape, offset, length in header["arrays"]:
        if offset + length > len(body):
            msg = "truncated"
            raise ValueError(msg)
        array = np.frombuffer(body[offset : offset + length], dtype=np.dtype(dtype))
        arrays[name] = array.reshape(shape)
    ids: list[str] = json.loads(arrays["ids"].tobytes())
    codes: list[str] = json.loads(arrays["codes"].tobytes())
    n = len(ids)
    sparse_at = arrays["sparse_at"]
    if (
        arrays["vectors"].shape != (n, dimension)
        or arrays["scope"].shape != (n, 3)
        or sparse_at.shape != (n + 1,)
        or int(sparse_at[-1]) != len(arrays["sparse_index"])
        or len(arrays["sparse_index"]) != len(arrays["sparse_value"])
        or arrays["lengths"].shape != (n,)
        or (n and int(arrays["scope"].max(initial=0)) >= len(codes))
    ):
        msg = "inconsistent arrays"
        raise ValueError(msg)
    index = LocalIndex(dimension)
    index.restore(
        Frozen(
            ids=ids,
            codes=codes,
            vectors=arrays["vectors"],
            scope=arrays["scope"],
            sparse_at=sparse_at,
            sparse_index=arrays["sparse_index"],
            sparse_value=arrays["sparse_value"],
            lengths=arrays["lengths"],
            total=float(header["total"]) if header["total"] is not None else None,
        )
    )
    extra: list[bytes] | None = None
    if "extra" in arrays:
        blob = arrays["extra"].tobytes()
        at = arrays["extra_at"].tolist()
        if len(at) != n + 1 or at[-1] != len(blob):
            msg = "inconsistent extra rows"
            raise ValueError(msg)
        extra = [blob[at[i] : at[i + 1]] for i in range(n)]
    return index, extra
