"""The built-in compaction strategies and the registry that names them.

Importing this package registers the built-ins in :data:`STRATEGIES`.
"""

from __future__ import annotations

from memrules.strategies.clamp import clamp_oversized_messages
from memrules.strategies.observations import drop_observations
from memrules.strategies.registry import BUILTIN_ORDER, STRATEGIES, register
from memrules.strategies.seamed import offload, summarize
from memrules.strategies.tool_results import clear_tool_results, deduplicate_file_reads
from memrules.strategies.window import drop_turns, sliding_window, trim_to_budget

__all__ = [
    "BUILTIN_ORDER",
    "STRATEGIES",
    "clamp_oversized_messages",
    "clear_tool_results",
    "deduplicate_file_reads",
    "drop_observations",
    "drop_turns",
    "offload",
    "register",
    "sliding_window",
    "summarize",
    "trim_to_budget",
]
