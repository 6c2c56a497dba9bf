"""The working graph's values: `GraphNode`, `GraphRelationship`
and `GraphDirection`.

A node is an ``id``, a set of ``labels``, JSON ``properties`` and a
``weight``; a relationship is a directed, typed, weighted edge between two
node ids, with its own ``id`` and properties. Both are frozen values that
check themselves when built and raise `GraphError`
naming their id:

>>> GraphNode(id="vault", labels=("Entity",), properties={"name": "vault"})
GraphNode(id='vault', labels=('Entity',), properties={'name': 'vault'}, weight=1.0)
>>> GraphRelationship(id="r", source="vault", target="Lisbon", type="is_in", weight=float("nan"))
Traceback (most recent call last):
...
memrules.GraphError: relationship 'r': weight=nan must be a finite number

Weights rank what the graph keeps at its cap and what rendering shows first
(highest first). The spec gives relationships a weight; nodes carry one too,
so that the same two rules apply to both (1.0 unless said otherwise).

Labels are kept sorted and without repeats, and properties as deep-frozen
JSON values (`FrozenDict`, whose equality ignores
key order), so that equal nodes are equal values whatever order their labels
or keys came in, and render and serialize the same bytes (keys sorted).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from memrules._core.errors import GraphError
from memrules._core.frozen import FrozenDict, ValueProblem, freeze_json, thaw

__all__ = ["GraphDirection", "GraphNode", "GraphRelationship"]


class GraphDirection(enum.StrEnum):
    """Which relationships of a node `MemoryGraph.neighbors` follows."""

    OUT = "out"
    """Relationships that start at the node."""
    IN = "in"
    """Relationships that end at the node."""
    BOTH = "both"
    """Either."""


_NO_PROPERTIES: FrozenDict[str, Any] = FrozenDict()


@attrs.frozen(slots=True)
class _Owner:
    """Whose field is checked: ``node 'x'`` or ``relationship 'r'``."""

    kind: str
    id: str

    def error(self, problem: str) -> GraphError:
        return GraphError(f"{self.kind} {self.id!r}: {problem}", ids=(self.id,))


def _text(value: object, what: str, owner: _Owner) -> str:
    if not isinstance(value, str) or not value:
        raise owner.error(f"{what}={value!r} must be a non-empty string")
    return value


def _weight(value: object, owner: _Owner) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise owner.error(f"weight={value!r} must be a finite number")
    weight = float(value)
    if not math.isfinite(weight):
        raise owner.error(f"weight={value!r} must be a finite number")
    return weight


def _labels(value: object, owner: _Owner) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise owner.error(f"labels={value!r} must be a list of strings")
    labels = tuple(value)
    for label in labels:
        _text(label, "label", owner)
    ordered = tuple(sorted(set(labels)))
    return labels if ordered == labels else ordered


def _properties(value: object, owner: _Owner) -> FrozenDict[str, Any]:
    if value is None or value is _NO_PROPERTIES:
        return _NO_PROPERTIES
    if not isinstance(value, Mapping):
        raise owner.error(f"properties must be a mapping, got {type(value).__name__}")
    if not value:
        return _NO_PROPERTIES
    try:
        frozen: FrozenDict[str, Any] = freeze_json(value)
    except ValueProblem as problem:
        raise owner.error(f"{problem.where('properties')}: {problem.problem}") from None
    return frozen


# Converters that only widen what the constructor is typed to take (any
# iterable of labels, any mapping of properties); the checks
# run in ``__attrs_post_init__``, where the id is known and can be named.


def _labels_in(value: Iterable[str]) -> tuple[str, ...]:
    return value  # type: ignore[return-value]


def _properties_in(value: Mapping[str, Any] | None) -> FrozenDict[str, Any]:
    return value  # type: ignore[return-value]


def _show_properties(properties: FrozenDict[str, Any]) -> str:
    return repr({k: thaw(properties[k]) for k in sorted(properties)})


@attrs.frozen(kw_only=True, slots=True, cache_hash=True, repr=False)
class GraphNode:
    """A node: ``id`` (non-empty), ``labels`` (kept sorted, no repeats),
    ``properties`` (JSON values, frozen; NaN and infinities refused) and a
    finite ``weight`` (1.0 by default; see the module docs).

    Raises `GraphError` naming the id when a field
    cannot be used.
    """

    id: str
    labels: tuple[str, ...] = attrs.field(default=(), converter=_labels_in)
    properties: FrozenDict[str, Any] = attrs.field(default=_NO_PROPERTIES, converter=_properties_in)
    weight: float = 1.0

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            msg = f"node id={self.id!r} must be a non-empty string"
            raise GraphError(msg)
        owner = _Owner("node", self.id)
        object.__setattr__(self, "labels", _labels(self.labels, owner))
        object.__setattr__(self, "properties", _properties(self.properties, owner))
        object.__setattr__(self, "weight", _weight(self.weight, owner))

    def __repr__(self) -> str:
        return (
            f"GraphNode(id={self.id!r}, labels={self.labels!r}, "
            f"properties={_show_properties(self.properties)}, weight={self.weight!r})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The node as JSON-ready values (the snapshot's form)."""
        return {
            "id": self.id,
            "labels": list(self.labels),
            "properties": {k: thaw(self.properties[k]) for k in sorted(self.properties)},
            "weight": self.weight,
        }


@attrs.frozen(kw_only=True, slots=True, cache_hash=True, repr=False)
class GraphRelationship:
    """A directed relationship ``source -[type]-> target`` (the spec's
    ``from`` and ``to``; the snapshot's JSON keys are ``from`` and ``to``),
    with its own ``id``, a finite ``weight`` (1.0 by default) and JSON
    ``properties``.

    Building one checks only its own fields; a graph checks that both
    endpoints are its nodes (`MemoryGraph.add_relationship`).
    """

    id: str
    source: str
    target: str
    type: str
    weight: float = 1.0
    properties: FrozenDict[str, Any] = attrs.field(default=_NO_PROPERTIES, converter=_properties_in)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            msg = f"relationship id={self.id!r} must be a non-empty string"
            raise GraphError(msg)
        owner = _Owner("relationship", self.id)
        _text(self.source, "source", owner)
        _text(self.target, "target", owner)
        _text(self.type, "type", owner)
        object.__setattr__(self, "weight", _weight(self.weight, owner))
        object.__setattr__(self, "properties", _properties(self.properties, owner))

    def __repr__(self) -> str:
        return (
            f"GraphRelationship(id={self.id!r}, source={self.source!r}, "
            f"target={self.target!r}, type={self.type!r}, weight={self.weight!r}, "
            f"properties={_show_properties(self.properties)})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The relationship as JSON-ready values (the snapshot's form)."""
        return {
            "id": self.id,
            "from": self.source,
            "to": self.target,
            "type": self.type,
            "weight": self.weight,
            "properties": {k: thaw(self.properties[k]) for k in sorted(self.properties)},
        }
