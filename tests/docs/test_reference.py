"""The API reference: every public name in one place, in the order a user meets
them, written in Markdown (no Sphinx roles) and naming no private module."""

from __future__ import annotations

import ast
import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import memrules
from tests.docs.blocks import ROOT

REFERENCE = ROOT / "docs" / "reference"
SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):`")
PRIVATE_PATH = re.compile(r"\bmemrules\.(?:\w+\.)*_\w+")

# The reference's pages in the order of the nav, as a user meets them.
ORDER = [
    "reference/pipeline.md",
    "reference/messages.md",
    "reference/converters.md",
    "reference/hook.md",
    "reference/results.md",
    "reference/strategies.md",
    "reference/counting.md",
    "reference/integrations.md",
    "reference/memory.md",
    "reference/graph.md",
    "reference/state.md",
    "reference/seams.md",
    "reference/trace.md",
    "reference/errors.md",
    "reference/testing.md",
    "reference/datasets.md",
    "reference/observability.md",
]


def _documented() -> list[str]:
    """Every ``::: identifier`` of the reference pages."""
    found: list[str] = []
    for page in sorted(REFERENCE.glob("*.md")):
        found += re.findall(r"^::: ([\w.]+)\s*$", page.read_text(encoding="utf-8"), re.MULTILINE)
    return found


def test_the_reference_is_in_the_order_a_user_meets_it() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = re.findall(r":\s+(reference/[\w-]+\.md)\s*$", nav, flags=re.MULTILINE)
    assert listed == ORDER
    first = (REFERENCE / "pipeline.md").read_text(encoding="utf-8")
    assert re.findall(r"^::: ([\w.]+)", first, re.MULTILINE)[:2] == [
        "memrules.load_pipeline",
        "memrules.Pipeline",
    ]


def test_every_top_level_name_is_in_the_reference_once() -> None:
    documented = _documented()
    top = [d.removeprefix("memrules.") for d in documented if d.count(".") == 1]
    names = [t for t in top if t in memrules.__all__]
    assert sorted(names) == sorted(memrules.__all__)
    modules = {d for d in documented if d.removeprefix("memrules.") not in memrules.__all__}
    for package in ("strategies", "graph", "memory", "seams", "testing", "datasets"):
        assert f"memrules.{package}" in modules, package


def _docstrings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_docstring(node, clean=False)
            if text is not None:
                found.append((getattr(node, "lineno", 1), text))
    return found


def test_no_docstring_has_a_sphinx_role() -> None:
    with_roles = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "memrules").rglob("*.py"))
        for line, text in _docstrings(path)
        if SPHINX_ROLE.search(text)
    ]
    assert with_roles == []


@pytest.mark.slow
def test_the_rendered_reference_names_no_private_module(tmp_path: Path) -> None:
    pytest.importorskip("mkdocstrings")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", tmp_path],
        cwd=ROOT, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = []
    for page in sorted((tmp_path / "reference").rglob("*.html")):
        text = html.unescape(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))
        shown += [f"{page.parent.name}: {m}" for m in PRIVATE_PATH.findall(text)]
        shown += [f"{page.parent.name}: a Sphinx role" for _ in SPHINX_ROLE.findall(text)]
    assert shown == []
