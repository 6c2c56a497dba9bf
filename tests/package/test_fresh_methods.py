"""Every method the documentation names on :class:`~memrules.MemoryConfig`
and :class:`~memrules.Pipeline` is there in a fresh interpreter, after
``import memrules`` alone: nothing appears on a class because some other
module was imported. Each check runs in a child process, since this test
process has imported everything already."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import memrules

ROOT = Path(__file__).resolve().parents[2]

# The methods the guides and the README call on a config or a pipeline.
DOCUMENTED = {
    "MemoryConfig": ("close", "route_config"),
    "Pipeline": (
        "apply",
        "apply_async",
        "compress",
        "count",
        "measure",
        "recall",
        "remember",
        "remember_many",
        "from_config",
    ),
}


def _fresh(code: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def _documented_calls() -> set[tuple[str, str]]:
    """``(class, method)`` for each ``config.x(`` / ``pipeline.x(`` the docs show."""
    found = set()
    variable = {"config": "MemoryConfig", "pipeline": "Pipeline"}
    for page in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        text = page.read_text(encoding="utf-8")
        for name, method in re.findall(r"\b(config|pipeline|MemoryConfig|Pipeline)\.(\w+)\(", text):
            found.add((variable.get(name, name), method))
    return found


def test_the_table_holds_every_method_the_docs_call() -> None:
    table = {(cls, m) for cls, methods in DOCUMENTED.items() for m in methods}
    assert _documented_calls() <= table


def test_the_documented_methods_exist_after_import_memrules_alone() -> None:
    got = _fresh(
        f"""
        import json
        import memrules
        table = {DOCUMENTED!r}
        print(json.dumps({{
            cls: [m for m in methods if not callable(getattr(getattr(memrules, cls), m, None))]
            for cls, methods in table.items()
        }}))
        """
    )
    assert got == {cls: [] for cls in DOCUMENTED}


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_a_fresh_class_has_every_public_attribute_this_process_sees(name: str) -> None:
    here = sorted(a for a in dir(getattr(memrules, name)) if not a.startswith("_"))
    got = _fresh(
        f"""
        import json
        import memrules
        cls = memrules.{name}
        print(json.dumps({{"names": sorted(a for a in dir(cls) if not a.startswith("_"))}}))
        """
    )
    assert got["names"] == here


def test_routes_and_close_work_in_a_fresh_interpreter() -> None:
    got = _fresh(
        """
        import json
        import memrules
        config = memrules.load_config("max_messages: 4\\nroutes:\\n  short: {max_messages: 2}\\n")
        short = memrules.MemoryPlugin.from_config(config, route="short")
        default = memrules.MemoryPlugin.from_config(config)
        config.close()
        print(json.dumps({
            "plugin": type(short).__name__,
            "short": short.config.max_messages,
            "default": default.config is config,
        }))
        """
    )
    assert got == {"plugin": "MemoryPlugin", "short": 2, "default": True}


def test_the_default_route_test_passes_when_run_alone() -> None:
    test = "tests/memory/test_memory_config.py::test_a_single_pipeline_file_is_the_default_route"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-2000:]
