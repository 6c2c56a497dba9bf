"""Reading a config: a file or YAML text into its YAML node, and one route's
mapping into field values, every problem placed at its YAML path and line.

The core's reader: the pipeline's keys are read here
(`pipeline_config_from_yaml`); a whole file (routes, stores, the service's
sections) is read by `memrules._config.load` with the same functions and its
own table of sections."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from memrules._config.keys import (
    PIPELINE_KEYS,
    PIPELINE_SECTIONS,
    SETTINGS,
    TEXT_SOURCE,
    Section,
    type_name,
)
from memrules._config.pipeline_config import PipelineConfig
from memrules._config.strategies import build_from_yaml, unknown_key
from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.yaml_nodes import MAX_CONFIG_BYTES, Node, locate, parse_yaml
from memrules._engine.contract import StrategyFactory
from memrules.strategies import STRATEGIES

__all__ = [
    "ConfigText",
    "allowed_imports",
    "fields_from_yaml",
    "pipeline_config_from_yaml",
    "pipeline_keys_only",
    "placed",
    "read_config_text",
]


def _is_file(source: str) -> bool:
    try:
        return Path(source).is_file()
    except (OSError, ValueError):  # too long for a path, or holds a NUL
        return False


def _is_text(source: str) -> bool:
    """A str that is YAML text, not a path: every non-empty config has a ':'."""
    return "\n" in source or ":" in source or source.strip() in ("", "{}")


def _read_file(path: str) -> str:
    """The file's text, refusing files over `MAX_CONFIG_BYTES` before
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


@attrs.frozen(kw_only=True, slots=True)
class ConfigText:
    """A config's YAML, read: its ``root`` node (None for an empty file),
    the file's ``path`` (None for text) and the ``label`` errors name it by."""

    root: Node | None
    path: str | None
    label: str


def read_config_text(source: str | Path) -> ConfigText:
    """``source`` (a file or YAML text, see `load_config`) read and parsed;
    raises `ConfigError` when it cannot be, or is not a mapping."""
    text, path = _read_source(source)
    label = path if path is not None else TEXT_SOURCE
    root = parse_yaml(text, path=label)
    if root is not None and not root.is_mapping:
        msg = f"a config is a mapping of settings, got {type_name(root.value)}"
        raise ConfigError.single(msg, path=label, line=root.line)
    return ConfigText(root=root, path=path, label=label)


def allowed_imports(allow_imports: bool | Iterable[str]) -> bool | tuple[str, ...]:
    """``allow_imports`` as the strategies' builder takes it."""
    if isinstance(allow_imports, bool):
        return allow_imports
    if isinstance(allow_imports, str):  # one module, not its letters
        return (allow_imports,)
    return tuple(allow_imports)


def pipeline_keys_only(text: ConfigText) -> bool:
    """Whether the file sets only the pipeline's keys (or nothing)."""
    return text.root is None or all(key in PIPELINE_KEYS for key in text.root.value)


def placed(problem: ConfigProblem, node: Node, prefix: str) -> ConfigProblem:
    """``problem`` (at a path within ``node``) with ``prefix`` before its
    path, and its line when it has none."""
    line = problem.line if problem.line is not None else locate(node, problem.yaml_path)
    return attrs.evolve(problem, yaml_path=prefix + problem.yaml_path, line=line)


Other = Callable[[str, Node, int], list[ConfigProblem]]
"""What a reader says of a key that is no setting, section nor ``strategies``."""


def fields_from_yaml(
    node: Node,
    prefix: str,
    registry: Mapping[str, StrategyFactory],
    allowed: bool | tuple[str, ...],
    sections: Mapping[str, Section],
    other: Other,
) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """The settings of one route's mapping ``node`` (the file's top level,
    or an entry of ``routes``), read with ``sections``, and every problem
    found, at ``prefix`` + the key's path; ``other(key, child, line)`` says
    what is wrong with any other key."""
    problems: list[ConfigProblem] = []
    fields: dict[str, Any] = {}
    for key, child in node.value.items():
        line = node.key_lines[key]
        if key == "strategies":
            built = build_from_yaml(child, registry, allowed)
            if isinstance(built, list):
                problems.extend(placed(p, node, prefix) for p in built)
            else:
                fields["strategies"] = built
        elif key in SETTINGS:
            fields[key] = child.plain()  # a list or a mapping is a wrong type: said plainly
        elif key in sections:
            value = sections[key](child)
            if isinstance(value, list):
                # A problem with the section as a whole is at its key's line.
                problems.extend(
                    placed(attrs.evolve(p, line=line) if p.yaml_path == key else p, node, prefix)
                    for p in value
                )
            else:
                fields[key] = value
        else:
            problems.extend(other(key, child, line))
    return fields, problems


def pipeline_config_from_yaml(
    text: ConfigText,
    registry: Mapping[str, StrategyFactory] | None,
    allowed: bool | tuple[str, ...],
) -> PipelineConfig:
    """The `PipelineConfig` of a file that sets only the pipeline's keys
    (see `pipeline_keys_only`); raises one `ConfigError` listing every
    problem."""
    if text.root is None:
        return PipelineConfig(source=text.path)
    registry = STRATEGIES if registry is None else registry

    def unknown(key: str, child: Node, line: int) -> list[ConfigProblem]:
        message = unknown_key(key, registry, PIPELINE_KEYS)
        return [ConfigProblem(message=message, yaml_path=key, line=line)]

    root = text.root
    fields, problems = fields_from_yaml(root, "", registry, allowed, PIPELINE_SECTIONS, unknown)
    config: PipelineConfig | None = None
    try:
        config = PipelineConfig(**fields, source=text.path)
    except ConfigError as exc:
        problems.extend(placed(p, root, "") for p in exc.problems)
    if problems or config is None:
        raise ConfigError(sorted(problems, key=lambda p: p.line or 0), path=text.label)
    return config
