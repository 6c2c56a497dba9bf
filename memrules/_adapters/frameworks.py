"""Importing an optional framework, with an error that says which extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from memrules._core.errors import MemrulesError

__all__ = ["MissingExtraError", "require"]


class MissingExtraError(MemrulesError, ImportError):
    """An integration was used without the package it integrates with."""


def require(module: str, extra: str) -> ModuleType:
    """``module`` imported, or `MissingExtraError` naming the extra
    that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        msg = (
            f"this needs {module.split('.')[0]!r}, which is not installed: "
            f"pip install 'memrules[{extra}]' ({exc})"
        )
        raise MissingExtraError(msg) from None
