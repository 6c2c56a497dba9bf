"""Graphs as JSON: `GraphSnapshot`, `GraphImportReport`, and
saving a snapshot to a file atomically.

A snapshot is a versioned, JSON-ready picture of a graph: its nodes, then
its relationships, each oldest first (the order is the entries' age, which
the at-cap rule reads, so a graph restored from a snapshot evicts as the
original would have):

    {"format": "memrules.graph", "version": 1,
     "nodes": [{"id": "vault", "labels": ["Entity"], "properties": {}, "weight": 1.0}, ...],
     "relationships": [{"id": "fact:vault:is_in", "from": "vault", "to": "Lisbon",
                        "type": "is_in", "weight": 2.0, "properties": {}}, ...]}

`GraphSnapshot.to_json` writes sorted keys and no NaN, so equal
snapshots are equal bytes. Reading one (`GraphSnapshot.from_dict`,
`GraphSnapshot.from_json`, `load_snapshot`) checks every field
and raises one `GraphError` that lists every
problem, naming the entry's place and id; importing it into a graph
(`MemoryGraph.from_snapshot`)
also refuses duplicate ids and relationships whose endpoints are not among
the nodes, and builds nothing when it refuses.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from memrules._core.errors import GraphError
from memrules._core.jsontext import TOO_DEEP, JSONTextError, parse_json
from memrules._io.files import write_atomic
from memrules.graph.model import GraphNode, GraphRelationship

__all__ = [
    "SNAPSHOT_FORMAT",
    "SNAPSHOT_VERSION",
    "GraphImportReport",
    "GraphSnapshot",
    "load_snapshot",
    "save_snapshot",
]

SNAPSHOT_FORMAT = "memrules.graph"
SNAPSHOT_VERSION = 1
"""The snapshot layout this memrules writes and reads."""

_NODE_KEYS = frozenset({"id", "labels", "properties", "weight"})
_RELATIONSHIP_KEYS = frozenset({"id", "from", "to", "type", "weight", "properties"})


@attrs.frozen(kw_only=True, slots=True)
class GraphImportReport:
    """What importing a snapshot did: how many ``nodes`` and
    ``relationships`` the graph holds now, and which ids its cap evicted or
    rejected (see `memrules.graph.limits`). ``version`` is the
    conversation's version after the import when it went through
    `MemoryPlugin` (None otherwise)."""

    nodes: int
    relationships: int
    evicted_nodes: tuple[str, ...] = ()
    evicted_relationships: tuple[str, ...] = ()
    rejected_nodes: tuple[str, ...] = ()
    rejected_relationships: tuple[str, ...] = ()
    version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "relationships": self.relationships,
            "evicted_nodes": list(self.evicted_nodes),
            "evicted_relationships": list(self.evicted_relationships),
            "rejected_nodes": list(self.rejected_nodes),
            "rejected_relationships": list(self.rejected_relationships),
            "version": self.version,
        }


def _entries_of(kind: type[Any], field: str, values: Any) -> tuple[Any, ...]:
    items = tuple(values)
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            msg = f"{field}[{i}] must be a {kind.__name__}, got {type(item).__name__}"
            raise GraphError(msg)
    return items


def _nodes(values: Iterable[GraphNode]) -> tuple[GraphNode, ...]:
    return _entries_of(GraphNode, "nodes", values)


def _relationships(values: Iterable[GraphRelationship]) -> tuple[GraphRelationship, ...]:
    return _entries_of(GraphRelationship, "relationships", values)


@attrs.frozen(kw_only=True, slots=True)
class GraphSnapshot:
    """A graph as values: ``nodes`` and ``relationships``, oldest first, and
    the layout ``version``. Building one checks each entry's own fields (the
    entries do that themselves); whether ids repeat or endpoints are missing
    is checked when the snapshot is imported, see `problems`."""

    nodes: tuple[GraphNode, ...] = attrs.field(default=(), converter=_nodes)
    relationships: tuple[GraphRelationship, ...] = attrs.field(default=(), converter=_relationships)
    version: int = SNAPSHOT_VERSION

    def __attrs_post_init__(self) -> None:
        if self.version != SNAPSHOT_VERSION:
            msg = (
                f"snapshot version={self.version!r} is not supported; "
                f"this memrules reads version {SNAPSHOT_VERSION}"
            )
            raise GraphError(msg)

    def problems(self) -> tuple[tuple[str, str], ...]:
        """Why this snapshot cannot be imported, as ``(id, problem)`` pairs:
        a node or relationship id that appears twice, a relationship whose
        ``from`` or ``to`` is no node of the snapshot. Empty when it can be."""
        found: list[tuple[str, str]] = []
        for kind, ids in (
            ("node", [n.id for n in self.nodes]),
            ("relationship", [r.id for r in self.relationships]),
        ):
            counts = Counter(ids)
            for ident in dict.fromkeys(ids):
                if counts[ident] > 1:
                    found.append((ident, f"{kind} id {ident!r} appears {counts[ident]} times"))
        node_ids = {n.id for n in self.nodes}
        for i, r in enumerate(self.relationships):
            for end, name in (("from", r.source), ("to", r.target)):
                if name not in node_ids:
                    found.append(
                        (
                            r.id,
                            f"relationships[{i}] {r.id!r}: {end}={name!r} is not a node "
                            "of the snapshot",
                        )
                    )
        return tuple(found)

    def check(self) -> None:
        """Raise one `GraphError` listing every
        `problems` (its ``ids`` the offending ids), if there are any."""
        problems = self.problems()
        if problems:
            ids = tuple(dict.fromkeys(i for i, _ in problems))
            msg = "invalid graph snapshot: " + "; ".join(p for _, p in problems)
            raise GraphError(msg, ids=ids)

    def to_dict(self) -> dict[str, Any]:
        """The snapshot as JSON-ready values."""
        return {
            "format": SNAPSHOT_FORMAT,
            "version": self.version,
            "nodes": [n.to_dict() for n in self.nodes],
            "relationships": [r.to_dict() for r in self.relationships],
        }

    def to_json(self, *, indent: int | None = None) -> str:
        """The snapshot as JSON text: sorted keys, UTF-8-ready (non-ASCII as
        itself), compact unless ``indent`` is given. Equal snapshots give
        equal text."""
        separators = (",", ":") if indent is None else (",", ": ")
        return json.dumps(
            self.to_dict(),
            sort_keys=True,
            ensure_ascii=False,
            allow_nan=False,
            indent=indent,
            separators=separators,
        )

    @classmethod
    def from_dict(cls, data: object) -> GraphSnapshot:
        """Read a snapshot from parsed JSON. Raises one
        `GraphError` listing every problem found,
        each at its place (``nodes[3].weight``) and naming the id."""
        problems: list[str] = []
        ids: list[str] = []
        if not isinstance(data, Mapping):
            msg = f"a graph snapshot is a JSON object, got {type(data).__name__}"
            raise GraphError(msg)
        unknown = sorted(set(data) - {"format", "version", "nodes", "relationships"})
        if unknown:
            problems.append(f"unknown keys {', '.join(map(repr, unknown))}")
        fmt = data.get("format", SNAPSHOT_FORMAT)
        if fmt != SNAPSHOT_FORMAT:
            problems.append(f"format={fmt!r} is not {SNAPSHOT_FORMAT!r}")
        version = data.get("version")
        if version != SNAPSHOT_VERSION or isinstance(version, bool):
            problems.append(
                f"version={version!r} is not supported; this memrules reads "
                f"version {SNAPSHOT_VERSION}"
            )
        nodes = _entries(data, "nodes", _NODE_KEYS, _node, problems, ids)
        relationships = _entries(
            data, "relationships", _RELATIONSHIP_KEYS, _relationship, problems, ids
        )
        if problems:
            msg = "invalid graph snapshot: " + "; ".join(problems)
            raise GraphError(msg, ids=tuple(dict.fromkeys(ids)))
        return cls(nodes=nodes, relationships=relationships)

    @classmethod
    def from_json(cls, text: str | bytes) -> GraphSnapshot:
        """Read a snapshot from JSON text (see `from_dict`). Text that
        is not JSON raises `GraphError` naming the
        line. ``NaN`` and ``Infinity`` (which Python's JSON writer emits)
        are read, and then refused where they stand, naming the entry."""
        try:
            data = parse_json(text)
        except JSONTextError as exc:
            if exc.reason == TOO_DEEP:
                msg = TOO_DEEP
            elif exc.line is not None:
                msg = (
                    f"a graph snapshot is JSON: {exc.reason} at line {exc.line}, "
                    f"column {exc.column}"
                )
            else:
                msg = f"a graph snapshot is UTF-8 JSON: {exc.reason}"
            raise GraphError(msg) from None
        return cls.from_dict(data)


def _entries(
    data: Mapping[str, Any],
    field: str,
    keys: frozenset[str],
    build: Any,
    problems: list[str],
    ids: list[str],
) -> tuple[Any, ...]:
    raw = data.get(field, [])
    if not isinstance(raw, list | tuple):
        problems.append(f"{field} must be a list, got {type(raw).__name__}")
        return ()
    built = []
    for i, entry in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(entry, Mapping):
            problems.append(f"{where} must be an object, got {type(entry).__name__}")
            continue
        ident = entry.get("id")
        if isinstance(ident, str) and ident:
            ids.append(ident)
        unknown = sorted(set(entry) - keys)
        if unknown:
            problems.append(f"{where} {ident!r}: unknown keys {', '.join(map(repr, unknown))}")
            continue
        try:
            built.append(build(entry))
        except GraphError as exc:
            problems.append(f"{where}: {exc}")
        except KeyError as exc:
            problems.append(f"{where} {ident!r}: {exc.args[0]!r} is missing")
    return tuple(built)


def _node(entry: Mapping[str, Any]) -> GraphNode:
    return GraphNode(
        id=entry["id"],
        labels=entry.get("labels", ()),
        properties=entry.get("properties", {}),
        weight=entry.get("weight", 1.0),
    )


def _relationship(entry: Mapping[str, Any]) -> GraphRelationship:
    return GraphRelationship(
        id=entry["id"],
        source=entry["from"],
        target=entry["to"],
        type=entry["type"],
        weight=entry.get("weight", 1.0),
        properties=entry.get("properties", {}),
    )


def save_snapshot(snapshot: GraphSnapshot, path: str | os.PathLike[str]) -> None:
    """Write ``snapshot`` as JSON to ``path``, atomically: into a temporary
    file beside it, flushed to disk, then renamed over ``path``
    (`write_atomic`). A reader sees the old file or the
    new one, never a part. A path that exists and is not a regular file (a
    device, a directory) is refused, never replaced; a failure (a full disk)
    is an `OutputError` (an ``OSError``) naming
    ``path``, and leaves the old file as it was, with no temporary file
    behind. The snapshot itself is a value: nothing about it changes."""
    text = snapshot.to_json(indent=1) + "\n"
    write_atomic(path, text.encode("utf-8"), "the graph snapshot")


def load_snapshot(path: str | os.PathLike[str]) -> GraphSnapshot:
    """Read a snapshot that `save_snapshot` wrote. Raises
    `GraphError` naming the file for content that
    is no valid snapshot, and the ``OSError`` the file system gives."""
    data = Path(path).read_bytes()
    try:
        return GraphSnapshot.from_json(data)
    except GraphError as exc:
        raise GraphError(f"{os.fspath(path)}: {exc}", ids=exc.ids) from None
