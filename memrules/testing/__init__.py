"""Property-test your own strategies: hypothesis generators and checks.

Needs the ``testing`` extra (``pip install 'memrules[testing]'``), which brings
hypothesis; ``import memrules`` never imports this module.

    from hypothesis import given
    from memrules import StrategyContext, TiktokenCounter
    from memrules.testing import check_strategy, conversations

    COUNTER = TiktokenCounter.for_name("cl100k_base")

    @given(conversations())
    def test_my_strategy(conversation):
        check_strategy(my_strategy, conversation, StrategyContext(counter=COUNTER))

The generators:

- `texts`: ASCII, prose, CJK, emoji, mixtures, and the empty string;
  with ``large=True`` also long prose for token budgets and clamping.
- `parts`, `messages`: single parts and messages.
- `conversations`: whole agent histories with the shapes compaction
  meets: tool calls (parallel too), OpenAI-style tool messages and
  Anthropic-style results inside user messages, several system messages, the
  context warning, unanswered calls, orphan results, empty parts, repeated
  file reads. Call ids are unique and results follow their calls.
- `budgets`: message, token and unlimited budgets.
- `graphs`, `graph_nodes`, `graph_relationships`,
  `graph_parts`: working graphs and their entries, from small id pools
  so that graphs overlap and merges meet conflicts.

The checks: `assert_invariants` (the invariants the
interpreter enforces, with a readable failure) and
`check_strategy` (one strategy run held to the invariants, the
no-op-keeps-identity rule, the interpreter's view, and determinism), and
`check_warm_equals_cold` (a request the strategy has seen the
conversation grow to gives what the same request gives cold).
`register_profiles` registers the ``ci`` and ``dev`` hypothesis
profiles this project's own suite runs under.
"""

from __future__ import annotations

from memrules._core.public_names import report_public_module

# Each job is a private module; the public names are imported from them here,
# in the order the reference page lists them (mkdocstrings' source order): the
# pieces, the conversations, the checks, the profiles, the working graph.
# isort: off
from memrules.testing._messages import FILE_TOOL, texts, parts, messages, budgets
from memrules.testing._conversations import FILE_PATHS, conversations
from memrules.testing._checks import render, assert_invariants, check_strategy
from memrules.testing._warm import check_warm_equals_cold
from memrules.testing._profiles import register_profiles
from memrules.testing._graphs import (
    NODE_IDS,
    RELATIONSHIP_IDS,
    graph_nodes,
    graph_relationships,
    graph_parts,
    graphs,
)
# isort: on

__all__ = [
    "FILE_PATHS",
    "FILE_TOOL",
    "NODE_IDS",
    "RELATIONSHIP_IDS",
    "assert_invariants",
    "budgets",
    "check_strategy",
    "check_warm_equals_cold",
    "conversations",
    "graph_nodes",
    "graph_parts",
    "graph_relationships",
    "graphs",
    "messages",
    "parts",
    "register_profiles",
    "render",
    "texts",
]

report_public_module(__name__, __all__, globals())
del report_public_module
