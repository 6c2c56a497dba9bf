"""Traces of routes with retrieval memory, against the real stores (a Milvus
Lite file, Qdrant's local mode on disk) and the real local embedder: what a
line holds, a replay with the store deleted and no embedder to load, the
differences an edited memory or reply makes, the command line, and no key
in the trace."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from memrules import MemoryConfig, MemoryPlugin, ReplayMismatch, load_config, replay_trace
from memrules._cli.main import main
from memrules._trace.canonical import canonical_config, rebuild_config
from memrules._trace.record import dump_line
from memrules.memory import Retrieval, RetrievalStoreConfig, RouteRetrieval
from memrules.memory.binding import open_store
from memrules.memory.gate import Recalled
from memrules.memory.shared import SharedStores
from memrules.seams import Embedder, MessageStore
from tests.support.memory_helpers import DAY, T0, ask
from tests.support.seams import FILE_BACKENDS, needs_memory_extras

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "MEMRULES_TRACE_TEST_KEY"
SECRET = "sk-trace-secret-do-not-record"
MARKER = "memrules memory:"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def edit(path: Path, line: int, change: Any) -> None:
    """Change line ``line`` (0: the header) of a trace, parsed, with ``change(data)``."""
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    data = json.loads(text[line])
    change(data)
    text[line] = dump_line(data).decode("utf-8")
    path.write_text("".join(text), encoding="utf-8")


def settings_for(backend: str, where: Path) -> RetrievalStoreConfig:
    """``stores.memory`` on disk in ``where``, its key named by a variable."""
    if backend == "milvus":
        store: dict[str, Any] = {"backend": "milvus", "uri": str(where / "memories.db")}
    else:
        store = {"backend": "qdrant", "path": str(where / "memories")}
    return RetrievalStoreConfig(store={**store, "collection": "memories", "api_key_env": KEY_ENV})


def talk(plugin: MemoryPlugin) -> None:
    """Two users of one tenant: turns kept (one from an OpenAI completion),
    then questions that find them, miss, are small talk or name nobody."""
    sister = ask("My sister Priya moved to Porto last spring.")
    plugin.on_response(sister, "Porto is lovely. Noted!")
    plugin.on_response(
        ask("We deploy with Terraform 1.7.", user="bo"), "Terraform 1.7 it is.", now=T0 + DAY
    )
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "Our standup is at 9:30 on Mondays."}],
        "metadata": {"conversation_id": "c9", "user_id": "ana", "tenant_id": "acme"},
    }
    completion = {"choices": [{"message": {"role": "assistant", "content": "Noted: 9:30."}}]}
    plugin.on_openai_response(body, completion)
    plugin.handle(ask("Where does my sister live now?", conversation_id="c2"))
    plugin.handle(
        ask("Where does my sister live now?", user="bo", conversation_id="c3"), now=T0 + 5 * DAY
    )
    plugin.on_openai_request(
        {
            "messages": [{"role": "user", "content": "How do we deploy to production?"}],
            "metadata": {"conversation_id": "c4", "user_id": "bo", "tenant_id": "acme"},
        }
    )
    plugin.handle(ask("thanks!", conversation_id="c2"))
    plugin.handle(ask("Where does my sister live now?", user=None, tenant=None))


@attrs.define
class Recorded:
    trace: Path
    where: Path  # the store's file or directory lives here, and only here


@pytest.fixture(params=FILE_BACKENDS)
def recorded(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    local_embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> Recorded:
    """A traced route with memory, talked to, its store closed."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    where = tmp_path / "store"
    where.mkdir()
    settings = settings_for(request.param, where)
    store: MessageStore = open_store(settings, embedder=local_embedder)
    times = iter(T0 + i * DAY for i in range(100))
    config = MemoryConfig(
        memory=RouteRetrieval(auto_store=True), memory_store=settings, max_messages=50
    )
    trace = tmp_path / "memory.jsonl"
    plugin = MemoryPlugin(config, memory_store=store, trace=trace, clock=lambda: next(times))
    try:
        talk(plugin)
    finally:
        plugin.close()
        store.close()
    return Recorded(trace=trace, where=where)


def no_store_no_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make opening a memory store or loading the local model fail loudly."""

    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError("a replay opened a store or loaded a model")

    monkeypatch.setattr(SharedStores, "acquire", refuse)
    monkeypatch.setattr("memrules.memory.shared.open_store", refuse)
    monkeypatch.setattr("memrules.seams.embedders._load_model", refuse)
    monkeypatch.setattr("memrules.memory.binding.open_store", refuse)


# --- what the trace holds -------------------------------------------------------------


def test_a_memory_trace_says_whose_requests_what_memory_answered_and_what_was_kept(
    recorded: Recorded,
) -> None:
    header, *found = lines(recorded.trace)
    assert [(d["kind"], d.get("user")) for d in found] == [
        ("response", "ana"),
        ("response", "bo"),
        ("response", "ana"),
        ("request", "ana"),
        ("request", "bo"),
        ("request", "bo"),
        ("request", "ana"),
        ("request", None),
    ]
    config = header["pipelines"][0]["config"]
    assert config["memory"] == {
        "enabled": True, "retrieval_limit": 5, "auto_store": True, "threshold": None,
    }  # fmt: skip
    assert config["stores"]["memory"]["api_key_env"] == KEY_ENV
    assert config["stores"]["memory"]["reflection"]["recency_decay_days"] == 30.0
    kept, given, openai, hit, miss, deploy, small_talk, nobody = found
    # A kept turn: the clock read, the store's write (the embedder inside it), the outcome.
    assert [(c["seam"], c["operation"], c.get("depth", 0)) for c in kept["calls"]] == [
        ("clock", "now", 0), ("store", "add", 0), ("embedder", "embed", 1),
    ]  # fmt: skip
    assert kept["calls"][0]["response"] == {"now": T0}
    assert kept["reply"] == "Porto is lovely. Noted!"
    assert kept["outcome"]["status"] == "stored"
    assert given["now"] == T0 + DAY
    assert [c["seam"] for c in given["calls"]] == ["store", "embedder"]  # no clock: given
    assert openai["reply"]["parts"][0]["text"] == "Noted: 9:30."
    assert openai["conversation_id"] == "c9"
    # A request: memory asked for ana of acme, the search nested in it, then the clock.
    assert [(c["seam"], c["operation"], c.get("depth", 0)) for c in hit["calls"]] == [
        ("memory", "retrieve", 0), ("store", "search", 1), ("embedder", "embed", 2),
        ("clock", "now", 0), ("state_store", "load", 0), ("state_store", "update", 0),
    ]  # fmt: skip
    retrieve = hit["calls"][0]
    assert retrieve["request"] == {
        "user": "ana", "tenant": "acme", "question": "Where does my sister live now?",
    }  # fmt: skip
    assert retrieve["response"]["status"] == "hit"
    (memory,) = retrieve["response"]["memories"]
    assert memory["text"].startswith("Q: My sister Priya moved to Porto")
    assert hit["memory"]["now"] == T0 + 2 * DAY  # the third reading: T0, T0 + DAY, this
    assert hit["memory"]["gate"]["injected"] == [memory["id"]]
    assert hit["output"][1]["parts"][0]["text"].startswith(MARKER)
    assert (hit["user"], hit["tenant"]) == ("ana", "acme")
    # bo never said anything about a sister: his request misses, at the time given.
    assert miss["now"] == T0 + 5 * DAY
    assert miss["calls"][0]["response"]["status"] == "miss"
    assert "clock" not in [c["seam"] for c in miss["calls"]]
    assert all(
        h["user"] == "bo" for c in miss["calls"] if c["seam"] == "store" for h in
        c["response"]["hits"]
    )  # fmt: skip
    assert "Terraform" in deploy["output"][0]["parts"][0]["text"]
    assert small_talk["calls"][0]["response"]["skipped"] == "small_talk"
    assert [c["seam"] for c in small_talk["calls"]][:2] == ["memory", "clock"]
    assert "user" not in nobody
    assert "tenant" not in nobody
    assert nobody["calls"][0]["response"]["skipped"] == "no_scope"


def test_the_trace_holds_no_key(recorded: Recorded) -> None:
    data = recorded.trace.read_bytes()
    assert SECRET.encode() not in data
    assert KEY_ENV.encode() in data


# --- replaying it -----------------------------------------------------------------------


def test_a_memory_trace_replays_identically_with_no_store_and_no_embedder(
    recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.rmtree(recorded.where)
    no_store_no_embedder(monkeypatch)
    summary = replay_trace(recorded.trace)
    assert (summary.identical, summary.requests) == (True, 8)
    copy = recorded.trace.with_name("copy.jsonl")
    shutil.copy(recorded.trace, copy)
    assert replay_trace(copy, update=True).updated
    assert copy.read_bytes() == recorded.trace.read_bytes()
    assert not recorded.where.exists()


def test_an_edited_memory_is_said_by_request_and_output_message(
    recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.rmtree(recorded.where)
    no_store_no_embedder(monkeypatch)

    def move_her(data: dict[str, Any]) -> None:
        (memory,) = data["calls"][0]["response"]["memories"]
        memory["text"] = memory["text"].replace("Porto", "Lisbon")

    edit(recorded.trace, 4, move_her)  # the first request, ana's, which found her sister
    with pytest.raises(ReplayMismatch) as caught:
        replay_trace(recorded.trace)
    first = caught.value.differences[0]
    assert first.startswith(
        "request 3 (request, conversation c2): output message 1: parts[0].text: recorded "
    )
    assert "Porto" in first
    assert "Lisbon" in first
    assert "1 of 8 requests differ" in str(caught.value)


def test_an_edited_reply_means_the_recorded_write_does_not_apply(
    recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_store_no_embedder(monkeypatch)

    def reword(data: dict[str, Any]) -> None:
        data["reply"] = "Porto is lovely. Noted, twice!"

    edit(recorded.trace, 1, reword)
    with pytest.raises(ReplayMismatch) as caught:
        replay_trace(recorded.trace)
    first = caught.value.differences[0]
    assert first.startswith(
        "request 0 (response, conversation c1): calls[1]: the run's store.add request is not "
        "the recorded one"
    )
    assert "Noted, twice!" in first


def test_memrules_replay_on_the_command_line(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.rmtree(recorded.where)
    done = subprocess.run(
        [sys.executable, "-m", "memrules", "replay", str(recorded.trace)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "1"},
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"memrules replay: {recorded.trace}: 8 requests replayed, identical\n"
    assert not recorded.where.exists()  # nothing opened it again

    def move_her(data: dict[str, Any]) -> None:
        (memory,) = data["calls"][0]["response"]["memories"]
        memory["text"] = memory["text"].replace("Porto", "Lisbon")

    edit(recorded.trace, 4, move_her)
    capsys.readouterr()
    status = main(["replay", str(recorded.trace)])
    out = capsys.readouterr().out
    assert status == 1
    assert out.startswith(f"memrules replay: {recorded.trace}: differs from its replay\n")
    assert "request 3 (request, conversation c2): output message 1: parts[0].text:" in out


# --- the parts, offline -------------------------------------------------------------------


def test_a_retrieval_reads_back_as_it_was_written() -> None:
    retrieval = Retrieval(
        status="hit",
        question="where?",
        user="ana",
        tenant="acme",
        backend="qdrant",
        threshold=0.3,
        memories=(
            Recalled(id="a", text="Q: x\nA: y", score=0.51, stored_at=T0, conversation_id="c1"),
            Recalled(id="b", text="Q: z\nA: w", score=0.4),
        ),
    )
    assert Retrieval.from_dict(json.loads(json.dumps(retrieval.to_dict()))) == retrieval
    skipped = Retrieval(status="skipped", reason="no scope", skipped="no_scope")
    assert Retrieval.from_dict(skipped.to_dict()) == skipped


ROUTES = f"""
stores:
  memory:
    backend: qdrant
    path: ":memory:"
    embedding:
      type: openai
      base_url: http://ana:hunter2@127.0.0.1:9/v1
      model: e
      api_key_env: {KEY_ENV}
      dimensions: 8
    threshold: 0.4
    reflection: {{recency_decay_days: null, block_patterns: ['wire the money']}}
routes:
  support:
    memory: {{retrieval_limit: 3, auto_store: true}}
  code: {{}}
"""


@needs_memory_extras
def test_the_canonical_config_of_a_memory_route_rebuilds_and_holds_no_secret() -> None:
    config = load_config(ROUTES)
    support = canonical_config(config.route_config("support"))
    text = json.dumps(support)
    assert "hunter2" not in text
    assert support["stores"]["memory"]["embedding"]["api_key_env"] == KEY_ENV
    assert support["stores"]["memory"]["reflection"]["block_patterns"] == ["wire the money"]
    assert canonical_config(rebuild_config(support)) == support
    rebuilt = rebuild_config(support)
    assert rebuilt.memory is not None
    assert rebuilt.memory.retrieval_limit == 3
    assert rebuilt.memory_store is not None
    assert rebuilt.memory_store.threshold == 0.4
    assert rebuilt.memory_store.reflection.recency_decay_days is None
    # A route without memory carries no store: its trace is as before.
    assert "stores" not in canonical_config(config.route_config("code"))
    assert "memory" not in canonical_config(config.route_config("code"))
