"""memrules: keep LLM conversations inside their context budget.

Compaction strategies are pure functions over immutable message tuples,
composed by a pipeline that a YAML file declares; the interpreter enforces
the survivor and tool-pairing invariants after every strategy.
"""

from __future__ import annotations

from memrules._adapters import from_anthropic, from_openai, to_anthropic, to_openai
from memrules._budget import Budget, ContextWindowResolver
from memrules._config import MemoryConfig, load_config, strategy_factory
from memrules._errors import (
    ConfigError,
    EncodingError,
    MemrulesError,
    MessageFormatError,
    ObserverError,
    StrategyError,
)
from memrules._interpreter import NamedStrategy
from memrules._invariants import check_invariants
from memrules._messages import Conversation, Message, Opaque, Part, Text, ToolCall, ToolResult
from memrules._pipeline import Pipeline, load_pipeline
from memrules._plugin import MemoryPlugin, PluginState, Request, StepResult, step
from memrules._report import Compaction, CompressionAction, CompressionReport, StopReason
from memrules._tokens import (
    EstimatingCounter,
    TiktokenCounter,
    TokenCounter,
    count_tokens,
    estimate_tokens,
)
from memrules._typing import Outcome, Strategy, StrategyContext
from memrules._usage import ContextUsage, ContextUsageObserver
from memrules.seams import SeamCall, Seams, Summarizer, VectorStore
from memrules.strategies import STRATEGIES, register

__all__ = [
    "STRATEGIES",
    "Budget",
    "Compaction",
    "CompressionAction",
    "CompressionReport",
    "ConfigError",
    "ContextUsage",
    "ContextUsageObserver",
    "ContextWindowResolver",
    "Conversation",
    "EncodingError",
    "EstimatingCounter",
    "MemoryConfig",
    "MemoryPlugin",
    "MemrulesError",
    "Message",
    "MessageFormatError",
    "NamedStrategy",
    "ObserverError",
    "Opaque",
    "Outcome",
    "Part",
    "Pipeline",
    "PluginState",
    "Request",
    "SeamCall",
    "Seams",
    "StepResult",
    "StopReason",
    "Strategy",
    "StrategyContext",
    "StrategyError",
    "Summarizer",
    "Text",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCall",
    "ToolResult",
    "VectorStore",
    "check_invariants",
    "count_tokens",
    "estimate_tokens",
    "from_anthropic",
    "from_openai",
    "load_config",
    "load_pipeline",
    "register",
    "step",
    "strategy_factory",
    "to_anthropic",
    "to_openai",
]

__version__ = "0.1.0"
