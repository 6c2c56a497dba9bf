"""memrules: keep LLM conversations inside their context budget.

Compaction strategies are pure functions over immutable message tuples,
composed by a pipeline that a YAML file declares; the interpreter enforces
the survivor and tool-pairing invariants after every strategy.

The names below are the public API (a test holds them to this list). The
built-in strategy factories are in `memrules.strategies`, the seams in
`memrules.seams`, the tools to property-test a strategy in
`memrules.testing`, and agent trajectories as evaluation data (readers
and probes) in `memrules.datasets`; every other module is private.
Each public name is exported from one module only, the one a user meets it
in: the seam protocols (`Seams`, `Embedder`, `VectorStore`...) and
`recall_tool` are in `memrules.seams`, `strategy_factory` in
`memrules.strategies`, each framework's converters and hook in its module of
`memrules.integrations`.

The private packages are layers, each importing only those below it
(checked by import-linter): ``_core`` (pure values) → ``_io`` (HTTP, files)
→ ``_counting`` and ``_adapters`` → ``_engine`` (the strategy contract and
interpreter) → ``strategies``, ``graph`` → ``seams`` (backends, loaded
lazily) → ``memory`` → ``_config`` (reading, never opening) → ``_runtime``
(the pipeline) → ``_trace`` → ``_plugin`` (owns stores and clients) →
``_replay`` → ``integrations`` → ``_cli``.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from memrules._adapters import (
        ConversionCache,
        from_anthropic,
        from_openai,
        from_responses,
        to_anthropic,
        to_anthropic_request,
        to_openai,
        to_responses,
    )
    from memrules._adapters.context_editing import (
        ClearThinking,
        ClearToolUses,
        Compaction,
        EditPlan,
        ProviderEditing,
    )
    from memrules._config.load import MemoryConfig, load_config
    from memrules._core.budget import Budget, CachePolicy, ContextWindowResolver
    from memrules._core.errors import (
        ConfigError,
        EmbedderError,
        EncodingError,
        GraphError,
        MemrulesError,
        MemrulesWarning,
        MessageFormatError,
        ObserverError,
        OutputError,
        OverBudgetError,
        OverBudgetWarning,
        ReplayMismatch,
        SeamError,
        StateStoreError,
        StoreError,
        StrategyError,
        SummarizerError,
        TraceError,
    )
    from memrules._core.messages import (
        Conversation,
        Message,
        Opaque,
        Part,
        Text,
        ToolCall,
        ToolResult,
        message,
    )
    from memrules._core.prompt_cache import CacheMeasure
    from memrules._core.report import (
        CompressionAction,
        CompressionReport,
        CompressionResult,
        StopReason,
    )
    from memrules._core.survivors import MessageRule, SurvivorRule
    from memrules._counting.cache import AnthropicRule, OpenAIRule, PriceTable
    from memrules._counting.framing import count_tokens
    from memrules._counting.tokens import (
        EstimatingCounter,
        TiktokenCounter,
        TokenCounter,
        estimate_tokens,
    )
    from memrules._counting.usage import ContextUsage, ContextUsageObserver
    from memrules._engine.contract import Outcome, Strategy, StrategyContext
    from memrules._plugin.plugin import ConversationState, MemoryPlugin, Request
    from memrules._replay.replay import ReplaySummary, replay_trace
    from memrules._runtime.pipeline import IndexContext, Pipeline, load_pipeline
    from memrules._trace.record import record_trace

__all__ = [
    "AnthropicRule",
    "Budget",
    "CacheMeasure",
    "CachePolicy",
    "ClearThinking",
    "ClearToolUses",
    "Compaction",
    "CompressionAction",
    "CompressionReport",
    "CompressionResult",
    "ConfigError",
    "ContextUsage",
    "ContextUsageObserver",
    "ContextWindowResolver",
    "Conversation",
    "ConversationState",
    "ConversionCache",
    "EditPlan",
    "EmbedderError",
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
    "OpenAIRule",
    "Outcome",
    "OutputError",
    "OverBudgetError",
    "OverBudgetWarning",
    "Part",
    "Pipeline",
    "PriceTable",
    "ProviderEditing",
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
    "record_trace",
    "replay_trace",
    "to_anthropic",
    "to_anthropic_request",
    "to_openai",
    "to_responses",
]


# public name -> the module that defines it (imported on first access)
_WHERE: dict[str, str] = {
    **dict.fromkeys(
        (
            "ConversionCache",
            "from_anthropic",
            "from_openai",
            "from_responses",
            "to_anthropic",
            "to_anthropic_request",
            "to_openai",
            "to_responses",
        ),
        "memrules._adapters",
    ),
    **dict.fromkeys(
        ("ClearThinking", "ClearToolUses", "Compaction", "EditPlan", "ProviderEditing"),
        "memrules._adapters.context_editing",
    ),
    **dict.fromkeys(("MemoryConfig", "load_config"), "memrules._config.load"),
    **dict.fromkeys(("Budget", "CachePolicy", "ContextWindowResolver"), "memrules._core.budget"),
    **dict.fromkeys(
        (
            "ConfigError",
            "EmbedderError",
            "EncodingError",
            "GraphError",
            "MemrulesError",
            "MemrulesWarning",
            "MessageFormatError",
            "ObserverError",
            "OutputError",
            "OverBudgetError",
            "OverBudgetWarning",
            "ReplayMismatch",
            "SeamError",
            "StateStoreError",
            "StoreError",
            "StrategyError",
            "SummarizerError",
            "TraceError",
        ),
        "memrules._core.errors",
    ),
    **dict.fromkeys(
        ("Conversation", "Message", "Opaque", "Part", "Text", "ToolCall", "ToolResult", "message"),
        "memrules._core.messages",
    ),
    "CacheMeasure": "memrules._core.prompt_cache",
    **dict.fromkeys(("MessageRule", "SurvivorRule"), "memrules._core.survivors"),
    **dict.fromkeys(
        ("CompressionAction", "CompressionReport", "CompressionResult", "StopReason"),
        "memrules._core.report",
    ),
    **dict.fromkeys(("AnthropicRule", "OpenAIRule", "PriceTable"), "memrules._counting.cache"),
    "count_tokens": "memrules._counting.framing",
    **dict.fromkeys(
        ("EstimatingCounter", "TiktokenCounter", "TokenCounter", "estimate_tokens"),
        "memrules._counting.tokens",
    ),
    **dict.fromkeys(("ContextUsage", "ContextUsageObserver"), "memrules._counting.usage"),
    **dict.fromkeys(("Outcome", "Strategy", "StrategyContext"), "memrules._engine.contract"),
    **dict.fromkeys(("ConversationState", "MemoryPlugin", "Request"), "memrules._plugin.plugin"),
    **dict.fromkeys(("ReplaySummary", "replay_trace"), "memrules._replay.replay"),
    **dict.fromkeys(("IndexContext", "Pipeline", "load_pipeline"), "memrules._runtime.pipeline"),
    "record_trace": "memrules._trace.record",
}

# the public modules, imported when first named as an attribute of the package
_MODULES = frozenset(
    {"graph", "integrations", "memory", "observability", "seams", "state", "strategies", "testing"}
)


if _typing.TYPE_CHECKING:
    __version__: str
else:

    def __getattr__(name: str) -> object:
        """A public name, imported from its module the first time it is asked
        for (PEP 562): ``import memrules`` loads none of the library, so a
        program pays only for the parts it uses. ``__version__`` is read
        from the package metadata (importing `importlib.metadata`
        costs more than the rest of ``import memrules``). Hidden from type
        checkers, which would read every misspelt name as ``Any`` through it."""
        if name == "__version__":
            from memrules._io.version import memrules_version

            return memrules_version()
        module = _WHERE.get(name)
        if module is not None:
            value = getattr(_importlib.import_module(module), name)
            _report(__name__, (name,), {name: value})
            globals()[name] = value  # the next access finds it without this hook
            return value
        if name in _MODULES:
            return _importlib.import_module(f"{__name__}.{name}")
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "__version__"})


# Each public name reports ``memrules`` as its module (memrules._core.public_names).
from memrules._core.public_names import report_public_module as _report  # noqa: E402
