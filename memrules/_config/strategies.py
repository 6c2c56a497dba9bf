"""Building the strategies a config's ``strategies:`` list names: built-ins,
installed distributions' (the ``memrules.strategies`` entry-point group), and
modules the caller allows (``allow_imports``), each checked when it is built
and its problems placed at their YAML path and line."""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from memrules._config.keys import ENTRY_POINT_GROUP, MOVED, parameters, type_name
from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.yaml_nodes import Node
from memrules._engine.contract import StrategyFactory
from memrules._engine.interpreter import NamedStrategy
from memrules.strategies.min_step import min_step
from memrules.strategies.registry import checked_factory, near_miss

__all__ = ["build_from_yaml", "unknown_key"]


def unknown_key(key: str, registry: Mapping[str, StrategyFactory], known: Sequence[str]) -> str:
    """What to say of a top-level ``key`` that is none of the ``known`` ones."""
    if key in MOVED:
        return f"unknown key {key!r}; {MOVED[key]}"
    owners = [name for name, factory in registry.items() if key in parameters(factory)]
    if owners:
        return (
            f"unknown key {key!r}; it is a parameter of {', '.join(owners)}: "
            f"set it on a strategies entry of that type"
        )
    return f"unknown key {key!r}{near_miss(key, known)}; known keys: {', '.join(known)}"


def build_from_yaml(
    node: Node, registry: Mapping[str, StrategyFactory], allowed: bool | tuple[str, ...]
) -> tuple[NamedStrategy, ...] | list[ConfigProblem]:
    if not node.is_sequence:
        return [
            ConfigProblem(
                message=f"expected a list of strategies, got {type_name(node.plain())}",
                yaml_path="strategies",
                line=node.line,
            )
        ]
    problems: list[ConfigProblem] = []
    built: list[NamedStrategy] = []
    for i, item in enumerate(node.value):
        result = _build_one(item, f"strategies[{i}]", registry, allowed)
        if isinstance(result, list):
            problems.extend(result)
        else:
            built.append(result)
    return problems if problems else tuple(built)


_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def _allows(allowed: bool | tuple[str, ...], module: str) -> bool:
    if isinstance(allowed, bool):
        return allowed
    return any(module == a or module.startswith(a + ".") for a in allowed)


def _import(name: str, allowed: bool | tuple[str, ...]) -> tuple[Any, bool] | str:
    """The callable ``package.module:attr`` names, imported only from an allowed module."""
    module_name, _, attr_path = name.partition(":")
    if not _MODULE.fullmatch(module_name) or not attr_path:
        return f"{name!r} is not 'package.module:function'"
    if not _allows(allowed, module_name):
        return (
            f"importing {module_name!r} is not allowed: a config imports only the modules its "
            f"caller allows (load_config(..., allow_imports=[{module_name!r}]), or "
            f"memrules compact --allow-imports {module_name}); entry points need no allowing"
        )
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        return f"cannot import {module_name!r}: {exc}"
    except Exception as exc:
        return f"importing {module_name!r} failed: {type(exc).__name__}: {exc}"
    try:
        for part in attr_path.split("."):
            target = getattr(target, part)
    except AttributeError:
        return f"{module_name!r} has no attribute {attr_path!r}"
    if not callable(target):
        return f"{name!r} is {type(target).__name__}, not a callable"
    return target, bool(getattr(target, "__memrules_factory__", False))


def _resolve(
    name: str, registry: Mapping[str, StrategyFactory], allowed: bool | tuple[str, ...]
) -> tuple[Any, bool] | str:
    """The factory or strategy a ``type`` names, and whether it is a factory;
    or what is wrong."""
    if name in registry:
        return checked_factory(registry[name], name=name), True
    if ":" in name:
        return _import(name, allowed)
    import importlib.metadata  # only for a name no registry knows: it is slow to import

    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP, name=name):
        try:
            target = entry.load()
        except Exception as exc:
            return f"entry point {name!r} ({entry.value}) failed to load: {exc}"
        return target, bool(getattr(target, "__memrules_factory__", False))
    known = ", ".join(sorted(registry))
    return (
        f"unknown strategy type {name!r}{near_miss(name, registry)}; known types: {known}; "
        f"or 'package.module:function' (an allowed import), or an entry point in the "
        f"{ENTRY_POINT_GROUP!r} group"
    )


def _build_one(
    item: Node, where: str, registry: Mapping[str, StrategyFactory], allowed: bool | tuple[str, ...]
) -> NamedStrategy | list[ConfigProblem]:
    if not item.is_mapping:
        message = f"a strategy is a mapping with a 'type' key, got {type_name(item.plain())}"
        return [ConfigProblem(message=message, yaml_path=where, line=item.line)]
    type_node = item.value.get("type")
    if type_node is None or not isinstance(type_node.value, str) or not type_node.value:
        message = "a strategy needs a 'type' key naming it"
        return [ConfigProblem(message=message, yaml_path=f"{where}.type", line=item.line)]
    name = type_node.value
    resolved = _resolve(name, registry, allowed)
    if isinstance(resolved, str):
        return [ConfigProblem(message=resolved, yaml_path=f"{where}.type", line=type_node.line)]
    target, is_factory = resolved
    params = {k: v for k, v in item.value.items() if k not in ("type", MIN_STEP)}
    step = _min_step(item, where)
    if isinstance(step, list):
        return step
    if not is_factory:
        if params:
            message = (
                f"{name!r} is a strategy function and takes no parameters; got "
                f"{', '.join(sorted(params))} (decorate a factory with @strategy_factory)"
            )
            return [ConfigProblem(message=message, yaml_path=where, line=item.line)]
        return NamedStrategy(name=name, strategy=min_step(target, step))
    try:
        strategy = target(**{k: v.plain() for k, v in params.items()})
    except ConfigError as exc:
        return [_at_parameter(p, item, where) for p in exc.problems]
    return NamedStrategy(name=name, strategy=min_step(strategy, step))


MIN_STEP = "min_step"
"""The key every ``strategies:`` entry may set: the fewest tokens a step of
that strategy must save to be kept (see `memrules.strategies.min_step`)."""


def _min_step(item: Node, where: str) -> int | list[ConfigProblem]:
    node = item.value.get(MIN_STEP)
    if node is None:
        return 0
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    message = f"min_step={value!r} must be a whole number of tokens of at least 0"
    return [ConfigProblem(message=message, yaml_path=f"{where}.{MIN_STEP}", line=node.line)]


def _at_parameter(problem: ConfigProblem, item: Node, where: str) -> ConfigProblem:
    """A factory's problem, placed at the parameter it names (or the entry)."""
    key = problem.yaml_path
    if key in item.key_lines:
        return attrs.evolve(problem, yaml_path=f"{where}.{key}", line=item.key_lines[key])
    return attrs.evolve(problem, yaml_path=where, line=item.line)
