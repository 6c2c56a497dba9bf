"""Importing an optional framework, with an error that says which extra to
install (defined with the adapters, which import the frameworks lazily too)."""

from __future__ import annotations

from memrules._adapters.frameworks import MissingExtraError, require

__all__ = ["MissingExtraError", "require"]
