"""Snapshots (memrules.graph.snapshot): JSON both ways, refusals that name
the id, and atomic saving."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from memrules._core.errors import GraphError
from memrules.graph import (
    GraphLimits,
    GraphNode,
    GraphRelationship,
    GraphSnapshot,
    MemoryGraph,
    load_snapshot,
    save_snapshot,
)
from memrules.testing import graphs

GRAPH = MemoryGraph.of(
    [
        GraphNode(id="vault", labels=("Entity",), weight=2),
        GraphNode(id="Lisbon", properties={"é": [1]}),
    ],
    [GraphRelationship(id="f", source="vault", target="Lisbon", type="is_in", weight=2)],
)


def test_the_json_layout() -> None:
    assert json.loads(GRAPH.snapshot().to_json()) == {
        "format": "memrules.graph",
        "version": 1,
        "nodes": [
            {"id": "vault", "labels": ["Entity"], "properties": {}, "weight": 2.0},
            {"id": "Lisbon", "labels": [], "properties": {"é": [1]}, "weight": 1.0},
        ],
        "relationships": [
            {
                "id": "f",
                "from": "vault",
                "to": "Lisbon",
                "type": "is_in",
                "weight": 2.0,
                "properties": {},
            }
        ],
    }
    assert "é" in GRAPH.snapshot().to_json()  # UTF-8, not \\u escapes


@given(graphs())
def test_snapshots_round_trip_and_keep_age_order(graph: MemoryGraph) -> None:
    snapshot = graph.snapshot()
    text = snapshot.to_json()
    again = GraphSnapshot.from_json(text)
    assert again == snapshot
    restored, report = MemoryGraph.from_snapshot(again)
    assert restored == graph
    assert restored.snapshot().to_json() == text  # same bytes: the same ages, in order
    assert (report.nodes, report.relationships) == (len(graph.nodes), len(graph.relationships))


def broken(**changes: Any) -> dict[str, Any]:
    return {**GRAPH.snapshot().to_dict(), **changes}


NODES = GRAPH.snapshot().to_dict()["nodes"]
RELS = GRAPH.snapshot().to_dict()["relationships"]


@pytest.mark.parametrize(
    ("data", "says", "ids"),
    [
        (broken(nodes=[*NODES, NODES[0]]), "node id 'vault' appears 2 times", ("vault",)),
        (broken(relationships=[*RELS, RELS[0]]), "relationship id 'f' appears 2 times", ("f",)),
        (
            broken(relationships=[{**RELS[0], "to": "Porto"}]),
            "relationships[0] 'f': to='Porto' is not a node of the snapshot",
            ("f",),
        ),
        (
            broken(relationships=[{**RELS[0], "weight": math.inf}]),
            "relationships[0]: relationship 'f': weight=inf must be a finite number",
            ("f",),
        ),
        (
            broken(nodes=[{**NODES[0], "weight": math.nan}, NODES[1]]),
            "nodes[0]: node 'vault': weight=nan must be a finite number",
            ("vault",),
        ),
        (
            broken(nodes=[{**NODES[0], "weight": "heavy"}, NODES[1]]),
            "node 'vault': weight='heavy'",
            ("vault",),
        ),
        (broken(nodes=[{**NODES[0], "colour": 1}, NODES[1]]), "unknown keys 'colour'", ("vault",)),
        (broken(relationships=[{"id": "g", "from": "vault"}]), "'to' is missing", ("g",)),
        (broken(version=2), "version=2 is not supported", ()),
        (broken(version=True), "version=True is not supported", ()),
        (broken(format="neo4j"), "format='neo4j'", ()),
        (broken(nodes={"vault": {}}), "nodes must be a list", ()),
        (broken(nodes=["vault"]), "nodes[0] must be an object", ()),
        ([], "a graph snapshot is a JSON object, got list", ()),
    ],
)
def test_invalid_snapshots_are_refused_naming_the_id(
    data: Any, says: str, ids: tuple[str, ...]
) -> None:
    with pytest.raises(GraphError) as raised:
        MemoryGraph.from_snapshot(GraphSnapshot.from_dict(data))
    assert says in str(raised.value)
    assert set(ids) <= set(raised.value.ids)


def test_every_problem_is_listed_at_once() -> None:
    data = broken(
        nodes=[{**NODES[0], "weight": math.nan}, NODES[1], NODES[1]],
        relationships=[{**RELS[0], "weight": -math.inf}],
    )
    with pytest.raises(GraphError) as raised:
        GraphSnapshot.from_dict(data)
    assert "node 'vault': weight=nan" in str(raised.value)
    assert "relationship 'f': weight=-inf" in str(raised.value)
    snapshot = GraphSnapshot(nodes=[GraphNode(id="a"), GraphNode(id="a")])
    assert [ident for ident, _ in snapshot.problems()] == ["a"]


def test_json_that_python_writes_with_nan_is_refused_where_it_stands() -> None:
    text = json.dumps(broken(relationships=[{**RELS[0], "weight": math.nan}]))
    assert "NaN" in text
    with pytest.raises(GraphError, match="relationship 'f': weight=nan"):
        GraphSnapshot.from_json(text)
    with pytest.raises(GraphError, match="line 1, column 2"):
        GraphSnapshot.from_json("{nodes")
    with pytest.raises(GraphError, match="UTF-8"):
        GraphSnapshot.from_json(b'{"nodes": "\xff"}')


def test_an_import_over_the_cap_is_cut_and_reported() -> None:
    graph, report = MemoryGraph.from_snapshot(GRAPH.snapshot(), limits=GraphLimits(max_nodes=1))
    assert set(graph.nodes) == {"vault"}  # Lisbon weighs less
    assert report.evicted_nodes == ("Lisbon",)
    assert report.evicted_relationships == ("f",)
    assert report.to_dict()["nodes"] == 1


def test_a_snapshot_holds_only_entries() -> None:
    with pytest.raises(GraphError, match=r"nodes\[0\] must be a GraphNode, got dict"):
        GraphSnapshot(nodes=[{"id": "a"}])  # type: ignore[list-item]
    with pytest.raises(GraphError, match="version=3"):
        GraphSnapshot(version=3)
    with pytest.raises(GraphError, match="expected a GraphSnapshot"):
        MemoryGraph.from_snapshot({"nodes": []})  # type: ignore[arg-type]


# --- files ---------------------------------------------------------------------------------


def test_save_and_load(tmp_path: Path) -> None:
    path = tmp_path / "graph.json"
    save_snapshot(GRAPH.snapshot(), path)
    assert load_snapshot(path) == GRAPH.snapshot()
    assert os.listdir(tmp_path) == ["graph.json"]  # no temporary file left behind


def test_a_failed_save_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "graph.json"
    save_snapshot(GRAPH.snapshot(), path)
    before = path.read_bytes()

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        save_snapshot(MemoryGraph().snapshot(), path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["graph.json"]


def test_the_new_file_appears_by_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader never sees a part: the file is renamed into place whole."""
    path = tmp_path / "graph.json"
    save_snapshot(MemoryGraph().snapshot(), path)
    seen: list[str] = []
    rename = os.replace

    def watching(src: str, dst: str) -> None:
        seen.append(Path(src).read_text(encoding="utf-8"))
        assert load_snapshot(dst) == MemoryGraph().snapshot()  # the old file, still whole
        rename(src, dst)

    monkeypatch.setattr(os, "replace", watching)
    save_snapshot(GRAPH.snapshot(), path)
    assert GraphSnapshot.from_json(seen[0]) == GRAPH.snapshot()
    assert load_snapshot(path) == GRAPH.snapshot()


def test_loading_a_bad_file_names_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"version": 1, "nodes": [{"id": 3}]}', encoding="utf-8")
    with pytest.raises(GraphError, match=r"bad\.json: invalid graph snapshot: nodes\[0\]"):
        load_snapshot(path)
    with pytest.raises(FileNotFoundError):
        load_snapshot(tmp_path / "missing.json")
