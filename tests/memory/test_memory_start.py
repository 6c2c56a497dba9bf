"""A memory route's start-up: the embedding model loads while the store
opens, before the first request asks for it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from memrules import MemoryConfig, MemoryPlugin, Request
from memrules._core.messages import message
from memrules.memory import RouteRetrieval
from memrules.memory.autostore import memory_record
from memrules.seams import Embedder, local_embedder
from tests.support.memory_helpers import store_settings
from tests.support.seams import needs_local


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
