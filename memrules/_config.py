"""Configuration: :class:`MemoryConfig`, and reading it from YAML.

Keys are the seed's ``MemoryConfig`` names. Everything is validated when the
config is built, all problems gathered into one :class:`ConfigError` that
names the file, the YAML path and the line of each::

    context_window_tokens: 256
    max_messages: 6
    strategies:
      - type: sliding_window
        keep_messages: 4

YAML tells an absent key from a null one, so ``max_tokens`` alone replaces
the default ``max_fraction`` (0.8); ``max_fraction: null`` is still accepted,
and setting both is an error.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from memrules._budget import ContextWindowResolver, Trigger
from memrules._errors import ConfigError, ConfigProblem, EncodingError
from memrules._interpreter import NamedStrategy
from memrules._tokens import load_encoding
from memrules._typing import DEFAULT_WARNING_MARKER, Strategy, StrategyFactory
from memrules._usage import ContextUsageObserver
from memrules._yaml import Node, parse_yaml
from memrules.strategies import BUILTIN_ORDER, STRATEGIES

__all__ = [
    "ENTRY_POINT_GROUP",
    "MemoryConfig",
    "build_strategies",
    "default_strategies",
    "load_config",
    "strategy_factory",
]

ENTRY_POINT_GROUP = "memrules.strategies"


def strategy_factory(func: StrategyFactory) -> StrategyFactory:
    """Mark ``func`` as a factory for ``type: "pkg.mod:func"`` and entry
    points: it is called with the YAML parameters and returns the strategy.
    An unmarked callable is taken to be the strategy itself."""
    func.__memrules_factory__ = True  # type: ignore[attr-defined]
    return func


def _named(value: NamedStrategy | Strategy) -> NamedStrategy:
    if isinstance(value, NamedStrategy):
        return value
    if not callable(value):
        msg = f"strategies must be callables, got {value!r}"
        raise ConfigError.single(msg, yaml_path="strategies")
    name = getattr(value, "__name__", None) or repr(value).split("(", 1)[0]
    return NamedStrategy(name=name, strategy=value)


def _strategies(values: Iterable[NamedStrategy | Strategy]) -> tuple[NamedStrategy, ...]:
    return tuple(_named(v) for v in values)


def default_strategies() -> tuple[NamedStrategy, ...]:
    """The seed's default pipeline: the eight built-ins, each with defaults."""
    return tuple(NamedStrategy(name=n, strategy=STRATEGIES[n]()) for n in BUILTIN_ORDER)


def _observers(values: Iterable[ContextUsageObserver]) -> tuple[ContextUsageObserver, ...]:
    return tuple(values)


def _default_fraction(config: MemoryConfig) -> float | None:
    return None if config.max_tokens is not None else 0.8


def _positive(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = f"{attribute.name}={value!r} must be a whole number of at least 1"
        raise ConfigError.single(msg, yaml_path=attribute.name)


def _fraction(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        msg = f"{attribute.name}={value!r} must be a number above 0 and at most 1"
        raise ConfigError.single(msg, yaml_path=attribute.name)


@attrs.frozen(kw_only=True, slots=True)
class MemoryConfig:
    """Everything that shapes compaction, validated on construction.

    ``strategies`` are strategy callables (or :class:`NamedStrategy`), the
    seed's eight by default. ``observers`` and ``context_window_resolver``
    are used by :class:`~memrules._plugin.MemoryPlugin`. ``source`` is the
    file the config came from, if any.
    """

    encoder_name: str = "cl100k_base"
    context_window_tokens: int = attrs.field(default=128_000, validator=_positive)
    max_messages: int | None = attrs.field(default=None, validator=_positive)
    max_tokens: int | None = attrs.field(default=None, validator=_positive)
    max_fraction: float | None = attrs.field(
        default=attrs.Factory(_default_fraction, takes_self=True), validator=_fraction
    )
    warn_fraction: float | None = attrs.field(default=None, validator=_fraction)
    offload_turns: int = attrs.field(default=10, validator=_positive)
    warning_marker: str = DEFAULT_WARNING_MARKER
    repair: bool = False
    user_first: bool = False
    strategies: tuple[NamedStrategy, ...] = attrs.field(
        factory=default_strategies, converter=_strategies
    )
    observers: tuple[ContextUsageObserver, ...] = attrs.field(default=(), converter=_observers)
    context_window_resolver: ContextWindowResolver | None = None
    source: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.max_tokens is not None and self.max_fraction is not None:
            msg = (
                f"max_tokens={self.max_tokens!r} and max_fraction={self.max_fraction!r} are "
                "both set; keep one (max_tokens alone replaces the default max_fraction)"
            )
            raise ConfigError.single(msg, yaml_path="max_fraction", path=self.source)
        if not self.warning_marker:
            msg = "warning_marker='' cannot mark anything"
            raise ConfigError.single(msg, yaml_path="warning_marker", path=self.source)

    @property
    def trigger(self) -> Trigger:
        return Trigger(
            max_messages=self.max_messages,
            max_tokens=self.max_tokens,
            max_fraction=self.max_fraction,
            context_window_tokens=self.context_window_tokens,
        )


# --- reading YAML -----------------------------------------------------------

_SCALARS: dict[str, tuple[Callable[[object], bool], str]] = {
    "encoder_name": (lambda v: isinstance(v, str) and bool(v), "an encoder or model name"),
    "context_window_tokens": (lambda v: _is_int(v) and v >= 1, "a whole number ≥ 1"),  # type: ignore[operator]
    "max_messages": (lambda v: v is None or (_is_int(v) and v >= 1), "a whole number ≥ 1 or null"),  # type: ignore[operator]
    "max_tokens": (lambda v: v is None or (_is_int(v) and v >= 1), "a whole number ≥ 1 or null"),  # type: ignore[operator]
    "max_fraction": (lambda v: v is None or _is_fraction(v), "a number in (0, 1] or null"),
    "warn_fraction": (lambda v: v is None or _is_fraction(v), "a number in (0, 1] or null"),
    "offload_turns": (lambda v: _is_int(v) and v >= 1, "a whole number ≥ 1"),  # type: ignore[operator]
    "warning_marker": (lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
    "repair": (lambda v: isinstance(v, bool), "true or false"),
    "user_first": (lambda v: isinstance(v, bool), "true or false"),
}
KNOWN_KEYS = (*_SCALARS, "strategies")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_fraction(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"{type(value).__name__} {value!r}"


def _read_source(source: str | Path) -> tuple[str, str | None]:
    """The YAML text and its file name. A ``Path``, or a one-line string that
    names an existing file or ends in .yaml/.yml, is a file; else YAML text."""
    is_path = isinstance(source, Path) or (
        "\n" not in source and (source.endswith((".yaml", ".yml")) or Path(source).is_file())
    )
    if not is_path:
        return str(source), None
    path = str(source)
    try:
        return Path(path).read_text(encoding="utf-8"), path
    except OSError as exc:
        msg = f"cannot read config: {exc.strerror or exc}"
        raise ConfigError.single(msg, path=path) from None
    except UnicodeDecodeError as exc:
        msg = f"config is not UTF-8 text: {exc.reason}"
        raise ConfigError.single(msg, path=path) from None


def load_config(
    source: str | Path,
    *,
    registry: Mapping[str, StrategyFactory] | None = None,
) -> MemoryConfig:
    """Read and validate a YAML config from a file path or YAML text.

    Raises one :class:`ConfigError` listing every problem found.
    """
    text, path = _read_source(source)
    root = parse_yaml(text, path=path)
    problems: list[ConfigProblem] = []
    fields: dict[str, Any] = {}
    if root is not None:
        if not root.is_mapping:
            msg = f"a config is a mapping of settings, got {_type_name(root.value)}"
            raise ConfigError.single(msg, path=path, line=root.line)
        for key, node in root.value.items():
            key_line = root.key_lines[key]
            if key == "strategies":
                continue
            if key not in _SCALARS:
                known = ", ".join(KNOWN_KEYS)
                problems.append(
                    ConfigProblem(
                        message=f"unknown key {key!r}; known keys: {known}",
                        yaml_path=key,
                        line=key_line,
                    )
                )
                continue
            check, expected = _SCALARS[key]
            if not check(node.value):
                problems.append(
                    ConfigProblem(
                        message=f"expected {expected}, got {_type_name(node.value)}",
                        yaml_path=key,
                        line=node.line,
                    )
                )
                continue
            fields[key] = node.value
        if "strategies" in root.value:
            built = _build_from_yaml(
                root.value["strategies"], STRATEGIES if registry is None else registry
            )
            if isinstance(built, list):
                problems.extend(built)
            else:
                fields["strategies"] = built
        encoder = fields.get("encoder_name")
        if encoder is not None:
            try:
                load_encoding(encoder)
            except EncodingError as exc:
                line = root.value["encoder_name"].line
                problems.append(
                    ConfigProblem(message=str(exc), yaml_path="encoder_name", line=line)
                )
        if fields.get("max_tokens") is not None and fields.get("max_fraction") is not None:
            problems.append(
                ConfigProblem(
                    message=(
                        f"max_tokens={fields['max_tokens']!r} and "
                        f"max_fraction={fields['max_fraction']!r} are both set; keep one "
                        "(max_tokens alone replaces the default max_fraction)"
                    ),
                    yaml_path="max_fraction",
                    line=root.value["max_fraction"].line,
                )
            )
    if problems:
        raise ConfigError(sorted(problems, key=lambda p: p.line or 0), path=path)
    return MemoryConfig(**fields, source=path)


def _build_from_yaml(
    node: Node, registry: Mapping[str, StrategyFactory]
) -> tuple[NamedStrategy, ...] | list[ConfigProblem]:
    if not node.is_sequence:
        return [
            ConfigProblem(
                message=f"expected a list of strategies, got {_type_name(node.plain())}",
                yaml_path="strategies",
                line=node.line,
            )
        ]
    problems: list[ConfigProblem] = []
    built: list[NamedStrategy] = []
    for i, item in enumerate(node.value):
        where = f"strategies[{i}]"
        result = _build_one(item, where, registry)
        if isinstance(result, list):
            problems.extend(result)
        else:
            built.append(result)
    return problems if problems else tuple(built)


def _resolve(name: str, registry: Mapping[str, StrategyFactory]) -> tuple[Any, bool] | str:
    """The factory or strategy a ``type`` names, and whether it is a factory."""
    if name in registry:
        return registry[name], True
    if ":" in name:
        module_name, _, attr_path = name.partition(":")
        try:
            target: Any = importlib.import_module(module_name)
            for part in attr_path.split("."):
                target = getattr(target, part)
        except ImportError as exc:
            return f"cannot import {module_name!r}: {exc}"
        except AttributeError:
            return f"{module_name!r} has no attribute {attr_path!r}"
        if not callable(target):
            return f"{name!r} is {type(target).__name__}, not a callable"
        return target, bool(getattr(target, "__memrules_factory__", False))
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP, name=name):
        try:
            target = entry.load()
        except Exception as exc:
            return f"entry point {name!r} ({entry.value}) failed to load: {exc}"
        return target, bool(getattr(target, "__memrules_factory__", False))
    known = ", ".join(sorted(registry))
    return (
        f"unknown strategy type {name!r}; known types: {known}; or 'package.module:function', "
        f"or an entry point in the {ENTRY_POINT_GROUP!r} group"
    )


def _build_one(
    item: Node, where: str, registry: Mapping[str, StrategyFactory]
) -> NamedStrategy | list[ConfigProblem]:
    if not item.is_mapping:
        message = f"a strategy is a mapping with a 'type' key, got {_type_name(item.plain())}"
        return [ConfigProblem(message=message, yaml_path=where, line=item.line)]
    type_node = item.value.get("type")
    if type_node is None or not isinstance(type_node.value, str) or not type_node.value:
        message = "a strategy needs a 'type' key naming it"
        return [ConfigProblem(message=message, yaml_path=f"{where}.type", line=item.line)]
    name = type_node.value
    resolved = _resolve(name, registry)
    if isinstance(resolved, str):
        return [ConfigProblem(message=resolved, yaml_path=f"{where}.type", line=type_node.line)]
    target, is_factory = resolved
    params = {k: v for k, v in item.value.items() if k != "type"}
    if not is_factory:
        if params:
            message = (
                f"{name!r} is a strategy function and takes no parameters; got "
                f"{', '.join(sorted(params))} (decorate a factory with @strategy_factory)"
            )
            return [ConfigProblem(message=message, yaml_path=where, line=item.line)]
        return NamedStrategy(name=name, strategy=target)
    return _call_factory(name, target, params, item, where)


def _call_factory(
    name: str, factory: StrategyFactory, params: Mapping[str, Node], item: Node, where: str
) -> NamedStrategy | list[ConfigProblem]:
    problems: list[ConfigProblem] = []
    signature = inspect.signature(factory)
    accepted = {
        p.name: p
        for p in signature.parameters.values()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    }
    takes_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    try:
        hints = typing.get_type_hints(factory)
    except Exception:
        hints = {}
    kwargs: dict[str, Any] = {}
    for key, node in params.items():
        path = f"{where}.{key}"
        if key not in accepted and not takes_any:
            known = ", ".join(accepted) or "none"
            message = f"unknown parameter {key!r} for {name}; known parameters: {known}"
            problems.append(
                ConfigProblem(message=message, yaml_path=path, line=item.key_lines[key])
            )
            continue
        value = node.plain()
        hint = hints.get(key)
        if hint is not None:
            checked = _check_type(value, hint)
            if isinstance(checked, _Expected):
                message = f"expected {checked.what}, got {_type_name(value)}"
                problems.append(ConfigProblem(message=message, yaml_path=path, line=node.line))
                continue
            value = checked
        kwargs[key] = value
    missing = [p.name for p in accepted.values() if p.default is p.empty and p.name not in params]
    for key in missing:
        message = f"{name} needs parameter {key!r}"
        problems.append(ConfigProblem(message=message, yaml_path=where, line=item.line))
    if problems:
        return problems
    try:
        strategy = factory(**kwargs)
    except (ValueError, TypeError) as exc:
        text = str(exc)
        key = text.split("=", 1)[0] if "=" in text else ""
        if key in params:
            return [ConfigProblem(message=text, yaml_path=f"{where}.{key}", line=params[key].line)]
        return [ConfigProblem(message=text, yaml_path=where, line=item.line)]
    if not callable(strategy):
        message = f"{name} returned {type(strategy).__name__}, not a strategy"
        return [ConfigProblem(message=message, yaml_path=where, line=item.line)]
    return NamedStrategy(name=name, strategy=strategy)


@attrs.frozen(slots=True)
class _Expected:
    """What a parameter should have been, when the YAML value does not fit."""

    what: str


def _check_type(value: object, hint: Any) -> object:
    """``value`` (converted where YAML's form differs, lists to tuples, ints
    to floats) if it fits ``hint``, else an :class:`_Expected`."""
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
        if not isinstance(value, tuple):
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


def build_strategies(
    specs: Sequence[Mapping[str, Any]],
    *,
    registry: Mapping[str, StrategyFactory] | None = None,
) -> tuple[NamedStrategy, ...]:
    """Build strategies from plain mappings (``{"type": ..., **params}``),
    as the ``strategies`` key of a YAML config would."""
    import yaml

    return load_config(yaml.safe_dump({"strategies": list(specs)}), registry=registry).strategies
