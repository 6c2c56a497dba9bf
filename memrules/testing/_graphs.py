"""Generators of working graphs and their entries, from small id pools.

Ids come from `NODE_IDS` and `RELATIONSHIP_IDS`, and weights from
a few values, so that two graphs overlap, merges meet conflicts and ties are
broken by ids.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from memrules.graph import GraphLimits, GraphNode, GraphRelationship, MemoryGraph
from memrules.testing._validation import validate_size

__all__ = [
    "NODE_IDS",
    "RELATIONSHIP_IDS",
    "graph_nodes",
    "graph_parts",
    "graph_relationships",
    "graphs",
]

NODE_IDS = ("vault", "Lisbon", "key", "friday", "owner", "file:a.py", "tool:read_file", "x y")
"""The few node ids `graphs` draws from, so that graphs overlap
(one has a space, which rendering must quote)."""

RELATIONSHIP_IDS = tuple(f"r{i}" for i in range(10))
"""The relationship ids `graphs` draws from."""

_LABELS = ("Entity", "Value", "File", "Tool")
_WEIGHTS = (0.5, 1.0, 2.0, 3.0)  # few values, so ties happen and ids break them
_TYPES = ("is_in", "read", "rotates_on")


def graph_nodes(*, ids: Sequence[str] = NODE_IDS) -> st.SearchStrategy[GraphNode]:
    """Nodes with ids from ``ids``, a few labels, small JSON properties and
    weights that often tie."""
    return st.builds(
        GraphNode,
        id=st.sampled_from(tuple(ids)),
        labels=st.lists(st.sampled_from(_LABELS), max_size=2),
        properties=st.dictionaries(
            st.sampled_from(("name", "n", "tags")),
            st.one_of(st.integers(0, 2), st.sampled_from(("a", "b")), st.just([1, {"z": 2}])),
            max_size=2,
        ),
        weight=st.sampled_from(_WEIGHTS),
    )


@st.composite
def graph_relationships(
    draw: st.DrawFn, node_ids: Sequence[str], *, ids: Sequence[str] = RELATIONSHIP_IDS
) -> GraphRelationship:
    """A relationship between two of ``node_ids`` (which must not be empty)."""
    return GraphRelationship(
        id=draw(st.sampled_from(tuple(ids))),
        source=draw(st.sampled_from(tuple(node_ids))),
        target=draw(st.sampled_from(tuple(node_ids))),
        type=draw(st.sampled_from(_TYPES)),
        weight=draw(st.sampled_from(_WEIGHTS)),
        properties=draw(
            st.dictionaries(st.sampled_from(("since", "n")), st.integers(0, 2), max_size=1)
        ),
    )


@st.composite
def graph_parts(
    draw: st.DrawFn, *, max_nodes: int = 6, max_relationships: int = 8
) -> tuple[tuple[GraphNode, ...], tuple[GraphRelationship, ...]]:
    """Nodes, and relationships between them, as `MemoryGraph.of`
    takes them (ids may repeat: a later entry replaces an earlier one)."""
    nodes = draw(st.lists(graph_nodes(), max_size=max_nodes))
    if not nodes:
        return (), ()
    relationships = draw(
        st.lists(graph_relationships([n.id for n in nodes]), max_size=max_relationships)
    )
    return tuple(nodes), tuple(relationships)


def graphs(
    *, max_nodes: int = 6, max_relationships: int = 8, limits: GraphLimits | None = None
) -> st.SearchStrategy[MemoryGraph]:
    """Working graphs of up to ``max_nodes`` nodes and ``max_relationships``
    relationships (fewer when ids repeat), under ``limits`` (the defaults
    when None), drawn from small id pools so that two graphs overlap."""
    validate_size(0, max_nodes)
    validate_size(0, max_relationships)
    return graph_parts(max_nodes=max_nodes, max_relationships=max_relationships).map(
        lambda parts: MemoryGraph.of(*parts, limits=limits or GraphLimits())
    )
