"""The working graph: `MemoryGraph`, a persistent value.

Nodes and relationships live in pyrsistent maps, with two adjacency indexes
(relationship ids by source and by target node) so that
`MemoryGraph.neighbors` reads only the node's own relationships. Every
update returns a new graph that shares structure with the old one, and
leaves the old one as it was; an update that changes nothing returns the
very same graph, so ``new is old`` means nothing happened.

>>> from memrules.graph import GraphNode, GraphRelationship
>>> empty = MemoryGraph()
>>> g = empty.add_node(GraphNode(id="vault")).add_node(GraphNode(id="Lisbon"))
>>> g = g.add_relationship(
...     GraphRelationship(id="r1", source="vault", target="Lisbon", type="is_in"))
>>> g.neighbors("vault"), empty.is_empty
(('Lisbon',), True)
>>> g.add_node(GraphNode(id="vault")) is g
True

Every graph carries `GraphLimits` and keeps within
them (see `memrules.graph.limits`). It also remembers the age of each
entry (when it was last added or changed), which the at-cap rule reads and
snapshots keep; equality looks at the nodes and relationships only, not at
ages or limits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs
from pyrsistent import PMap, pmap

from memrules._core.errors import GraphError
from memrules.graph.editing import GraphEdit, GraphParts
from memrules.graph.limits import AtCap, GraphLimits
from memrules.graph.merge import (
    MergePolicy,
    MergeReport,
)
from memrules.graph.model import GraphDirection, GraphNode, GraphRelationship
from memrules.graph.snapshot import GraphImportReport, GraphSnapshot

__all__ = ["MemoryGraph"]

T = TypeVar("T")

_EMPTY_MAP: PMap[str, Any] = pmap()
_EMPTY_SET: frozenset[str] = frozenset()
_DEFAULT_LIMITS = GraphLimits()


@attrs.frozen(slots=True, eq=False, repr=False, init=False)
class MemoryGraph:
    """A directed, weighted graph as a persistent value (see the module
    docs). ``MemoryGraph()`` is empty, with the default limits;
    `of` builds one from entries, `from_snapshot` from a
    snapshot.
    """

    _nodes: PMap[str, GraphNode]
    _relationships: PMap[str, GraphRelationship]
    _node_ages: PMap[str, int]
    _relationship_ages: PMap[str, int]
    _outgoing: PMap[str, frozenset[str]]
    _incoming: PMap[str, frozenset[str]]
    _clock: int
    limits: GraphLimits
    _memo: dict[object, Any] = attrs.field(factory=dict)
    """Values computed from this graph (a rendering), by key: the graph never
    changes, so they never go stale. See `memoized`."""

    def __init__(self, *, limits: GraphLimits = _DEFAULT_LIMITS) -> None:
        if not isinstance(limits, GraphLimits):
            msg = f"limits={limits!r} must be a GraphLimits"
            raise GraphError(msg)
        self.__attrs_init__(
            nodes=_EMPTY_MAP,
            relationships=_EMPTY_MAP,
            node_ages=_EMPTY_MAP,
            relationship_ages=_EMPTY_MAP,
            outgoing=_EMPTY_MAP,
            incoming=_EMPTY_MAP,
            clock=0,
            limits=limits,
            memo={},
        )

    # --- reading -----------------------------------------------------------------

    @property
    def nodes(self) -> PMap[str, GraphNode]:
        """The nodes by id (a persistent map: reading it changes nothing)."""
        return self._nodes

    @property
    def relationships(self) -> PMap[str, GraphRelationship]:
        """The relationships by id."""
        return self._relationships

    @property
    def is_empty(self) -> bool:
        """No nodes (and so no relationships)."""
        return not self._nodes

    def node(self, node_id: str) -> GraphNode:
        """The node ``node_id``; `GraphError` naming
        it when there is none."""
        found = self._nodes.get(node_id)
        if found is None:
            raise GraphError(f"no node {node_id!r} in the graph", ids=(node_id,))
        return found

    def relationship(self, relationship_id: str) -> GraphRelationship:
        """The relationship ``relationship_id``; `GraphError` naming
        it when there is none."""
        found = self._relationships.get(relationship_id)
        if found is None:
            msg = f"no relationship {relationship_id!r} in the graph"
            raise GraphError(msg, ids=(relationship_id,))
        return found

    def _relationship_ids(self, node_id: str, direction: GraphDirection) -> frozenset[str]:
        if node_id not in self._nodes:
            raise GraphError(f"no node {node_id!r} in the graph", ids=(node_id,))
        direction = GraphDirection(direction)
        out = self._outgoing.get(node_id, _EMPTY_SET)
        if direction is GraphDirection.OUT:
            return out
        into = self._incoming.get(node_id, _EMPTY_SET)
        if direction is GraphDirection.IN:
            return into
        return out | into

    def relationships_of(
        self, node_id: str, direction: GraphDirection = GraphDirection.BOTH
    ) -> tuple[GraphRelationship, ...]:
        """The relationships of ``node_id`` that leave it (``OUT``), reach it
        (``IN``) or either (``BOTH``), by id. Reads the indexes: the cost is
        the node's own relationships, not the graph's. Raises
        `GraphError` for an unknown node."""
        ids = self._relationship_ids(node_id, direction)
        return tuple(self._relationships[i] for i in sorted(ids))

    def neighbors(
        self, node_id: str, direction: GraphDirection = GraphDirection.BOTH
    ) -> tuple[str, ...]:
        """The ids of the nodes across the relationships of ``node_id`` in
        ``direction``, sorted, each once (a self-loop names the node itself).
        Raises `GraphError` for an unknown node."""
        ids = self._relationship_ids(node_id, direction)
        found: set[str] = set()
        for rid in ids:
            r = self._relationships[rid]
            if direction is not GraphDirection.IN and r.source == node_id:
                found.add(r.target)
            if direction is not GraphDirection.OUT and r.target == node_id:
                found.add(r.source)
        return tuple(sorted(found))

    def ordered_nodes(self) -> tuple[GraphNode, ...]:
        """The nodes, oldest first (the snapshot's order)."""
        return _by_age(self._nodes, self._node_ages)

    def ordered_relationships(self) -> tuple[GraphRelationship, ...]:
        """The relationships, oldest first (the snapshot's order)."""
        return _by_age(self._relationships, self._relationship_ages)

    def memoized(self, key: object, compute: Callable[[], T]) -> T:
        """``compute()`` (never None), computed once per graph value and
        ``key`` (a few keys per graph: the rendering under each context it
        was rendered with). Safe under threads: at worst two compute the
        same value."""
        memo = self._memo
        found: T | None = memo.get(key)
        if found is None:
            found = compute()
            if len(memo) >= 8:
                memo.clear()
            memo[key] = found
        return found

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, MemoryGraph):
            return NotImplemented
        return self._nodes == other._nodes and self._relationships == other._relationships

    def __hash__(self) -> int:
        return hash((self._nodes, self._relationships))

    def __repr__(self) -> str:
        return (
            f"MemoryGraph(nodes={len(self._nodes)}, relationships={len(self._relationships)}, "
            f"limits={self.limits!r})"
        )

    # --- building ----------------------------------------------------------------

    @classmethod
    def of(
        cls,
        nodes: Iterable[GraphNode] = (),
        relationships: Iterable[GraphRelationship] = (),
        *,
        limits: GraphLimits = _DEFAULT_LIMITS,
    ) -> MemoryGraph:
        """A graph of ``nodes`` then ``relationships``, added in order (so
        that order is their age; a repeated id replaces the earlier entry).
        Raises `GraphError` for a relationship naming a node that is
        not among ``nodes``. The limits apply to the whole: with ``at_cap:
        evict`` the graph is cut as a merge would cut it; with ``reject``,
        more entries than fit raise `GraphError`."""
        empty = cls(limits=limits)
        edit = GraphEdit(empty._parts())
        for node in nodes:
            edit.add_node(_checked_node(node))
        for relationship in relationships:
            relationship = _checked_relationship(relationship)
            for end in (relationship.source, relationship.target):
                if end not in edit.nodes:
                    raise _unknown_endpoint(relationship, end)
            edit.add_relationship(relationship)
        if limits.at_cap is AtCap.REJECT:
            for kind, count, cap in (
                ("nodes", len(edit.nodes), limits.max_nodes),
                ("relationships", len(edit.relationships), limits.max_relationships),
            ):
                if count > cap:
                    msg = f"{count} {kind} are more than the cap of {cap} (at_cap: reject)"
                    raise GraphError(msg)
        edit.enforce_cap()
        return empty._finish(edit)

    @classmethod
    def from_snapshot(
        cls, snapshot: GraphSnapshot, *, limits: GraphLimits = _DEFAULT_LIMITS
    ) -> tuple[MemoryGraph, GraphImportReport]:
        """The graph ``snapshot`` describes, within ``limits``, and what the
        import did. Refuses (with one `GraphError` naming every
        offending id, building nothing) duplicate ids and relationships whose
        endpoints are not among the snapshot's nodes; non-finite weights were
        refused when the snapshot was read. A snapshot over the cap is cut as
        the cap's policy says, as a merge into an empty graph would be."""
        if not isinstance(snapshot, GraphSnapshot):
            msg = f"expected a GraphSnapshot, got {type(snapshot).__name__}"
            raise GraphError(msg)
        snapshot.check()
        nodes, relationships = snapshot.nodes, snapshot.relationships
        if len(nodes) <= limits.max_nodes and len(relationships) <= limits.max_relationships:
            graph = cls.of(nodes, relationships, limits=limits)
            return graph, GraphImportReport(nodes=len(nodes), relationships=len(relationships))
        loose = GraphLimits(max_nodes=len(nodes), max_relationships=max(1, len(relationships)))
        whole = cls.of(nodes, relationships, limits=loose)
        graph, report = cls(limits=limits).merge(whole, MergePolicy.TAKE_INCOMING)
        return graph, GraphImportReport(
            nodes=len(graph._nodes),
            relationships=len(graph._relationships),
            evicted_nodes=report.nodes.evicted,
            evicted_relationships=report.relationships.evicted,
            rejected_nodes=report.nodes.rejected,
            rejected_relationships=report.relationships.rejected,
        )

    def snapshot(self) -> GraphSnapshot:
        """This graph as a `GraphSnapshot` (entries oldest first)."""
        return GraphSnapshot(nodes=self.ordered_nodes(), relationships=self.ordered_relationships())

    # --- updating ----------------------------------------------------------------

    def add_node(self, node: GraphNode) -> MemoryGraph:
        """A graph with ``node`` in it, replacing a node of the same id (its
        relationships stay). The same graph when ``node`` is already there,
        equal. At the node cap: with ``at_cap: evict`` the lowest-weight,
        oldest node goes (``node`` itself, when it weighs less than every
        other); with ``reject`` a new id raises `GraphError`."""
        node = _checked_node(node)
        old = self._nodes.get(node.id)
        if old == node:
            return self
        if old is None and self._full_of_nodes():
            raise GraphError(
                f"the graph holds its cap of {self.limits.max_nodes} nodes "
                f"(at_cap: reject); node {node.id!r} was not added",
                ids=(node.id,),
            )
        edit = GraphEdit(self._parts())
        edit.add_node(node)
        edit.enforce_cap()
        return self._finish(edit)

    def add_relationship(self, relationship: GraphRelationship) -> MemoryGraph:
        """A graph with ``relationship`` in it, replacing one of the same id.
        The same graph when it is already there, equal. Raises
        `GraphError` naming ``from`` or ``to`` when it is not a node of
        the graph; at the cap, as `add_node`."""
        relationship = _checked_relationship(relationship)
        for end in (relationship.source, relationship.target):
            if end not in self._nodes:
                raise _unknown_endpoint(relationship, end)
        old = self._relationships.get(relationship.id)
        if old == relationship:
            return self
        if old is None and self._full_of_relationships():
            raise GraphError(
                f"the graph holds its cap of {self.limits.max_relationships} relationships "
                f"(at_cap: reject); relationship {relationship.id!r} was not added",
                ids=(relationship.id,),
            )
        edit = GraphEdit(self._parts())
        edit.add_relationship(relationship)
        edit.enforce_cap()
        return self._finish(edit)

    def remove_node(self, node_id: str) -> MemoryGraph:
        """A graph without node ``node_id`` and every relationship that
        leaves or reaches it. The same graph when there is no such node."""
        if node_id not in self._nodes:
            return self
        edit = GraphEdit(self._parts())
        edit.remove_node(node_id)
        return self._finish(edit)

    def remove_relationship(self, relationship_id: str) -> MemoryGraph:
        """A graph without relationship ``relationship_id`` (its nodes stay).
        The same graph when there is no such relationship."""
        if relationship_id not in self._relationships:
            return self
        edit = GraphEdit(self._parts())
        edit.remove_relationship(relationship_id)
        return self._finish(edit)

    def merge(
        self, other: MemoryGraph, policy: MergePolicy = MergePolicy.UNION
    ) -> tuple[MemoryGraph, MergeReport]:
        """``other`` merged into this graph under ``policy`` (see
        `memrules.graph.merge`), within this graph's limits, and the
        report. The graph is this very one when nothing changed
        (``report.changed`` is False)."""
        if not isinstance(other, MemoryGraph):
            msg = f"can only merge a MemoryGraph, got {type(other).__name__}"
            raise GraphError(msg)
        policy = MergePolicy(policy)
        edit = GraphEdit(self._parts())
        nodes = edit.merge_nodes(other.ordered_nodes(), policy)
        relationships = edit.merge_relationships(other.ordered_relationships(), policy)
        if self.limits.at_cap is AtCap.EVICT:
            edit.enforce_cap()
        graph = self._finish(edit)
        return graph, MergeReport(
            policy=policy,
            nodes=nodes.counts(graph._nodes, self._nodes, edit.evicted_nodes),
            relationships=relationships.counts(
                graph._relationships, self._relationships, edit.evicted_relationships
            ),
            changed=graph is not self,
        )

    def with_limits(self, limits: GraphLimits) -> MemoryGraph:
        """This graph under ``limits``: the same graph when they are its
        limits already; else a graph that carries them, cut to fit by
        eviction (lowest weight, oldest first) whatever ``at_cap`` says,
        since nothing new is arriving to refuse."""
        if limits == self.limits:
            return self
        edit = GraphEdit(self._parts(), limits=limits)
        edit.enforce_cap(force_evict=True)
        return self._finish(edit, force=True)

    def _parts(self) -> GraphParts:
        return GraphParts(
            nodes=self._nodes,
            relationships=self._relationships,
            node_ages=self._node_ages,
            relationship_ages=self._relationship_ages,
            outgoing=self._outgoing,
            incoming=self._incoming,
            clock=self._clock,
            limits=self.limits,
        )

    def _finish(self, edit: GraphEdit, *, force: bool = False) -> MemoryGraph:
        """The graph ``edit`` made of this one: this very graph when it
        changed nothing (unless ``force``)."""
        parts = edit.finish(force=force)
        if parts is None:
            return self
        graph = object.__new__(MemoryGraph)
        graph.__attrs_init__(
            nodes=parts.nodes,
            relationships=parts.relationships,
            node_ages=parts.node_ages,
            relationship_ages=parts.relationship_ages,
            outgoing=parts.outgoing,
            incoming=parts.incoming,
            clock=parts.clock,
            limits=parts.limits,
            memo={},
        )
        return graph

    def _full_of_nodes(self) -> bool:
        return self.limits.at_cap is AtCap.REJECT and len(self._nodes) >= self.limits.max_nodes

    def _full_of_relationships(self) -> bool:
        return (
            self.limits.at_cap is AtCap.REJECT
            and len(self._relationships) >= self.limits.max_relationships
        )


def _by_age(entries: PMap[str, Any], ages: PMap[str, int]) -> tuple[Any, ...]:
    by_id = dict(entries.items())
    return tuple(by_id[i] for i, _ in sorted(ages.items(), key=lambda item: item[1]))


def _unknown_endpoint(relationship: GraphRelationship, end: str) -> GraphError:
    msg = (
        f"relationship {relationship.id!r} names node {end!r}, "
        "which is not in the graph; add the node first"
    )
    return GraphError(msg, ids=(end, relationship.id))


def _checked_node(node: object) -> GraphNode:
    if not isinstance(node, GraphNode):
        msg = f"expected a GraphNode, got {type(node).__name__}"
        raise GraphError(msg)
    return node


def _checked_relationship(relationship: object) -> GraphRelationship:
    if not isinstance(relationship, GraphRelationship):
        msg = f"expected a GraphRelationship, got {type(relationship).__name__}"
        raise GraphError(msg)
    return relationship
