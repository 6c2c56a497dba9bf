"""The working graph's values and updates (memrules.graph.model,
memory_graph, limits), by example; the stateful model test covers the
combinations."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given

from memrules._core.errors import ConfigError, GraphError
from memrules.graph import (
    AtCap,
    GraphDirection,
    GraphLimits,
    GraphNode,
    GraphRelationship,
    MemoryGraph,
)
from memrules.testing import graphs


def node(ident: str, weight: float = 1.0, **properties: Any) -> GraphNode:
    return GraphNode(id=ident, weight=weight, properties=properties)


def rel(ident: str, source: str, target: str, weight: float = 1.0) -> GraphRelationship:
    return GraphRelationship(id=ident, source=source, target=target, type="t", weight=weight)


def triangle(limits: GraphLimits | None = None) -> MemoryGraph:
    return MemoryGraph.of(
        [node("a"), node("b"), node("c")],
        [rel("ab", "a", "b"), rel("bc", "b", "c"), rel("ca", "c", "a"), rel("aa", "a", "a")],
        limits=limits or GraphLimits(),
    )


# --- values ---------------------------------------------------------------------------


def test_nodes_normalise_labels_and_freeze_properties() -> None:
    n = GraphNode(id="a", labels=["Y", "X", "Y"], properties={"k": [1, {"z": 2}]})
    assert n.labels == ("X", "Y")
    assert n == GraphNode(id="a", labels=("Y", "X"), properties={"k": (1, {"z": 2})})
    assert hash(n) == hash(GraphNode(id="a", labels=("X", "Y"), properties={"k": [1, {"z": 2}]}))
    assert n.to_dict() == {
        "id": "a",
        "labels": ["X", "Y"],
        "properties": {"k": [1, {"z": 2}]},
        "weight": 1.0,
    }
    assert isinstance(n.weight, float)


@pytest.mark.parametrize(
    ("make", "names"),
    [
        (lambda: GraphNode(id=""), "id=''"),
        (lambda: GraphNode(id="n", weight=math.nan), "node 'n': weight=nan"),
        (lambda: GraphNode(id="n", weight=math.inf), "node 'n': weight=inf"),
        (lambda: GraphNode(id="n", weight=True), "node 'n': weight=True"),
        (lambda: GraphNode(id="n", labels="Entity"), "node 'n': labels='Entity'"),
        (lambda: GraphNode(id="n", labels=[""]), "node 'n': label=''"),
        (lambda: GraphNode(id="n", properties={"k": math.nan}), "node 'n': properties.k"),
        (lambda: GraphNode(id="n", properties={1: "x"}), "node 'n': properties"),
        (lambda: GraphNode(id="n", properties=[("k", 1)]), "node 'n': properties must be"),
        (lambda: rel("r", "a", "", 1.0), "relationship 'r': target=''"),
        (lambda: rel("r", "a", "b", -math.inf), "relationship 'r': weight=-inf"),
        (
            lambda: GraphRelationship(id="r", source="a", target="b", type=""),
            "relationship 'r': type=''",
        ),
    ],
)
def test_bad_fields_raise_graph_error_naming_the_id(make: Any, names: str) -> None:
    with pytest.raises(GraphError) as raised:
        make()
    assert names in str(raised.value)
    assert isinstance(raised.value, ValueError)


# --- updates --------------------------------------------------------------------------


def test_every_update_returns_a_new_graph_and_leaves_the_old_one() -> None:
    g = triangle()
    before = g.snapshot()
    changed = [
        g.add_node(node("d")),
        g.add_node(node("a", weight=2)),
        g.add_relationship(rel("ad", "a", "c")),
        g.remove_node("b"),
        g.remove_relationship("ab"),
    ]
    for new in changed:
        assert new is not g
        assert new != g
    assert g.snapshot() == before


def test_no_ops_return_the_same_graph() -> None:
    g = triangle()
    assert g.add_node(node("a")) is g
    assert g.add_relationship(rel("ab", "a", "b")) is g
    assert g.remove_node("zz") is g
    assert g.remove_relationship("zz") is g
    assert g.with_limits(g.limits) is g
    assert g.merge(MemoryGraph())[0] is g
    assert g.merge(g)[0] is g


def test_add_relationship_to_an_unknown_node_names_it() -> None:
    g = triangle()
    with pytest.raises(GraphError, match="names node 'zz', which is not in the graph") as raised:
        g.add_relationship(rel("az", "a", "zz"))
    assert raised.value.ids == ("zz", "az")
    with pytest.raises(GraphError, match="'ghost'"):
        MemoryGraph.of([node("a")], [rel("r", "ghost", "a")])


def test_remove_node_takes_its_relationships_and_index_entries() -> None:
    g = triangle().remove_node("a")
    assert set(g.relationships) == {"bc"}
    assert g.neighbors("b") == ("c",)
    assert g.neighbors("c", GraphDirection.OUT) == ()
    with pytest.raises(GraphError, match="no node 'a'"):
        g.neighbors("a")


def test_neighbors_by_direction() -> None:
    g = triangle()
    assert g.neighbors("a", GraphDirection.OUT) == ("a", "b")
    assert g.neighbors("a", GraphDirection.IN) == ("a", "c")
    assert g.neighbors("a", GraphDirection.BOTH) == ("a", "b", "c")
    assert g.neighbors("a", "out") == ("a", "b")  # the enum's value works too
    assert [r.id for r in g.relationships_of("a", GraphDirection.OUT)] == ["aa", "ab"]
    assert [r.id for r in g.relationships_of("b")] == ["ab", "bc"]


def test_moving_a_relationship_moves_its_index_entries() -> None:
    g = triangle().add_relationship(rel("ab", "c", "b"))
    assert g.neighbors("a", GraphDirection.OUT) == ("a",)
    assert g.neighbors("c", GraphDirection.OUT) == ("a", "b")
    assert g.neighbors("b", GraphDirection.IN) == ("c",)


def test_replacing_a_node_keeps_its_relationships() -> None:
    g = triangle().add_node(GraphNode(id="a", labels=("Entity",)))
    assert g.node("a").labels == ("Entity",)
    assert len(g.relationships) == 4


def test_equality_is_content_not_history_or_limits() -> None:
    one = MemoryGraph.of([node("a"), node("b")])
    other = MemoryGraph.of([node("b"), node("a")], limits=GraphLimits(max_nodes=5))
    assert one == other
    assert hash(one) == hash(other)
    assert [n.id for n in one.ordered_nodes()] == ["a", "b"]
    assert [n.id for n in other.ordered_nodes()] == ["b", "a"]
    assert one != MemoryGraph.of([node("a")])
    assert one != "a graph"


@given(graphs())
def test_a_graph_is_what_of_built_it_from(graph: MemoryGraph) -> None:
    again = MemoryGraph.of(graph.ordered_nodes(), graph.ordered_relationships())
    assert again == graph
    assert again.snapshot() == graph.snapshot()
    for n in graph.nodes:
        assert set(graph.neighbors(n)) == {
            r.target if r.source == n else r.source
            for r in graph.relationships.values()
            if n in (r.source, r.target)
        }


# --- the cap -----------------------------------------------------------------------------


def test_limits_are_checked_when_built() -> None:
    with pytest.raises(ConfigError) as raised:
        GraphLimits(max_nodes=0, max_relationships=True, at_cap="drop")  # type: ignore[arg-type]
    paths = [p.yaml_path for p in raised.value.problems]
    assert paths == [
        "graph_limits.max_nodes",
        "graph_limits.max_relationships",
        "graph_limits.at_cap",
    ]
    assert GraphLimits(at_cap="reject").at_cap is AtCap.REJECT  # type: ignore[arg-type]


def test_evict_drops_the_lowest_weight_then_the_oldest() -> None:
    limits = GraphLimits(max_nodes=3)
    g = MemoryGraph.of([node("old", 1), node("heavy", 5), node("new", 1)], limits=limits)
    g = g.add_node(node("newest", 1))
    assert set(g.nodes) == {"heavy", "new", "newest"}  # "old" was the oldest of the lightest
    assert g.add_node(node("light", 0.5)) is g  # the newcomer weighed least: it went itself


def test_an_evicted_newcomer_leaves_the_same_graph() -> None:
    g = MemoryGraph.of([node("a", 2), node("b", 2)], limits=GraphLimits(max_nodes=2))
    assert g.add_node(node("c", 1)) is g


def test_evicting_a_node_takes_its_relationships() -> None:
    limits = GraphLimits(max_nodes=3, max_relationships=10)
    g = triangle(limits).add_node(node("heavy", 9))
    assert "a" not in g.nodes  # a, b and c weigh 1: the oldest, a, goes
    assert set(g.relationships) == {"bc"}


def test_relationship_cap_evicts_relationships() -> None:
    limits = GraphLimits(max_relationships=2)
    g = MemoryGraph.of(
        [node("a"), node("b")],
        [rel("r1", "a", "b", 3), rel("r2", "a", "b", 1), rel("r3", "b", "a", 2)],
        limits=limits,
    )
    assert set(g.relationships) == {"r1", "r3"}
    assert g.neighbors("a", GraphDirection.OUT) == ("b",)


def test_reject_refuses_new_entries_at_the_cap() -> None:
    limits = GraphLimits(max_nodes=2, max_relationships=1, at_cap=AtCap.REJECT)
    g = MemoryGraph.of([node("a"), node("b")], [rel("r", "a", "b")], limits=limits)
    with pytest.raises(GraphError, match=r"cap of 2 nodes.*'c' was not added") as raised:
        g.add_node(node("c", 9))
    assert raised.value.ids == ("c",)
    with pytest.raises(GraphError, match="'s' was not added"):
        g.add_relationship(rel("s", "b", "a"))
    assert g.add_node(node("a", 5)).node("a").weight == 5  # updates still go through
    with pytest.raises(GraphError, match="3 nodes are more than the cap of 2"):
        MemoryGraph.of([node("a"), node("b"), node("c")], limits=limits)


def test_with_limits_cuts_to_fit_whatever_at_cap_says() -> None:
    g = triangle()
    cut = g.with_limits(GraphLimits(max_nodes=2, at_cap=AtCap.REJECT))
    assert set(cut.nodes) == {"b", "c"}
    assert set(cut.relationships) == {"bc"}
    assert cut.limits.at_cap is AtCap.REJECT
    assert len(g.nodes) == 3


def test_repr_is_short() -> None:
    assert repr(triangle()).startswith("MemoryGraph(nodes=3, relationships=4, limits=GraphLimits(")
