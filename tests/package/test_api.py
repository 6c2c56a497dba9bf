"""The public API is a short, deliberate list."""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil

import pytest

import memrules

PUBLIC = {
    "AnthropicRule",
    "Budget",
    "CacheMeasure",
    "CachePolicy",
    "OpenAIRule",
    "PriceTable",
    "ClearThinking",
    "ClearToolUses",
    "Compaction",
    "EditPlan",
    "ProviderEditing",
    "CompressionAction",
    "CompressionReport",
    "CompressionResult",
    "ConfigError",
    "EmbedderError",
    "ContextUsage",
    "ContextUsageObserver",
    "ContextWindowResolver",
    "Conversation",
    "ConversationState",
    "ConversionCache",
    "EncodingError",
    "EstimatingCounter",
    "GraphError",
    "IndexContext",
    "MemoryConfig",
    "MemoryPlugin",
    "MemrulesError",
    "MemrulesWarning",
    "Message",
    "MessageFormatError",
    "MessageRule",
    "ObserverError",
    "Opaque",
    "Outcome",
    "OutputError",
    "OverBudgetError",
    "OverBudgetWarning",
    "Part",
    "Pipeline",
    "ReplayMismatch",
    "ReplaySummary",
    "Request",
    "SeamError",
    "StateStoreError",
    "StopReason",
    "StoreError",
    "Strategy",
    "StrategyContext",
    "StrategyError",
    "SummarizerError",
    "SurvivorRule",
    "Text",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCall",
    "ToolResult",
    "TraceError",
    "count_tokens",
    "estimate_tokens",
    "from_anthropic",
    "from_openai",
    "from_responses",
    "load_config",
    "load_pipeline",
    "message",
    "to_anthropic",
    "to_anthropic_request",
    "to_openai",
    "to_responses",
    "record_trace",
    "replay_trace",
}

PUBLIC_MODULES = {
    "datasets",
    "graph",
    "integrations",
    "memory",
    "observability",
    "seams",
    "state",
    "strategies",
    "testing",
}


def test_exported_names_are_the_documented_list() -> None:
    assert set(memrules.__all__) == PUBLIC
    assert len(memrules.__all__) == len(PUBLIC)
    for name in PUBLIC:
        assert getattr(memrules, name) is not None


def test_every_other_top_level_name_is_private_or_a_module() -> None:
    extra = {
        name
        for name in vars(memrules)
        if not name.startswith("_") and name not in PUBLIC and name != "annotations"
    }
    modules = {m.name for m in pkgutil.iter_modules(memrules.__path__)}
    assert extra <= modules, extra - modules


def test_only_documented_modules_are_public() -> None:
    public = {m.name for m in pkgutil.iter_modules(memrules.__path__) if not m.name.startswith("_")}
    assert public == PUBLIC_MODULES


def test_version_comes_from_package_metadata() -> None:
    assert memrules.__version__ == importlib.metadata.version("memrules")


def test_every_public_error_is_a_memrules_error() -> None:
    for name in PUBLIC:
        value = getattr(memrules, name)
        if isinstance(value, type) and issubclass(value, Warning):
            assert issubclass(value, memrules.MemrulesWarning), name
        elif isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, memrules.MemrulesError), name


GRAPH_PUBLIC = {
    "DEFAULT_GRAPH_MARKER",
    "AtCap",
    "GraphContext",
    "GraphDirection",
    "GraphExtractor",
    "GraphImportReport",
    "GraphLimits",
    "GraphNode",
    "GraphRelationship",
    "GraphSnapshot",
    "MemoryGraph",
    "MergeCounts",
    "MergePolicy",
    "MergeReport",
    "RenderedGraph",
    "load_snapshot",
    "offline_extractor",
    "render_graph",
    "save_snapshot",
}


STATE_PUBLIC = {
    "InMemoryStateStore",
    "StateRecord",
    "StateStore",
    "StateStoreConfig",
    "ValkeyStateStore",
    "open_state_store",
}


def test_the_state_package_exports_the_documented_list() -> None:
    import memrules.state

    assert set(memrules.state.__all__) == STATE_PUBLIC
    assert not STATE_PUBLIC & GRAPH_PUBLIC
    assert not STATE_PUBLIC & PUBLIC  # each name exported once


def test_the_graph_package_exports_the_documented_list() -> None:
    import memrules.graph

    assert set(memrules.graph.__all__) == GRAPH_PUBLIC
    for name in GRAPH_PUBLIC:
        value = getattr(memrules.graph, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, memrules.MemrulesError), name


def test_the_graph_needs_no_valkey_to_import() -> None:
    """``memrules.state.valkey`` imports the client only when a store is made."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['valkey'] = None\n"
        "import memrules, memrules.state, memrules.state.valkey\n"
        "from memrules.state import StateStoreConfig, open_state_store\n"
        "try:\n"
        "    open_state_store(StateStoreConfig(url='valkey://127.0.0.1:1'))\n"
        "except memrules.ConfigError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'memrules[valkey]'" in done.stdout


MEMORY_PUBLIC = {
    "CUT_MARKER",
    "DEFAULT_BLOCK_PATTERNS",
    "DEFAULT_MEMORY_MARKER",
    "DEFAULT_THRESHOLDS",
    "GateResult",
    "Recalled",
    "RetrievalObserver",
    "RetrievalReport",
    "RetrievalService",
    "RetrievalStoreConfig",
    "ReflectionConfig",
    "Retrieval",
    "RetrievalEvent",
    "RouteRetrieval",
    "StoreEvent",
    "StoreOutcome",
    "ListedRecord",
    "bound_collection",
    "reflect",
}


def test_the_memory_package_exports_the_documented_list() -> None:
    import memrules.memory

    assert set(memrules.memory.__all__) == MEMORY_PUBLIC
    for name in MEMORY_PUBLIC:
        assert getattr(memrules.memory, name) is not None


def test_memory_imports_no_store_client() -> None:
    """Retrieval memory imports pymilvus and qdrant-client only when a store is made."""
    import subprocess
    import sys

    code = (
        "import sys, memrules, memrules.memory, memrules.memory.service\n"
        "print(sorted(m for m in ('pymilvus', 'qdrant_client', 'onnxruntime') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


RETIRED = [
    ("memrules", "ConversionMemo", "ConversionCache"),
    ("memrules.memory", "Memory", "Recalled"),
    ("memrules.memory", "MemoryObserver", "RetrievalObserver"),
    ("memrules.memory", "MemoryReport", "RetrievalReport"),
    ("memrules.memory", "MemoryService", "RetrievalService"),
    ("memrules.memory", "MemoryStoreConfig", "RetrievalStoreConfig"),
    ("memrules.memory", "RouteMemory", "RouteRetrieval"),
    ("memrules.memory", "StoredMemory", "ListedRecord"),
    ("memrules", "Seams", "memrules.seams.Seams"),
    ("memrules", "recall_tool", "memrules.seams.recall_tool"),
    ("memrules", "strategy_factory", "memrules.strategies.strategy_factory"),
    ("memrules.graph", "ConversationState", "memrules.ConversationState"),
    ("memrules.graph", "GraphError", "memrules.GraphError"),
]


@pytest.mark.parametrize(("module", "old", "new"), RETIRED)
def test_a_retired_public_name_is_gone_and_its_replacement_is_there(
    module: str, old: str, new: str
) -> None:
    """Names retired in 0.2 (listed with their replacements in the changelog)."""
    package = importlib.import_module(module)
    assert old not in package.__all__
    with pytest.raises(AttributeError, match=f"no attribute '{old}'"):
        getattr(package, old)
    where, _, name = new.rpartition(".")
    assert getattr(importlib.import_module(where or module), name) is not None


def test_retired_methods_are_gone() -> None:
    assert not hasattr(memrules.Pipeline, "memo")
    assert hasattr(memrules.Pipeline, "measure")
    assert not hasattr(memrules.MemoryPlugin, "with_extensions")


def _public_packages() -> list[str]:
    import memrules.integrations

    found = [
        "memrules",
        *(f"memrules.{name}" for name in sorted(PUBLIC_MODULES - {"integrations"})),
    ]
    return found + [
        f"memrules.integrations.{m.name}"
        for m in pkgutil.iter_modules(memrules.integrations.__path__)
        if not m.name.startswith("_")
    ]


def test_each_public_name_is_exported_from_one_place() -> None:
    """A user meets each name in one module: no name is in two ``__all__``."""
    where: dict[str, list[str]] = {}
    for package in _public_packages():
        try:
            module = importlib.import_module(package)
        except ImportError:  # an integration whose extra is not installed
            continue
        for name in module.__all__:
            where.setdefault(name, []).append(package)
    twice = {name: packages for name, packages in where.items() if len(packages) > 1}
    assert twice == {}
