"""A memory route's start-up: the embedding model loads while the store
opens, before the first request asks for it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memrules import MemoryConfig, MemoryPlugin, Request
from memrules._core.errors import EmbedderError
from memrules._core.messages import message
from memrules._runtime.pipeline import Pipeline
from memrules.memory import RouteRetrieval
from memrules.memory.autostore import memory_record
from memrules.seams import Embedder, MessageStore, local_embedder
from tests.support.memory_helpers import store_settings
from tests.support.seams import HAS_QDRANT, needs_local


@needs_local
def test_the_model_loads_at_start_up_before_the_first_request(tmp_path: Path) -> None:
    embedder = local_embedder()  # a model of its own, not loaded yet
    settings = store_settings("qdrant-disk", tmp_path)
    from memrules.memory.binding import open_store

    store = open_store(settings, embedder=embedder)
    config = MemoryConfig(memory=RouteRetrieval(retrieval_limit=3), memory_store=settings)
    with MemoryPlugin(config, memory_store=store) as plugin:
        deadline = time.monotonic() + 60
        while not embedder._model and time.monotonic() < deadline:  # type: ignore[attr-defined]
            time.sleep(0.05)
        assert embedder._model, "the model did not load at start-up"  # type: ignore[attr-defined]
        request = Request(
            messages=(message("user", "Where does my sister live?"),), user="ana", tenant="acme"
        )
        result = plugin.handle(request, now=1.0)
        assert result.memory is not None
        assert result.memory.retrieval.status == "miss"
    store.close()


def test_a_memory_store_config_imports_only_its_own_backend() -> None:
    """A Milvus memory store's config reads the Milvus factory's keys and
    imports neither the Qdrant nor the Valkey backend (and a Qdrant one
    not Milvus's): what a route does not use costs its start-up nothing."""
    script = textwrap.dedent(
        """
        import json, sys
        from memrules.memory import RetrievalStoreConfig
        RetrievalStoreConfig(store={"backend": sys.argv[1]})
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("memrules.seams."))))
        """
    )
    for backend, others in (
        ("milvus", {"memrules.seams.qdrant", "memrules.seams.valkey"}),
        ("qdrant", {"memrules.seams.milvus", "memrules.seams.valkey"}),
    ):
        done = subprocess.run(
            [sys.executable, "-c", script, backend],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        loaded = set(json.loads(done.stdout.splitlines()[-1]))
        assert f"memrules.seams.{backend}" in loaded
        assert not loaded & others, sorted(loaded & others)


@needs_local
def test_the_search_index_is_built_at_start_up_before_the_first_request(
    tmp_path: Path, local_embedder: Embedder
) -> None:
    from memrules.memory.binding import open_store

    settings = store_settings("qdrant-disk", tmp_path)
    first = open_store(settings, embedder=local_embedder)
    first.add(
        [
            memory_record(
                "Q: Where does my sister live?\nA: In Porto.",
                user="ana",
                tenant="acme",
                conversation_id="c1",
                now=1.0,
            )
        ]
    )
    first.close()
    store = open_store(settings, embedder=local_embedder)  # a new process's view: no index
    assert store._backend._index is None  # type: ignore[attr-defined]
    config = MemoryConfig(memory=RouteRetrieval(retrieval_limit=3), memory_store=settings)
    with MemoryPlugin(config, memory_store=store):
        deadline = time.monotonic() + 60
        while store._backend._index is None and time.monotonic() < deadline:  # type: ignore[attr-defined]
            time.sleep(0.05)
        assert store._backend._index is not None, "the index was not built at start-up"  # type: ignore[attr-defined]
        assert len(store._backend._index) == 1  # type: ignore[attr-defined]
    store.close()


needs_qdrant = pytest.mark.skipif(
    not HAS_QDRANT, reason="needs the qdrant extra: pip install -e '.[qdrant]'"
)


class _Slow:
    """An embedder with a model to load (as the local one has): ``load``
    says it began, then waits for ``release``; with ``failure`` set, every
    load raises it (as a model that cannot load does). ``embed`` loads
    first, as the local embedder does."""

    dimension = 8
    identity: dict[str, Any] = {"name": "slow-start-embedder", "dimension": 8}  # noqa: RUF012

    def __init__(self, failure: Exception | None = None) -> None:
        self.failure = failure
        self.began = threading.Event()
        self.release = threading.Event()
        self.loads = 0
        self.loaded = False

    def load(self) -> None:
        self.loads += 1
        self.began.set()
        assert self.release.wait(30)
        if self.failure is not None:
            raise self.failure
        self.loaded = True

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.load()
        return [[(len(t) % 7 + 1) / 8.0] * 8 for t in texts]


def _plugin(tmp_path: Path, embedder: _Slow) -> tuple[MemoryPlugin, MessageStore]:
    from memrules.memory.binding import open_store

    settings = store_settings("qdrant", tmp_path)
    store = open_store(settings, embedder=embedder)
    config = MemoryConfig(memory=RouteRetrieval(retrieval_limit=3), memory_store=settings)
    return MemoryPlugin(config, memory_store=store), store


@needs_qdrant
def test_the_model_begins_loading_before_the_pipeline_loads_its_encoder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model's load begins as the plugin is built, before its pipeline
    (which loads the encoder) and its state store: the two load together,
    and the first request waits only for what is left."""
    embedder = _Slow()
    embedder.release.set()
    seen: list[bool] = []
    built = Pipeline.from_config.__func__  # type: ignore[attr-defined]

    def from_config(cls: type[Pipeline], *args: Any, **kwargs: Any) -> Pipeline:
        seen.append(embedder.began.wait(10))
        return built(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(Pipeline, "from_config", classmethod(from_config))
    plugin, store = _plugin(tmp_path, embedder)
    plugin.close()
    store.close()
    assert seen == [True], "the model had not begun loading when the pipeline was built"


@needs_qdrant
def test_close_waits_for_the_model_still_loading(tmp_path: Path) -> None:
    embedder = _Slow()
    plugin, store = _plugin(tmp_path, embedder)
    assert embedder.began.wait(10)
    closed = threading.Event()
    closing = threading.Thread(target=lambda: (plugin.close(), closed.set()))
    closing.start()
    assert not closed.wait(0.3), "close returned while the model was still loading"
    embedder.release.set()
    closing.join(30)
    assert closed.is_set()
    assert embedder.loaded
    store.close()


@needs_qdrant
def test_a_model_that_cannot_load_says_so_at_its_first_use(tmp_path: Path) -> None:
    """The load at start-up fails; the first request loads again and its
    retrieval is the documented ``error``, with the embedder's message."""
    embedder = _Slow(failure=EmbedderError("cannot read the local model: gone"))
    embedder.release.set()
    plugin, store = _plugin(tmp_path, embedder)
    with plugin:
        request = Request(
            messages=(message("user", "Where does my sister live?"),), user="ana", tenant="acme"
        )
        result = plugin.handle(request, now=1.0)
    store.close()
    assert result.memory is not None
    retrieval = result.memory.retrieval
    assert retrieval.status == "error"
    assert retrieval.error is not None
    assert "EmbedderError" in retrieval.error
    assert "cannot read the local model: gone" in retrieval.error
    assert embedder.loads >= 2  # at start-up, and again at the first use
