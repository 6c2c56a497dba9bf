"""Retrieval memory's docstring examples run and say what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["memrules.memory.text", "memrules.memory.classify", "memrules.memory"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert attempted > 0
    assert failed == 0
