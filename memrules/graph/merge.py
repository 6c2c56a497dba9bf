"""Merging one graph into another: `MergePolicy`, the rules that
combine two versions of one node or relationship, and `MergeReport`.

`MemoryGraph.merge(other, policy)`
walks ``other``'s nodes, then its relationships (each oldest first); an id
the graph lacks is added, and an id it has is combined under ``policy``:

- ``keep_existing``: the existing entry stays as it is.
- ``take_incoming``: the incoming entry replaces it whole.
- ``union`` (the default): labels are united; properties are merged key by
  key, the incoming value winning where both have a key; the weight is the
  larger of the two; a relationship's endpoints and type are the incoming
  ones. Taking the larger weight (rather than, say, the sum) makes a union
  idempotent: merging the same delta twice, as an extractor that rereads a
  history does on every request, changes nothing the second time, and the
  order of two merges never changes a weight.

An incoming entry **conflicts** with an existing one when they disagree on a
value both hold: a property key with two values, the weight, or a
relationship's endpoints or type (differing labels are no conflict: they
unite). A conflict is reported whatever the policy did about it.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from memrules.graph.model import GraphNode, GraphRelationship

__all__ = [
    "MergeCounts",
    "MergePolicy",
    "MergeReport",
    "combine_nodes",
    "combine_relationships",
    "node_conflicts",
    "relationship_conflicts",
]


class MergePolicy(enum.StrEnum):
    """How an incoming node or relationship combines with an existing one of
    the same id (see the module docs)."""

    KEEP_EXISTING = "keep_existing"
    TAKE_INCOMING = "take_incoming"
    UNION = "union"


def _properties_conflict(old: Any, new: Any) -> bool:
    return any(key in old and old[key] != value for key, value in new.items())


def node_conflicts(old: GraphNode, new: GraphNode) -> bool:
    """Whether two versions of a node disagree on a property or the weight."""
    return old.weight != new.weight or _properties_conflict(old.properties, new.properties)


def relationship_conflicts(old: GraphRelationship, new: GraphRelationship) -> bool:
    """Whether two versions of a relationship disagree on the endpoints, the
    type, the weight or a property."""
    return (
        old.source != new.source
        or old.target != new.target
        or old.type != new.type
        or old.weight != new.weight
        or _properties_conflict(old.properties, new.properties)
    )


def combine_nodes(old: GraphNode, new: GraphNode, policy: MergePolicy) -> GraphNode:
    """The node ``policy`` makes of ``old`` and ``new`` (same id). Returns
    ``old`` itself when the result equals it, ``new`` itself when it equals
    that."""
    if policy is MergePolicy.KEEP_EXISTING or old == new:
        return old
    if policy is MergePolicy.TAKE_INCOMING:
        return new
    merged = GraphNode(
        id=old.id,
        labels=(*old.labels, *new.labels),
        properties={**old.properties, **new.properties},
        weight=max(old.weight, new.weight),
    )
    if merged == old:
        return old
    return new if merged == new else merged


def combine_relationships(
    old: GraphRelationship, new: GraphRelationship, policy: MergePolicy
) -> GraphRelationship:
    """The relationship ``policy`` makes of ``old`` and ``new`` (same id).
    Returns ``old`` itself when the result equals it, ``new`` itself when it
    equals that."""
    if policy is MergePolicy.KEEP_EXISTING or old == new:
        return old
    if policy is MergePolicy.TAKE_INCOMING:
        return new
    merged = GraphRelationship(
        id=old.id,
        source=new.source,
        target=new.target,
        type=new.type,
        weight=max(old.weight, new.weight),
        properties={**old.properties, **new.properties},
    )
    if merged == old:
        return old
    return new if merged == new else merged


@attrs.frozen(kw_only=True, slots=True)
class MergeCounts:
    """What a merge (or an import) did to one kind of entry, nodes or
    relationships.

    Of the incoming entries that are in the result: ``added`` were new,
    ``updated`` changed an existing entry, ``unchanged`` left it as it was.
    ``conflicts`` are the ids where incoming and existing disagreed (see the
    module docs), ``evicted`` the ids that left the graph to respect its cap
    (existing or just added; relationships that went with an evicted node
    included), ``rejected`` the incoming ids refused at the cap. Id tuples are
    sorted.
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    conflicts: tuple[str, ...] = ()
    evicted: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()

    @property
    def conflicting(self) -> int:
        """How many entries conflicted."""
        return len(self.conflicts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "conflicting": self.conflicting,
            "conflicts": list(self.conflicts),
            "evicted": list(self.evicted),
            "rejected": list(self.rejected),
        }


@attrs.frozen(kw_only=True, slots=True)
class MergeReport:
    """What `MemoryGraph.merge` did:
    the ``policy``, and `MergeCounts` for ``nodes`` and
    ``relationships``. ``changed`` says whether the graph changed (when
    False, the merge returned the very graph it was given). ``version`` is
    the conversation's version after the merge when it went through
    `MemoryPlugin.merge_graph`
    (None for a merge of two graph values)."""

    policy: MergePolicy
    nodes: MergeCounts = MergeCounts()
    relationships: MergeCounts = MergeCounts()
    changed: bool = False
    version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy.value,
            "nodes": self.nodes.to_dict(),
            "relationships": self.relationships.to_dict(),
            "changed": self.changed,
            "version": self.version,
        }
