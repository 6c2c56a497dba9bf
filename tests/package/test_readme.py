"""The README's examples run as they are written."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memrules._cli.main import main as cli_main
from tests.support.seams import needs_memory_extras

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    """The text of the README section with this ``## title``."""
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : None if end < 0 else end]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def test_the_library_example_runs_verbatim(tmp_path: Path) -> None:
    (code,) = blocks(section("As a library"), "python")
    assert "openai_messages = [" in code  # defined, not assumed
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_the_quick_start_writes_its_report_outside_the_checkout(tmp_path: Path) -> None:
    commands = [
        line
        for block in blocks(section("Quick start"), "sh")
        for line in block.splitlines()
        if line.startswith(".venv/bin/memrules compact")
    ]
    assert len(commands) == 1
    argv = shlex.split(os.path.expandvars(commands[0].replace("${TMPDIR:-/tmp}", str(tmp_path))))
    assert argv[0] == ".venv/bin/memrules"
    done = subprocess.run(
        [sys.executable, "-m", "memrules", *argv[1:]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["messages"]
    report = json.loads((tmp_path / "memrules-report.json").read_text(encoding="utf-8"))
    assert report["messages_after"] < report["messages_before"]


def test_the_request_hook_example_runs_verbatim(tmp_path: Path) -> None:
    code, _ = blocks(section("The request hook"), "python")  # then the Async example
    script = tmp_path / "hook.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    # the observer's readings, by OpenAI's framing (the default count_rule):
    # 3 a message + the role + the text, and 3 for the reply (6 and 2 unframed)
    assert done.stdout.splitlines() == ["12/256", "8/256", "12/256"]


def test_the_async_example_runs_verbatim(tmp_path: Path) -> None:
    (code,) = blocks(subsection("Async"), "python")
    script = tmp_path / "async_example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["8 -> 3"]


def test_the_integrations_examples_are_python_that_compiles() -> None:
    codes = blocks(section("Integrations"), "python")
    assert len(codes) == 4
    for code in codes:
        # Top-level await is how the Agents SDK example reads in a notebook.
        compile(code, "<README>", "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT
    for module in ("langchain", "openai_agents", "pydantic_ai", "otel", "prometheus"):
        assert f"memrules.integrations.{module}" in section("Integrations")


def test_the_working_graph_example_runs_verbatim(tmp_path: Path) -> None:
    (code,) = blocks(section("Working graph"), "python")
    script = tmp_path / "graph_example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_the_working_graph_section_shows_what_the_demo_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    (turn,) = [b for b in blocks(section("Working graph"), "") if b.startswith("Turn 4:")]
    assert cli_main(["demo", "--graph"]) == 0
    assert turn in capsys.readouterr().out


# --- property-testing a custom strategy (the README's "Writing a strategy") --------


def subsection(title: str) -> str:
    """The text of the README subsection with this ``### title``."""
    start = README.index(f"\n### {title}\n")
    end = README.find("\n##", start + 1)
    return README[start : None if end < 0 else end]


def _property_test(strategy_code: str) -> Callable[[], None]:
    """The README's property test, run against ``strategy_code`` (the
    README's strategy, or a broken one) in a fresh namespace."""
    (_, test_code) = blocks(subsection("Writing a strategy"), "python")
    namespace: dict[str, object] = {"__name__": "readme_strategy"}
    exec(compile(strategy_code + "\n" + test_code, "<README>", "exec"), namespace)
    test = namespace["test_drop_long_observations_keeps_the_contract"]
    assert callable(test)
    return test  # type: ignore[return-value]


def test_the_readme_property_test_passes_for_the_readme_strategy() -> None:
    (strategy_code, _) = blocks(subsection("Writing a strategy"), "python")
    _property_test(strategy_code)()


BROKEN = {
    # Drops the first system message when it is long: invariant 1. (The
    # README's strategy once kept index 0 instead, and this test caught it
    # dropping a first system message that was not first in the list.)
    "drops the first system message": ("i == first or ", ""),
    # Returns a new tuple when it changed nothing: `new is old` no longer tells a no-op.
    "hides its no-ops": (
        "return conversation if len(keep) == len(conversation) else keep",
        "return keep",
    ),
    # Depends on something other than its input (how often it ran): two runs differ.
    "is not deterministic": (
        "count(m) <= max_tokens)",
        "count(m) <= max_tokens * (len(RUNS) % 2))\n        RUNS.append(1)",
    ),
}


@pytest.mark.parametrize("fault", list(BROKEN))
def test_the_readme_property_test_catches_a_broken_strategy(fault: str) -> None:
    (strategy_code, _) = blocks(subsection("Writing a strategy"), "python")
    old, new = BROKEN[fault]
    assert old in strategy_code
    broken = "RUNS = []\n" + strategy_code.replace(old, new)
    with pytest.raises(AssertionError) as caught:
        _property_test(broken)()
    words = {
        "drops the first system message": "removed or altered the first system message",
        "hides its no-ops": "changed nothing but returned a new tuple",
        "is not deterministic": "is not deterministic",
    }[fault]
    assert words in str(caught.value)


# --- replay and evaluation -----------------------------------------------------------


def _commands(title: str) -> list[list[str]]:
    """The ``memrules`` commands of a section's sh blocks (continuations joined)."""
    found = []
    for block in blocks(section(title), "sh"):
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith("memrules "):
                found.append(shlex.split(line.split("#", 1)[0]))
    return found


def test_the_replay_commands_run_as_written(tmp_path: Path) -> None:
    commands = _commands("Replay")
    assert [c[1] for c in commands] == ["compact", "replay", "replay"]
    for command in commands:
        argv = [str(tmp_path / a) if a == "run.jsonl" else a for a in command[1:]]
        done = subprocess.run(
            [sys.executable, "-m", "memrules", *argv],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert "1 request replayed, identical" in done.stdout or "rewrote 1 request" in done.stdout


@needs_memory_extras
def test_the_evaluation_table_is_what_the_command_prints(tmp_path: Path) -> None:
    (command,) = _commands("Evaluation")
    done = subprocess.run(
        [sys.executable, "-m", "memrules", *command[1:]],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = re.search(r"```\n(pipeline .*?)```", section("Evaluation"), flags=re.DOTALL)
    assert table is not None
    shown = table.group(1)

    def figures(table: str) -> list[list[str]]:
        return [row.split()[:-2] for row in table.strip().splitlines()]  # timings move

    assert figures(done.stdout) == figures(shown)


def _retrieval_extras_missing() -> list[str]:
    import importlib.util

    from memrules.seams.embedders import local_embedder_missing

    missing = list(local_embedder_missing())
    if importlib.util.find_spec("qdrant_client") is None:
        missing.append("qdrant-client")
    return missing


@pytest.mark.skipif(
    bool(_retrieval_extras_missing()),
    reason="needs the local-embed and qdrant extras: pip install -e '.[local-embed,qdrant]'",
)
def test_the_retrieval_memory_example_runs_verbatim(tmp_path: Path) -> None:
    (code,) = blocks(section("Retrieval memory"), "python")
    script = tmp_path / "retrieval_example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["hit 1", "memrules memory:", "1"]  # as its comments say


@needs_memory_extras
def test_the_retrieval_memory_section_shows_the_shipped_config() -> None:
    """The YAML the section shows is a config that loads, and its estimator
    table holds the estimator's own figures."""
    from memrules import estimate_tokens, load_config

    (yaml_block,) = blocks(section("Retrieval memory"), "yaml")
    config = load_config(yaml_block)
    assert config.route_names == ("default", "code", "support")
    rows = [
        line.split("|")
        for line in section("Retrieval memory").splitlines()
        if line.startswith("| `")
    ]
    assert len(rows) == 6
    for row in rows:
        text, estimate = row[1].strip().strip("`"), int(row[3])
        assert estimate_tokens(text) == estimate, text
