"""Configuration: :class:`MemoryConfig`, and reading it from YAML.

Keys are :class:`MemoryConfig`'s field names. Everything is validated when the
config is built, from Python or from YAML, by one table of settings; all
problems are gathered into one :class:`ConfigError` that names the file, the
YAML path and the line of each::

    context_window_tokens: 256
    max_messages: 6
    strategies:
      - type: sliding_window
        keep_messages: 4

YAML tells an absent key from a null one, so ``max_tokens`` alone replaces
the default ``max_fraction`` (0.8); ``max_fraction: null`` is still accepted,
and setting both is an error.

Keys whose value is a mapping (``graph_context: {max_nodes: 64}``) are
*sections*: :data:`SECTIONS` maps each to the function that reads its YAML
node into a value, placing each problem at ``key.field`` and its line.

**Trust.** A config chooses built-in strategies and their parameters, and
strategies that installed distributions publish in the ``memrules.strategies``
entry-point group. It imports a module (``type: "package.module:function"``)
only when the caller lists that module in ``allow_imports``, which a config
cannot widen; and it is read within the limits of :mod:`memrules._core.yaml_nodes`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from memrules._config.config import NO_MEMORY_STORE, MemoryConfig, default_strategies
from memrules._config.keys import (
    DEFAULT_ROUTE,
    ENTRY_POINT_GROUP,
    ESTIMATE,
    FILE_KEYS,
    SECTIONS,
    SETTINGS,
    TEXT_SOURCE,
    type_name,
)
from memrules._config.strategies import build_from_yaml as _build_from_yaml
from memrules._config.strategies import unknown_key
from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.yaml_nodes import MAX_CONFIG_BYTES, Node, locate, parse_yaml
from memrules._engine.contract import StrategyFactory
from memrules.memory.config import (
    RetrievalStoreConfig,
    stores_section,
)
from memrules.strategies import STRATEGIES
from memrules.strategies.registry import strategy_factory

__all__ = [
    "DEFAULT_ROUTE",
    "ENTRY_POINT_GROUP",
    "ESTIMATE",
    "SECTIONS",
    "SETTINGS",
    "MemoryConfig",
    "default_strategies",
    "load_config",
    "strategy_factory",
]


# --- reading YAML -------------------------------------------------------------------


def _is_file(source: str) -> bool:
    try:
        return Path(source).is_file()
    except (OSError, ValueError):  # too long for a path, or holds a NUL
        return False


def _is_text(source: str) -> bool:
    """A str that is YAML text, not a path: every non-empty config has a ':'."""
    return "\n" in source or ":" in source or source.strip() in ("", "{}")


def _read_file(path: str) -> str:
    """The file's text, refusing files over :data:`MAX_CONFIG_BYTES` before
    reading them (and reading no more than that from a pipe or device)."""
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            data = b"" if size > MAX_CONFIG_BYTES else file.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError.single("config file not found", path=path) from None
    except IsADirectoryError:
        raise ConfigError.single("is a directory, not a config file", path=path) from None
    except OSError as exc:
        msg = f"cannot read config file: {exc.strerror or exc}"
        raise ConfigError.single(msg, path=path) from None
    if size > MAX_CONFIG_BYTES or len(data) > MAX_CONFIG_BYTES:
        shown = f"{size:,} bytes" if size > MAX_CONFIG_BYTES else "over the limit"
        msg = f"config file is {shown}; the limit is {MAX_CONFIG_BYTES:,} bytes"
        raise ConfigError.single(msg, path=path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        msg = f"config file is not UTF-8 text: {exc.reason} at byte {exc.start}"
        raise ConfigError.single(msg, path=path, line=line) from None


def _read_source(source: str | Path) -> tuple[str, str | None]:
    """The YAML text and its file name (None for text).

    A ``Path`` is a file. A ``str`` is a file when it names an existing one;
    else it is YAML text when it holds a newline or a ``:`` (or is blank or
    ``{}``); else it is a file that does not exist.
    """
    if isinstance(source, Path):
        return _read_file(str(source)), str(source)
    if not isinstance(source, str):
        msg = f"a config is a Path or YAML text, got {type(source).__name__}"
        raise ConfigError.single(msg)
    if _is_file(source):
        return _read_file(source), source
    if _is_text(source):
        return source, None
    msg = "config file not found"
    if not source.endswith((".yaml", ".yml")):
        msg += " (a str with no newline and no ':' is a file path; YAML text has one)"
    raise ConfigError.single(msg, path=source)


def load_config(
    source: str | Path,
    *,
    registry: Mapping[str, StrategyFactory] | None = None,
    allow_imports: bool | Iterable[str] = (),
) -> MemoryConfig:
    """Read and validate a YAML config from a file or from YAML text.

    ``source`` is a file when it is a :class:`~pathlib.Path` or a ``str``
    naming an existing file, YAML text when it is a ``str`` with a newline or
    a ``:``; any other ``str`` is a file that was not found. Errors name the
    file, or ``<YAML text>``.

    ``registry`` maps ``type`` names to factories (the built-ins by default;
    it replaces them: pass ``{**STRATEGIES, ...}`` to add). ``allow_imports``
    lists the modules (and their submodules) that ``type:
    "package.module:function"`` may import; none by default, ``True`` for any
    (trusted configs only: importing runs the module's code). Entry points in
    the ``memrules.strategies`` group need no allowing.

    Raises one :class:`ConfigError` listing every problem found.
    """
    text, path = _read_source(source)
    label = path if path is not None else TEXT_SOURCE
    root = parse_yaml(text, path=label)
    registry = STRATEGIES if registry is None else registry
    allowed: bool | tuple[str, ...]
    if isinstance(allow_imports, bool):
        allowed = allow_imports
    elif isinstance(allow_imports, str):  # one module, not its letters
        allowed = (allow_imports,)
    else:
        allowed = tuple(allow_imports)
    if root is None:
        return MemoryConfig(source=path)
    if not root.is_mapping:
        msg = f"a config is a mapping of settings, got {type_name(root.value)}"
        raise ConfigError.single(msg, path=label, line=root.line)
    problems: list[ConfigProblem] = []
    memory_store: RetrievalStoreConfig | None = None
    stores_failed = False
    if "stores" in root.value:
        value = stores_section(root.value["stores"])
        if isinstance(value, list):
            problems.extend(_placed(p, root, "") for p in value)
            stores_failed = True
        else:
            memory_store = value
    routes: dict[str, MemoryConfig] = {}
    routes_node = root.value.get("routes")
    if routes_node is not None and routes_node.value is not None:
        if not routes_node.is_mapping:
            message = (
                "routes is a mapping of route names to their settings, got "
                f"{type_name(routes_node.plain())}"
            )
            problems.append(
                ConfigProblem(message=message, yaml_path="routes", line=routes_node.line)
            )
        else:
            for name, node in routes_node.value.items():
                built = _route_from_yaml(
                    node, f"routes.{name}.", registry, allowed, memory_store, path
                )
                if isinstance(built, list):
                    problems.extend(built)
                else:
                    routes[name] = built
    fields, found = _fields_from_yaml(root, "", registry, allowed)
    problems.extend(found)
    config: MemoryConfig | None = None
    try:
        config = MemoryConfig(**fields, memory_store=memory_store, routes=routes, source=path)
    except ConfigError as exc:
        for p in exc.problems:
            if p.yaml_path == "embedder" and "store" in root.value:
                continue  # the store: section failed, and is reported already
            problems.append(_placed(p, root, ""))
    if (
        not problems
        and config is not None
        and memory_store is not None
        and not any(c.memory is not None for c in (config, *config.routes.values()))
    ):
        message = (
            "stores.memory is set but no route has a memory: entry; add memory: {enabled: true} "
            "to the routes that should use it, or remove stores.memory"
        )
        unused = ConfigProblem(message=message, yaml_path="stores.memory")
        problems.append(_placed(unused, root, ""))
    if stores_failed:
        problems = [p for p in problems if NO_MEMORY_STORE not in p.message]
    if problems or config is None:
        raise ConfigError(sorted(problems, key=lambda p: p.line or 0), path=label)
    return config


def _placed(problem: ConfigProblem, node: Node, prefix: str) -> ConfigProblem:
    """``problem`` (at a path within ``node``) with ``prefix`` before its
    path, and its line when it has none."""
    line = problem.line if problem.line is not None else locate(node, problem.yaml_path)
    return attrs.evolve(problem, yaml_path=prefix + problem.yaml_path, line=line)


def _fields_from_yaml(
    node: Node,
    prefix: str,
    registry: Mapping[str, StrategyFactory],
    allowed: bool | tuple[str, ...],
) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """The settings of one route's mapping ``node`` (the file's top level,
    or an entry of ``routes``), and every problem found, at ``prefix`` +
    the key's path."""
    problems: list[ConfigProblem] = []
    fields: dict[str, Any] = {}
    for key, child in node.value.items():
        line = node.key_lines[key]
        if key == "strategies":
            built = _build_from_yaml(child, registry, allowed)
            if isinstance(built, list):
                problems.extend(_placed(p, node, prefix) for p in built)
            else:
                fields["strategies"] = built
        elif key in SETTINGS:
            fields[key] = child.plain()  # a list or a mapping is a wrong type: said plainly
        elif key in SECTIONS:
            value = SECTIONS[key](child)
            if isinstance(value, list):
                # A problem with the section as a whole is at its key's line.
                problems.extend(
                    _placed(attrs.evolve(p, line=line) if p.yaml_path == key else p, node, prefix)
                    for p in value
                )
            else:
                fields[key] = value
        elif key in FILE_KEYS:
            if prefix:
                message = f"{key} belongs at the top of the file, which every route shares"
                problems.append(
                    ConfigProblem(message=message, yaml_path=f"{prefix}{key}", line=line)
                )
        else:
            message = unknown_key(key, registry)
            problems.append(ConfigProblem(message=message, yaml_path=prefix + key, line=line))
    return fields, problems


def _route_from_yaml(
    node: Node,
    prefix: str,
    registry: Mapping[str, StrategyFactory],
    allowed: bool | tuple[str, ...],
    memory_store: RetrievalStoreConfig | None,
    path: str | None,
) -> MemoryConfig | list[ConfigProblem]:
    """One entry of ``routes``: a mapping of the same settings as a file's
    top level (null: every default), with the file's ``stores.memory``."""
    if node.value is None:
        return MemoryConfig(memory_store=memory_store, source=path)
    if not node.is_mapping:
        message = f"a route is a mapping of pipeline settings, got {type_name(node.plain())}"
        return [ConfigProblem(message=message, yaml_path=prefix.rstrip("."), line=node.line)]
    fields, problems = _fields_from_yaml(node, prefix, registry, allowed)
    try:
        config = MemoryConfig(**fields, memory_store=memory_store, source=path)
    except ConfigError as exc:
        problems.extend(
            _placed(p, node, prefix)
            for p in exc.problems
            if not (p.yaml_path == "embedder" and "store" in node.value)
        )
        return problems
    return problems or config
