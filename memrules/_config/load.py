"""Configuration: `MemoryConfig`, and reading a whole file into it
(the pipeline's keys and the service's: routes, stores, the graph, state,
retrieval memory; the pipeline's alone are read by `memrules._config.read`).

Keys are `MemoryConfig`'s field names. Everything is validated when the
config is built, from Python or from YAML, by one table of settings; all
problems are gathered into one `ConfigError` that names the file, the
YAML path and the line of each:

    context_window_tokens: 256
    max_messages: 6
    strategies:
      - type: sliding_window
        keep_messages: 4

YAML tells an absent key from a null one, so ``max_tokens`` alone replaces
the default ``max_fraction`` (0.8); ``max_fraction: null`` is still accepted,
and setting both is an error.

Keys whose value is a mapping (``graph_context: {max_nodes: 64}``) are
*sections*: `SECTIONS` maps each to the function that reads its YAML
node into a value, placing each problem at ``key.field`` and its line.

**Trust.** A config chooses built-in strategies and their parameters, and
strategies that installed distributions publish in the ``memrules.strategies``
entry-point group. It imports a module (``type: "package.module:function"``)
only when the caller lists that module in ``allow_imports``, which a config
cannot widen; and it is read within the limits of `memrules._core.yaml_nodes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memrules._config.config import (
    NO_MEMORY_STORE,
    MemoryConfig,
    default_strategies,
    service_config,
)
from memrules._config.keys import (
    DEFAULT_ROUTE,
    ENTRY_POINT_GROUP,
    ESTIMATE,
    SETTINGS,
    type_name,
)
from memrules._config.pipeline_config import PipelineConfig
from memrules._config.read import (
    ConfigText,
    allowed_imports,
    fields_from_yaml,
    placed,
    read_config_text,
)
from memrules._config.service_keys import FILE_KEYS, KNOWN_KEYS, SECTIONS
from memrules._config.strategies import unknown_key
from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.yaml_nodes import Node
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
    "PipelineConfig",
    "config_from_yaml",
    "default_strategies",
    "load_config",
    "service_config",
    "strategy_factory",
]


def load_config(
    source: str | Path,
    *,
    registry: Mapping[str, StrategyFactory] | None = None,
    allow_imports: bool | Iterable[str] = (),
) -> MemoryConfig:
    """Read and validate a YAML config from a file or from YAML text.

    ``source`` is a file when it is a `Path` or a ``str``
    naming an existing file, YAML text when it is a ``str`` with a newline or
    a ``:``; any other ``str`` is a file that was not found. Errors name the
    file, or ``<YAML text>``.

    ``registry`` maps ``type`` names to factories (the built-ins by default;
    it replaces them: pass ``{**STRATEGIES, ...}`` to add). ``allow_imports``
    lists the modules (and their submodules) that ``type:
    "package.module:function"`` may import; none by default, ``True`` for any
    (trusted configs only: importing runs the module's code). Entry points in
    the ``memrules.strategies`` group need no allowing.

    Raises one `ConfigError` listing every problem found.
    """
    return config_from_yaml(read_config_text(source), registry, allowed_imports(allow_imports))


def config_from_yaml(
    text: ConfigText,
    registry: Mapping[str, StrategyFactory] | None,
    allowed: bool | tuple[str, ...],
) -> MemoryConfig:
    """The `MemoryConfig` of a file read (`load_config`'s work once the file
    is read)."""
    root, path, label = text.root, text.path, text.label
    registry = STRATEGIES if registry is None else registry
    if root is None:
        return MemoryConfig(source=path)
    problems: list[ConfigProblem] = []
    memory_store: RetrievalStoreConfig | None = None
    stores_failed = False
    if "stores" in root.value:
        value = stores_section(root.value["stores"])
        if isinstance(value, list):
            problems.extend(placed(p, root, "") for p in value)
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
    fields, found = _fields(root, "", registry, allowed)
    problems.extend(found)
    config: MemoryConfig | None = None
    try:
        config = MemoryConfig(**fields, memory_store=memory_store, routes=routes, source=path)
    except ConfigError as exc:
        for p in exc.problems:
            if p.yaml_path == "embedder" and "store" in root.value:
                continue  # the store: section failed, and is reported already
            problems.append(placed(p, root, ""))
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
        problems.append(placed(unused, root, ""))
    if stores_failed:
        problems = [p for p in problems if NO_MEMORY_STORE not in p.message]
    if problems or config is None:
        raise ConfigError(sorted(problems, key=lambda p: p.line or 0), path=label)
    return config


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
    fields, problems = _fields(node, prefix, registry, allowed)
    try:
        config = MemoryConfig(**fields, memory_store=memory_store, source=path)
    except ConfigError as exc:
        problems.extend(
            placed(p, node, prefix)
            for p in exc.problems
            if not (p.yaml_path == "embedder" and "store" in node.value)
        )
        return problems
    return problems or config


def _fields(
    node: Node,
    prefix: str,
    registry: Mapping[str, StrategyFactory],
    allowed: bool | tuple[str, ...],
) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """The settings of one route's mapping ``node`` (the file's top level,
    or an entry of ``routes``), and every problem found, at ``prefix`` +
    the key's path."""

    def other(key: str, child: Node, line: int) -> list[ConfigProblem]:
        if key not in FILE_KEYS:
            message = unknown_key(key, registry, KNOWN_KEYS)
            return [ConfigProblem(message=message, yaml_path=prefix + key, line=line)]
        if prefix:
            message = f"{key} belongs at the top of the file, which every route shares"
            return [ConfigProblem(message=message, yaml_path=f"{prefix}{key}", line=line)]
        return []

    return fields_from_yaml(node, prefix, registry, allowed, SECTIONS, other)
