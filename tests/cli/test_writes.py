"""Every write memrules makes is checked: a full disk, a device, an output
that is also an input, a writer killed mid-write. Run as a user would: the
real ``/dev/full``, a 64 KiB tmpfs filled up (we are root in CI; the tests
that mount skip, saying why, where mounting is refused), real subprocesses.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memrules import MemoryPlugin, load_config
from memrules._core.errors import MemrulesError, OutputError
from memrules.graph import MemoryGraph
from memrules.graph.snapshot import GraphSnapshot, save_snapshot
from tests.support.chat_server import ChatServer
from tests.support.processes import memrules

ROOT = Path(__file__).resolve().parents[2]
FULL = Path("/dev/full")
CONFIG = (
    "context_window_tokens: 256\nmax_messages: 6\n"
    "strategies:\n  - type: sliding_window\n    keep_messages: 4\n"
)
MESSAGES = [{"role": "system", "content": "You are terse."}] + [
    {"role": role, "content": f"message {i}: " + "words " * 40}
    for i in range(40)
    for role in ("user", "assistant")
]


@pytest.fixture(autouse=True)
def dev_full_stays_a_device() -> Iterator[None]:
    """No test may replace /dev/full; if one did, put it back and fail."""
    yield
    if FULL.exists() and not stat.S_ISCHR(FULL.stat().st_mode):
        FULL.unlink()
        os.mknod(FULL, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        os.chmod(FULL, 0o666)
        pytest.fail("/dev/full was replaced by a regular file (put back)")


def run(*args: str, stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    if args[0] == "bench":  # the benchmark: a script of the checkout, not a command
        return subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "run.py"), *args[1:]],
            stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300, check=False,
        )  # fmt: skip
    return memrules(*args, stdout=stdout)


def assert_one_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG)
    source = tmp_path / "in.json"
    source.write_text(json.dumps(MESSAGES))
    return config, source


@pytest.fixture
def trace(files: tuple[Path, Path], tmp_path: Path) -> Path:
    config, source = files
    path = tmp_path / "run.jsonl"
    done = run("compact", "--config", str(config), "--trace", str(path), str(source))
    assert done.returncode == 0, done.stderr
    return path


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "d.jsonl"
    messages = [{"id": f"m{i}", **m} for i, m in enumerate(MESSAGES[:9])]
    conversation = {
        "id": "c1",
        "messages": messages,
        "questions": [{"id": "q1", "question": "what?", "answer": "message 1", "evidence": ["m1"]}],
    }
    path.write_text(json.dumps(conversation) + "\n")
    return path


def hidden(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith("."))


# --- /dev/full: stdout of every command that prints, and every file option ------------


def test_stdout_on_dev_full_is_one_line_and_exit_2_for_every_command(
    files: tuple[Path, Path], trace: Path, dataset: Path
) -> None:
    config, source = files
    commands = [
        ["compact", "--config", str(config), str(source)],
        ["replay", "--no-progress", str(trace)],
        ["eval", "--config", str(config), "--no-progress", str(dataset)],
        ["demo"],
        ["demo", "--json"],
        ["--help"],
        ["compact", "--help"],
    ]
    for command in commands:
        with FULL.open("w") as full:
            done = run(*command, stdout=full)
        assert_one_line(done, "No space left on device")


def test_bench_on_dev_full_is_one_line_and_exit_2() -> None:
    with FULL.open("w") as full:
        done = run("bench", "--quick", "--skip-langchain", "--no-progress", stdout=full)
    assert_one_line(done, "No space left on device")


def test_file_options_naming_dev_full_are_refused_and_the_device_stays(
    files: tuple[Path, Path], dataset: Path
) -> None:
    config, source = files
    for command in (
        ["compact", "--config", str(config), "--trace", str(FULL), str(source)],
        ["compact", "--config", str(config), "--report", str(FULL), str(source)],
        ["eval", "--config", str(config), "--trace", str(FULL), "--no-progress", str(dataset)],
        ["bench", "--quick", "--skip-langchain", "--no-progress", "--json", str(FULL)],
    ):
        done = run(*command)
        assert_one_line(done, str(FULL), "not a regular file")
        assert done.stdout == ""
        assert stat.S_ISCHR(FULL.stat().st_mode)


def test_a_device_node_is_never_replaced(tmp_path: Path) -> None:
    device = tmp_path / "full"
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    with pytest.raises(OutputError, match=f"{device}.*not a regular file"):
        save_snapshot(MemoryGraph().snapshot(), device)
    with pytest.raises(MemrulesError, match="not a regular file"):
        MemoryPlugin(load_config(CONFIG), trace=device)
    assert stat.S_ISCHR(device.stat().st_mode)


# --- an output that is an input --------------------------------------------------------


def test_an_output_that_is_an_input_is_refused_and_the_input_kept(
    files: tuple[Path, Path], dataset: Path, tmp_path: Path
) -> None:
    config, source = files
    before = {p: p.read_bytes() for p in (config, source, dataset)}
    link = tmp_path / "link.json"
    link.symlink_to(source)
    for command in (
        ["compact", "--config", str(config), "--trace", str(source), str(source)],
        ["compact", "--config", str(config), "--report", str(config), str(source)],
        ["compact", "--config", str(config), "--trace", str(link), str(source)],
        [
            "compact",
            "--config",
            str(config),
            "--report",
            f"{tmp_path}/../{tmp_path.name}/in.json",
            str(source),
        ],
        ["eval", "--config", str(config), "--trace", str(dataset), "--no-progress", str(dataset)],
    ):
        done = run(*command)
        assert_one_line(done, "also an input")
        assert done.stdout == ""
    report = tmp_path / "same.json"
    done = run(
        "compact",
        "--config",
        str(config),
        "--report",
        str(report),
        "--trace",
        str(report),
        str(source),
    )
    assert_one_line(done, "also an input")
    assert not report.exists()
    assert {p: p.read_bytes() for p in before} == before


# --- a full disk: a 64 KiB tmpfs, filled ----------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a 64 KiB tmpfs (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def fill(mount: Path, leave: int = 0) -> None:
    """Fill ``mount`` up, leaving about ``leave`` bytes."""
    with (mount / "filler").open("wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"x" * 1024)
        except OSError:
            pass
    if leave:
        size = (mount / "filler").stat().st_size
        os.truncate(mount / "filler", max(0, size - leave))


def test_every_file_option_on_a_full_disk_is_one_line_and_exit_2(
    files: tuple[Path, Path], dataset: Path, small_disk: Path
) -> None:
    config, source = files
    old = small_disk / "old.json"
    old.write_text("the old file\n")
    fill(small_disk)
    for option, target in (
        ("--trace", small_disk / "t.jsonl"),
        ("--report", small_disk / "r.json"),
        ("--trace", old),
        ("--report", old),
    ):
        done = run("compact", "--config", str(config), option, str(target), str(source))
        assert_one_line(done, str(target), "No space left on device")
        assert done.stdout == ""  # nothing printed when a file failed
    assert old.read_text() == "the old file\n"
    for command in (
        [
            "eval",
            "--config",
            str(config),
            "--no-progress",
            "--trace",
            str(small_disk / "e.jsonl"),
            str(dataset),
        ],
        [
            "bench",
            "--quick",
            "--skip-langchain",
            "--no-progress",
            "--json",
            str(small_disk / "b.json"),
        ],
    ):
        done = run(*command, stdout=subprocess.DEVNULL)
        assert_one_line(done, str(small_disk), "No space left on device")
    assert sorted(os.listdir(small_disk)) == ["filler", "old.json"]  # no temporary behind


def test_a_plugin_trace_on_a_full_disk_raises(small_disk: Path) -> None:
    fill(small_disk, leave=20_000)
    plugin = MemoryPlugin(load_config(CONFIG), trace=small_disk / "p.jsonl")

    def talk() -> None:
        for i in range(200):
            plugin.on_openai_request(
                {"model": "m", "messages": MESSAGES[: 2 + i % 40]}, conversation_id=f"c{i}"
            )

    with pytest.raises(MemrulesError, match="No space left on device"):
        talk()
    with pytest.raises(MemrulesError, match="No space left on device"):  # and stays failed
        talk()
    plugin.close()


def test_save_snapshot_on_a_full_disk_names_the_path_and_keeps_the_old_file(
    small_disk: Path,
) -> None:
    path = small_disk / "graph.json"
    graph = MemoryGraph()
    save_snapshot(graph.snapshot(), path)
    before = path.read_bytes()
    fill(small_disk)
    bigger = GraphSnapshot.from_dict(
        {"version": 1, "nodes": [{"id": f"n{i}", "labels": ["x" * 50]} for i in range(2000)]}
    )
    with pytest.raises(OutputError, match=f"{path}: No space left on device") as caught:
        save_snapshot(bigger, path)
    assert isinstance(caught.value, OSError)
    assert path.read_bytes() == before
    assert sorted(os.listdir(small_disk)) == ["filler", "graph.json"]
    assert len(bigger.nodes) == 2000


# --- a writer killed with SIGKILL ----------------------------------------------------


def test_a_writer_killed_mid_trace_leaves_nothing_the_next_run_keeps(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    config, source = files
    out = tmp_path / "out"
    out.mkdir()
    target = out / "t.jsonl"
    with ChatServer(delay=60.0) as server:
        slow = tmp_path / "slow.yaml"
        slow.write_text(
            "context_window_tokens: 256\nmax_messages: 6\n"
            f"summarizer: {{type: openai, base_url: '{server.url}', model: m, retries: 0}}\n"
            "strategies:\n  - type: summarize\n    turns: 2\n"
        )
        writer = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memrules",
                "compact",
                "--config",
                str(slow),
                "--trace",
                str(target),
                "--no-progress",
                str(source),
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.requests, "the writer never reached the summarizer"
        assert hidden(out), "the writer holds no temporary file while it runs"
        # A second writer of the same target, alive: its temporary file stays.
        alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        theirs = out / f".t.jsonl.memrules-{alive.pid}-0badcafe.tmp"
        theirs.write_bytes(b"in progress")
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    stray = hidden(out)
    assert len(stray) == 2, stray  # the killed writer's, and the live one's
    done = run("compact", "--config", str(config), "--trace", str(target), str(source))
    assert done.returncode == 0, done.stderr
    alive.kill()
    alive.wait()
    assert hidden(out) == [theirs.name]  # the killed writer's is gone, the live one's kept
    assert sorted(os.listdir(out)) == sorted([theirs.name, "t.jsonl"])
