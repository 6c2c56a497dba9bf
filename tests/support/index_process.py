"""One process of the saved-index tests: writes records to an embedded
store, or searches it and says whether it loaded the saved index.

    python -m tests.support.index_process write BACKEND START STOP PLACE... [--kill|--search-first]
    python -m tests.support.index_process search BACKEND PLACE...
    python -m tests.support.index_process forget BACKEND PLACE USER TENANT

``write`` stores ``records(240)[START:STOP]`` (of the exact-search tests)
in the store at each PLACE and closes it (which saves its index), or with
``--kill`` is killed (SIGKILL) once the last write is acknowledged;
``--search-first`` searches before writing, so the write goes to a loaded
index. ``search`` prints one JSON line, a list with one entry per PLACE:
``loaded`` (the index came from the saved file) and the rankings of every
query and scope of the exact-search tests, dense and lexical.

Several places in one process are several stores of their own (each place
its own files, its own saved index): a test with many independent stores
pays for one interpreter start instead of one per store."""

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
    action, backend = argv[:2]
    words = [a for a in argv[2:] if not a.startswith("--")]
    if action == "write":
        start, stop, places = int(words[0]), int(words[1]), words[2:]
        for place in places:
            store = open_store(backend, place)
            if "--search-first" in argv:
                store.search("budget", k=3, scope=Scope(user="u1", tenant="t1"), mode="lexical")
            store.add(records(240)[start:stop])
            if "--kill" in argv and place == places[-1]:
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            store.close()
        print(json.dumps({"wrote": stop - start}))
    elif action == "search":
        found = []
        for place in words:
            store = open_store(backend, place)
            ranked = rankings(store)  # the first search loads (or builds) the index
            found.append({"loaded": loaded(store), "rankings": ranked})
            store.close()
        print(json.dumps(found))
    elif action == "forget":
        place, user, tenant = words
        store = open_store(backend, place)
        gone = store.delete_scope(Scope(user=user, tenant=tenant))
        store.close()
        print(json.dumps({"forgotten": gone}))


if __name__ == "__main__":
    main(sys.argv[1:])
