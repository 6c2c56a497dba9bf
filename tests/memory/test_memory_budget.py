"""Memory inside the request's budget (``memory.retrieval_tokens``): the
context is compacted to the budget less the reservation, and memories go
into the memory message while the whole request fits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules._config.load import MemoryConfig
from memrules._core.budget import Budget
from memrules._core.errors import ConfigError
from memrules._core.messages import Conversation, message
from memrules._core.yaml_nodes import parse_yaml
from memrules._runtime.pipeline import Pipeline
from memrules.memory.config import RouteRetrieval, memory_section
from memrules.memory.gate import Recalled
from memrules.memory.retrieve import fill, is_memory_message, reserved
from memrules.memory.text import DEFAULT_MEMORY_MARKER

PIPELINE = Pipeline.from_config(MemoryConfig(encoder_name="cl100k_base"))

texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=80
)


def test_retrieval_tokens_is_a_route_key() -> None:
    assert RouteRetrieval().retrieval_tokens is None
    assert RouteRetrieval(retrieval_tokens=1200).retrieval_tokens == 1200
    for wrong in (0, -5, 1.5, "many", True):
        with pytest.raises(ConfigError, match=r"retrieval_tokens="):
            RouteRetrieval(retrieval_tokens=wrong)  # type: ignore[arg-type]


def test_reserved_takes_the_share_from_a_token_budget_only() -> None:
    route = RouteRetrieval(retrieval_tokens=1200)
    assert reserved(Budget.tokens(4000), route) == Budget.tokens(2800)
    assert reserved(Budget.tokens(2000), route) == Budget.tokens(1000)  # at least half
    assert reserved(Budget.tokens(601), route) == Budget.tokens(301)
    assert reserved(Budget.tokens(1), route) == Budget.tokens(1)
    assert reserved(Budget.messages(30), route) == Budget.messages(30)
    assert reserved(Budget.UNLIMITED, route) is Budget.UNLIMITED
    assert reserved(Budget.tokens(4000), RouteRetrieval()) == Budget.tokens(4000)


def _memories(items: list[str]) -> list[Recalled]:
    return [Recalled(id=f"m{i}", text=t, score=1.0 - i / 100) for i, t in enumerate(items)]


@given(
    context=st.lists(texts, min_size=1, max_size=6),
    items=st.lists(texts, max_size=30),
    limit=st.integers(min_value=1, max_value=40),
    tokens=st.integers(min_value=1, max_value=600),
)
def test_fill_never_passes_the_budget(
    context: list[str], items: list[str], limit: int, tokens: int
) -> None:
    """Whatever the texts: the request that comes back is under the budget
    (or is the context untouched), holds a prefix of the memories of at most
    ``limit``, and one more memory would not have fitted."""
    messages = tuple(message("user", t) for t in context)
    budget = Budget.tokens(tokens)
    memories = _memories(items)
    sent, chosen = fill(
        messages,
        memories,
        budget=budget,
        count=PIPELINE.count,
        marker=DEFAULT_MEMORY_MARKER,
        limit=limit,
    )
    assert list(chosen) == memories[: len(chosen)]
    assert len(chosen) <= limit
    if not chosen:
        assert sent == messages
        return
    assert PIPELINE.count(sent) < tokens
    assert [m for m in sent if not is_memory_message(m, DEFAULT_MEMORY_MARKER)] == list(messages)
    if len(chosen) < min(limit, len(memories)):
        more, _ = fill(
            messages,
            memories[: len(chosen) + 1],
            budget=Budget.tokens(10**9),
            count=PIPELINE.count,
            marker=DEFAULT_MEMORY_MARKER,
            limit=limit,
        )
        assert PIPELINE.count(more) >= tokens


def test_fill_takes_as_many_as_the_budget_leaves() -> None:
    """A short context leaves room for more memories than a long one."""
    memories = _memories([f"Turn {i}: the kite is {i} metres long." for i in range(40)])
    short = (message("user", "Which kite?"),)
    long = (*(message("user", "padding " * 40) for _ in range(5)), *short)
    budget = Budget.tokens(PIPELINE.count(long) + 150)

    def run(context: Conversation) -> int:
        _, chosen = fill(
            context,
            memories,
            budget=budget,
            count=PIPELINE.count,
            marker=DEFAULT_MEMORY_MARKER,
            limit=100,
        )
        return len(chosen)

    assert 0 < run(long) < run(short) <= 40


def test_the_yaml_entry_reads_retrieval_tokens() -> None:
    node = parse_yaml("retrieval_limit: 60\nretrieval_tokens: 1200\n")
    assert node is not None
    route = memory_section(node)
    assert route == RouteRetrieval(retrieval_limit=60, retrieval_tokens=1200)


def test_a_trace_names_retrieval_tokens_only_when_set() -> None:
    """A route that reserves nothing has the canonical entry (and so the
    config hash) of one written without the key; one that reserves names it."""
    from memrules._config.load import load_config
    from memrules._trace.canonical import canonical_config

    base = "stores:\n  memory: {backend: qdrant, path: ':memory:'}\nmemory: {retrieval_limit: 5"
    plain = canonical_config(load_config(base + "}\n"))
    assert plain["memory"] == {
        "enabled": True, "retrieval_limit": 5, "auto_store": False, "threshold": None,
    }  # fmt: skip
    reserving = canonical_config(load_config(base + ", retrieval_tokens: 900}\n"))
    assert reserving["memory"] == {**plain["memory"], "retrieval_tokens": 900}
