"""A store whose embedder is the real model, counted: the fixture of the
tests of how many model calls a write costs (batched writes, remembering)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memrules._core.errors import EmbedderError
from memrules.seams import Embedder, MessageStore
from tests.support.seams import maker


class Counted:
    """The real local model, counting its calls (the texts of each); a
    text holding ``POISON`` fails the call, as a model that cannot embed it;
    with ``gate`` set, the first call waits for it."""

    def __init__(self, model: Embedder) -> None:
        self.model = model
        self.calls: list[list[str]] = []
        self.entered = threading.Event()
        self.gate: threading.Event | None = None

    @property
    def dimension(self) -> int:
        return self.model.dimension

    @property
    def identity(self) -> dict[str, Any]:
        return self.model.identity

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.gate is not None and len(self.calls) == 1:
            self.entered.set()
            assert self.gate.wait(30)
        if any("POISON" in t for t in texts):
            msg = "this model cannot embed POISON"
            raise EmbedderError(msg)
        return self.model.embed(texts)


def counted_store(backend: str, place: Path, model: Embedder) -> Iterator[MessageStore]:
    """A ``backend`` store in ``place`` embedding with ``model``, counted;
    closed when the test is done (a fixture yields from it)."""
    made = maker(backend, place, Counted(model))()
    yield made
    made.close()


def counted(store: MessageStore) -> Counted:
    """The counting embedder of a :func:`counted_store` store."""
    embedder = store.embedder
    assert isinstance(embedder, Counted)
    return embedder
