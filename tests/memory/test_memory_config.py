"""Retrieval memory's configuration (memrules.memory.config) and routes
(memrules._config.load): what a file says, and every mistake at its path and line."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import memrules
from memrules._config.load import service_config
from memrules._core.errors import ConfigError
from memrules.memory import (
    DEFAULT_THRESHOLDS,
    Recalled,
    ReflectionConfig,
    RetrievalStoreConfig,
    RouteRetrieval,
    reflect,
)
from memrules.memory.config import MAX_HYBRID_SCORE
from tests.support.seams import needs_memory_extras

ROOT = Path(__file__).resolve().parents[2]

TWO_ROUTES = """\
stores:
  memory:
    backend: qdrant
    path: ":memory:"
    threshold: 0.35
    reflection:
      max_inject_tokens: 512
      block_patterns: ['\\bwire the money\\b']
routes:
  support:
    max_messages: 30
    memory:
      retrieval_limit: 3
      auto_store: true
  code:
    max_tokens: 8000
    memory:
      threshold: 0.5
  plain:
    max_messages: 10
"""


@needs_memory_extras
def test_a_file_with_routes() -> None:
    config = memrules.load_config(TWO_ROUTES)
    assert config.route_names == ("default", "code", "plain", "support")
    support, code, plain = (config.routes[n] for n in ("support", "code", "plain"))
    assert support.memory == RouteRetrieval(retrieval_limit=3, auto_store=True)
    assert support.max_messages == 30
    assert code.max_tokens == 8000
    assert plain.memory is None
    assert config.memory is None  # the top level is the default route, without memory
    store = config.memory_store
    assert store is not None
    assert support.memory_store is store
    assert code.memory_store is store
    assert store.backend == "qdrant"
    assert store.search == "dense"
    assert store.collection == "memrules_memories"
    assert store.reflection.max_inject_tokens == 512
    assert store.reflection.block_patterns == (r"\bwire the money\b",)
    # The threshold: the route's own, else the store's.
    assert support.memory is not None
    assert code.memory is not None
    assert support.memory.threshold_in(store) == 0.35
    assert code.memory.threshold_in(store) == 0.5


@needs_memory_extras
def test_route_gives_a_ready_plugin_per_route() -> None:
    config = memrules.load_config(TWO_ROUTES)
    try:
        support, plain = (
            memrules.MemoryPlugin.from_config(config, route=name) for name in ("support", "plain")
        )
        assert support.memory is not None
        assert support.memory.route.auto_store
        assert plain.memory is None
        assert support.config is config.routes["support"]
        assert memrules.MemoryPlugin.from_config(config).config is config
        code = memrules.MemoryPlugin.from_config(config, route="code")
        assert code.memory.store is support.memory.store  # type: ignore[union-attr]
    finally:
        config.close()


@needs_memory_extras
def test_an_unknown_route_names_the_known_ones() -> None:
    config = memrules.load_config(TWO_ROUTES)
    with pytest.raises(ConfigError, match=r"route='suport'.*did you mean 'support'.*default, code"):
        memrules.MemoryPlugin.from_config(config, route="suport")


def test_a_single_pipeline_file_is_the_default_route() -> None:
    config = memrules.load_config(ROOT / "configs" / "chat_window.yaml")
    assert config.route_names == ("default",)
    plugin = memrules.MemoryPlugin.from_config(config, route="default")
    assert plugin.config is config
    assert plugin.memory is None
    # load_pipeline reads the same file as the pipeline's config alone, with the same values.
    alone = memrules.load_pipeline(ROOT / "configs" / "chat_window.yaml").config
    assert service_config(alone) == config


@needs_memory_extras
def test_the_shipped_routes_config_loads() -> None:
    config = memrules.load_config(ROOT / "configs" / "routes.yaml")
    with_memory = [n for n in config.route_names if config.route_config(n).memory is not None]
    without = [n for n in config.route_names if config.route_config(n).memory is None]
    assert with_memory
    assert without


@needs_memory_extras
def test_defaults() -> None:
    store = RetrievalStoreConfig()
    assert store.backend == "milvus"
    assert dict(store.store.params)["uri"] == "memrules_memories.db"
    assert store.threshold == DEFAULT_THRESHOLDS["dense"] == 0.3
    assert store.reflection == ReflectionConfig(
        enabled=True, max_inject_tokens=2048, recency_decay_days=30, dedup_threshold=0.9
    )
    assert store.max_memory_chars == 4000
    qdrant = RetrievalStoreConfig(store={"backend": "qdrant"})
    assert dict(qdrant.store.params)["path"] == "memrules_memories_qdrant"
    hybrid = RetrievalStoreConfig(store={"backend": "qdrant", "search": "hybrid"})
    assert hybrid.threshold == 0.0
    assert RouteRetrieval() == RouteRetrieval(
        enabled=True, retrieval_limit=5, auto_store=False, threshold=None
    )


@needs_memory_extras
def test_python_configs_check_themselves() -> None:
    with pytest.raises(ConfigError, match=r"memory is enabled but there is no stores\.memory"):
        memrules.MemoryConfig(memory=RouteRetrieval())
    store = RetrievalStoreConfig(
        store={"backend": "qdrant", "path": ":memory:", "search": "hybrid"}
    )
    with pytest.raises(ConfigError, match=r"memory\.threshold: threshold=0.5 .*hybrid"):
        memrules.MemoryConfig(memory=RouteRetrieval(threshold=0.5), memory_store=store)
    ok = memrules.MemoryConfig(
        memory=RouteRetrieval(threshold=MAX_HYBRID_SCORE), memory_store=store
    )
    assert ok.memory is not None
    with pytest.raises(ConfigError, match="may not be named 'default'"):
        memrules.MemoryConfig(routes={"default": memrules.MemoryConfig()})


# --- every mistake at its path and line ---------------------------------------------------

BAD = [
    # (YAML, path, line, words in the message)
    ("memory: {enabled: true}\n", "memory", 1, "no stores.memory"),
    ("stores:\n  memory: {}\n", "stores.memory", 2, "no route has a memory"),
    ("stores: [1]\nmemory: {}\n", "stores", 1, "mapping with a memory"),
    ("stores:\n  cache: {}\n  memory: {}\nmemory: {}\n", "stores.cache", 2, "unknown store"),
    (
        "stores:\n  memory:\n    backend: redis\nmemory: {}\n",
        "stores.memory.backend",
        3,
        "must be one of milvus, qdrant",
    ),
    (
        "stores:\n  memory:\n    backend: qdrant\n    uri: x.db\nmemory: {}\n",
        "stores.memory.uri",
        4,
        "known keys: backend, url, path",
    ),
    (
        "stores:\n  memory:\n    threshold: 1.5\nmemory: {}\n",
        "stores.memory.threshold",
        3,
        "at most 1 in dense",
    ),
    (
        "stores:\n  memory:\n    search: hybrid\n    threshold: 0.3\nmemory: {}\n",
        "stores.memory.threshold",
        4,
        "hybrid",
    ),
    (
        "stores:\n  memory:\n    collection: 9lives\nmemory: {}\n",
        "stores.memory.collection",
        3,
        "must start with a letter",
    ),
    (
        "stores:\n  memory:\n    max_memory_chars: 10\nmemory: {}\n",
        "stores.memory.max_memory_chars",
        3,
        "from 64",
    ),
    (
        "stores:\n  memory:\n    embedding:\n      type: openai\n      model: m\nmemory: {}\n",
        "stores.memory.embedding",
        3,
        "needs base_url",
    ),
    (
        "stores:\n  memory:\n    embedding:\n      type: openai\n      base_url: ftp://x\n"
        "      model: m\nmemory: {}\n",
        "stores.memory.embedding.base_url",
        5,
        "base_url",
    ),
    (
        "stores:\n  memory:\n    reflection:\n      max_inject_tokens: 10\nmemory: {}\n",
        "stores.memory.reflection.max_inject_tokens",
        4,
        "can never hold a memory",
    ),
    (
        "stores:\n  memory:\n    reflection:\n      dedup_threshold: 0\nmemory: {}\n",
        "stores.memory.reflection.dedup_threshold",
        4,
        "above 0",
    ),
    (
        "stores:\n  memory:\n    reflection:\n      recency_decay_days: -1\nmemory: {}\n",
        "stores.memory.reflection.recency_decay_days",
        4,
        "above 0",
    ),
    (
        "stores:\n  memory:\n    reflection:\n      block_patterns:\n        - ok\n        - '('\n"
        "memory: {}\n",
        "stores.memory.reflection.block_patterns[1]",
        6,
        "not a regular expression",
    ),
    (
        "stores:\n  memory:\n    reflection:\n      block_patterns: '('\nmemory: {}\n",
        "stores.memory.reflection.block_patterns",
        4,
        "list of regular expressions",
    ),
    (
        "stores:\n  memory:\n    reflection:\n      gate: strict\nmemory: {}\n",
        "stores.memory.reflection.gate",
        4,
        "unknown key",
    ),
    (
        "stores:\n  memory: {backend: qdrant, path: ':memory:'}\nmemory:\n  retrieval_limit: 0\n",
        "memory.retrieval_limit",
        4,
        "from 1 to 100",
    ),
    (
        "stores:\n  memory: {backend: qdrant, path: ':memory:'}\nmemory:\n  auto_store: maybe\n",
        "memory.auto_store",
        4,
        "true or false",
    ),
    (
        "stores:\n  memory: {backend: qdrant, path: ':memory:'}\nmemory:\n  limit: 3\n",
        "memory.limit",
        4,
        "known keys: enabled, retrieval_limit",
    ),
    ("memory: [1]\n", "memory", 1, "is a mapping"),
    (
        "stores:\n  memory: {backend: qdrant, path: ':memory:'}\nmemory:\n  threshold: 2\n",
        "memory.threshold",
        4,
        "at most 1 in dense",
    ),
    ("routes: [a, b]\n", "routes", 1, "mapping of route names"),
    ("routes:\n  default: {}\n", "routes.default", 2, "top level of the file is the default"),
    ("routes:\n  'a b': {}\n", "routes.a b", 2, "route name"),
    ("routes:\n  chat: [1]\n", "routes.chat", 2, "a route is a mapping"),
    ("routes:\n  chat:\n    max_mesages: 3\n", "routes.chat.max_mesages", 3, "did you mean"),
    ("routes:\n  chat:\n    routes: {}\n", "routes.chat.routes", 3, "top of the file"),
    ("routes:\n  chat:\n    stores: {}\n", "routes.chat.stores", 3, "top of the file"),
    (
        "routes:\n  chat:\n    strategies:\n      - type: nope\n",
        "routes.chat.strategies[0].type",
        4,
        "unknown strategy type",
    ),
    (
        "routes:\n  chat:\n    max_tokens: 5\n    max_fraction: 0.5\n",
        "routes.chat.max_fraction",
        4,
        "both set",
    ),
    ("routes:\n  chat:\n    memory: {}\n", "routes.chat.memory", 3, "no stores.memory"),
    (
        "routes:\n  chat:\n    graph_context: {max_nodes: 0}\n",
        "routes.chat.graph_context.max_nodes",
        3,
        "at least 1",
    ),
    (
        "stores:\n  memory: {backend: qdrant, path: ':memory:', marker: 'memrules graph'}\n"
        "memory: {}\ngraph_context: {}\n",
        "stores.memory.marker",
        2,
        "one starts with the other",
    ),
    (
        "store: {backend: qdrant, path: here}\nstores:\n  memory: {backend: qdrant, path: here}\n"
        "memory: {}\n",
        "store.path",
        1,
        "open once per process",
    ),
]


@needs_memory_extras
@pytest.mark.parametrize(("text", "path", "line", "words"), BAD)
def test_every_mistake_is_named_at_its_path_and_line(
    text: str, path: str, line: int, words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        memrules.load_config(text)
    problems = {(p.yaml_path, p.line): p.message for p in caught.value.problems}
    assert (path, line) in problems, problems
    assert words in problems[(path, line)]


@needs_memory_extras
def test_all_problems_are_reported_at_once() -> None:
    text = (
        "stores:\n"
        "  memory:\n"
        "    threshold: 3\n"
        "    nonsense: 1\n"
        "    reflection:\n"
        "      max_inject_tokens: 0\n"
        "routes:\n"
        "  a:\n"
        "    memory: {retrieval_limit: 0}\n"
        "  b:\n"
        "    max_mesages: 3\n"
    )
    with pytest.raises(ConfigError) as caught:
        memrules.load_config(text)
    assert {(p.yaml_path, p.line) for p in caught.value.problems} >= {
        ("stores.memory.threshold", 3),
        ("stores.memory.nonsense", 4),
        ("stores.memory.reflection.max_inject_tokens", 6),
        ("routes.a.memory.retrieval_limit", 9),
        ("routes.b.max_mesages", 11),
    }


def test_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "routes.yaml"
    path.write_text("routes:\n  chat:\n    memory: {}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        memrules.load_config(path)
    assert str(caught.value).startswith(f"{path}:3: routes.chat.memory:")


# --- block patterns: matched in bounded time, or refused when the file is read ------------


def test_a_catastrophic_pattern_matches_in_bounded_time() -> None:
    """``(a+)+$`` backtracks exponentially in Python's ``re`` (over 20 s on
    this 31-character memory); the gate matches it in linear time."""
    config = ReflectionConfig(block_patterns=["(a+)+$"])
    memory = Recalled(id="m", text="a" * 30 + "!", score=1.0)
    started = time.perf_counter()
    result = reflect([memory] * 3, config, now=None, marker="memrules memory:")
    assert time.perf_counter() - started < 1.0
    assert result.blocked == ()
    assert config.blocks("a" * 31) is not None  # it still matches what it says


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"(a+)\1", "invalid escape sequence"),  # a backreference: no bounded engine has one
        (r"(?=secret)\w+", "invalid perl operator"),  # lookahead
        (r"(?<!not )wire", "invalid perl operator"),  # lookbehind
        (r"((a{100}){100}){100}", "repetition"),  # too large to compile
    ],
)
def test_a_pattern_that_cannot_be_bounded_is_refused_at_its_file_path_and_line(
    tmp_path: Path, pattern: str, words: str
) -> None:
    pytest.importorskip("qdrant_client", reason="the config names the qdrant backend")
    path = tmp_path / "memory.yaml"
    path.write_text(
        "stores:\n  memory:\n    backend: qdrant\n    path: ':memory:'\n"
        "    reflection:\n      block_patterns:\n        - '\\bwire the money\\b'\n"
        f"        - {json.dumps(pattern)}\nmemory: {{}}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        memrules.load_config(path)
    (problem,) = caught.value.problems
    assert problem.yaml_path == "stores.memory.reflection.block_patterns[1]"
    assert problem.line == 8
    assert words in problem.message
    assert "bounded time" in problem.message
    assert str(caught.value).startswith(f"{path}:8: stores.memory.reflection.block_patterns[1]:")
