"""A Qdrant local-mode process that stops, when it closes its store, right
after local mode let go of the directory's lock, until it is told to go on.

    python -m tests.support.close_gap_process START STOP PLACE

It opens the store at PLACE, searches it (so its local index is built and
follows its write), stores ``records(240)[START:STOP]`` and closes the
store. :meth:`QdrantClient.close` is wrapped: once the real close returned
(the lock is released, another process may open the directory), it prints
``released`` and waits for a line on standard input; whatever the store
does after that (taking the fingerprint it saves, saving the index) comes
after the other process's write. It prints ``{"closed": true}`` at the end.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from qdrant_client import QdrantClient

from memrules.seams import Scope
from tests.seams.test_store_exact import records
from tests.support.index_process import open_store

_real_close = QdrantClient.close


def _close_then_wait(self: QdrantClient, **how: Any) -> None:
    _real_close(self, **how)
    print("released", flush=True)
    sys.stdin.readline()


def main(argv: list[str]) -> None:
    start, stop, place = int(argv[0]), int(argv[1]), argv[2]
    store = open_store("qdrant", place)
    store.search("budget", k=3, scope=Scope(user="u1", tenant="t1"), mode="lexical")
    store.add(records(240)[start:stop])
    QdrantClient.close = _close_then_wait  # type: ignore[method-assign]
    store.close()
    print(json.dumps({"closed": True}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
