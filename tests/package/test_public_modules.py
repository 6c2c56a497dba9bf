"""Public names report the public module users import them from (``__module__``),
and still pickle, resolve their annotations and repr as attrs makes them."""

from __future__ import annotations

import importlib
import pickle
import sys
import types
import typing
from typing import Any

import attrs
import pytest

import memrules
from memrules.integrations._extras import MissingExtraError

PACKAGES = [
    "memrules",
    "memrules.graph",
    "memrules.state",
    "memrules.memory",
    "memrules.strategies",
    "memrules.testing",
    "memrules.datasets",
    "memrules.observability",
    "memrules.integrations.langchain",
    "memrules.integrations.openai_agents",
    "memrules.integrations.pydantic_ai",
    "memrules.integrations.llama_index",
    "memrules.integrations.autogen",
    "memrules.integrations.otel",
    "memrules.integrations.prometheus",
]


def _has_own_module(value: object) -> bool:
    return isinstance(value, types.FunctionType) or (
        isinstance(value, type) and issubclass(type(value), type)
    )


def _exported(package: str) -> list[tuple[str, Any]]:
    """The classes and functions ``package`` exports; a test of an
    integration whose framework is not installed skips, naming its extra."""
    try:
        module = importlib.import_module(package)
    except MissingExtraError as exc:
        pytest.skip(str(exc))
    return [
        (name, getattr(module, name))
        for name in module.__all__
        if _has_own_module(getattr(module, name))
    ]


def _expected(package: str, name: str, value: object) -> str:
    """The shortest public path that exports ``value``."""
    if getattr(memrules, name, None) is value:
        return "memrules"
    return package


@pytest.mark.parametrize("package", PACKAGES)
def test_each_public_name_reports_its_public_module(package: str) -> None:
    exported = _exported(package)
    assert exported
    wrong = {
        name: value.__module__
        for name, value in exported
        if value.__module__ != _expected(package, name, value)
    }
    assert wrong == {}
    for name, value in exported:  # and can be found there
        assert getattr(sys.modules[value.__module__], name) is value


def test_classes_repr_by_their_public_path() -> None:
    assert repr(memrules.Message) == "<class 'memrules.Message'>"
    assert repr(memrules.ConfigError) == "<class 'memrules.ConfigError'>"
    graph = importlib.import_module("memrules.graph")
    assert repr(graph.MemoryGraph) == "<class 'memrules.graph.MemoryGraph'>"
    assert memrules.load_config.__module__ == "memrules"


def test_public_values_still_pickle() -> None:
    message = memrules.Message(role="user", parts=(memrules.Text(text="hi"),))
    values: list[Any] = [
        message,
        memrules.Budget.tokens(100),
        memrules.StopReason.UNDER_BUDGET,
        memrules.TraceError("bad"),
        memrules.Message,
        memrules.load_config,
    ]
    for value in values:
        back = pickle.loads(pickle.dumps(value))
        if isinstance(value, Exception):
            assert type(back) is type(value)
            assert back.args == value.args
        else:
            assert back == value
    assert b"memrules._core" not in pickle.dumps(message)


def test_attrs_classes_keep_their_repr_and_annotations() -> None:
    message = memrules.Message(role="user", parts=(memrules.Text(text="hi"),))
    assert repr(message).startswith("Message(role='user', parts=(Text(text='hi'")
    assert attrs.evolve(message, role="assistant").role == "assistant"
    for package in PACKAGES:
        try:
            importlib.import_module(package)
        except MissingExtraError:
            continue  # an integration whose framework is not installed
        for _, value in _exported(package):
            if isinstance(value, type) and attrs.has(value):
                hints = typing.get_type_hints(value)
                attrs.resolve_types(value)
                assert set(hints) >= {f.name for f in attrs.fields(value)}


def test_each_name_reports_the_one_package_that_exports_it() -> None:
    graph = importlib.import_module("memrules.graph")
    assert memrules.ConversationState.__module__ == "memrules"
    assert memrules.GraphError.__module__ == "memrules"
    state = importlib.import_module("memrules.state")
    assert state.ValkeyStateStore.__module__ == "memrules.state"
    assert state.StateStore.__module__ == "memrules.state"
    assert graph.GraphLimits.__module__ == "memrules.graph"
