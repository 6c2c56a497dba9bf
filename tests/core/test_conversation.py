"""Structure helpers: the memoized, incrementally extended tool links."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import memrules._core.conversation as structure
from memrules._core.messages import Conversation
from memrules._counting.measure import Measure
from memrules.testing import conversations
from tests.support.strategies import COUNTER


def links_from_scratch(conversation: Conversation) -> tuple[list[tuple[int, int]], bool]:
    """Every (call message, result message) pair by brute force, the call
    being the first message that holds the id."""
    first: dict[str, int] = {}
    calls = 0
    for i, m in enumerate(conversation):
        calls += len(m.call_ids)
        for c in m.call_ids:
            first.setdefault(c, i)
    pairs = [
        (first[r], i)
        for i, m in enumerate(conversation)
        for r in m.result_ids
        if r in first and first[r] != i
    ]
    return sorted(pairs), calls == len(first)


@given(conversations(orphan_results=True, max_size=25), st.integers(0, 25))
def test_tool_links_extended_from_a_prefix_equal_links_from_scratch(
    conversation: Conversation, k: int
) -> None:
    measure = Measure(COUNTER)
    measure.links(conversation[:k])  # memoize a prefix, then extend it
    extended = measure.links(conversation)
    assert (sorted(extended.pairs), extended.unique_calls) == links_from_scratch(conversation)
    assert measure.links(conversation) is extended
    other = (*conversation[k + 1 :], *conversation[: k + 1])  # not an extension
    rotated = measure.links(other)
    assert (sorted(rotated.pairs), rotated.unique_calls) == links_from_scratch(other)
    assert structure.tool_links(other) == rotated


@given(conversations(max_size=20))
def test_extends_is_identity_prefix(conversation: Conversation) -> None:
    assert structure.extends(conversation, conversation[: len(conversation) // 2])
    copies = tuple(m.evolve() for m in conversation)
    assert structure.extends(copies, conversation) == (len(conversation) == 0)
