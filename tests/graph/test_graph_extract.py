"""The offline extractor (memrules.graph.extract): facts, files, tools."""

from __future__ import annotations

import json

import pytest

from memrules._core.errors import ConfigError
from memrules._core.messages import Message, ToolCall, ToolResult, message
from memrules.graph import MemoryGraph, offline_extractor
from memrules.graph.extract import extractor_from_config

SEED = (
    message("system", "You are terse."),
    message("user", "The vault is in Lisbon. Reply with: noted"),
    message("assistant", "noted"),
    message("user", "The key rotates on friday. Reply with: noted"),
    message("assistant", "noted"),
    message("user", "The owner is ops@example.com. Reply with: noted"),
    message("assistant", "noted"),
    message("user", "Where is the vault? Answer in one word."),
)


def call(name: str, **arguments: object) -> Message:
    return Message(
        role="assistant",
        parts=(ToolCall(id=f"c-{name}", name=name, arguments=json.dumps(arguments)),),
    )


def facts(graph: MemoryGraph) -> set[tuple[str, str, str]]:
    return {(r.source, r.type, r.target) for r in graph.relationships.values()}


def test_the_seeds_facts() -> None:
    graph = offline_extractor()(SEED)
    assert facts(graph) == {
        ("vault", "is_in", "Lisbon"),
        ("key", "rotates_on", "friday"),
        ("owner", "is", "ops@example.com"),
    }
    assert graph.node("vault").labels == ("Entity",)
    assert graph.node("Lisbon").labels == ("Value",)
    assert graph.relationship("fact:vault:is_in").weight == 2


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("My build runs on Fridays.", {("build", "runs_on", "Fridays")}),
        ("Our database is postgres 16.", {("database", "is", "postgres 16")}),
        ("The Vault is in Lisbon!", {("vault", "is_in", "Lisbon")}),
        ("Is the vault in Lisbon?", set()),
        ("The vault is in Lisbon?", set()),  # a question is no fact
        ("Where is the vault?", set()),
        ("Reply with: noted", set()),
        ("the", set()),
    ],
)
def test_sentences(text: str, found: set[tuple[str, str, str]]) -> None:
    assert facts(offline_extractor(files=False, tools=False)((message("user", text),))) == found


def test_only_users_state_facts() -> None:
    said = (message("assistant", "The vault is in Porto."), message("system", "The key is red."))
    assert offline_extractor()(said).is_empty


def test_a_later_statement_moves_the_fact() -> None:
    history = (
        message("user", "The vault is in Lisbon."),
        message("user", "The vault is in Porto."),
    )
    graph = offline_extractor()(history)
    assert facts(graph) == {("vault", "is_in", "Porto")}
    assert "Lisbon" in graph.nodes  # the old value stays a node; the fact moved


def test_files_read_and_written_and_tools_called() -> None:
    history = (
        message("user", "fix it"),
        call("read_file", path="src/app.py"),
        Message(role="tool", parts=(ToolResult(call_id="c-read_file", content="x = 1"),)),
        call("edit_file", file_path="src/app.py"),
        call("grep", pattern="TODO"),
        Message(
            role="assistant", parts=(ToolCall(id="bad", name="read_file", arguments="{not json"),)
        ),
    )
    graph = offline_extractor()(history)
    assert facts(graph) == {
        ("tool:read_file", "read", "file:src/app.py"),
        ("tool:edit_file", "wrote", "file:src/app.py"),
    }
    assert {n for n in graph.nodes if n.startswith("tool:")} == {
        "tool:read_file",
        "tool:edit_file",
        "tool:grep",
    }
    assert graph.node("file:src/app.py").labels == ("File",)
    assert graph.node("tool:grep").weight == 0.5
    tools_only = offline_extractor(facts=False, files=False)(history)
    assert set(tools_only.nodes) == {"tool:read_file", "tool:edit_file", "tool:grep"}
    assert tools_only.relationships == {}
    assert (
        offline_extractor(path_keys=["pattern"])(history).relationship("tool:grep>file:TODO").type
        == "read"
    )


def test_reading_the_same_history_twice_changes_nothing() -> None:
    extract = offline_extractor()
    graph, _ = MemoryGraph().merge(extract(SEED))
    again, report = graph.merge(extract(SEED))
    assert again is graph
    assert not report.changed
    assert extract(SEED) == extract(SEED[:1] + SEED[1:])


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError) as raised:
        offline_extractor(facts="yes", path_keys="path")  # type: ignore[arg-type]
    assert [p.yaml_path for p in raised.value.problems] == [
        "graph_extractor.facts",
        "graph_extractor.path_keys",
    ]
    with pytest.raises(ConfigError, match="all false: the extractor finds nothing"):
        offline_extractor(facts=False, files=False, tools=False)
    with pytest.raises(ConfigError, match="path_keys is empty"):
        offline_extractor(path_keys=[])
    with pytest.raises(ConfigError, match="type='llm' is no graph extractor; known: offline"):
        extractor_from_config(type="llm")
    assert repr(extractor_from_config(facts=False)) == (
        "offline_extractor(facts=False, files=True, tools=True, "
        "path_keys=['path', 'file_path', 'filename'])"
    )
