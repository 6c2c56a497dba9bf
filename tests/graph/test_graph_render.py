"""Rendering the graph (memrules.graph.render): the text, its caps, its
determinism across processes, and where the message goes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules._core.errors import ConfigError
from memrules._core.messages import message
from memrules.graph import (
    GraphContext,
    GraphNode,
    GraphRelationship,
    MemoryGraph,
    render_graph,
)
from memrules.graph.render import find_graph_messages, insert_graph_message
from memrules.testing import graph_parts, graphs

ROOT = Path(__file__).resolve().parents[2]

GRAPH = MemoryGraph.of(
    [
        GraphNode(id="vault", labels=("Entity",), weight=2),
        GraphNode(id="Lisbon", labels=("Value",), weight=2),
        GraphNode(id="file:my notes.md", labels=("File",), properties={"b": [1], "a": "x"}),
        GraphNode(id="tool:read_file", labels=("Tool",), weight=0.5),
    ],
    [
        GraphRelationship(id="f", source="vault", target="Lisbon", type="is_in", weight=2),
        GraphRelationship(id="t", source="tool:read_file", target="file:my notes.md", type="read"),
    ],
)


def test_the_text() -> None:
    rendered = render_graph(GRAPH, GraphContext())
    assert rendered is not None
    assert rendered.text == textwrap.dedent(
        """\
        memrules graph memory: what this conversation established, highest weight first.
        nodes:
        - Lisbon (Value) weight 2
        - vault (Entity) weight 2
        - "file:my notes.md" (File) a="x" b=[1]
        - tool:read_file (Tool) weight 0.5
        relationships:
        - vault -[is_in]-> Lisbon weight 2
        - tool:read_file -[read]-> "file:my notes.md"
        left out: 0 nodes, 0 relationships"""
    )
    assert (rendered.nodes_shown, rendered.relationships_shown) == (4, 2)


def test_caps_show_the_heaviest_and_count_the_rest() -> None:
    rendered = render_graph(GRAPH, GraphContext(max_nodes=1, max_relationships=0, marker="MEM:"))
    assert rendered is not None
    assert rendered.text.splitlines() == [
        "MEM: what this conversation established, highest weight first.",
        "nodes:",
        "- Lisbon (Value) weight 2",  # a tie with vault at 2: broken by id
        "left out: 3 nodes, 2 relationships",
    ]
    assert (rendered.nodes_left_out, rendered.relationships_left_out) == (3, 2)


@given(graphs(), st.integers(1, 4), st.integers(0, 5))
def test_caps_are_honoured(graph: MemoryGraph, max_nodes: int, max_relationships: int) -> None:
    rendered = render_graph(
        graph, GraphContext(max_nodes=max_nodes, max_relationships=max_relationships)
    )
    if graph.is_empty:
        assert rendered is None
        return
    assert rendered is not None
    lines = rendered.text.splitlines()
    node_lines = lines[2 : 2 + rendered.nodes_shown]
    assert rendered.nodes_shown == min(max_nodes, len(graph.nodes)) == len(node_lines)
    assert rendered.relationships_shown == min(max_relationships, len(graph.relationships))
    assert rendered.nodes_left_out == len(graph.nodes) - rendered.nodes_shown
    left_out = (rendered.nodes_left_out, rendered.relationships_left_out)
    assert lines[-1] == "left out: {} nodes, {} relationships".format(*left_out)
    shown = sorted(graph.nodes.values(), key=lambda n: (-n.weight, n.id))[:max_nodes]
    for line, n in zip(node_lines, shown, strict=True):
        assert (line + " ").startswith(f"- {json.dumps(n.id) if ' ' in n.id else n.id} ")


@given(graph_parts(), st.randoms(use_true_random=False))
def test_equal_graphs_render_the_same_bytes(parts: tuple, rng: object) -> None:  # type: ignore[type-arg]
    nodes, relationships = parts
    one = MemoryGraph.of(nodes, relationships)
    shuffled_nodes = list(one.nodes.values())
    shuffled_relationships = list(one.relationships.values())
    rng.shuffle(shuffled_nodes)  # type: ignore[attr-defined]
    rng.shuffle(shuffled_relationships)  # type: ignore[attr-defined]
    other = MemoryGraph.of(shuffled_nodes, shuffled_relationships)
    assert other == one
    assert render_graph(other, GraphContext(max_nodes=3, max_relationships=3)) == render_graph(
        one, GraphContext(max_nodes=3, max_relationships=3)
    )


RENDER = """
import sys
from memrules.graph import GraphContext, MemoryGraph, render_graph
from memrules.testing import graphs
from hypothesis import given, settings, HealthCheck
out = []
@settings(max_examples=40, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck), deadline=None)
@given(graphs(max_nodes=8, max_relationships=10))
def collect(graph):
    rendered = render_graph(graph, GraphContext(max_nodes=4, max_relationships=4))
    out.append("" if rendered is None else rendered.text)
collect()
sys.stdout.write("\\n=====\\n".join(out))
"""


def test_rendering_does_not_depend_on_the_hash_seed() -> None:
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", RENDER],
            capture_output=True,
            cwd=ROOT,
            env=env,
            timeout=120,
            check=True,
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert b"left out:" in outputs.pop()


def test_graph_context_is_checked_when_built() -> None:
    with pytest.raises(ConfigError) as raised:
        GraphContext(max_nodes=0, max_relationships=-1, marker=" ")
    assert [p.yaml_path for p in raised.value.problems] == [
        "graph_context.max_nodes",
        "graph_context.max_relationships",
        "graph_context.marker",
    ]


# --- placement -----------------------------------------------------------------------------


def test_the_message_goes_after_the_first_system_message() -> None:
    graph_message = message("system", "memrules graph memory: x")
    user = message("user", "hi")
    system = message("system", "be brief")
    assert insert_graph_message((system, user), graph_message) == (system, graph_message, user)
    assert insert_graph_message((user,), graph_message) == (graph_message, user)
    assert insert_graph_message((user, system), graph_message) == (user, system, graph_message)
    # A stale message's place is kept, but never before the first system message.
    assert insert_graph_message((system, user), graph_message, at=2) == (
        system,
        user,
        graph_message,
    )
    assert insert_graph_message((system, user), graph_message, at=0) == (
        system,
        graph_message,
        user,
    )
    assert find_graph_messages((system, graph_message, user), "memrules graph memory:") == (1,)
    assert (
        find_graph_messages(
            (message("user", "memrules graph memory: x"),), "memrules graph memory:"
        )
        == ()
    )


def test_a_rendering_is_computed_once_per_graph_and_context() -> None:
    context = GraphContext(max_nodes=2)
    first = render_graph(GRAPH, context)
    assert render_graph(GRAPH, context) is first
    assert render_graph(GRAPH, GraphContext(max_nodes=2)) is first  # equal contexts
    other = render_graph(GRAPH, GraphContext(max_nodes=3))
    assert other is not first
    changed = GRAPH.add_node(GraphNode(id="zz", weight=9))
    third = render_graph(changed, context)
    assert third is not None
    assert "- zz weight 9" in third.text
    assert render_graph(GRAPH, context) is first  # the old graph's rendering is still its own
