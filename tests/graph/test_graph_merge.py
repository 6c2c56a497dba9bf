"""Merging graphs (memrules.graph.merge): each policy by example, the report,
and the union's stated properties (idempotent, order-independent weights)."""

from __future__ import annotations

import pytest
from hypothesis import given

from memrules._core.errors import GraphError
from memrules.graph import (
    AtCap,
    GraphLimits,
    GraphNode,
    GraphRelationship,
    MemoryGraph,
    MergePolicy,
)
from memrules.testing import graphs

BASE = MemoryGraph.of(
    [
        GraphNode(id="vault", labels=("Entity",), properties={"city": "Lisbon", "n": 1}),
        GraphNode(id="key", weight=2),
    ],
    [GraphRelationship(id="r", source="vault", target="key", type="holds", weight=1)],
)
DELTA = MemoryGraph.of(
    [
        GraphNode(
            id="vault", labels=("Place",), properties={"city": "Porto", "floor": 3}, weight=3
        ),
        GraphNode(id="key", weight=2),
        GraphNode(id="owner"),
    ],
    [
        GraphRelationship(id="r", source="key", target="vault", type="opens", weight=0.5),
        GraphRelationship(id="o", source="owner", target="vault", type="owns"),
    ],
)


def test_keep_existing_adds_only_new_ids() -> None:
    graph, report = BASE.merge(DELTA, MergePolicy.KEEP_EXISTING)
    assert graph.node("vault") is BASE.node("vault")
    assert graph.relationship("r") is BASE.relationship("r")
    assert set(graph.nodes) == {"vault", "key", "owner"}
    assert (report.nodes.added, report.nodes.updated, report.nodes.unchanged) == (1, 0, 2)
    assert report.nodes.conflicts == ("vault",)  # reported even though nothing changed
    assert report.relationships.conflicts == ("r",)
    assert (report.relationships.added, report.relationships.unchanged) == (1, 1)
    assert report.changed


def test_take_incoming_replaces_whole_entries() -> None:
    graph, report = BASE.merge(DELTA, MergePolicy.TAKE_INCOMING)
    assert graph.node("vault") is DELTA.node("vault")
    assert graph.relationship("r") is DELTA.relationship("r")
    assert graph.neighbors("key") == ("vault",)
    assert (report.nodes.added, report.nodes.updated, report.nodes.unchanged) == (1, 1, 1)
    assert report.relationships.updated == 1


def test_union_unites_labels_merges_properties_and_keeps_the_larger_weight() -> None:
    graph, report = BASE.merge(DELTA)  # union is the default
    vault = graph.node("vault")
    assert vault.labels == ("Entity", "Place")
    assert dict(vault.properties) == {"city": "Porto", "n": 1, "floor": 3}
    assert vault.weight == 3
    r = graph.relationship("r")
    assert (r.source, r.target, r.type, r.weight) == ("key", "vault", "opens", 1.0)
    assert report.policy is MergePolicy.UNION
    assert report.nodes.conflicts == ("vault",)
    assert report.nodes.unchanged == 1  # key: equal on both sides
    assert report.to_dict()["nodes"] == {
        "added": 1,
        "updated": 1,
        "unchanged": 1,
        "conflicting": 1,
        "conflicts": ["vault"],
        "evicted": [],
        "rejected": [],
    }


def test_differing_labels_alone_are_no_conflict() -> None:
    one = MemoryGraph.of([GraphNode(id="a", labels=("X",))])
    other = MemoryGraph.of([GraphNode(id="a", labels=("Y",))])
    _, report = one.merge(other)
    assert report.nodes.conflicts == ()
    assert report.nodes.updated == 1


def test_merge_leaves_both_inputs_as_they_were() -> None:
    base, delta = BASE.snapshot(), DELTA.snapshot()
    for policy in MergePolicy:
        BASE.merge(DELTA, policy)
    assert (BASE.snapshot(), DELTA.snapshot()) == (base, delta)


@given(graphs(), graphs())
def test_union_is_idempotent(base: MemoryGraph, delta: MemoryGraph) -> None:
    once, _ = base.merge(delta)
    twice, report = once.merge(delta)
    assert twice is once
    assert not report.changed
    assert report.nodes.added == report.nodes.updated == 0


@given(graphs(), graphs(), graphs())
def test_union_weights_and_labels_do_not_depend_on_order(
    base: MemoryGraph, one: MemoryGraph, other: MemoryGraph
) -> None:
    ab, _ = base.merge(one)[0].merge(other)
    ba, _ = base.merge(other)[0].merge(one)
    assert set(ab.nodes) == set(ba.nodes)
    for ident in ab.nodes:
        assert ab.node(ident).weight == ba.node(ident).weight
        assert ab.node(ident).labels == ba.node(ident).labels


def test_merge_over_the_cap_evicts_and_reports() -> None:
    limits = GraphLimits(max_nodes=2, max_relationships=5)
    base = MemoryGraph.of([GraphNode(id="a", weight=2), GraphNode(id="b")], limits=limits)
    delta = MemoryGraph.of(
        [GraphNode(id="c", weight=3), GraphNode(id="d", weight=0.5)],
        [GraphRelationship(id="cd", source="c", target="d", type="t")],
    )
    graph, report = base.merge(delta)
    assert set(graph.nodes) == {"a", "c"}
    assert report.nodes.evicted == ("b", "d")
    assert report.nodes.added == 1  # d was added and went at once: it counts as evicted only
    assert report.relationships.evicted == ("cd",)
    assert report.relationships.added == 0


def test_merge_at_the_cap_with_reject_refuses_in_incoming_order() -> None:
    limits = GraphLimits(max_nodes=3, max_relationships=1, at_cap=AtCap.REJECT)
    base = MemoryGraph.of([GraphNode(id="a"), GraphNode(id="b")], limits=limits)
    delta = MemoryGraph.of(
        [
            GraphNode(id="c"),
            GraphNode(id="d", weight=9),
            GraphNode(id="a", weight=2),
            GraphNode(id="b"),
        ],
        [
            GraphRelationship(id="ad", source="a", target="d", type="t"),
            GraphRelationship(id="ac", source="a", target="c", type="t"),
            GraphRelationship(id="ab", source="a", target="b", type="t"),
        ],
    )
    graph, report = base.merge(delta)
    assert set(graph.nodes) == {"a", "b", "c"}
    assert graph.node("a").weight == 2  # updates of what is there still go through
    assert report.nodes.rejected == ("d",)
    assert set(graph.relationships) == {"ac"}
    assert report.relationships.rejected == ("ab", "ad")  # ad names a refused node; ab: no room


def test_merge_refuses_what_is_not_a_graph() -> None:
    with pytest.raises(GraphError, match="can only merge a MemoryGraph, got dict"):
        BASE.merge({})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'both'"):
        BASE.merge(DELTA, "both")  # type: ignore[arg-type]
