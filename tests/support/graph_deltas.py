"""Overlapping graph deltas for the concurrency tests (in memory and in
Valkey from two processes), and the sequential merge they must equal.

A module of its own so that a child process can import it without pytest.
"""

from __future__ import annotations

from memrules.graph import GraphNode, GraphRelationship, MemoryGraph, MergePolicy

MERGES_PER_WORKER = 4


def policy_for(k: int, j: int) -> MergePolicy:
    """The policy worker ``k`` uses for its ``j``th merge: all three, mixed."""
    return list(MergePolicy)[(k + j) % 3]


def deltas(k: int) -> list[MemoryGraph]:
    """Thread ``k``'s deltas: they overlap with other threads' on nodes,
    labels, weights and (conflicting) properties."""
    out = []
    for j in range(MERGES_PER_WORKER):
        shared = f"n{(k + j) % 5}"
        own = f"t{k}-{j}"
        out.append(
            MemoryGraph.of(
                [
                    GraphNode(id=shared, labels=(f"L{k % 3}",), properties={"by": k}, weight=k % 4),
                    GraphNode(id=own),
                ],
                [
                    GraphRelationship(
                        id=f"r{(k * j) % 7}", source=own, target=shared, type="t", weight=j
                    )
                ],
            )
        )
    return out


def sequential(results: list[tuple[int, bool, MemoryGraph, MergePolicy]]) -> MemoryGraph:
    """The graph the merges make applied one after another in the order the
    store applied them: by the version each produced (a no-op after the
    write that made its version)."""
    graph = MemoryGraph()
    for _, _, delta, policy in sorted(results, key=lambda r: (r[0], not r[1])):
        graph, _ = graph.merge(delta, policy)
    return graph
