"""YAML read into frozen nodes that remember their line, within stated limits.

PyYAML's composer gives nodes with positions; they are turned into
`Node` values (pmaps, tuples and scalars, all frozen) before anything
interprets them, so validation can name the line of every key and value.

A config may come from someone who should not be able to stall or exhaust
the process that reads it, so reading stops, with one `ConfigError`
naming the line, at the first of:

- more than `MAX_CONFIG_BYTES` of text (checked before parsing);
- nesting deeper than `MAX_DEPTH`;
- more than `MAX_NODES` values, counting each alias as the copy of
  what it names (a "billion laughs" alias bomb stops here, after
  `MAX_NODES` steps), and an alias inside what it names (a cycle);
- a tag outside YAML's core schema (``!!python/object/apply:…``, ``!foo``),
  or a merge key (``<<``), which no config needs;
- a number too large to read, or a character YAML does not allow (NUL).
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import yaml
from pyrsistent import PMap, pmap

from memrules._core.errors import ConfigError, ConfigProblem

__all__ = ["MAX_CONFIG_BYTES", "MAX_DEPTH", "MAX_NODES", "Node", "locate", "parse_yaml"]

MAX_CONFIG_BYTES = 64 * 1024
"""The largest config read, in bytes of UTF-8 (the shipped ones are under 1 KiB)."""

MAX_NODES = 10_000
"""The most values (mappings, lists, scalars and keys) a config may hold once
every alias is expanded."""

MAX_DEPTH = 32
"""The deepest nesting of mappings and lists (a pipeline needs 4)."""

_CORE = "tag:yaml.org,2002:"
_CORE_TAGS = frozenset(_CORE + t for t in ("null", "bool", "int", "float", "str", "seq", "map"))
_IMPLICIT_TAGS = _CORE_TAGS | {_CORE + "timestamp"}  # PyYAML reads 2024-01-01 as a date


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


def locate(node: Node, yaml_path: str) -> int | None:
    """The line of ``yaml_path`` (``a.b[2].c``, relative to ``node``): of
    the deepest key or item of it that ``node`` holds."""
    line: int | None = node.line
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", yaml_path):
        if part.startswith("["):
            index = int(part[1:-1])
            if not node.is_sequence or index >= len(node.value):
                break
            node = node.value[index]
            line = node.line
        else:
            if not node.is_mapping or part not in node.value:
                break
            line = node.key_lines.get(part, line)
            node = node.value[part]
    return line


class _RefusedError(Exception):
    """Reading stopped at a limit or a refused construct."""

    def __init__(self, message: str, line: int | None, yaml_path: str = "") -> None:
        self.message = message
        self.line = line
        self.yaml_path = yaml_path
        super().__init__(message)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses explicit tags outside the core schema
    and nesting deeper than `MAX_DEPTH`, and counts composed nodes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        line = event.start_mark.line + 1
        self._nodes += 1
        if self._nodes > MAX_NODES:
            msg = f"more than {MAX_NODES:,} values; a config is far smaller"
            raise _RefusedError(msg, line)
        tag = getattr(event, "tag", None)
        if tag is not None and tag != "!" and tag not in _CORE_TAGS:
            shown = tag.replace(_CORE, "!!", 1) if tag.startswith(_CORE) else tag
            msg = f"the tag {shown!r} is not allowed; only YAML's core types are read"
            raise _RefusedError(msg, line)
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            self._depth += 1
            if self._depth > MAX_DEPTH:
                msg = f"nested more than {MAX_DEPTH} levels deep"
                raise _RefusedError(msg, line)
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
        return super().compose_node(parent, index)


@attrs.define
class _Converter:
    """Turns composed nodes into `Node` values, expanding aliases
    (shared nodes) and counting every value it makes against `MAX_NODES`."""

    constructor: yaml.constructor.SafeConstructor
    made: int = 0
    open: set[int] = attrs.field(factory=set)  # ids of the nodes being converted

    def _count(self, node: yaml.Node, yaml_path: str) -> None:
        self.made += 1
        if self.made > MAX_NODES:
            msg = (
                f"more than {MAX_NODES:,} values once aliases are expanded "
                "(an alias bomb?); a config is far smaller"
            )
            raise _RefusedError(msg, node.start_mark.line + 1, yaml_path)

    def scalar(self, node: yaml.Node, yaml_path: str) -> Any:
        line = node.start_mark.line + 1
        if node.tag not in _IMPLICIT_TAGS:
            msg = f"the tag {node.tag!r} is not allowed; only YAML's core types are read"
            raise _RefusedError(msg, line, yaml_path)
        try:
            return self.constructor.construct_object(node, deep=True)
        except ValueError as exc:  # int('9' * 5000): "Exceeds the limit (4300 digits)"
            value = node.value if len(node.value) <= 24 else node.value[:20] + "…"
            reason = str(exc).split(":", 1)[0]
            msg = f"cannot read {value!r} ({len(node.value):,} characters): {reason}"
            raise _RefusedError(msg, line, yaml_path) from None

    def convert(self, node: yaml.Node, yaml_path: str) -> Node:
        self._count(node, yaml_path)
        line = node.start_mark.line + 1
        if not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            return Node(value=self.scalar(node, yaml_path), line=line)
        if id(node) in self.open:
            msg = "an alias refers to a value that contains it (a cycle)"
            raise _RefusedError(msg, line, yaml_path)
        self.open.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                items = tuple(
                    self.convert(n, f"{yaml_path}[{i}]") for i, n in enumerate(node.value)
                )
                return Node(value=items, line=line)
            return self._mapping(node, yaml_path)
        finally:
            self.open.discard(id(node))

    def _mapping(self, node: yaml.MappingNode, yaml_path: str) -> Node:
        items: dict[str, Node] = {}
        key_lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if key_node.tag == _CORE + "merge":
                msg = "merge keys (<<) are not supported; write the keys out"
                raise _RefusedError(msg, key_line, yaml_path)
            if not isinstance(key_node, yaml.ScalarNode):
                msg = "keys must be strings, got a mapping or a list"
                raise _RefusedError(msg, key_line, yaml_path)
            self._count(key_node, yaml_path)
            key = self.scalar(key_node, yaml_path)
            if not isinstance(key, str):
                msg = f"keys must be strings, got {key!r}"
                raise _RefusedError(msg, key_line, yaml_path)
            child = f"{yaml_path}.{key}" if yaml_path else key
            if key in items:
                msg = f"duplicate key {key!r} (first on line {key_lines[key]})"
                raise _RefusedError(msg, key_line, child)
            items[key] = self.convert(value_node, child)
            key_lines[key] = key_line
        return Node(value=pmap(items), line=node.start_mark.line + 1, key_lines=pmap(key_lines))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _reader_error(exc: yaml.reader.ReaderError, text: str) -> ConfigProblem:
    """A character YAML refuses (NUL, other controls): one line with its line number."""
    line = text.count("\n", 0, exc.position) + 1 if isinstance(exc.position, int) else None
    character = exc.character
    code = ord(character) if isinstance(character, str) else character
    shown = f"#x{code:04x}" if isinstance(code, int) else repr(code)
    message = f"invalid YAML: unacceptable character {shown}: {_one_line(exc.reason)}"
    return ConfigProblem(message=message, line=line)


def parse_yaml(text: str, *, path: str | None = None) -> Node | None:
    """Parse one YAML document into frozen nodes; None for an empty document.

    Raises `ConfigError` with one line naming the line of a syntax
    error, a duplicate key (PyYAML would silently let the last one win), or
    any of the limits in this module's docstring.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_CONFIG_BYTES:
        msg = f"config is {size:,} bytes; the limit is {MAX_CONFIG_BYTES:,}"
        raise ConfigError.single(msg, path=path)
    loader: _Loader | None = None
    try:
        loader = _Loader(text)
        root = loader.get_single_node()
        if root is None:
            return None
        return _Converter(yaml.constructor.SafeConstructor()).convert(root, "")
    except _RefusedError as exc:
        raise ConfigError.single(
            exc.message, path=path, yaml_path=exc.yaml_path, line=exc.line
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = _one_line(exc.problem or exc.context or "")
        raise ConfigError.single(f"invalid YAML: {problem}", path=path, line=line) from None
    except yaml.reader.ReaderError as exc:
        raise ConfigError([_reader_error(exc, text)], path=path) from None
    except yaml.YAMLError as exc:
        raise ConfigError.single(f"invalid YAML: {_one_line(str(exc))}", path=path) from None
    finally:
        if loader is not None:
            loader.dispose()
