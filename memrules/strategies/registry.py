"""The strategy registry: YAML ``type`` name → factory.

One dict, filled by :func:`register`. The interpreter is handed a registry as
an argument; :data:`STRATEGIES` is the default that holds the built-ins.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import TypeVar

import attrs

from memrules._typing import StrategyFactory

__all__ = ["BUILTIN_ORDER", "STRATEGIES", "describe", "register"]

STRATEGIES: dict[str, StrategyFactory] = {}

BUILTIN_ORDER = (
    "offload",
    "summarize",
    "deduplicate_file_reads",
    "clear_tool_results",
    "clamp_oversized_messages",
    "sliding_window",
    "drop_observations",
    "drop_turns",
)
"""The seed's default pipeline, in order."""

F = TypeVar("F", bound=StrategyFactory)


def register(
    name: str, registry: MutableMapping[str, StrategyFactory] | None = None
) -> Callable[[F], F]:
    """Register a strategy factory under its YAML ``type`` name.

    The factory takes the YAML parameters as keyword-only arguments, with
    type annotations the config loader checks, and returns the strategy.
    """
    target = STRATEGIES if registry is None else registry

    def decorate(factory: F) -> F:
        if name in target:
            msg = f"strategy type {name!r} is already registered"
            raise ValueError(msg)
        target[name] = factory
        return factory

    return decorate


def describe(name: str, instance: attrs.AttrsInstance) -> str:
    """A repr that reads like the YAML that built ``instance``."""
    fields = attrs.fields(type(instance))
    values = ((f.name, getattr(instance, f.name)) for f in fields if f.init)
    args = ", ".join(f"{name}={value!r}" for name, value in values if value is not None)
    return f"{name}({args})"
