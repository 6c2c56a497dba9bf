"""The shape of two packages: ``memrules.testing`` is a package of private
one-job modules that exports the same names as ever, and the ``memrules``
command's entry module holds only :func:`main` and its error handling."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from pathlib import Path

import memrules.testing
from memrules._cli import main as cli_main

TESTING_NAMES = {
    "FILE_PATHS",
    "FILE_TOOL",
    "NODE_IDS",
    "RELATIONSHIP_IDS",
    "assert_invariants",
    "budgets",
    "check_strategy",
    "check_warm_equals_cold",
    "conversations",
    "graph_nodes",
    "graph_parts",
    "graph_relationships",
    "graphs",
    "messages",
    "parts",
    "register_profiles",
    "render",
    "texts",
}

# A module over this many lines usually does two jobs (the style guide).
MOST_LINES = 500


def _lines(module: types.ModuleType) -> int:
    return len(Path(module.__file__ or "").read_text(encoding="utf-8").splitlines())


def test_testing_exports_the_same_names() -> None:
    assert set(memrules.testing.__all__) == TESTING_NAMES
    assert len(memrules.testing.__all__) == len(TESTING_NAMES)
    for name in TESTING_NAMES:
        value = getattr(memrules.testing, name)
        if isinstance(value, types.FunctionType):
            assert value.__module__ == "memrules.testing", name


def test_testing_is_a_package_of_private_one_job_modules() -> None:
    found = list(pkgutil.iter_modules(memrules.testing.__path__))
    assert found
    for info in found:
        assert info.name.startswith("_"), info.name  # public names come from the package
        module = importlib.import_module(f"memrules.testing.{info.name}")
        assert _lines(module) <= MOST_LINES, info.name
    assert _lines(memrules.testing) <= MOST_LINES


def test_the_cli_entry_module_holds_only_main() -> None:
    defined = {
        name
        for name, value in vars(cli_main).items()
        if (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == cli_main.__name__
    }
    assert defined == {"main"}
    assert _lines(cli_main) <= MOST_LINES
    for name in ("arguments", "commands", "compact", "errors", "parser", "streams"):
        module = importlib.import_module(f"memrules._cli.{name}")  # what main's jobs went to
        assert _lines(module) <= MOST_LINES, name


# Issue 38's bound for the whole package: past it, a module is split by job.
MOST_LINES_ANYWHERE = 600


def test_no_module_of_memrules_is_over_six_hundred_lines() -> None:
    root = Path(memrules.testing.__file__).resolve().parents[1]
    over = {
        str(path.relative_to(root)): lines
        for path in root.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MOST_LINES_ANYWHERE
    }
    assert not over, over
