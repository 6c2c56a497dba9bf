"""MemoryGraph against a plain-dict model, step by step (hypothesis stateful).

The model is written here, independently of memrules.graph: nodes and
relationships in dicts with their ages, the three merge policies, the cap
with both at-cap policies, snapshots renumbering ages. After every step the
graph must hold what the model holds, its indexes must agree with a scan of
the model, and every version the machine has seen must still hold what it
held when it was made: the persistence promise.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

import attrs
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from memrules._core.errors import GraphError
from memrules.graph import (
    AtCap,
    GraphDirection,
    GraphLimits,
    GraphNode,
    GraphRelationship,
    GraphSnapshot,
    MemoryGraph,
    MergePolicy,
)
from memrules.testing import NODE_IDS, RELATIONSHIP_IDS, graph_nodes, graph_relationships

BIG = GraphLimits(max_nodes=10_000, max_relationships=10_000)


# --- the model ----------------------------------------------------------------------


def plain(entry: GraphNode | GraphRelationship) -> dict[str, Any]:
    """An entry as plain values (what the model compares)."""
    return json.loads(json.dumps(entry.to_dict()))


@attrs.define
class Model:
    """The graph as dicts: id -> (plain entry, age)."""

    limits: GraphLimits
    nodes: dict[str, tuple[dict[str, Any], int]] = attrs.Factory(dict)
    rels: dict[str, tuple[dict[str, Any], int]] = attrs.Factory(dict)
    clock: int = 0

    def copy(self) -> Model:
        return Model(self.limits, dict(self.nodes), dict(self.rels), self.clock)

    # the cap

    def full(self, kind: str) -> bool:
        if self.limits.at_cap is not AtCap.REJECT:
            return False
        if kind == "node":
            return len(self.nodes) >= self.limits.max_nodes
        return len(self.rels) >= self.limits.max_relationships

    def drop_node(self, node_id: str) -> list[str]:
        gone = [r for r, (v, _) in self.rels.items() if node_id in (v["from"], v["to"])]
        for r in gone:
            del self.rels[r]
        del self.nodes[node_id]
        return gone

    def evict(self, *, force: bool = False) -> tuple[list[str], list[str]]:
        nodes_out: list[str] = []
        rels_out: list[str] = []
        if self.limits.at_cap is not AtCap.EVICT and not force:
            return nodes_out, rels_out
        while len(self.nodes) > self.limits.max_nodes:
            victim = min(self.nodes, key=lambda i: (self.nodes[i][0]["weight"], self.nodes[i][1]))
            rels_out += self.drop_node(victim)
            nodes_out.append(victim)
        while len(self.rels) > self.limits.max_relationships:
            victim = min(self.rels, key=lambda i: (self.rels[i][0]["weight"], self.rels[i][1]))
            del self.rels[victim]
            rels_out.append(victim)
        return nodes_out, rels_out

    # single entries

    def put(self, table: dict[str, tuple[dict[str, Any], int]], value: dict[str, Any]) -> None:
        self.clock += 1
        table[value["id"]] = (value, self.clock)

    # merging, written from the docs

    @staticmethod
    def conflict(old: dict[str, Any], new: dict[str, Any]) -> bool:
        keys = ("weight", "from", "to", "type")
        if any(k in old and old[k] != new[k] for k in keys):
            return True
        return any(
            k in old["properties"] and old["properties"][k] != v
            for k, v in new["properties"].items()
        )

    @staticmethod
    def combine(old: dict[str, Any], new: dict[str, Any], policy: MergePolicy) -> dict[str, Any]:
        if policy is MergePolicy.KEEP_EXISTING:
            return old
        if policy is MergePolicy.TAKE_INCOMING:
            return new
        out = dict(new)
        if "labels" in old:
            out["labels"] = sorted(set(old["labels"]) | set(new["labels"]))
        out["properties"] = {**old["properties"], **new["properties"]}
        out["properties"] = dict(sorted(out["properties"].items()))
        out["weight"] = max(old["weight"], new["weight"])
        return out

    def merge(self, other: Model, policy: MergePolicy) -> dict[str, Any]:
        report: dict[str, Any] = {}
        before_nodes, before_rels = dict(self.nodes), dict(self.rels)
        seen: dict[str, dict[str, list[str]]] = {}
        for kind, table, incoming in (
            ("node", self.nodes, other.nodes),
            ("rel", self.rels, other.rels),
        ):
            s = seen[kind] = {"new": [], "existing": [], "conflicts": [], "rejected": []}
            for ident in sorted(incoming, key=lambda i: incoming[i][1]):
                value = incoming[ident][0]
                ends = (value["from"], value["to"]) if kind == "rel" else ()
                if ident not in table:
                    if any(e not in self.nodes for e in ends) or self.full(kind):
                        s["rejected"].append(ident)
                        continue
                    s["new"].append(ident)
                    self.put(table, value)
                    continue
                s["existing"].append(ident)
                old = table[ident][0]
                if self.conflict(old, value):
                    s["conflicts"].append(ident)
                merged = self.combine(old, value, policy)
                if merged == old:
                    continue
                if kind == "rel" and any(
                    e not in self.nodes for e in (merged["from"], merged["to"])
                ):
                    s["rejected"].append(ident)
                    continue
                self.put(table, merged)
        evicted_nodes, evicted_rels = self.evict()
        for kind, table, before, evicted in (
            ("node", self.nodes, before_nodes, evicted_nodes),
            ("rel", self.rels, before_rels, evicted_rels),
        ):
            s = seen[kind]
            existing = [i for i in s["existing"] if i in table]
            report[kind] = {
                "added": sum(i in table for i in s["new"]),
                "updated": sum(table[i][0] != before[i][0] for i in existing),
                "unchanged": sum(table[i][0] == before[i][0] for i in existing),
                "conflicts": sorted(s["conflicts"]),
                "evicted": sorted(evicted),
                "rejected": sorted(s["rejected"]),
            }
        return report

    def renumbered(self, limits: GraphLimits) -> Model:
        """What importing this graph's snapshot builds: ages 1..n for the
        nodes in age order, then on for the relationships."""
        new = Model(limits)
        for ident in sorted(self.nodes, key=lambda i: self.nodes[i][1]):
            new.put(new.nodes, self.nodes[ident][0])
        for ident in sorted(self.rels, key=lambda i: self.rels[i][1]):
            new.put(new.rels, self.rels[ident][0])
        return new

    # checks

    def check(self, graph: MemoryGraph) -> None:
        assert {i: plain(n) for i, n in graph.nodes.items()} == {
            i: v for i, (v, _) in self.nodes.items()
        }
        assert {i: plain(r) for i, r in graph.relationships.items()} == {
            i: v for i, (v, _) in self.rels.items()
        }
        by_age = sorted(self.nodes, key=lambda i: self.nodes[i][1])
        assert [n.id for n in graph.ordered_nodes()] == by_age
        by_age = sorted(self.rels, key=lambda i: self.rels[i][1])
        assert [r.id for r in graph.ordered_relationships()] == by_age


def model_of(nodes: tuple[GraphNode, ...], rels: tuple[GraphRelationship, ...]) -> Model:
    """What MemoryGraph.of(nodes, rels) holds: a repeated id is added again."""
    model = Model(BIG)
    for n in nodes:
        model.put(model.nodes, plain(n))
    for r in rels:
        model.put(model.rels, plain(r))
    return model


def counts(report_side: Any) -> dict[str, Any]:
    return {
        "added": report_side.added,
        "updated": report_side.updated,
        "unchanged": report_side.unchanged,
        "conflicts": list(report_side.conflicts),
        "evicted": list(report_side.evicted),
        "rejected": list(report_side.rejected),
    }


def invalid_snapshots(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Ways to break a valid snapshot dict (only those that apply to it)."""
    broken: list[tuple[str, dict[str, Any]]] = []
    if data["nodes"]:
        broken.append(("duplicate node", {**data, "nodes": [*data["nodes"], data["nodes"][0]]}))
        nan = [{**data["nodes"][0], "weight": math.nan}, *data["nodes"][1:]]
        broken.append(("non-finite weight", {**data, "nodes": nan}))
        missing = {"id": "rx", "from": data["nodes"][0]["id"], "to": "nowhere", "type": "t"}
        broken.append(
            ("missing endpoint", {**data, "relationships": [*data["relationships"], missing]})
        )
    if data["relationships"]:
        dup = [*data["relationships"], data["relationships"][0]]
        broken.append(("duplicate relationship", {**data, "relationships": dup}))
        inf = [{**data["relationships"][0], "weight": math.inf}, *data["relationships"][1:]]
        broken.append(("infinite weight", {**data, "relationships": inf}))
    broken.append(("future version", {**data, "version": 2}))
    return broken


# --- the parts the rules draw ------------------------------------------------------

Parts = tuple[tuple[GraphNode, ...], tuple[GraphRelationship, ...]]
_NODE_LISTS = st.lists(graph_nodes(), max_size=6)


@functools.cache
def _relationship_lists(node_ids: tuple[str, ...]) -> st.SearchStrategy[list[GraphRelationship]]:
    return st.lists(graph_relationships(node_ids), max_size=8)


@st.composite
def graph_parts(draw: st.DrawFn) -> Parts:
    """What :func:`memrules.testing.graph_parts` draws, drawn as it does,
    from strategies built once (per node ids) rather than at every draw:
    building and checking them was most of this test's time."""
    nodes = draw(_NODE_LISTS)
    if not nodes:
        return (), ()
    return tuple(nodes), tuple(draw(_relationship_lists(tuple(n.id for n in nodes))))


# --- the machine --------------------------------------------------------------------


class GraphMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.graph = MemoryGraph()
        self.model = Model(GraphLimits())
        self.history: list[tuple[MemoryGraph, Model]] = []

    def record(self, graph: MemoryGraph, model: Model) -> None:
        self.graph, self.model = graph, model
        self.history.append((graph, model.copy()))

    @initialize(
        max_nodes=st.integers(2, 7),
        max_relationships=st.integers(2, 9),
        at_cap=st.sampled_from(AtCap),
    )
    def start(self, max_nodes: int, max_relationships: int, at_cap: AtCap) -> None:
        limits = GraphLimits(
            max_nodes=max_nodes, max_relationships=max_relationships, at_cap=at_cap
        )
        self.record(MemoryGraph(limits=limits), Model(limits))

    @rule(node=graph_nodes())
    def add_node(self, node: GraphNode) -> None:
        model = self.model.copy()
        old = model.nodes.get(node.id)
        if old is not None and old[0] == plain(node):
            assert self.graph.add_node(node) is self.graph
            return
        if old is None and model.full("node"):
            with pytest.raises(GraphError, match=repr(node.id)):
                self.graph.add_node(node)
            return
        model.put(model.nodes, plain(node))
        model.evict()
        new = self.graph.add_node(node)
        if {i: v for i, (v, _) in model.nodes.items()} == {
            i: v for i, (v, _) in self.model.nodes.items()
        }:
            assert new is self.graph  # added and evicted again: nothing changed
            return
        self.record(new, model)

    @rule(
        rid=st.sampled_from(RELATIONSHIP_IDS),
        ends=st.tuples(st.sampled_from(NODE_IDS), st.sampled_from(NODE_IDS)),
        weight=st.sampled_from((0.5, 1.0, 2.0)),
    )
    def add_relationship(self, rid: str, ends: tuple[str, str], weight: float) -> None:
        rel = GraphRelationship(id=rid, source=ends[0], target=ends[1], type="t", weight=weight)
        missing = [e for e in ends if e not in self.model.nodes]
        if missing:
            with pytest.raises(GraphError, match=repr(missing[0])) as raised:
                self.graph.add_relationship(rel)
            assert missing[0] in raised.value.ids
            return
        model = self.model.copy()
        old = model.rels.get(rid)
        if old is not None and old[0] == plain(rel):
            assert self.graph.add_relationship(rel) is self.graph
            return
        if old is None and model.full("rel"):
            with pytest.raises(GraphError, match=repr(rid)):
                self.graph.add_relationship(rel)
            return
        model.put(model.rels, plain(rel))
        model.evict()
        new = self.graph.add_relationship(rel)
        if model.rels.keys() == self.model.rels.keys() and all(
            model.rels[i][0] == self.model.rels[i][0] for i in model.rels
        ):
            assert new is self.graph
            return
        self.record(new, model)

    @rule(node_id=st.sampled_from(NODE_IDS))
    def remove_node(self, node_id: str) -> None:
        new = self.graph.remove_node(node_id)
        if node_id not in self.model.nodes:
            assert new is self.graph
            return
        model = self.model.copy()
        model.drop_node(node_id)
        self.record(new, model)

    @rule(rid=st.sampled_from(RELATIONSHIP_IDS))
    def remove_relationship(self, rid: str) -> None:
        new = self.graph.remove_relationship(rid)
        if rid not in self.model.rels:
            assert new is self.graph
            return
        model = self.model.copy()
        del model.rels[rid]
        self.record(new, model)

    @rule(parts=graph_parts(), policy=st.sampled_from(MergePolicy))
    def merge(
        self,
        parts: tuple[tuple[GraphNode, ...], tuple[GraphRelationship, ...]],
        policy: MergePolicy,
    ) -> None:
        other = MemoryGraph.of(*parts, limits=BIG)
        other_model = model_of(*parts)
        other_model.check(other)
        model = self.model.copy()
        expected = model.merge(other_model, policy)
        new, report = self.graph.merge(other, policy)
        assert report.policy is policy
        assert counts(report.nodes) == expected["node"]
        assert counts(report.relationships) == expected["rel"]
        assert report.changed is (new is not self.graph)
        same = {i: v for i, (v, _) in model.nodes.items()} == {
            i: v for i, (v, _) in self.model.nodes.items()
        } and {i: v for i, (v, _) in model.rels.items()} == {
            i: v for i, (v, _) in self.model.rels.items()
        }
        if same:
            assert new is self.graph
            return
        self.record(new, model)

    @rule()
    def merge_with_itself(self) -> None:
        for policy in MergePolicy:
            new, report = self.graph.merge(self.graph, policy)
            assert new is self.graph
            assert not report.changed
            assert report.nodes.unchanged == len(self.graph.nodes)

    @rule(
        max_nodes=st.integers(1, 7),
        max_relationships=st.integers(1, 9),
        at_cap=st.sampled_from(AtCap),
    )
    def change_limits(self, max_nodes: int, max_relationships: int, at_cap: AtCap) -> None:
        limits = GraphLimits(
            max_nodes=max_nodes, max_relationships=max_relationships, at_cap=at_cap
        )
        new = self.graph.with_limits(limits)
        if limits == self.graph.limits:
            assert new is self.graph
            return
        model = self.model.copy()
        model.limits = limits
        model.evict(force=True)
        assert new.limits == limits
        self.record(new, model)

    @rule()
    def snapshot_round_trip(self) -> None:
        snapshot = self.graph.snapshot()
        text = snapshot.to_json()
        again = GraphSnapshot.from_json(text)
        assert again == snapshot
        assert again.to_json() == text
        restored, report = MemoryGraph.from_snapshot(again, limits=self.graph.limits)
        assert restored == self.graph
        assert (report.nodes, report.relationships) == (
            len(self.graph.nodes),
            len(self.graph.relationships),
        )
        assert report.evicted_nodes == report.rejected_nodes == ()
        self.model.renumbered(self.graph.limits).check(restored)

    @rule(parts=graph_parts())
    def import_snapshot(
        self, parts: tuple[tuple[GraphNode, ...], tuple[GraphRelationship, ...]]
    ) -> None:
        """Replace the graph with another one's snapshot, under this graph's
        limits: what does not fit is cut as a merge into an empty graph would."""
        other = MemoryGraph.of(*parts, limits=BIG)
        imported, report = MemoryGraph.from_snapshot(other.snapshot(), limits=self.graph.limits)
        model = Model(self.graph.limits)
        expected = model.merge(model_of(*parts).renumbered(BIG), MergePolicy.TAKE_INCOMING)
        fits = (
            len(other.nodes) <= self.graph.limits.max_nodes
            and len(other.relationships) <= self.graph.limits.max_relationships
        )
        if fits:
            model = model_of(*parts).renumbered(self.graph.limits)
        assert report.evicted_nodes == tuple(expected["node"]["evicted"])
        assert report.rejected_nodes == tuple(expected["node"]["rejected"])
        assert report.evicted_relationships == tuple(expected["rel"]["evicted"])
        assert report.rejected_relationships == tuple(expected["rel"]["rejected"])
        assert (report.nodes, report.relationships) == (len(model.nodes), len(model.rels))
        self.record(imported, model)

    @rule(data=st.data())
    def import_invalid_snapshot(self, data: st.DataObject) -> None:
        valid = self.graph.snapshot().to_dict()
        what, broken = data.draw(st.sampled_from(invalid_snapshots(valid)))
        before = self.graph.snapshot().to_json()
        with pytest.raises(GraphError) as raised:
            MemoryGraph.from_snapshot(GraphSnapshot.from_dict(broken), limits=self.graph.limits)
        if what != "future version":
            assert raised.value.ids, what  # the offending id is named
        assert self.graph.snapshot().to_json() == before

    @invariant()
    def holds_what_the_model_holds(self) -> None:
        self.model.check(self.graph)
        assert len(self.graph.nodes) <= self.graph.limits.max_nodes
        assert len(self.graph.relationships) <= self.graph.limits.max_relationships

    @invariant()
    def indexes_agree_with_a_scan(self) -> None:
        rels = [v for v, _ in self.model.rels.values()]
        for node_id in self.model.nodes:
            out = {r["to"] for r in rels if r["from"] == node_id}
            into = {r["from"] for r in rels if r["to"] == node_id}
            assert self.graph.neighbors(node_id, GraphDirection.OUT) == tuple(sorted(out))
            assert self.graph.neighbors(node_id, GraphDirection.IN) == tuple(sorted(into))
            assert self.graph.neighbors(node_id) == tuple(sorted(out | into))
            touching = sorted(r["id"] for r in rels if node_id in (r["from"], r["to"]))
            assert [r.id for r in self.graph.relationships_of(node_id)] == touching

    @invariant()
    def every_old_version_is_unchanged(self) -> None:
        for graph, model in self.history:
            model.check(graph)


def _run_machine(examples: int) -> None:
    run_state_machine_as_test(
        GraphMachine,
        settings=settings(
            GraphMachine.TestCase.settings, max_examples=examples, stateful_step_count=40
        ),
    )


def test_graph_against_a_dict_model() -> None:
    """25 runs of up to 40 steps (the derandomized profile's runs, fewer of
    them): every rule, both at-cap policies and snapshots are reached in
    these, so a graph that drifts from the model on any of them fails here.
    The slow variant below runs 100, for the rarer interleavings."""
    _run_machine(25)


@pytest.mark.slow
def test_graph_against_a_dict_model_at_full_size() -> None:
    """100 runs of up to 40 steps: the same machine, four times the runs."""
    _run_machine(100)


def test_the_model_is_not_trivially_satisfied() -> None:
    """A check on the checker: a graph that differs from the model fails it."""
    model = model_of((GraphNode(id="a"),), ())
    with pytest.raises(AssertionError):
        model.check(MemoryGraph())
    with pytest.raises(AssertionError):
        model.check(MemoryGraph.of([GraphNode(id="a", weight=2)]))
