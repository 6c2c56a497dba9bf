"""Stores across processes and under a running one, as applications run
them: one process writes and exits, the next reads, lists, offloads and
forgets (both file backends and a Valkey server, the pipeline store and the memory route, the
local embedder and an OpenAI-compatible one on loopback); and files removed
under a running plugin never let an offload drop messages."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memrules import MemoryConfig, MemoryPlugin, Request, load_pipeline
from memrules.seams import Embedder, milvus_store, qdrant_store
from memrules.strategies import offload
from tests.support.chat_server import ChatServer
from tests.support.processes import module_json
from tests.support.seams import FILE_BACKENDS, KEPT_BACKENDS, needs_local
from tests.support.store_process import SAID, SCHEDULER, history
from tests.support.strategies import COUNTER
from tests.support.valkey_search import key_prefix, shared_server

ROOT = Path(__file__).resolve().parents[2]


def _where(backend: str, place: Path) -> str:
    if backend == "milvus":
        return f"{{backend: milvus, uri: '{place}.db'"
    if backend == "valkey":
        url = shared_server().url
        return f"{{backend: valkey, url: '{url}', key_prefix: '{key_prefix(place)}'"
    return f"{{backend: qdrant, path: '{place}'"


def _config(backend: str, where: Path, embedder: str) -> Path:
    """The YAML of one application: a pipeline store that offloads, and
    retrieval memory with auto-store on its default route."""
    pipeline_embedder = "local" if embedder == "local" else f"{{type: openai, {embedder}}}"
    memory_embedder = "local" if embedder == "local" else f"{{type: openai, {embedder}}}"
    text = (
        "max_messages: 12\n"
        f"store: {_where(backend, where / 'offloaded')}, collection: offloaded}}\n"
        f"embedder: {pipeline_embedder}\n"
        "strategies:\n  - {type: offload, turns: 2, keep_exchanges: 1}\n"
        "stores:\n"
        f"  memory: {_where(backend, where / 'memories')}, collection: memories, "
        f"embedding: {memory_embedder}, threshold: 0.05}}\n"
        "memory: {auto_store: true}\n"
    )
    path = where / "app.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _run(action: str, config: Path) -> dict[str, Any]:
    out: dict[str, Any] = module_json("tests.support.store_process", action, str(config))
    return out


@pytest.fixture(params=["local", "remote"])
def embedder(request: pytest.FixtureRequest) -> Iterator[str]:
    """How the config names its embedder: ``local``, or the keys of an
    OpenAI-compatible endpoint on loopback (served while the test runs)."""
    if request.param == "local":
        from memrules.seams.embedders import local_embedder_missing

        if local_embedder_missing():
            pytest.skip("needs the local-embed extra")
        yield "local"
        return
    with ChatServer() as server:
        yield f"base_url: '{server.url}', model: loopback-model, dimensions: 16"


# Every backend and every way of naming the embedder by default, each pair
# once (milvus with the local model; Qdrant on disk and Valkey with the
# endpoint): the three other pairings run with ``-m slow``.
DEFAULT_PAIRS = {("milvus", "local"), ("qdrant-disk", "remote"), ("valkey", "remote")}
PAIRS = [
    pytest.param(
        *backend.values,  # type: ignore[attr-defined]
        how,
        marks=(
            *backend.marks,  # type: ignore[attr-defined]
            *(() if (backend.values[0], how) in DEFAULT_PAIRS else (pytest.mark.slow,)),  # type: ignore[attr-defined]
        ),
        id=f"{how}-{backend.values[0]}",  # type: ignore[attr-defined]
    )
    for how in ("local", "remote")
    for backend in KEPT_BACKENDS
]


@pytest.mark.parametrize(("backend", "embedder"), PAIRS, indirect=["embedder"])
def test_a_second_process_reads_lists_offloads_and_forgets_what_the_first_stored(
    backend: str, embedder: str, tmp_path: Path
) -> None:
    """One process stores, the next reads, lists, offloads and forgets. By
    default each backend runs once and each embedder kind at least once
    (the backend's files or server and the embedder's config are
    independent parts of the config); ``-m slow`` adds the other three
    pairings."""
    config = _config(backend, tmp_path, embedder)
    wrote = _run("write", config)
    (call,) = wrote["calls"]
    assert call["error"] is None
    written = len(call["response"]["added"])
    assert written > 0
    assert wrote["sent"] < len(history("c1"))
    assert wrote["stored"]["status"] == "stored"

    read = _run("read", config)
    assert any(SCHEDULER in text for text in read["recalled"]), read["recalled"]
    assert read["listed"] == written
    (again,) = read["again"]["calls"]
    assert again["error"] is None
    assert again["response"]["added"]
    assert read["listed_after_offload"] == written + len(again["response"]["added"])
    assert (read["retrieval"], read["retrieval_error"]) == ("hit", None)
    assert read["memories"] == [f"Q: {SAID}\nA: Porto is lovely; noted."]
    assert read["forgotten_memories"] == 1
    assert read["memories_after"] == 0
    assert read["forgotten_offloaded"] == read["listed_after_offload"]
    assert read["listed_after_forget"] == 0


# --- files removed under a running process ---------------------------------------------


def _store(backend: str, place: Path, embedder: Embedder) -> Any:
    if backend == "milvus":
        return milvus_store(uri=f"{place}.db", collection="offloaded", embedder=embedder)
    return qdrant_store(path=str(place), collection="offloaded", embedder=embedder)


def _files(backend: str, place: Path) -> Path:
    return Path(f"{place}.db") if backend == "milvus" else place


def _plugin(store: Any) -> MemoryPlugin:
    config = MemoryConfig(max_messages=12, strategies=[offload(turns=2, keep_exchanges=1)])
    return MemoryPlugin(config, store=store, counter=COUNTER)


def _ask(conversation_id: str) -> Request:
    return Request(messages=history(conversation_id), conversation_id=conversation_id)


def _store_calls(step: Any) -> list[Any]:
    return [c for a in step.report.actions for c in a.seam_calls if c.seam == "store"]


@needs_local
@pytest.mark.parametrize("backend", FILE_BACKENDS)
def test_an_offload_never_drops_messages_once_the_files_are_removed(
    backend: str, tmp_path: Path, local_embedder: Embedder
) -> None:
    place = tmp_path / "offloaded"
    with _store(backend, place, local_embedder) as store:
        plugin = _plugin(store)
        first = plugin.handle(_ask("c1"))
        assert len(first.request.messages) < len(history("c1"))
        assert _store_calls(first)[0].error is None
        shutil.rmtree(_files(backend, place))
        # New records, and the same ones again (which the store still finds in memory).
        for conversation_id in ("c2", "c1"):
            step = _plugin(store).handle(_ask(conversation_id))
            assert step.request.messages == history(conversation_id), conversation_id
            (call,) = _store_calls(step)
            assert call.error is not None
            assert "offloaded" in call.error
            assert step.report.last_error


@needs_local
def test_a_store_in_memory_says_its_offloads_are_not_durable(local_embedder: Embedder) -> None:
    store = qdrant_store(path=":memory:", collection="offloaded", embedder=local_embedder)
    with store:
        step = _plugin(store).handle(_ask("c1"))
    (call,) = _store_calls(step)
    assert call.response["durable"] is False
    (action,) = [a for a in step.report.actions if a.seam_calls]
    assert "in memory only" in (action.note or "")


@needs_local
@pytest.mark.parametrize("backend", FILE_BACKENDS)
def test_a_store_on_disk_writes_durably_without_saying_more(
    backend: str, tmp_path: Path, local_embedder: Embedder
) -> None:
    with _store(backend, tmp_path / "offloaded", local_embedder) as store:
        step = _plugin(store).handle(_ask("c1"))
    (call,) = _store_calls(step)
    assert set(call.response) == {"added", "existing"}
    assert call.error is None


# --- where a relative path leads --------------------------------------------------------


@needs_local
@pytest.mark.parametrize("backend", ["milvus", "qdrant"])
def test_a_relative_path_out_of_the_working_directory_is_resolved_and_reported(
    backend: str,
    tmp_path: Path,
    local_embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    here = tmp_path / "app"
    here.mkdir()
    monkeypatch.chdir(here)
    real = tmp_path / ("outside.db" if backend == "milvus" else "outside")
    relative = "../" + real.name
    with caplog.at_level("WARNING", logger="memrules.seams"):
        store = (
            milvus_store(uri=relative, embedder=local_embedder)
            if backend == "milvus"
            else qdrant_store(path=relative, embedder=local_embedder)
        )
    assert str(real) in repr(store)
    assert relative not in repr(store)
    (warning,) = [r for r in caplog.records if r.name == "memrules.seams"]
    assert str(real) in warning.getMessage()
    assert "outside the working directory" in warning.getMessage()
    # Moving on does not move the store: it stays where it was resolved.
    monkeypatch.chdir(tmp_path)
    with store:
        store.check()
    assert real.exists()
    assert not (tmp_path.parent / real.name).exists()


def test_a_path_inside_the_working_directory_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from memrules.seams._durable import local_path

    monkeypatch.chdir(tmp_path)
    with caplog.at_level("WARNING", logger="memrules.seams"):
        assert local_path("data/./x.db", "uri") == str(tmp_path / "data" / "x.db")
        assert local_path(str(tmp_path.parent / "y.db"), "uri") == str(tmp_path.parent / "y.db")
    assert not caplog.records


def test_the_config_names_the_real_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pymilvus")
    monkeypatch.chdir(tmp_path)
    pipeline = load_pipeline(
        "store: {backend: milvus, uri: ../elsewhere.db}\n"
        "embedder: {type: openai, base_url: 'http://127.0.0.1:9/v1', model: m, dimensions: 4}\n"
    )
    assert f"uri='{tmp_path.parent / 'elsewhere.db'}'" in repr(pipeline.seams.store)
