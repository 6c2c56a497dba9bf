"""A trace recorded against live seams replays with all of them gone.

A loopback OpenAI-compatible server (chat and ``/v1/embeddings``) is the
summarizer and the embedder, Qdrant on disk (or Milvus Lite) the store. The
run is recorded; then the server stops, the store is closed and deleted, the
API key leaves the environment, and the trace is replayed in other
processes: byte for byte, under any ``PYTHONHASHSEED``. One changed byte in
a recorded answer fails the replay, and the diff shows it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memrules import ReplayMismatch, from_openai, load_pipeline, record_trace, replay_trace
from memrules._core.messages import Conversation
from memrules._trace.record import dump_line
from tests.support.chat_server import ChatServer
from tests.support.processes import memrules as run_memrules
from tests.support.seams import FILE_BACKENDS

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-live-0123456789-do-not-record"

TURNS = [
    (
        "My sister Priya moved to Porto last spring.",
        "Porto is lovely. Noted."
        + " It is a city in the north of Portugal, on the Douro river, known for its port"
        " wine cellars, its bridges over the river and its old town on the hill." * 3,
    ),
    ("The deploy key lives in vault/prod/deploy.key and rotates every 90 days.", "Noted: 90 days."),
    ("We decided to use Terraform 1.7 for the rollout.", "Terraform 1.7 it is."),
    ("Remind me to call the dentist on Friday.", "I will remind you on Friday."),
]


def conversation() -> Conversation:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a helpful assistant."}]
    for user, assistant in TURNS:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    messages.append({"role": "user", "content": "Where does my sister live now?"})
    return from_openai(messages)


def config(url: str, backend: str, where: Path) -> str:
    location = f"uri: {where / 'store.db'}" if backend == "milvus" else f"path: {where / 'store'}"
    return f"""
context_window_tokens: 1000
max_tokens: 60
survivors: {{task: false}}  # the first turn (Porto) is what the summary and the store get
store:
  backend: {"milvus" if backend == "milvus" else "qdrant"}
  {location}
  collection: live
embedder: {{type: openai, base_url: "{url}", model: loopback-embed, api_key_env: LIVE_KEY,
            dimensions: 16}}
summarizer: {{type: openai, base_url: "{url}", model: loopback-model, api_key_env: LIVE_KEY}}
strategies:
  - type: summarize
    turns: 1
  - type: offload
    turns: 1
  - type: trim_to_budget
"""


def summary(messages: list[dict[str, Any]]) -> str:
    """The loopback model's summary: the user's lines it was given, numbered."""
    asked = messages[-1]["content"].split("\n")
    said = [line.split(": ", 1)[-1] for line in asked if "] user: " in line]
    return "Summary: " + " ".join(f"({i}) {s}" for i, s in enumerate(said, start=1))


def memrules(*args: str, seed: str = "0") -> subprocess.CompletedProcess[str]:
    return run_memrules(*args, seed=seed, unset=("LIVE_KEY",))


@pytest.fixture(scope="module", params=FILE_BACKENDS)
def live_trace(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace of a run against the live seams (once per backend), all of
    them gone once it is written."""
    backend = request.param
    where = tmp_path_factory.mktemp(f"live-{backend}")
    trace = where / "live.jsonl"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LIVE_KEY", SECRET)
        with ChatServer(reply=summary) as server:
            pipeline = load_pipeline(config(server.url, backend, where))
            with record_trace(trace, pipeline, name="live") as traced:
                traced.compress(conversation(), conversation_id="c1", user="ana")
                traced.apply(conversation(), conversation_id="c2", user="ana")
                traced.remember(conversation(), conversation_id="c3", user="ana")
                hits = traced.recall("Where does my sister live now?", k=3, user="ana")
            assert hits
            sent = [r.headers.get("Authorization") for r in server.requests]
            assert sent
            assert set(sent) == {f"Bearer {SECRET}"}  # the key was used...
            store = pipeline.seams.store
            assert store is not None
            store.close()  # type: ignore[attr-defined]
    assert "LIVE_KEY" not in os.environ
    for name in ("store", "store.db"):
        shutil.rmtree(where / name, ignore_errors=True)  # Milvus Lite's file is a directory
    assert sorted(p.name for p in where.iterdir()) == ["live.jsonl"]
    return trace


@pytest.fixture
def recorded(live_trace: Path, tmp_path: Path) -> Path:
    """This test's copy of the live trace (tests change it)."""
    copy = tmp_path / "live.jsonl"
    shutil.copy(live_trace, copy)
    return copy


def test_the_trace_holds_every_call_and_no_key(recorded: Path) -> None:
    data = recorded.read_text(encoding="utf-8")
    assert SECRET not in data  # ...and is nowhere in the trace
    lines = [json.loads(line) for line in data.splitlines()]
    calls = [
        (c["seam"], c["operation"], c.get("depth", 0)) for line in lines[1:] for c in line["calls"]
    ]
    assert ("summarizer", "summarize", 0) in calls
    assert ("store", "add", 0) in calls
    assert ("embedder", "embed", 1) in calls  # inside the store's write and search
    assert ("store", "search", 0) in calls
    assert [line["kind"] for line in lines[1:]] == ["compress", "apply", "remember", "recall"]
    assert lines[4]["hits"][0]["message"]["parts"]


def test_with_every_seam_gone_the_replay_is_byte_identical_under_any_hash_seed(
    recorded: Path, tmp_path: Path
) -> None:
    done = memrules("replay", str(recorded))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.endswith("4 requests replayed, identical\n")
    for seed in ("0", "1"):
        copy = tmp_path / f"seed{seed}.jsonl"
        shutil.copy(recorded, copy)
        done = memrules("replay", "--update", str(copy), seed=seed)
        assert done.returncode == 0, done.stdout + done.stderr
        assert copy.read_bytes() == recorded.read_bytes()


def test_one_changed_byte_of_an_answer_fails_the_replay_and_the_diff_shows_it(
    recorded: Path,
) -> None:
    lines = recorded.read_text(encoding="utf-8").splitlines(keepends=True)
    compress = json.loads(lines[1])
    (summary_call,) = [c for c in compress["calls"] if c["seam"] == "summarizer"]
    answer = summary_call["response"]["text"]
    at = answer.index("Porto") + 2
    changed = answer[:at] + "X" + answer[at + 1 :]  # Porto -> PoXto, one byte
    summary_call["response"]["text"] = changed
    edited = dump_line(compress)
    assert len(edited) == len(lines[1].encode())
    assert sum(a != b for a, b in zip(edited, lines[1].encode(), strict=True)) == 1
    lines[1] = edited.decode("utf-8")
    recorded.write_text("".join(lines), encoding="utf-8")
    done = memrules("replay", str(recorded))
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    shown = done.stdout.splitlines()
    assert shown[0] == f"memrules replay: {recorded}: differs from its replay"
    # The summary, with the changed byte, was what offload would store next:
    # the first difference is that store write, at the changed text.
    assert shown[1].startswith(
        "request 0 (compress, conversation c1): calls[1]: the run's store.add"
    )
    assert 'calls[1].request.records[0].text: recorded …"sister Priya moved to Porto' in shown[1]
    assert 'replayed …"sister Priya moved to PoXto' in shown[1]
    assert shown[2].startswith("request 0 (compress, conversation c1): output message 1: ")


def test_a_changed_hit_points_at_the_recall(recorded: Path) -> None:
    lines = recorded.read_text(encoding="utf-8").splitlines(keepends=True)
    recall = json.loads(lines[4])
    (search,) = recall["calls"][:1]
    assert search["seam"] == "store"
    original = search["response"]["hits"][0]["text"]
    lines[4] = lines[4].replace(json.dumps(original)[1:-1], json.dumps(original + "!")[1:-1], 1)
    recorded.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ReplayMismatch) as caught:
        replay_trace(recorded)
    (first, *_) = caught.value.differences
    assert first.startswith("request 3 (recall): hit 0: text: recorded ")
