"""The strategy registry (YAML ``type`` name → factory) and the one check of
factory parameters.

The built-ins register themselves in one private dict with `register`;
`STRATEGIES` is a read-only view of it, and the default registry of
`load_config`. Nothing adds to it at run time: custom
strategies come from ``type: "package.module:function"`` (a module the caller
allows), the ``memrules.strategies`` entry-point group, or a registry of your
own, ``load_config(..., registry={**STRATEGIES, "mine": factory})``.

Every registered factory, and every custom one marked with
`strategy_factory`, is wrapped by `checked_factory`: its keyword
arguments are checked against its annotations, lists become tuples and
whole numbers become floats where a float is asked for, and anything it
cannot use raises one `ConfigError` naming ``param=value``,
from YAML and from Python alike: ``sliding_window(keep_messages="four")``
raises ``ConfigError`` with ``keep_messages='four' must be a whole number or
null``, as the YAML ``keep_messages: four`` does (with the file and line).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, TypeVar

import attrs

from memrules._core.errors import ConfigError, ConfigProblem
from memrules._engine.contract import StrategyFactory

__all__ = [
    "BUILTIN_ORDER",
    "RECIPE",
    "STRATEGIES",
    "checked_factory",
    "describe",
    "near_miss",
    "register",
    "show",
    "strategy_factory",
]

_REGISTRY: dict[str, StrategyFactory] = {}

STRATEGIES: Mapping[str, StrategyFactory] = types.MappingProxyType(_REGISTRY)
"""The built-in strategy factories by YAML ``type`` name (read-only)."""

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
"""The default pipeline, in order."""

F = TypeVar("F", bound=StrategyFactory)


def register(
    name: str, registry: MutableMapping[str, StrategyFactory] | None = None
) -> Callable[[F], F]:
    """Register a factory under its YAML ``type`` name, wrapped by
    `checked_factory`; the built-ins' registry unless ``registry`` is
    given (a dict of your own, to pass to ``load_config(registry=...)``).

    The factory takes the YAML parameters as keyword-only arguments, with
    annotations the check reads, and returns the strategy.
    """
    target = _REGISTRY if registry is None else registry

    def decorate(factory: F) -> F:
        if name in target:
            msg = f"strategy type {name!r} is already registered"
            raise ValueError(msg)
        checked = checked_factory(factory, name=name)
        target[name] = checked
        return checked

    return decorate


RECIPE = "__memrules_recipe__"
"""The attribute a factory-built closure carries: the factory's import path
(``"package.module:function"``) and the parameters it was built with, so a
trace can record them and a replay can build the same strategy again."""


def _keep_recipe(strategy: object, factory: Callable[..., Any], params: Mapping[str, Any]) -> None:
    """Mark a closure (or a ``functools.partial``) that ``factory`` built with
    what built it. Attrs instances are written down by their fields, and a
    shared module-level function is never marked (it would be marked for
    every caller); a factory that cannot be imported again (defined in
    ``__main__`` or inside a function) leaves it unmarked."""
    fresh = isinstance(strategy, functools.partial) or (
        isinstance(strategy, types.FunctionType) and bool(strategy.__closure__)
    )
    module = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", "")
    if not fresh or attrs.has(type(strategy)) or not module or module == "__main__":
        return
    if "<" in qualname:
        return
    try:
        setattr(strategy, RECIPE, {"factory": f"{module}:{qualname}", "parameters": dict(params)})
    except (AttributeError, TypeError):  # an object that takes no attributes
        return


def strategy_factory(func: F) -> F:
    """Mark ``func`` as a strategy factory, for ``type: "pkg.mod:func"`` and
    entry points: it is called with the YAML parameters as keyword arguments
    (checked against its annotations, as the built-ins' are) and returns the
    strategy. A callable without this mark is taken to be the strategy itself.
    """
    return checked_factory(func, name=getattr(func, "__name__", repr(func)))


def describe(name: str, instance: attrs.AttrsInstance) -> str:
    """A repr that reads like the YAML that built ``instance``."""
    fields = attrs.fields(type(instance))
    values = ((f.name, getattr(instance, f.name)) for f in fields if f.init)
    args = ", ".join(f"{name}={value!r}" for name, value in values if value is not None)
    return f"{name}({args})"


def near_miss(word: str, known: typing.Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``known``, or ``""``."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def show(value: object) -> str:
    """``value`` as its ``repr``, with frozen YAML values shown as written."""
    if isinstance(value, tuple):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k!r}: {show(v)}" for k, v in value.items()) + "}"
    return repr(value)


# --- the parameter check -------------------------------------------------------


@attrs.frozen(slots=True)
class _Expected:
    """What a parameter should have been."""

    what: str


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_type(value: object, hint: Any) -> object:
    """``value`` (lists to tuples, whole numbers to floats) if it fits
    ``hint``, else an `_Expected`. Hints it does not know pass."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        for option in options:
            checked = _check_type(value, option)
            if not isinstance(checked, _Expected):
                return checked
        return _Expected(" or ".join(_describe(o) for o in options))
    if hint is type(None):
        return None if value is None else _Expected("null")
    if hint is bool:
        return value if isinstance(value, bool) else _Expected("true or false")
    if hint is int:
        return value if _is_int(value) else _Expected("a whole number")
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        return _Expected("a number")
    if hint is str:
        return value if isinstance(value, str) else _Expected("a string")
    if origin is tuple:
        if not isinstance(value, (tuple, list)):
            return _Expected(_describe(hint))
        args = typing.get_args(hint)
        item_hint = args[0] if args else Any
        items = [_check_type(v, item_hint) for v in value]
        if any(isinstance(v, _Expected) for v in items):
            return _Expected(_describe(hint))
        return tuple(items)
    return value


def _describe(hint: Any) -> str:
    if hint is type(None):
        return "null"
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        plural: dict[Any, str] = {str: "strings", int: "whole numbers", float: "numbers"}
        inner = plural.get(args[0] if args else None, "values")
        return f"a list of {inner}"
    names = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}
    return names.get(hint, getattr(hint, "__name__", str(hint)))


def _hints(factory: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(factory)
    except Exception:  # annotations that do not resolve: checked by the factory alone
        return {}


def _relocate(error: ConfigError, params: Mapping[str, object]) -> list[ConfigProblem]:
    """The factory's own problems, each at the parameter it names."""
    problems = []
    for p in error.problems:
        yaml_path = p.yaml_path
        if not yaml_path:
            named = p.message.split("=", 1)[0]
            yaml_path = named if named in params else ""
        problems.append(attrs.evolve(p, yaml_path=yaml_path))
    return problems


def checked_factory(factory: F, *, name: str) -> F:
    """``factory`` wrapped so that its arguments are checked before it runs.

    Unknown parameters (with a near-miss hint), missing ones, and values that
    do not fit the annotations are gathered into one `ConfigError`
    whose problems name each parameter as their ``yaml_path``; so is a
    ``ValueError`` or ``TypeError`` the factory raises (its minimums), and a
    result that is not callable. A factory already checked is returned as is.
    """
    if getattr(factory, "__memrules_checked__", False):
        return factory
    signature = inspect.signature(factory)
    accepted = {
        p.name: p
        for p in signature.parameters.values()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    }
    takes_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    hints: dict[str, Any] | None = None

    @functools.wraps(factory)
    def build(*args: Any, **params: Any) -> Any:
        nonlocal hints
        if hints is None:
            hints = _hints(factory)
        if args:
            msg = f"{name} takes keyword arguments only, got {len(args)} positional"
            raise ConfigError.single(msg)
        problems: list[ConfigProblem] = []
        kwargs: dict[str, Any] = {}
        for key, value in params.items():
            if key not in accepted and not takes_any:
                known = ", ".join(accepted) or "none"
                message = (
                    f"unknown parameter {key!r} for {name}{near_miss(key, accepted)}; "
                    f"known parameters: {known}"
                )
                problems.append(ConfigProblem(message=message, yaml_path=key))
                continue
            hint = hints.get(key)
            checked = value if hint is None else _check_type(value, hint)
            if isinstance(checked, _Expected):
                message = f"{key}={show(value)} must be {checked.what}"
                problems.append(ConfigProblem(message=message, yaml_path=key))
                continue
            kwargs[key] = checked
        for key, p in accepted.items():
            if p.default is p.empty and key not in params:
                problems.append(ConfigProblem(message=f"{name} needs parameter {key!r}"))
        if problems:
            raise ConfigError(problems)
        try:
            strategy = factory(**kwargs)
        except ConfigError as exc:
            raise ConfigError(_relocate(exc, params)) from None
        except (ValueError, TypeError) as exc:
            error = ConfigError.single(" ".join(str(exc).split()) or type(exc).__name__)
            raise ConfigError(_relocate(error, params)) from None
        if not callable(strategy):
            msg = f"{name} returned {type(strategy).__name__}, not a strategy"
            raise ConfigError.single(msg)
        _keep_recipe(strategy, factory, kwargs)
        return strategy

    build.__memrules_factory__ = True  # type: ignore[attr-defined]
    build.__memrules_checked__ = True  # type: ignore[attr-defined]
    return typing.cast(F, build)
