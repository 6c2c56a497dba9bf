"""The built-in compaction strategies and the registry that names them.

`STRATEGIES` is a read-only view of the built-ins by YAML ``type``
name. Custom strategies come from ``type: "package.module:function"`` in a
config (from a module the caller allows with ``allow_imports``), from the
``memrules.strategies`` entry-point group, or from a registry of your own:
``load_config(text, registry={**STRATEGIES, "mine": factory})``. Mark a
factory with `strategy_factory` so its parameters are checked as the
built-ins' are. A strategy whose work per message is dear may declare an
incremental companion (`Incremental`), which the pipeline advances by what
changed (`Change`) from what it made of the conversation's last request.
"""

from __future__ import annotations

from memrules._core.public_names import report_public_module
from memrules._engine.incremental import Change, Incremental
from memrules.strategies.clamp import clamp_oversized_messages
from memrules.strategies.file_reads import deduplicate_file_reads
from memrules.strategies.images import strip_old_images
from memrules.strategies.observations import drop_observations
from memrules.strategies.registry import BUILTIN_ORDER, STRATEGIES, register, strategy_factory
from memrules.strategies.seamed import offload, summarize
from memrules.strategies.thinking import clear_thinking
from memrules.strategies.tool_results import clear_tool_results
from memrules.strategies.window import drop_turns, sliding_window, trim_to_budget

__all__ = [
    "BUILTIN_ORDER",
    "STRATEGIES",
    "Change",
    "Incremental",
    "clamp_oversized_messages",
    "clear_thinking",
    "clear_tool_results",
    "deduplicate_file_reads",
    "drop_observations",
    "drop_turns",
    "offload",
    "register",
    "sliding_window",
    "strategy_factory",
    "strip_old_images",
    "summarize",
    "trim_to_budget",
]


report_public_module(__name__, __all__, globals())
del report_public_module
