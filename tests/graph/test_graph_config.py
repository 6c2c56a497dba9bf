"""The working graph's config sections (memrules._config.load.SECTIONS): read
from YAML, checked, every problem at its path and line."""

from __future__ import annotations

import pytest

from memrules._config.load import SECTIONS, MemoryConfig, load_config
from memrules._core.errors import ConfigError
from memrules.graph import AtCap, GraphContext, GraphLimits
from memrules.state import StateStoreConfig


def test_the_sections_are_the_documented_list() -> None:
    assert set(SECTIONS) == {
        "graph_limits",
        "graph_context",
        "graph_extractor",
        "state_store",
        "store",  # the seams' sections (tests/seams/test_seam_config.py)
        "embedder",
        "summarizer",
        "memory",  # a route's retrieval memory (tests/memory/test_memory_config.py)
        "provider_editing",  # provider-side editing (tests/adapters/test_context_editing.py)
        "cache",  # keeping the prompt cache (tests/runtime/test_cache_policies.py)
        "counting",  # what images, documents and reasoning cost (tests/counting/test_content.py)
        "index_context",  # what is indexed (tests/config/test_index_context_config.py)
        "survivors",  # what no strategy may remove (memrules/_core/survivors.py, docs/concepts.md)
    }


def test_defaults() -> None:
    config = MemoryConfig()
    assert config.graph_limits == GraphLimits(
        max_nodes=10_000, max_relationships=50_000, at_cap=AtCap.EVICT
    )
    assert config.graph_context is None
    assert config.graph_extractor is None
    assert config.state_store == StateStoreConfig(url="memory://")


def test_every_section_from_yaml() -> None:
    config = load_config(
        """\
graph_limits:
  max_nodes: 500
  max_relationships: 900
  at_cap: reject
graph_context:
  max_nodes: 10
  marker: "MEMORY:"
graph_extractor:
  type: offline
  tools: false
  path_keys: [path]
state_store:
  url: valkey://user:secret@127.0.0.1:6379/2
  ttl_seconds: 60
  key_prefix: "app:"
"""
    )
    assert config.graph_limits == GraphLimits(
        max_nodes=500, max_relationships=900, at_cap=AtCap.REJECT
    )
    assert config.graph_context == GraphContext(
        max_nodes=10, max_relationships=128, marker="MEMORY:"
    )
    assert repr(config.graph_extractor) == (
        "offline_extractor(facts=True, files=True, tools=False, path_keys=['path'])"
    )
    assert config.state_store.ttl_seconds == 60
    assert "secret" not in repr(config.state_store)
    assert "user:***@127.0.0.1:6379" in repr(config.state_store)


def test_null_and_empty_sections() -> None:
    config = load_config("graph_context: {}\ngraph_extractor: {}\nstate_store: null\n")
    assert config.graph_context == GraphContext()
    assert config.graph_extractor is not None
    assert config.state_store == StateStoreConfig()
    assert load_config("graph_context: null\n").graph_context is None
    assert load_config("state_store: redis://cache:6379\n").state_store.url == "redis://cache:6379"


BAD = [
    ("graph_context: 5\n", "graph_context", 1, "graph_context is a mapping of max_nodes"),
    ("graph_context:\n  max_node: 3\n", "graph_context.max_node", 2, "did you mean 'max_nodes'?"),
    ("graph_context:\n  max_nodes: 0\n", "graph_context.max_nodes", 2, "at least 1"),
    (
        "graph_context:\n  max_relationships: -1\n",
        "graph_context.max_relationships",
        2,
        "at least 0",
    ),
    ("graph_context:\n  marker: ''\n", "graph_context.marker", 2, "non-empty"),
    ("graph_limits:\n  at_cap: drop\n", "graph_limits.at_cap", 2, "'evict', 'reject'"),
    ("graph_limits:\n  max_nodes: 1.5\n", "graph_limits.max_nodes", 2, "whole number"),
    ("graph_limits: [1]\n", "graph_limits", 1, "a mapping"),
    ("graph_extractor:\n  type: spacy\n", "graph_extractor.type", 2, "known: offline"),
    ("graph_extractor:\n  fact: true\n", "graph_extractor.fact", 2, "did you mean 'facts'?"),
    ("graph_extractor:\n  path_keys: path\n", "graph_extractor.path_keys", 2, "list of strings"),
    (
        "graph_extractor:\n  facts: false\n  files: false\n  tools: false\n",
        "graph_extractor.facts",
        2,
        "finds nothing",
    ),
    ("state_store: http://x\n", "state_store.url", 1, "a Valkey URL"),
    ("state_store:\n  url: ftp://x\n", "state_store.url", 2, "a Valkey URL"),
    ("state_store:\n  ttl_seconds: 0\n", "state_store.ttl_seconds", 2, "at least 1"),
    ("state_store:\n  timeout_seconds: .inf\n", "state_store.timeout_seconds", 2, "above 0"),
    ("state_store:\n  key_prefix: ''\n", "state_store.key_prefix", 2, "non-empty"),
    ("graph_contxt: {}\n", "graph_contxt", 1, "did you mean 'graph_context'?"),
]


@pytest.mark.parametrize(("text", "yaml_path", "line", "says"), BAD)
def test_bad_sections_name_path_and_line(text: str, yaml_path: str, line: int, says: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(text)
    problem = raised.value.problems[0]
    assert (problem.yaml_path, problem.line) == (yaml_path, line)
    assert says in str(raised.value)


def test_problems_in_sections_and_settings_are_reported_together() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config("max_messages: 0\ngraph_context:\n  max_nodes: 0\nstate_store: http://x\n")
    assert [(p.yaml_path, p.line) for p in raised.value.problems] == [
        ("max_messages", 1),
        ("graph_context.max_nodes", 3),
        ("state_store.url", 4),
    ]


def test_python_configs_take_the_typed_values_only() -> None:
    with pytest.raises(ConfigError) as raised:
        MemoryConfig(
            graph_context={"max_nodes": 3},  # type: ignore[arg-type]
            graph_limits=None,  # type: ignore[arg-type]
            graph_extractor="offline",  # type: ignore[arg-type]
            state_store="valkey://x",  # type: ignore[arg-type]
        )
    assert [p.yaml_path for p in raised.value.problems] == [
        "graph_limits",
        "graph_context",
        "state_store",
        "graph_extractor",
    ]
