"""Traces and their replay, offline: the header, the canonical config, what
a line holds, replays that match and replays that do not, the command line,
and bytes that do not move with PYTHONHASHSEED."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import attrs
import pytest

import memrules
from memrules import (
    MemoryConfig,
    MemoryPlugin,
    ReplayMismatch,
    Request,
    TraceError,
    from_openai,
    load_config,
    load_pipeline,
    record_trace,
    replay_trace,
)
from memrules._cli.main import main
from memrules._core.messages import Conversation, message
from memrules._engine.contract import StrategyContext
from memrules._trace.canonical import canonical_config, config_sha256, rebuild_config
from memrules._trace.record import dump_line, read_trace
from memrules.strategies import sliding_window
from tests.support.processes import memrules as run_memrules
from tests.support.seams import config_params, needs_memory_extras

ROOT = Path(__file__).resolve().parents[2]
HISTORY = json.loads((ROOT / "examples" / "agent_history.json").read_text(encoding="utf-8"))
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

SEAMED = """
encoder_name: cl100k_base
context_window_tokens: 400
max_tokens: 150
summarizer: {type: extractive, max_chars: 300}
strategies:
  - type: summarize
    turns: 1
  - type: clear_tool_results
    keep_pairs: 1
"""

# Messages whose metadata and part extras hold several keys (kept for a
# lossless round trip): a persistent map writes them in hash order unless
# the encoder sorts them.
ODD = [
    {"role": "system", "content": "You are terse.", "x-trace": "a", "refusal": None},
    {"role": "user", "content": "The vault is in Lisbon. Reply with: noted", "name": "ana",
     "x-vendor": {"b": 1, "a": 2}},
    {"role": "assistant", "content": None, "audio": None, "tool_calls": [
        {"id": "c1", "type": "function", "x-k": 1, "x-j": 2,
         "function": {"name": "read_file", "arguments": "{\"path\": \"a.py\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "print('hello')\n" * 40},
    {"role": "assistant", "content": "It prints hello, forty times over."},
    {"role": "user", "content": "Where is the vault? Answer in one word."},
]  # fmt: skip


def history() -> Conversation:
    return from_openai(HISTORY["messages"])


def record(path: Path, config: str = SEAMED) -> Path:
    pipeline = load_pipeline(config)
    with record_trace(path, pipeline, name="seamed") as traced:
        traced.apply(history(), conversation_id="c1", user="ana")
        traced.compress(from_openai(ODD))
    return path


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def rewrite(path: Path, old: str, new: str, *, line: int) -> None:
    """Replace ``old`` by ``new`` once, in line ``line`` (0: the header)."""
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert old in text[line], old
    text[line] = text[line].replace(old, new, 1)
    path.write_text("".join(text), encoding="utf-8")


# --- the header and the canonical config ------------------------------------------------


def test_the_header_names_the_library_the_config_its_hash_and_the_vocabulary(
    tmp_path: Path,
) -> None:
    trace = record(tmp_path / "t.jsonl")
    header = lines(trace)[0]
    assert header["format"] == "memrules.trace"
    assert header["version"] == 2
    assert header["memrules"] == memrules.__version__
    (entry,) = header["pipelines"]
    canonical = canonical_config(load_config(SEAMED))
    assert entry["config"] == canonical
    sorted_json = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    assert entry["config_sha256"] == hashlib.sha256(sorted_json.encode()).hexdigest()
    assert entry["encoder"] == "cl100k_base"
    assert entry["vocabulary_sha256"] == CL100K_SHA256  # tiktoken's published hash
    assert entry["seams"]["summarizer"] == {
        "repr": "extractive_summarizer(max_chars=300, max_sentence_chars=300)",
        "json_requests": True,
    }
    assert entry["seams"]["store"] is None


@pytest.mark.parametrize(
    "path",
    config_params(
        sorted((ROOT / "configs").glob("*.yaml"))
        + sorted((ROOT / "benchmarks/eval/configs").glob("*.yaml"))
    ),
)
def test_every_shipped_config_rebuilds_from_its_canonical_form(path: Path) -> None:
    config = load_config(path)
    canonical = canonical_config(config)
    assert json.loads(json.dumps(canonical)) == canonical  # plain JSON
    rebuilt = rebuild_config(canonical)
    assert canonical_config(rebuilt) == canonical
    assert rebuilt.strategies == config.strategies  # the strategies themselves, equal


def test_the_hash_names_the_config_not_its_spelling() -> None:
    a = load_config("max_tokens: 100\nstrategies:\n  - {type: sliding_window, keep_messages: 4}\n")
    b = load_config(
        "strategies:\n  - keep_messages: 4\n    type: sliding_window\nmax_tokens: 100\n"
    )
    c = load_config("max_tokens: 101\nstrategies:\n  - {type: sliding_window, keep_messages: 4}\n")
    hashes = [config_sha256(canonical_config(x)) for x in (a, b, c)]
    assert hashes[0] == hashes[1] != hashes[2]


def test_secrets_stay_out_of_the_canonical_config() -> None:
    config = load_config(
        "state_store: valkey://ops:hunter2@cache:6379/0\n"
        "summarizer: {type: openai, base_url: 'http://u:hunter2@127.0.0.1:9/v1', model: m,"
        " api_key_env: LLM_KEY}\n"
    )
    text = json.dumps(canonical_config(config))
    assert "hunter2" not in text
    assert "LLM_KEY" in text  # the variable's name, never its value


def test_custom_strategies_rebuild_from_their_import_path() -> None:
    text = (
        "strategies:\n"
        '  - type: "tests.support.custom_strategies:keep_last"\n'
        "    count: 2\n"
        '  - type: "tests.support.custom_strategies:drop_everything_old"\n'
    )
    config = load_config(text, allow_imports=["tests"])
    canonical = canonical_config(config)
    assert canonical["strategies"][0] == {
        "type": "tests.support.custom_strategies:keep_last",
        "count": 2,
    }
    rebuilt = rebuild_config(canonical, allow_imports=["tests"])
    assert rebuilt.strategies == config.strategies
    with pytest.raises(TraceError, match="not allowed"):
        rebuild_config(canonical)


def _closure(keep: int) -> Any:
    def run(conversation: Conversation, context: StrategyContext) -> Conversation:
        return conversation if len(conversation) <= keep else conversation[-keep:]

    return run


def test_a_closure_cannot_be_replayed_from_the_trace_alone(tmp_path: Path) -> None:
    pipeline = memrules.Pipeline.from_config(MemoryConfig(strategies=[_closure(3)]))
    with record_trace(tmp_path / "t.jsonl", pipeline) as traced:
        traced.compress(history())
    with pytest.raises(TraceError, match="closure whose parameters a trace cannot hold"):
        replay_trace(tmp_path / "t.jsonl")
    summary = replay_trace(tmp_path / "t.jsonl", pipelines=[pipeline])
    assert summary.identical


# --- replaying -------------------------------------------------------------------------


def test_a_trace_replays_identically_and_update_rewrites_the_same_bytes(tmp_path: Path) -> None:
    trace = record(tmp_path / "t.jsonl")
    recorded = lines(trace)
    assert [line["kind"] for line in recorded[1:]] == ["apply", "compress"]
    apply = recorded[1]
    assert apply["report"]["stop_reason"] == "under_budget"
    assert {c["seam"] for c in apply["calls"]} == {"summarizer"}
    assert apply["calls"][0]["response"]["text"]
    assert (
        apply["report"]["actions"][0]["seam_calls"][0]["response"] == apply["calls"][0]["response"]
    )
    summary = replay_trace(trace)
    assert (summary.requests, summary.differed, summary.identical) == (2, 0, True)
    copy = tmp_path / "copy.jsonl"
    shutil.copy(trace, copy)
    assert replay_trace(copy, update=True).updated
    assert copy.read_bytes() == trace.read_bytes()


def test_a_changed_answer_fails_the_replay_and_the_diff_points_at_it(tmp_path: Path) -> None:
    trace = record(tmp_path / "t.jsonl")
    compress = lines(trace)[2]
    answer = compress["calls"][0]["response"]["text"]
    assert answer in compress["output"][2]["parts"][0]["text"]  # the summary, after the task
    changed = answer.replace("a.py", "b.py")
    assert changed != answer
    rewrite(trace, json.dumps(answer)[:-1], json.dumps(changed)[:-1], line=2)
    with pytest.raises(ReplayMismatch) as caught:
        replay_trace(trace)
    first, second = caught.value.differences[:2]
    assert first.startswith("request 1 (compress): output message 2: parts[0].text: recorded ")
    assert 'recorded …"nt: read_file({\\"path\\": \\"a.py\\"})' in first
    assert 'replayed …"nt: read_file({\\"path\\": \\"b.py\\"})' in first
    assert "request 1 (compress): report: actions[0].seam_calls[0].response.text" in "\n".join(
        caught.value.differences
    )
    assert second.startswith("request 1 (compress): report: ")
    assert "request 0" not in "\n".join(caught.value.differences)  # the other request is fine


def test_a_changed_request_means_the_recorded_answer_does_not_apply(tmp_path: Path) -> None:
    trace = record(tmp_path / "t.jsonl")
    rewrite(trace, '"max_chars":300', '"max_chars":299', line=1)
    with pytest.raises(ReplayMismatch) as caught:
        replay_trace(trace)
    (first, *_) = caught.value.differences
    assert first.startswith("request 0 (apply, conversation c1): calls[0]:")
    assert "request is not the recorded one" in first
    assert "calls[0].request.max_chars: recorded 299, replayed 300" in first


def test_an_edited_config_or_another_vocabulary_is_said_first(tmp_path: Path) -> None:
    trace = record(tmp_path / "t.jsonl")
    copy = tmp_path / "edited.jsonl"
    shutil.copy(trace, copy)
    rewrite(copy, '"max_tokens":150', '"max_tokens":151', line=0)
    with pytest.raises(ReplayMismatch) as caught:
        replay_trace(copy)
    assert "does not hash to the recorded config_sha256" in caught.value.differences[0]
    rewrite(trace, CL100K_SHA256, "0" * 64, line=0)
    with pytest.raises(ReplayMismatch, match="vocabulary_sha256 recorded '0000"):
        replay_trace(trace)


def test_what_is_not_a_trace_is_a_trace_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    other = tmp_path / "other.jsonl"
    other.write_text('{"format": "something"}\n', encoding="utf-8")
    future = tmp_path / "future.jsonl"
    future.write_text('{"format": "memrules.trace", "version": 99, "pipelines": []}\n')
    broken = record(tmp_path / "broken.jsonl")
    with broken.open("a", encoding="utf-8") as file:
        file.write("{not json\n")
    for path, words in (
        (tmp_path / "missing.jsonl", "cannot read the trace"),
        (empty, "empty, not a memrules trace"),
        (other, "not a memrules trace"),
        (future, "format version 99"),
        (broken, "broken.jsonl:4: not JSON"),
    ):
        with pytest.raises(TraceError, match=words):
            replay_trace(path)


def test_lines_stream_so_a_replay_holds_one_line_at_a_time(tmp_path: Path) -> None:
    pipeline = load_pipeline(SEAMED)

    def peak(count: int) -> int:
        path = tmp_path / f"{count}.jsonl"
        with record_trace(path, pipeline) as traced:
            for i in range(count):
                traced.apply(history(), conversation_id=f"c{i % 2}")  # one history each
        replay_trace(path)  # warm: the encoder, the pipeline
        tracemalloc.start()
        try:
            replay_trace(path)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(10), peak(100)
    assert (tmp_path / "100.jsonl").stat().st_size > 9 * (tmp_path / "10.jsonl").stat().st_size
    assert large < small * 1.5, (small, large)


def test_read_trace_gives_lines_one_at_a_time(tmp_path: Path) -> None:
    trace = record(tmp_path / "t.jsonl")
    header, found = read_trace(trace)
    assert header.version == 2
    first = next(found)
    assert (first.line, first.data["kind"]) == (2, "apply")
    assert first.raw == trace.read_bytes().splitlines(keepends=True)[1]


# --- the request hook -------------------------------------------------------------------


PLUGIN_CONFIG = """
context_window_tokens: 256
max_messages: 6
warn_fraction: 0.15
graph_extractor: {type: offline}
graph_context: {max_nodes: 8}
summarizer: extractive
strategies:
  - type: summarize
    turns: 1
  - type: sliding_window
    keep_messages: 4
"""


TURNS = (
    "The vault is in Lisbon. Reply with: noted",
    "The key rotates on friday. Reply with: noted",
    "The owner is ops. Reply with: noted",
    "Where is the vault? Answer in one word.",
)


def _talk(plugin: MemoryPlugin) -> None:
    """Four requests of conversation c1, the client keeping what was sent."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for i, text in enumerate(TURNS):
        history.append({"role": "user", "content": text})
        body = {"model": f"m{i % 2}", "messages": history, "metadata": {"conversation_id": "c1"}}
        history = [
            *plugin.on_openai_request(body)["messages"],
            {"role": "assistant", "content": "noted"},
        ]


def test_a_plugin_trace_replays_state_graph_warning_and_resolver(tmp_path: Path) -> None:
    config = attrs.evolve(
        load_config(PLUGIN_CONFIG),
        context_window_resolver=lambda model: 300 if model == "m1" else None,
    )
    plugin = MemoryPlugin(config, trace=tmp_path / "p.jsonl")
    _talk(plugin)
    plugin.close()
    recorded = lines(tmp_path / "p.jsonl")
    assert len(recorded) == 5
    seams = [[c["seam"] for c in line["calls"]] for line in recorded[1:]]
    assert seams[0] == ["state_store", "context_window_resolver", "graph_extractor", "state_store"]
    assert any("summarizer" in called for called in seams[2:])
    assert [line["warned"] for line in recorded[1:]].count(True) == 1
    assert [line["usage"]["window"] for line in recorded[1:]] == [256, 300, 256, 300]
    assert recorded[1]["state"]["graph"]["relationships"][0]["id"] == "fact:vault:is_in"
    assert recorded[0]["pipelines"][0]["seams"]["graph_extractor"].startswith("offline_extractor(")
    assert replay_trace(tmp_path / "p.jsonl").identical


def test_a_plugin_replay_answers_state_and_graph_from_the_trace(tmp_path: Path) -> None:
    trace = tmp_path / "p.jsonl"
    plugin = MemoryPlugin(load_config(PLUGIN_CONFIG), trace=trace)
    _talk(plugin)
    plugin.close()
    copy = tmp_path / "copy.jsonl"
    shutil.copy(trace, copy)
    # The state the second request loaded now says the warning was given:
    # the replay does not warn, and says where the warning message went.
    rewrite(
        trace,
        '"response":{"version":1,"warned":false',
        '"response":{"version":1,"warned":true',
        line=2,
    )
    with pytest.raises(ReplayMismatch) as caught:
        replay_trace(trace)
    first, second, *_ = caught.value.differences
    assert first.startswith(
        "request 1 (request, conversation c1): output message 5: recorded "
        '{"role": "system", "parts"'
    )
    assert first.endswith("replayed MISSING")
    assert second == (
        "request 1 (request, conversation c1): report: messages_before: recorded 5, replayed 4"
    )
    # The extractor's answer to the first request moves the vault: the
    # rendered graph message says where it went.
    edited = copy.read_text(encoding="utf-8").splitlines(keepends=True)
    first_line = json.loads(edited[1])
    (extract,) = [c for c in first_line["calls"] if c["seam"] == "graph_extractor"]
    text = json.dumps(extract["response"]).replace('"Lisbon"', '"Porto"')
    extract["response"] = json.loads(text)
    edited[1] = dump_line(first_line).decode("utf-8")
    copy.write_text("".join(edited), encoding="utf-8")
    with pytest.raises(ReplayMismatch) as caught:
        replay_trace(copy)
    (first, *_) = caught.value.differences
    assert first.startswith(
        "request 0 (request, conversation c1): output message 1: parts[0].text:"
    )
    assert "Lisbon" in first
    assert "Porto" in first


def test_tracing_changes_nothing_the_plugin_sends(tmp_path: Path) -> None:
    traced = MemoryPlugin(
        MemoryConfig(max_messages=3, strategies=[sliding_window(keep_messages=2)]),
        trace=tmp_path / "p.jsonl",
    )
    plain = MemoryPlugin(MemoryConfig(max_messages=3, strategies=[sliding_window(keep_messages=2)]))
    request = Request(
        messages=tuple(message("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(7))
    )
    assert traced.on_request(request) == plain.on_request(request)
    traced.close()
    assert replay_trace(tmp_path / "p.jsonl").identical


# --- the command line --------------------------------------------------------------------


def invoke(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_compact_trace_then_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = ROOT / "configs" / "tiny_budget.yaml"
    trace = tmp_path / "run.jsonl"
    status, out, err = invoke(
        capsys, "compact", "--config", str(config), str(ROOT / "examples/agent_history.json"),
        "--trace", str(trace),
    )  # fmt: skip
    assert (status, err) == (0, "")
    recorded = lines(trace)
    assert recorded[0]["pipelines"][0]["name"] == "tiny_budget"
    assert recorded[1]["output"]
    assert json.loads(out)["messages"]
    status, out, err = invoke(capsys, "replay", str(trace))
    assert (status, err) == (0, "")
    assert out == f"memrules replay: {trace}: 1 request replayed, identical\n"
    rewrite(trace, '"role":"user"', '"role":"user","name":"mallory"', line=1)
    status, out, err = invoke(capsys, "replay", str(trace))
    assert (status, err) == (1, "")
    assert out.startswith(f"memrules replay: {trace}: differs from its replay\nrequest 0 (apply):")
    status, out, err = invoke(capsys, "replay", str(trace), "--update")
    assert status == 0
    assert "rewrote 1 request, 1 of them changed" in out
    assert invoke(capsys, "replay", str(trace))[0] == 0


def test_compact_trace_failures_are_one_line_and_leave_no_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history_file = str(ROOT / "examples/agent_history.json")
    config = str(ROOT / "configs/tiny_budget.yaml")
    status, out, err = invoke(
        capsys,
        "compact",
        "--config",
        config,
        history_file,
        "--trace",
        str(tmp_path / "no/such/dir.jsonl"),
    )
    assert (status, out) == (2, "")
    missing = tmp_path / "no" / "such"
    assert err == (
        f"memrules: error: cannot write the trace {missing}/dir.jsonl: no directory {missing}\n"
    )
    failing = tmp_path / "fails.yaml"
    failing.write_text(
        'strategies:\n  - type: "tests.support.custom_strategies:always_fails"\n', encoding="utf-8"
    )
    trace = tmp_path / "t.jsonl"
    status, out, _ = invoke(
        capsys,
        "compact",
        "--config",
        str(failing),
        "--allow-imports",
        "tests",
        "--strict",
        "--compress",
        history_file,
        "--trace",
        str(trace),
    )
    assert (status, out) == (1, "")
    assert not trace.exists()
    assert list(tmp_path.iterdir()) == [failing]  # no temporary file left behind


def test_replay_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("[]\n", encoding="utf-8")
    status, out, err = invoke(capsys, "replay", str(bad))
    assert (status, out) == (2, "")
    assert err == (
        f"memrules: error: {bad}:1: not a memrules trace "
        "(its first line has no format 'memrules.trace')\n"
    )


# --- bytes across processes ----------------------------------------------------------


def _memrules(seed: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_memrules(*args, seed=seed)


def test_traces_and_replays_are_the_same_bytes_under_any_hash_seed(tmp_path: Path) -> None:
    source = tmp_path / "odd.json"
    source.write_text(json.dumps(ODD), encoding="utf-8")
    config = tmp_path / "c.yaml"
    config.write_text(SEAMED, encoding="utf-8")
    traces = []
    for seed in ("0", "1"):
        trace = tmp_path / f"seed{seed}.jsonl"
        done = _memrules(
            seed,
            "compact",
            "--config",
            str(config),
            "--compress",
            str(source),
            "--trace",
            str(trace),
        )
        assert done.returncode == 0, done.stderr
        traces.append(trace.read_bytes())
    assert traces[0] == traces[1]
    assert b"x-vendor" in traces[0]  # the metadata that a hash order would move is there
    record(tmp_path / "lib.jsonl")
    plugin = MemoryPlugin(load_config(PLUGIN_CONFIG), trace=tmp_path / "plugin.jsonl")
    _talk(plugin)  # the working graph, its state and its rendering too
    plugin.close()
    for name in ("lib", "plugin"):
        for seed in ("0", "1"):
            copy = tmp_path / f"{name}-{seed}.jsonl"
            shutil.copy(tmp_path / f"{name}.jsonl", copy)
            done = _memrules(seed, "replay", "--update", str(copy))
            assert done.returncode == 0, done.stderr
            assert copy.read_bytes() == (tmp_path / f"{name}.jsonl").read_bytes()


# Seam sections written as flow mappings: YAML gives their keys no line of
# their own, so only a canonical order keeps them still across hash seeds.
FLOW_SEAMS = """
max_tokens: 100
strategies: [{type: offload}, {type: summarize}]
store: {backend: qdrant, path: PATH, collection: x, search: dense, batch_size: 8}
embedder: {type: openai, base_url: "http://127.0.0.1:9/v1", model: m, dimensions: 8, api_key_env: K}
summarizer: {type: openai, base_url: "http://127.0.0.1:9/v1", model: m, max_tokens: 100, retries: 1}
"""

FLOW_ROUTE = """
stores:
  memory: {backend: qdrant, path: ":memory:", collection: notes, search: dense, batch_size: 4,
           embedding: {type: openai, base_url: "http://127.0.0.1:9/v1", model: e, dimensions: 8,
                       api_key_env: K}}
routes:
  support:
    memory: {retrieval_limit: 3, auto_store: true}
"""

ROUTE_HEADER = (
    "import json, sys; from memrules import load_config; "
    "from memrules._trace.canonical import canonical_config; "
    "config = load_config(sys.stdin.read()); "
    "print(json.dumps(canonical_config(config.route_config('support'))))"
)


@pytest.mark.slow
@needs_memory_extras
def test_trace_headers_with_seam_sections_are_the_same_bytes_under_any_hash_seed(
    tmp_path: Path,
) -> None:
    source = tmp_path / "h.json"
    source.write_text(json.dumps(ODD), encoding="utf-8")
    config = tmp_path / "c.yaml"
    config.write_text(FLOW_SEAMS.replace("PATH", str(tmp_path / "q")), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    headers, routes = set(), set()
    for seed in map(str, range(6)):
        trace = tmp_path / f"seed{seed}.jsonl"
        done = _memrules(
            seed, "compact", "--config", str(config), str(source), "--trace", str(trace)
        )
        assert done.returncode == 0, done.stderr
        headers.add(trace.read_bytes().split(b"\n", 1)[0])
        route = subprocess.run(
            [sys.executable, "-c", ROUTE_HEADER],
            input=FLOW_ROUTE, capture_output=True, text=True, cwd=ROOT,
            env={**env, "PYTHONHASHSEED": seed}, timeout=120,
        )  # fmt: skip
        assert route.returncode == 0, route.stderr
        routes.add(route.stdout)
    assert len(headers) == 1
    pipeline = json.loads(headers.pop())["pipelines"][0]["config"]
    assert list(pipeline["store"]) == ["backend", "path", "collection", "search", "batch_size"]
    assert list(pipeline["embedder"])[:2] == ["type", "base_url"]
    assert len(routes) == 1
    assert list(json.loads(routes.pop())["stores"]["memory"])[:2] == ["backend", "path"]


def test_a_long_list_of_differences_is_cut_and_counted(tmp_path: Path) -> None:
    trace = record(tmp_path / "t.jsonl")
    for line in (1, 2):
        rewrite(trace, '"tokens_before":', '"tokens_before":1', line=line)
    with pytest.raises(ReplayMismatch) as caught:
        replay_trace(trace, limit=1)
    assert len(caught.value.differences) == 2
    assert caught.value.differences[0].startswith("request 0 (apply, conversation c1): report: ")
    assert caught.value.differences[1].startswith("... and ")
    assert caught.value.differences[1].endswith("more differences (2 of 2 requests)")
    assert str(caught.value).startswith(f"{trace}: 2 of 2 requests differ; first: request 0")
