"""One process of the saved-index tests: writes records to an embedded
store, or searches it and says whether it loaded the saved index.

    python -m tests.support.index_process write BACKEND PLACE START STOP [--kill] [--search-first]
    python -m tests.support.index_process search BACKEND PLACE
    python -m tests.support.index_process forget BACKEND PLACE USER TENANT

``write`` stores ``records(240)[START:STOP]`` (of the exact-search tests)
and closes the store (which saves its index), or with ``--kill`` is killed
(SIGKILL) once the write is acknowledged; ``--search-first`` searches before
writing, so the write goes to a loaded index. ``search`` prints one JSON
line: ``loaded`` (the index came from the saved file) and the rankings of
every query and scope of the exact-search tests, dense and lexical."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
from typing import Any

from memrules.seams import MessageStore, Scope, milvus_store, qdrant_store
from tests.seams.test_store_exact import QUERIES, records, scopes


class Toy:
    """A deterministic embedder, the same in every process: a text's
    BLAKE2 digest as eight numbers."""

    dimension = 8
    identity: dict[str, Any] = {"name": "toy-index-embedder", "dimension": 8}  # noqa: RUF012

    def embed(self, texts: Any) -> list[list[float]]:
        return [vector(text) for text in texts]


def vector(text: str) -> list[float]:
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return [b / 255 - 0.5 for b in digest]


def open_store(backend: str, place: str) -> MessageStore:
    if backend == "milvus":
        return milvus_store(uri=f"{place}.db", collection="kept", embedder=Toy())
    return qdrant_store(path=place, collection="kept", embedder=Toy())


def loaded(store: MessageStore) -> bool:
    """Whether the store's local index is the one it loaded from its file."""
    backend: Any = store._backend  # type: ignore[attr-defined]
    shared = getattr(backend, "_shared", None)
    return bool(getattr(backend, "_saved", False) or getattr(shared, "saved", False))


def rankings(store: MessageStore) -> dict[str, list[list[Any]]]:
    out: dict[str, list[list[Any]]] = {}
    for mode in ("dense", "lexical"):
        for query in QUERIES:
            for scope in scopes():
                hits = store.search(query, k=10, scope=scope, mode=mode)
                key = f"{mode}|{query}|{scope.user}|{scope.tenant}|{scope.conversation_id}"
                out[key] = [[h.id, h.score] for h in hits]
    return out


def main(argv: list[str]) -> None:
    action, backend, place = argv[:3]
    store = open_store(backend, place)
    if action == "write":
        start, stop = int(argv[3]), int(argv[4])
        if "--search-first" in argv:
            store.search("budget", k=3, scope=Scope(user="u1", tenant="t1"), mode="lexical")
        store.add(records(240)[start:stop])
        if "--kill" in argv:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        store.close()
        print(json.dumps({"wrote": stop - start}))
    elif action == "search":
        found = rankings(store)
        print(json.dumps({"loaded": loaded(store), "rankings": found}))
        store.close()
    elif action == "forget":
        gone = store.delete_scope(Scope(user=argv[3], tenant=argv[4]))
        store.close()
        print(json.dumps({"forgotten": gone}))


if __name__ == "__main__":
    main(sys.argv[1:])
