"""YAML read into frozen nodes that remember their line.

PyYAML's composer gives nodes with positions; they are turned into
:class:`Node` values (pmaps, tuples and scalars, all frozen) before anything
interprets them, so validation can name the line of every key and value.
"""

from __future__ import annotations

from typing import Any

import attrs
import yaml
from pyrsistent import PMap, pmap

from memrules._errors import ConfigError, ConfigProblem

__all__ = ["Node", "parse_yaml"]


@attrs.frozen(kw_only=True, slots=True)
class Node:
    """A YAML value and its 1-based line. Mappings hold ``PMap[str, Node]``
    (and ``key_lines``, the line of each key), sequences ``tuple[Node, ...]``,
    scalars their Python value."""

    value: Any
    line: int
    key_lines: PMap[str, int] = attrs.field(factory=pmap)

    @property
    def is_mapping(self) -> bool:
        return isinstance(self.value, PMap)

    @property
    def is_sequence(self) -> bool:
        return isinstance(self.value, tuple)

    def plain(self) -> Any:
        """The value with nodes stripped: frozen maps, tuples, scalars."""
        if isinstance(self.value, PMap):
            return pmap({k: v.plain() for k, v in self.value.items()})
        if isinstance(self.value, tuple):
            return tuple(v.plain() for v in self.value)
        return self.value


def _convert(
    node: yaml.Node,
    constructor: yaml.constructor.SafeConstructor,
    path: str | None,
    yaml_path: str,
) -> Node:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        items: dict[str, Node] = {}
        key_lines: dict[str, int] = {}
        constructor.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = constructor.construct_object(key_node, deep=True)
            key_line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                msg = f"keys must be strings, got {key!r}"
                raise ConfigError.single(msg, path=path, yaml_path=yaml_path, line=key_line)
            child = f"{yaml_path}.{key}" if yaml_path else key
            if key in items:
                msg = f"duplicate key {key!r} (first on line {key_lines[key]})"
                raise ConfigError.single(msg, path=path, yaml_path=child, line=key_line)
            items[key] = _convert(value_node, constructor, path, child)
            key_lines[key] = key_line
        return Node(value=pmap(items), line=line, key_lines=pmap(key_lines))
    if isinstance(node, yaml.SequenceNode):
        return Node(
            value=tuple(
                _convert(n, constructor, path, f"{yaml_path}[{i}]")
                for i, n in enumerate(node.value)
            ),
            line=line,
        )
    return Node(value=constructor.construct_object(node, deep=True), line=line)


def parse_yaml(text: str, *, path: str | None = None) -> Node | None:
    """Parse one YAML document into frozen nodes; None for an empty document.

    Raises :class:`ConfigError` naming the line of a syntax error or of a
    duplicate key (which PyYAML would silently let the last one win).
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        if root is None:
            return None
        return _convert(root, yaml.constructor.SafeConstructor(), path, "")
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(
            [ConfigProblem(message=f"invalid YAML: {problem}", line=line)], path=path
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError([ConfigProblem(message=f"invalid YAML: {exc}")], path=path) from None
