"""The working graph: :class:`MemoryGraph`, a persistent value.

Nodes and relationships live in pyrsistent maps, with two adjacency indexes
(relationship ids by source and by target node) so that
:meth:`MemoryGraph.neighbors` reads only the node's own relationships. Every
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

Every graph carries :class:`~memrules.graph.GraphLimits` and keeps within
them (see :mod:`memrules.graph.limits`). It also remembers the age of each
entry (when it was last added or changed), which the at-cap rule reads and
snapshots keep; equality looks at the nodes and relationships only, not at
ages or limits.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import attrs
from pyrsistent import PMap, pmap

from memrules._core.errors import GraphError
from memrules.graph.limits import AtCap, GraphLimits
from memrules.graph.merge import (
    MergeCounts,
    MergePolicy,
    MergeReport,
    combine_nodes,
    combine_relationships,
    node_conflicts,
    relationship_conflicts,
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
    :meth:`of` builds one from entries, :meth:`from_snapshot` from a
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
    changes, so they never go stale. See :meth:`memoized`."""

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
        """The node ``node_id``; :class:`~memrules._core.errors.GraphError` naming
        it when there is none."""
        found = self._nodes.get(node_id)
        if found is None:
            raise GraphError(f"no node {node_id!r} in the graph", ids=(node_id,))
        return found

    def relationship(self, relationship_id: str) -> GraphRelationship:
        """The relationship ``relationship_id``; :class:`GraphError` naming
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
        :class:`GraphError` for an unknown node."""
        ids = self._relationship_ids(node_id, direction)
        return tuple(self._relationships[i] for i in sorted(ids))

    def neighbors(
        self, node_id: str, direction: GraphDirection = GraphDirection.BOTH
    ) -> tuple[str, ...]:
        """The ids of the nodes across the relationships of ``node_id`` in
        ``direction``, sorted, each once (a self-loop names the node itself).
        Raises :class:`GraphError` for an unknown node."""
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
        Raises :class:`GraphError` for a relationship naming a node that is
        not among ``nodes``. The limits apply to the whole: with ``at_cap:
        evict`` the graph is cut as a merge would cut it; with ``reject``,
        more entries than fit raise :class:`GraphError`."""
        edit = _Edit(cls(limits=limits))
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
        return edit.finish()

    @classmethod
    def from_snapshot(
        cls, snapshot: GraphSnapshot, *, limits: GraphLimits = _DEFAULT_LIMITS
    ) -> tuple[MemoryGraph, GraphImportReport]:
        """The graph ``snapshot`` describes, within ``limits``, and what the
        import did. Refuses (with one :class:`GraphError` naming every
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
        """This graph as a :class:`GraphSnapshot` (entries oldest first)."""
        return GraphSnapshot(nodes=self.ordered_nodes(), relationships=self.ordered_relationships())

    # --- updating ----------------------------------------------------------------

    def add_node(self, node: GraphNode) -> MemoryGraph:
        """A graph with ``node`` in it, replacing a node of the same id (its
        relationships stay). The same graph when ``node`` is already there,
        equal. At the node cap: with ``at_cap: evict`` the lowest-weight,
        oldest node goes (``node`` itself, when it weighs less than every
        other); with ``reject`` a new id raises :class:`GraphError`."""
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
        edit = _Edit(self)
        edit.add_node(node)
        edit.enforce_cap()
        return edit.finish()

    def add_relationship(self, relationship: GraphRelationship) -> MemoryGraph:
        """A graph with ``relationship`` in it, replacing one of the same id.
        The same graph when it is already there, equal. Raises
        :class:`GraphError` naming ``from`` or ``to`` when it is not a node of
        the graph; at the cap, as :meth:`add_node`."""
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
        edit = _Edit(self)
        edit.add_relationship(relationship)
        edit.enforce_cap()
        return edit.finish()

    def remove_node(self, node_id: str) -> MemoryGraph:
        """A graph without node ``node_id`` and every relationship that
        leaves or reaches it. The same graph when there is no such node."""
        if node_id not in self._nodes:
            return self
        edit = _Edit(self)
        edit.remove_node(node_id)
        return edit.finish()

    def remove_relationship(self, relationship_id: str) -> MemoryGraph:
        """A graph without relationship ``relationship_id`` (its nodes stay).
        The same graph when there is no such relationship."""
        if relationship_id not in self._relationships:
            return self
        edit = _Edit(self)
        edit.remove_relationship(relationship_id)
        return edit.finish()

    def merge(
        self, other: MemoryGraph, policy: MergePolicy = MergePolicy.UNION
    ) -> tuple[MemoryGraph, MergeReport]:
        """``other`` merged into this graph under ``policy`` (see
        :mod:`memrules.graph.merge`), within this graph's limits, and the
        report. The graph is this very one when nothing changed
        (``report.changed`` is False)."""
        if not isinstance(other, MemoryGraph):
            msg = f"can only merge a MemoryGraph, got {type(other).__name__}"
            raise GraphError(msg)
        policy = MergePolicy(policy)
        edit = _Edit(self)
        nodes = edit.merge_nodes(other, policy)
        relationships = edit.merge_relationships(other, policy)
        if self.limits.at_cap is AtCap.EVICT:
            edit.enforce_cap()
        graph = edit.finish()
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
        edit = _Edit(self, limits=limits)
        edit.enforce_cap(force_evict=True)
        return edit.finish(force=True)

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


@attrs.define
class _Tally:
    """Ids a merge saw, for one kind of entry; turned into counts once the
    graph is final (an id evicted at the end counts as neither added nor
    updated)."""

    new: list[str] = attrs.Factory(list)
    existing: list[str] = attrs.Factory(list)
    conflicts: list[str] = attrs.Factory(list)
    rejected: list[str] = attrs.Factory(list)

    def counts(
        self, result: PMap[str, Any], before: PMap[str, Any], evicted: list[str]
    ) -> MergeCounts:
        updated = unchanged = 0
        for ident in self.existing:
            if ident not in result:
                continue
            if result[ident] is before[ident]:
                unchanged += 1
            else:
                updated += 1
        return MergeCounts(
            added=sum(ident in result for ident in self.new),
            updated=updated,
            unchanged=unchanged,
            conflicts=tuple(sorted(self.conflicts)),
            evicted=tuple(sorted(evicted)),
            rejected=tuple(sorted(self.rejected)),
        )


_MISSING: Any = object()
_GONE: Any = object()


class _Table:
    """Edits to one persistent map, buffered in a dict: reads see them, and
    :meth:`finish` writes them into a new map the cheaper way, through an
    evolver for a few changes or by rebuilding for many (a merge of a graph
    as big as this one). Values are never None."""

    __slots__ = ("base", "changes", "size")

    def __init__(self, base: PMap[str, Any]) -> None:
        self.base: PMap[str, Any] | None = base if base else None  # None: empty, skip it
        self.changes: dict[str, Any] = {}
        self.size = len(base)

    def get(self, key: str) -> Any:
        value = self.changes.get(key, _MISSING)
        if value is _MISSING:
            return None if self.base is None else self.base.get(key)
        return None if value is _GONE else value

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return self.size

    def __setitem__(self, key: str, value: Any) -> None:
        if self.get(key) is None:
            self.size += 1
        self.changes[key] = value

    def __delitem__(self, key: str) -> None:
        self.size -= 1
        self.changes[key] = _GONE

    def items(self) -> Iterator[tuple[str, Any]]:
        changes = self.changes
        for key, value in () if self.base is None else self.base.items():
            if key not in changes:
                yield key, value
        for key, value in changes.items():
            if value is not _GONE:
                yield key, value

    def finish(self) -> PMap[str, Any]:
        changes, base = self.changes, self.base
        if base is None:
            return pmap({k: v for k, v in changes.items() if v is not _GONE})
        if not changes:
            return base
        if len(changes) * 4 > len(base):
            rebuilt = dict(base)
            for key, value in changes.items():
                if value is _GONE:
                    rebuilt.pop(key, None)
                else:
                    rebuilt[key] = value
            return pmap(rebuilt)
        evolver = base.evolver()
        for key, value in changes.items():
            if value is not _GONE:
                evolver[key] = value
            elif key in base:
                evolver.remove(key)
        return evolver.persistent()


class _Index:
    """An adjacency index (node id -> relationship ids) under edit: the
    touched entries are plain sets until :meth:`finish` freezes them."""

    __slots__ = ("open", "table")

    def __init__(self, base: PMap[str, frozenset[str]]) -> None:
        self.table = _Table(base)
        self.open: set[str] = set()

    def ids(self, node_id: str) -> Iterable[str]:
        found = self.table.get(node_id)
        return () if found is None else found

    def _mutable(self, node_id: str) -> set[str]:
        if node_id in self.open:
            found: set[str] = self.table.changes[node_id]
            return found
        ids = set(self.ids(node_id))
        self.table[node_id] = ids
        self.open.add(node_id)
        return ids

    def add(self, node_id: str, rid: str) -> None:
        self._mutable(node_id).add(rid)

    def discard(self, node_id: str, rid: str) -> None:
        self._mutable(node_id).discard(rid)

    def finish(self) -> PMap[str, frozenset[str]]:
        changes, base = self.table.changes, self.table.base
        for node_id in self.open:
            ids = changes[node_id]
            if ids:
                changes[node_id] = frozenset(ids)
            elif base is not None and node_id in base:
                changes[node_id] = _GONE
            else:
                del changes[node_id]
        return self.table.finish()


class _Edit:
    """A batch of changes to one graph: the one place that keeps the maps,
    the ages and the adjacency indexes in step."""

    def __init__(self, graph: MemoryGraph, *, limits: GraphLimits | None = None) -> None:
        self.base = graph
        self.limits = graph.limits if limits is None else limits
        self.nodes = _Table(graph._nodes)
        self.relationships = _Table(graph._relationships)
        self.node_ages = _Table(graph._node_ages)
        self.relationship_ages = _Table(graph._relationship_ages)
        self.out = _Index(graph._outgoing)
        self.into = _Index(graph._incoming)
        self.clock = graph._clock
        self.touched = False  # an entry the base graph holds was rewritten or removed
        self.new_nodes: list[str] = []
        self.new_relationships: list[str] = []
        self.evicted_nodes: list[str] = []
        self.evicted_relationships: list[str] = []

    # --- single entries ---

    def _note(self, ident: str, base: PMap[str, Any], new: list[str]) -> None:
        if ident in base:
            self.touched = True
        else:
            new.append(ident)

    def add_node(self, node: GraphNode) -> None:
        self._note(node.id, self.base._nodes, self.new_nodes)
        self.clock += 1
        self.nodes[node.id] = node
        self.node_ages[node.id] = self.clock

    def add_relationship(self, relationship: GraphRelationship) -> None:
        rid = relationship.id
        old = self.relationships.get(rid)
        if old is not None and (old.source, old.target) != (
            relationship.source,
            relationship.target,
        ):
            self._unlink(old)
            old = None
        if old is None:
            self.out.add(relationship.source, rid)
            self.into.add(relationship.target, rid)
        self._note(rid, self.base._relationships, self.new_relationships)
        self.clock += 1
        self.relationships[rid] = relationship
        self.relationship_ages[rid] = self.clock

    def remove_relationship(self, rid: str) -> None:
        self._unlink(self.relationships.get(rid))
        del self.relationships[rid]
        del self.relationship_ages[rid]
        self.touched = self.touched or rid in self.base._relationships

    def remove_node(self, node_id: str) -> list[str]:
        """Remove the node and its relationships; returns their ids."""
        gone = sorted(set(self.out.ids(node_id)) | set(self.into.ids(node_id)))
        for rid in gone:
            self.remove_relationship(rid)
        del self.nodes[node_id]
        del self.node_ages[node_id]
        self.touched = self.touched or node_id in self.base._nodes
        return gone

    def _unlink(self, relationship: GraphRelationship) -> None:
        self.out.discard(relationship.source, relationship.id)
        self.into.discard(relationship.target, relationship.id)

    # --- merging ---

    def merge_nodes(self, other: MemoryGraph, policy: MergePolicy) -> _Tally:
        tally = _Tally()
        reject = self.limits.at_cap is AtCap.REJECT
        base = self.base._nodes
        for incoming in other.ordered_nodes():
            old = base.get(incoming.id)
            if old is None:
                if reject and len(self.nodes) >= self.limits.max_nodes:
                    tally.rejected.append(incoming.id)
                    continue
                tally.new.append(incoming.id)
                self.add_node(incoming)
                continue
            tally.existing.append(incoming.id)
            if node_conflicts(old, incoming):
                tally.conflicts.append(incoming.id)
            merged = combine_nodes(old, incoming, policy)
            if merged is not old:
                self.add_node(merged)
        return tally

    def merge_relationships(self, other: MemoryGraph, policy: MergePolicy) -> _Tally:
        tally = _Tally()
        reject = self.limits.at_cap is AtCap.REJECT
        base = self.base._relationships
        nodes = self.nodes
        for incoming in other.ordered_relationships():
            old = base.get(incoming.id)
            if old is None:
                ends_in = incoming.source in nodes and incoming.target in nodes
                if not ends_in or (
                    reject and len(self.relationships) >= self.limits.max_relationships
                ):
                    tally.rejected.append(incoming.id)
                    continue
                tally.new.append(incoming.id)
                self.add_relationship(incoming)
                continue
            tally.existing.append(incoming.id)
            if relationship_conflicts(old, incoming):
                tally.conflicts.append(incoming.id)
            merged = combine_relationships(old, incoming, policy)
            if merged is old:
                continue
            if merged.source not in nodes or merged.target not in nodes:
                # Its new endpoint was refused at the cap: the old version stays.
                tally.rejected.append(incoming.id)
                continue
            self.add_relationship(merged)
        return tally

    # --- the cap ---

    def enforce_cap(self, *, force_evict: bool = False) -> None:
        """Evict down to the limits (lowest weight, then oldest), when the
        policy is ``evict`` or ``force_evict``."""
        if self.limits.at_cap is not AtCap.EVICT and not force_evict:
            return
        excess = len(self.nodes) - self.limits.max_nodes
        if excess > 0:
            ages = self.node_ages
            victims = heapq.nsmallest(
                excess, self.nodes.items(), key=lambda e: (e[1].weight, ages.get(e[0]))
            )
            for node_id, _ in victims:
                self.evicted_relationships.extend(self.remove_node(node_id))
                self.evicted_nodes.append(node_id)
        excess = len(self.relationships) - self.limits.max_relationships
        if excess > 0:
            ages = self.relationship_ages
            victims = heapq.nsmallest(
                excess, self.relationships.items(), key=lambda e: (e[1].weight, ages.get(e[0]))
            )
            for rid, _ in victims:
                self.remove_relationship(rid)
                self.evicted_relationships.append(rid)

    def finish(self, *, force: bool = False) -> MemoryGraph:
        """The edited graph; the base graph itself when nothing changed (what
        was added was evicted again, and nothing the base held was touched),
        unless ``force``."""
        changed = (
            self.touched
            or any(i in self.nodes for i in self.new_nodes)
            or any(i in self.relationships for i in self.new_relationships)
        )
        if not changed and not force:
            return self.base
        graph = object.__new__(MemoryGraph)
        graph.__attrs_init__(
            nodes=self.nodes.finish(),
            relationships=self.relationships.finish(),
            node_ages=self.node_ages.finish(),
            relationship_ages=self.relationship_ages.finish(),
            outgoing=self.out.finish(),
            incoming=self.into.finish(),
            clock=self.clock,
            limits=self.limits,
            memo={},
        )
        return graph
