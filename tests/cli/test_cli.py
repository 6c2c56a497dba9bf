"""The ``memrules compact`` command, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memrules import from_openai
from memrules._cli.main import _parser, _pipeline, main
from tests.support.processes import memrules

ROOT = Path(__file__).resolve().parents[2]
HISTORY = ROOT / "examples" / "agent_history.json"

SEED_MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "The vault is in Lisbon. Reply with: noted"},
    {"role": "assistant", "content": "noted"},
    {"role": "user", "content": "The key rotates on friday. Reply with: noted"},
    {"role": "assistant", "content": "noted"},
    {"role": "user", "content": "The owner is ops@example.com. Reply with: noted"},
    {"role": "assistant", "content": "noted"},
    {"role": "user", "content": "Where is the vault? Answer in one word."},
    {"role": "system", "content": "memrules context warning: 22% of the window is used."},
]
# The seed's example (configs/seed_example.yaml): the seed keeps only the
# latest user message, not the task, and its turn 4 sends the last reply
# right after the system prompt, so neither the task nor user_first is on.
SEED_SURVIVORS = "survivors: {task: false}\nuser_first: false\n"
SEED_CONFIG = (
    "context_window_tokens: 256\nmax_messages: 6\n"
    "strategies:\n  - type: sliding_window\n    keep_messages: 4\n" + SEED_SURVIVORS
)


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return memrules(*args, stdin=stdin)


def invoke(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``memrules ARGS`` in this process (faster than :func:`run`, for cases
    that need no real file descriptors), as :func:`run` reports it."""
    capsys.readouterr()
    status = main(list(args))
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), status, captured.out, captured.err)


def shell(command: str) -> subprocess.CompletedProcess[str]:
    """``command`` in sh, with ``memrules`` this interpreter's ``-m memrules``."""
    memrules = f"{sys.executable} -m memrules"
    return subprocess.run(
        ["sh", "-c", command.replace("memrules ", memrules + " ", 1)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def assert_clean(
    done: subprocess.CompletedProcess[str], status: int, *words: str, lines: int = 1
) -> None:
    """The issue's bar: this exit status, exactly ``lines`` lines on stderr
    (holding ``words``), no traceback, and stdout empty or valid JSON."""
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == lines, done.stderr
    for word in words:
        assert word in done.stderr
    if done.stdout:
        json.loads(done.stdout)


def test_compact_prints_openai_messages_and_writes_the_report(tmp_path: Path) -> None:
    config = tmp_path / "seed.yaml"
    config.write_text(SEED_CONFIG)
    source = tmp_path / "in.json"
    source.write_text(json.dumps(SEED_MESSAGES))
    report = tmp_path / "report.json"
    done = run("compact", "--config", str(config), str(source), "--report", str(report))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out == [SEED_MESSAGES[i] for i in (0, 6, 7, 8)]
    data = json.loads(report.read_text())
    assert data["stop_reason"] == "under_budget"
    assert data["messages_before"] == 9
    assert data["messages_after"] == 4
    assert data["origin"] == [0, 6, 7, 8]
    assert data["actions"][0]["strategy"] == "sliding_window"
    assert data["actions"][0]["removed"] == [1, 2, 3, 4, 5]


def test_the_report_gets_the_permissions_of_a_new_file(
    tmp_path: Path, seed_files: tuple[Path, Path]
) -> None:
    config, source = seed_files
    plain = tmp_path / "plain.json"
    plain.write_text("{}")
    report = tmp_path / "report.json"
    done = run("compact", "--config", str(config), str(source), "--report", str(report))
    assert_clean(done, 0, lines=0)
    assert report.stat().st_mode == plain.stat().st_mode
    report.chmod(0o600)
    done = run("compact", "--config", str(config), str(source), "--report", str(report))
    assert report.stat().st_mode & 0o777 == 0o600  # an existing file keeps its own
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_request_object_keeps_its_other_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ROOT / "configs" / "tiny_budget.yaml"
    assert main(["compact", "--config", str(config), str(HISTORY)]) == 0
    out = json.loads(capsys.readouterr().out)
    original = json.loads(HISTORY.read_text())
    assert out["model"] == original["model"]
    assert out["messages"][0] == original["messages"][0]
    assert out["messages"][-1] == original["messages"][-1]
    assert len(out["messages"]) < len(original["messages"])
    # Every tool result still has its call.
    calls = {c["id"] for m in out["messages"] for c in m.get("tool_calls") or []}
    results = {m["tool_call_id"] for m in out["messages"] if m["role"] == "tool"}
    assert results <= calls
    assert calls <= results


def test_stdin_and_anthropic_format(tmp_path: Path) -> None:
    config = tmp_path / "seed.yaml"
    config.write_text(SEED_CONFIG)
    request = {
        "model": "claude",
        "max_tokens": 100,
        "system": "You are terse.",
        "messages": list(SEED_MESSAGES[1:8]),
    }
    done = run(
        "compact", "--format", "anthropic", "--config", str(config), "-", stdin=json.dumps(request)
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["model"] == "claude"
    assert out["system"] == "You are terse."
    # 8 messages (system + 7) over a 6-message trigger: keep 4 = S + newest 3.
    assert out["messages"] == request["messages"][-3:]


def test_no_budget_change_means_output_equals_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "loose.yaml"
    config.write_text("max_messages: 100\n")
    source = tmp_path / "in.json"
    source.write_text(json.dumps(SEED_MESSAGES))
    assert main(["compact", "--config", str(config), str(source)]) == 0
    assert json.loads(capsys.readouterr().out) == SEED_MESSAGES


BAD_CONFIGS = {
    "malformed.yaml": ("strategies: [\n", "malformed.yaml:2: invalid YAML"),
    "unknown.yaml": (
        "strategies:\n  - type: sliding_windw\n",
        "strategies[0].type: unknown strategy type",
    ),
    "types.yaml": (
        "strategies:\n  - type: sliding_window\n    keep_messages: many\n",
        "types.yaml:3: strategies[0].keep_messages: keep_messages='many' must be a whole number",
    ),
    "both.yaml": (
        "max_tokens: 100\nmax_fraction: 0.5\n",
        "both.yaml:2: max_fraction: max_tokens=100",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_bad_config_is_one_line_and_exit_2(tmp_path: Path, name: str) -> None:
    text, expected = BAD_CONFIGS[name]
    config = tmp_path / name
    config.write_text(text)
    done = run("compact", "--config", str(config), str(HISTORY))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("memrules: error: ")
    assert expected in lines[0]


BAD_INPUTS = [
    ('[{"role": "user", "content": "hi"}', "invalid JSON"),
    ('{"model": "x"}', "'messages'"),
    ('[{"role": "wizard", "content": "hi"}]', "messages[0].role"),
    ('[{"role": "user", "content": 5}]', "messages[0].content"),
    ('[{"role": "tool", "content": "x"}]', "messages[0].tool_call_id"),
    (
        '[{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", '
        '"function": {"name": "f", "arguments": 3}}]}]',
        "messages[0].tool_calls[0].function.arguments",
    ),
    ('"just a string"', "messages"),
]


@pytest.mark.parametrize(("text", "expected"), BAD_INPUTS)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    source = tmp_path / "in.json"
    source.write_text(text)
    status = main(["compact", "--config", str(ROOT / "configs" / "default.yaml"), str(source)])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.out == ""
    line = captured.err.strip()
    assert "\n" not in line
    assert line.startswith(f"memrules: error: {source}")
    assert expected in line


def test_stdin_is_named_in_errors() -> None:
    done = run("compact", "--config", "configs/seed_example.yaml", "-", stdin='[{"role": 1}]')
    assert_clean(done, 2, "memrules: error: <stdin>: messages[0].role")


def test_missing_input_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["compact", "--config", str(ROOT / "configs" / "default.yaml"), "/nonexistent.json"])
        == 2
    )
    assert "cannot read /nonexistent.json" in capsys.readouterr().err


def test_example_history_is_valid_openai() -> None:
    assert len(from_openai(json.loads(HISTORY.read_text())["messages"])) == 14


def test_a_reader_that_goes_away_gets_no_traceback(tmp_path: Path) -> None:
    # Far more output than a pipe buffers, so the writer meets the closed pipe.
    messages = [{"role": "user", "content": f"message {i} " + "x" * 200} for i in range(2000)]
    source = tmp_path / "big.json"
    source.write_text(json.dumps(messages))
    config = tmp_path / "loose.yaml"
    config.write_text("max_messages: 100000\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "memrules", "compact", "--config", str(config), str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.read(5)
    process.stdout.close()  # like `| head -c 5`
    assert process.wait(timeout=120) == 1
    assert process.stderr.read() == b""


# --- every bad input, output and argument ends in one clear line -------------------


@pytest.fixture
def seed_files(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "seed.yaml"
    config.write_text(SEED_CONFIG)
    source = tmp_path / "in.json"
    source.write_text(json.dumps(SEED_MESSAGES))
    return config, source


BAD_YAML = {
    "self_alias_list.yaml": ("strategies: &a [*a]\n", "self_alias_list.yaml:1: strategies[0]"),
    "self_alias_map.yaml": ("a: &a {b: *a}\n", "self_alias_map.yaml:1: a.b"),
    "nul.yaml": ("max_messages: 6\x00\n", "nul.yaml:1: invalid YAML: unacceptable character"),
    "tag_list.yaml": (
        "strategies: !!python/object/apply:os.system [echo pwned]\n",
        "tag_list.yaml:1: the tag '!!python/object/apply:os.system' is not allowed",
    ),
    "tag_map.yaml": (
        "strategies: !!python/object/apply:os.system {args: [echo pwned]}\n",
        "tag_map.yaml:1: the tag '!!python/object/apply:os.system' is not allowed",
    ),
    "bomb.yaml": (
        "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 9)),
        "bomb.yaml:",
    ),
    "digits.yaml": (
        "max_messages: " + "9" * 5000 + "\n",
        "digits.yaml:1: max_messages: cannot read",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_YAML))
def test_hostile_config_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    text, expected = BAD_YAML[name]
    config = tmp_path / name
    config.write_text(text)
    done = invoke(capsys, "compact", "--config", str(config), str(HISTORY))
    assert_clean(done, 2, expected)
    assert done.stdout == ""


def test_a_100_mb_config_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "huge.yaml"
    with config.open("wb") as file:
        file.truncate(100 * 1024 * 1024)
    done = run("compact", "--config", str(config), str(HISTORY))
    assert_clean(done, 2, f"{config}: config file is 104,857,600 bytes; the limit is 65,536")


def test_a_config_path_without_suffix_is_not_found(tmp_path: Path) -> None:
    done = run("compact", "--config", "configs/seed_example", str(HISTORY))
    assert_clean(done, 2, "memrules: error: configs/seed_example: config file not found")
    assert "got str" not in done.stderr


def test_deeply_nested_json_is_one_line(tmp_path: Path, seed_files: tuple[Path, Path]) -> None:
    config, _ = seed_files
    source = tmp_path / "deep.json"
    source.write_text("[" * 100_000 + "]" * 100_000)
    done = run("compact", "--config", str(config), str(source))
    assert_clean(done, 2, f"{source}: invalid input: JSON nested too deeply")


def test_a_5000_digit_number_is_one_line(tmp_path: Path, seed_files: tuple[Path, Path]) -> None:
    config, _ = seed_files
    source = tmp_path / "digits.json"
    source.write_text('[{"role": "user", "content": "hi", "n": ' + "1" * 5000 + "}]")
    done = run("compact", "--config", str(config), str(source))
    assert_clean(done, 2, f"{source}: invalid JSON: Exceeds the limit (4300 digits)")


def test_nan_in_the_input_never_reaches_the_output(
    tmp_path: Path, seed_files: tuple[Path, Path]
) -> None:
    config, _ = seed_files
    source = tmp_path / "nan.json"
    source.write_text('[{"role": "user", "content": "hi", "metadata": {"score": NaN}}]')
    done = run("compact", "--config", str(config), str(source))
    assert_clean(done, 2, "NaN")
    assert done.stdout == ""


def test_a_full_disk_is_one_line(seed_files: tuple[Path, Path]) -> None:
    config, source = seed_files
    done = shell(f"memrules compact --config {config} {source} > /dev/full")
    assert_clean(done, 2, "memrules: error: cannot write the output: No space left on device")


def test_a_closed_stdout_is_one_line(seed_files: tuple[Path, Path]) -> None:
    config, source = seed_files
    done = shell(f"memrules compact --config {config} {source} >&-")
    assert_clean(done, 2, "memrules: error: cannot write the output: stdout is closed")


def test_a_lone_surrogate_is_written_escaped(tmp_path: Path, seed_files: tuple[Path, Path]) -> None:
    config, _ = seed_files
    source = tmp_path / "surrogate.json"
    source.write_text('[{"role": "user", "content": "bad \\ud800 text"}]')
    done = run("compact", "--config", str(config), str(source))
    if done.returncode == 0:  # written back escaped: valid JSON, the same text
        assert_clean(done, 0, lines=0)
        assert json.loads(done.stdout) == [{"role": "user", "content": "bad \ud800 text"}]
        assert "\\ud800" in done.stdout
    else:  # or refused at input, naming the place
        assert_clean(done, 2, "messages[0]")
        assert done.stdout == ""


@pytest.mark.parametrize(
    "command",
    [
        "memrules demo",
        "memrules demo --json",
        "memrules compact --config configs/tiny_budget.yaml examples/agent_history.json",
    ],
)
def test_a_reader_that_goes_away_is_quiet(command: str) -> None:
    argv = command.split()[1:]
    process = subprocess.Popen(
        [sys.executable, "-m", "memrules", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()  # like `| head -0`, before anything is written
    assert process.wait(timeout=120) == 1
    assert process.stderr.read() == b""


def test_the_benchmark_into_head_is_quiet() -> None:
    done = shell(
        f"{sys.executable} benchmarks/run.py --quick --skip-langchain --sizes 20 --turns 10"
        " | head -3"
    )
    assert done.returncode == 0
    assert done.stderr == ""
    assert done.stdout.startswith("memrules bench — Python")
    assert len(done.stdout.splitlines()) == 3


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["demo", "--base-url", "not-a-url"], "'not-a-url' is not an http:// or https:// URL"),
        (["demo", "--timeout", "0"], "'0' is not a number of seconds above 0"),
        (["demo", "--api-key-env", "X"], "--model and --api-key-env need --base-url"),
        (["compact", str(HISTORY)], "the following arguments are required: --config"),
        (["compact", "--config", "configs/seed_example.yaml", str(HISTORY), "--format", "x"], "x"),
        (
            [
                *("compact", "--config", "configs/seed_example.yaml", str(HISTORY)),
                *("--report", "/nonexistent/report.json"),
            ],
            "cannot write the report /nonexistent/report.json: no directory /nonexistent",
        ),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_bad_arguments_are_one_line_before_any_work(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    done = invoke(capsys, *argv)
    assert_clean(done, 2, words)
    assert done.stdout == ""


def test_report_to_a_directory_fails_before_the_work(
    tmp_path: Path, seed_files: tuple[Path, Path]
) -> None:
    config, source = seed_files
    done = run("compact", "--config", str(config), str(source), "--report", str(tmp_path))
    assert_clean(done, 2, "it is a directory")
    assert done.stdout == ""


def test_a_failing_strategy_warns_and_strict_fails(tmp_path: Path) -> None:
    config = tmp_path / "failing.yaml"
    config.write_text(
        "max_messages: 6\nstrategies:\n"
        "  - type: 'tests.support.custom_strategies:always_fails'\n"
        "  - type: sliding_window\n    keep_messages: 4\n" + SEED_SURVIVORS
    )
    source = tmp_path / "in.json"
    source.write_text(json.dumps(SEED_MESSAGES))
    allow = ("--allow-imports", "tests.support.custom_strategies")
    done = run("compact", "--config", str(config), str(source), *allow)
    assert_clean(
        done,
        0,
        "memrules: warning: strategy tests.support.custom_strategies:always_fails failed",
        "the disk is made of cheese",
    )
    assert json.loads(done.stdout) == [SEED_MESSAGES[i] for i in (0, 6, 7, 8)]
    report = tmp_path / "report.json"
    strict = run(
        "compact", "--config", str(config), str(source), *allow, "--strict", "--report", str(report)
    )
    assert_clean(
        strict, 1, "memrules: error: strategy tests.support.custom_strategies:always_fails"
    )
    assert strict.stdout == ""
    assert not report.exists()  # whole or nothing: no report either


def test_imports_need_allowing_on_the_command_line(tmp_path: Path) -> None:
    config = tmp_path / "import.yaml"
    config.write_text(
        "strategies:\n  - type: 'tests.support.custom_strategies:keep_last'\n    count: 3\n"
    )
    source = tmp_path / "in.json"
    source.write_text(json.dumps(SEED_MESSAGES))
    refused = run("compact", "--config", str(config), str(source))
    assert_clean(
        refused,
        2,
        f"{config}:2: strategies[0].type: importing 'tests.support.custom_strategies' "
        "is not allowed",
    )
    assert refused.stdout == ""
    for flags in (["--allow-imports", "tests"], ["--trust-config"]):
        done = run("compact", "--config", str(config), str(source), *flags, "--compress")
        assert_clean(done, 0, lines=0)
        # keep_last(count=3) and the survivors: the system prompt and the task.
        assert len(json.loads(done.stdout)) == 5
    both = run(
        "compact", "--config", str(config), str(source), "--trust-config", "--allow-imports", "x"
    )
    assert_clean(both, 2, "not allowed with argument")


def test_the_anthropic_format_keeps_a_user_message_first(seed_files: tuple[Path, Path]) -> None:
    config, source = seed_files
    for fmt, user_first in (("openai", False), ("anthropic", True)):
        args = _parser().parse_args(
            ["compact", "--config", str(config), str(source), "--format", fmt]
        )
        assert _pipeline(args).config.user_first is user_first
    config.write_text(SEED_CONFIG.replace("user_first: false", "user_first: true"))
    args = _parser().parse_args(["compact", "--config", str(config), str(source)])
    assert _pipeline(args).config.user_first is True


DEEP = "[" * 100_000 + "]" * 100_000


def test_every_reader_says_the_same_line_of_json_nested_too_deeply(
    tmp_path: Path, seed_files: tuple[Path, Path]
) -> None:
    from memrules._core.jsontext import TOO_DEEP

    config, source = seed_files
    trace = tmp_path / "run.jsonl"
    done = run("compact", "--config", str(config), "--trace", str(trace), str(source))
    assert done.returncode == 0, done.stderr
    deep_trace = tmp_path / "deep_trace.jsonl"
    deep_trace.write_text(trace.read_text().splitlines()[0] + "\n" + DEEP + "\n")
    dataset = tmp_path / "deep_dataset.jsonl"
    dataset.write_text(DEEP + "\n")
    done = run("replay", "--no-progress", str(deep_trace))
    assert_clean(done, 2, f"memrules: error: {deep_trace}:2: {TOO_DEEP}")
    done = run("replay", "--update", "--no-progress", str(deep_trace))
    assert_clean(done, 2, f"memrules: error: {deep_trace}:2: {TOO_DEEP}")
    done = run("eval", "--config", str(config), "--no-progress", str(dataset))
    assert_clean(done, 2, f"memrules: error: {dataset}:1: {TOO_DEEP}")
    source.write_text(DEEP)
    done = run("compact", "--config", str(config), str(source))
    assert_clean(done, 2, f"memrules: error: {source}: {TOO_DEEP}")


def test_a_snapshot_nested_too_deeply_is_a_graph_error(tmp_path: Path) -> None:
    from memrules._core.errors import GraphError
    from memrules._core.jsontext import TOO_DEEP
    from memrules.graph.snapshot import GraphSnapshot, load_snapshot

    path = tmp_path / "deep.json"
    path.write_text('{"nodes": ' + DEEP + "}")
    with pytest.raises(GraphError, match=f"{path}: {TOO_DEEP}"):
        load_snapshot(path)
    with pytest.raises(GraphError, match=TOO_DEEP):
        GraphSnapshot.from_json(DEEP)


BAD_COMMAND_LINES = [
    ["demo", "--base-url", "http://[::1"],
    ["demo", "--base-url", "ftp://host/v1"],
    ["demo", "--base-url", "http://host:port/v1"],
    ["demo", "--timeout", "soon"],
    ["demo", "--timeout", "-1"],
    ["demo", "--model", "m"],
    ["demo", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "A B"],
    ["eval", "--config", "c.yaml", "--jobs", "x", "d.jsonl"],
    ["eval", "--config", "c.yaml", "-k", "0", "d.jsonl"],
    ["eval", "--config", "c.yaml", "--max-tokens", "zero", "d.jsonl"],
    ["compact", "--format", "xml", "--config", "c.yaml", "in.json"],
    ["compact"],
    ["replay"],
    ["replay", "missing.jsonl"],
    ["nonsense"],
]


@pytest.mark.parametrize("argv", BAD_COMMAND_LINES, ids=" ".join)
def test_no_command_line_message_names_a_private_function(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    import re

    done = invoke(capsys, *argv)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    private = re.findall(r"(?<![\w./-])_[A-Za-z]\w*", done.stderr)
    assert not private, done.stderr
    assert "Traceback" not in done.stderr
