"""Editing a working graph in batches: `GraphEdit` buffers a batch of
changes to a graph's `GraphParts` (its maps, ages and adjacency
indexes, kept in step in this one place) and yields the new parts, written
into new persistent maps the cheaper way for the batch's size. Used by
`MemoryGraph` for every update; it never changes the
parts it started from.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import Any

import attrs
from pyrsistent import PMap, pmap

from memrules.graph.limits import AtCap, GraphLimits
from memrules.graph.merge import (
    MergeCounts,
    MergePolicy,
    combine_nodes,
    combine_relationships,
    node_conflicts,
    relationship_conflicts,
)
from memrules.graph.model import GraphNode, GraphRelationship

__all__ = ["GraphEdit", "GraphParts", "Tally"]

_EMPTY_SET: frozenset[str] = frozenset()


@attrs.frozen(kw_only=True, slots=True)
class GraphParts:
    """What a graph is made of: nodes and relationships by id, the age of
    each (the clock value when it was last added or changed), relationship
    ids by source (``outgoing``) and by target (``incoming``) node, the
    clock, and the limits."""

    nodes: PMap[str, GraphNode]
    relationships: PMap[str, GraphRelationship]
    node_ages: PMap[str, int]
    relationship_ages: PMap[str, int]
    outgoing: PMap[str, frozenset[str]]
    incoming: PMap[str, frozenset[str]]
    clock: int
    limits: GraphLimits


@attrs.define
class Tally:
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
    `finish` writes them into a new map the cheaper way, through an
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
    touched entries are plain sets until `finish` freezes them."""

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


class GraphEdit:
    """A batch of changes to one graph: the one place that keeps the maps,
    the ages and the adjacency indexes in step."""

    def __init__(self, base: GraphParts, *, limits: GraphLimits | None = None) -> None:
        self.base = base
        self.limits = base.limits if limits is None else limits
        self.nodes = _Table(base.nodes)
        self.relationships = _Table(base.relationships)
        self.node_ages = _Table(base.node_ages)
        self.relationship_ages = _Table(base.relationship_ages)
        self.out = _Index(base.outgoing)
        self.into = _Index(base.incoming)
        self.clock = base.clock
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
        self._note(node.id, self.base.nodes, self.new_nodes)
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
        self._note(rid, self.base.relationships, self.new_relationships)
        self.clock += 1
        self.relationships[rid] = relationship
        self.relationship_ages[rid] = self.clock

    def remove_relationship(self, rid: str) -> None:
        self._unlink(self.relationships.get(rid))
        del self.relationships[rid]
        del self.relationship_ages[rid]
        self.touched = self.touched or rid in self.base.relationships

    def remove_node(self, node_id: str) -> list[str]:
        """Remove the node and its relationships; returns their ids."""
        gone = sorted(set(self.out.ids(node_id)) | set(self.into.ids(node_id)))
        for rid in gone:
            self.remove_relationship(rid)
        del self.nodes[node_id]
        del self.node_ages[node_id]
        self.touched = self.touched or node_id in self.base.nodes
        return gone

    def _unlink(self, relationship: GraphRelationship) -> None:
        self.out.discard(relationship.source, relationship.id)
        self.into.discard(relationship.target, relationship.id)

    # --- merging ---

    def merge_nodes(self, incoming_nodes: Iterable[GraphNode], policy: MergePolicy) -> Tally:
        tally = Tally()
        reject = self.limits.at_cap is AtCap.REJECT
        base = self.base.nodes
        for incoming in incoming_nodes:
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

    def merge_relationships(
        self, incoming_relationships: Iterable[GraphRelationship], policy: MergePolicy
    ) -> Tally:
        tally = Tally()
        reject = self.limits.at_cap is AtCap.REJECT
        base = self.base.relationships
        nodes = self.nodes
        for incoming in incoming_relationships:
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

    def finish(self, *, force: bool = False) -> GraphParts | None:
        """The edited graph's parts; None when nothing changed (what was
        added was evicted again, and nothing the base held was touched),
        unless ``force``."""
        changed = (
            self.touched
            or any(i in self.nodes for i in self.new_nodes)
            or any(i in self.relationships for i in self.new_relationships)
        )
        if not changed and not force:
            return None
        return GraphParts(
            nodes=self.nodes.finish(),
            relationships=self.relationships.finish(),
            node_ages=self.node_ages.finish(),
            relationship_ages=self.relationship_ages.finish(),
            outgoing=self.out.finish(),
            incoming=self.into.finish(),
            clock=self.clock,
            limits=self.limits,
        )
