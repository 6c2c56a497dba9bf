"""A route with ``memory.retrieval_tokens`` in the request hook: the context
is compacted to the budget less the reservation and the memory message
holds as many memories as still fit, so the whole request the plugin sends
stays within the budget (real Qdrant local mode, the real local embedder)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memrules import MemoryConfig, MemoryPlugin
from memrules._core.messages import message
from memrules.memory import RouteRetrieval
from memrules.memory.retrieve import is_memory_message
from memrules.seams import Embedder
from tests.support.memory_helpers import SYSTEM, Plugins, ask, plugins, remember, store_settings
from tests.support.seams import needs_memory_extras

pytestmark = needs_memory_extras

BUDGET = 400
FACTS = [f"My sister Priya keeps note {i}: she moved to Porto in {2010 + i}." for i in range(20)]
HISTORY = (
    SYSTEM,
    *(
        message(role, f"{role} turn {i}: " + "the deploy pipeline runs the migrations again " * 4)
        for i in range(12)
        for role in ("user", "assistant")
    ),
)


@pytest.fixture
def make(tmp_path: Path, local_embedder: Embedder) -> Iterator[Plugins]:
    yield from plugins("qdrant", tmp_path, local_embedder)


def plugin_with(make: Plugins, route: RouteRetrieval) -> MemoryPlugin:
    settings = store_settings("qdrant", make.where)
    config = MemoryConfig(
        encoder_name="cl100k_base", max_tokens=BUDGET, memory=route, memory_store=settings
    )
    plugin = MemoryPlugin(config, memory_store=make.store(settings))
    for fact in FACTS:
        remember(plugin, fact, "Noted.")
    return plugin


def test_memory_shares_the_budget_when_the_route_reserves_tokens(make: Plugins) -> None:
    route = RouteRetrieval(auto_store=True, retrieval_limit=20, retrieval_tokens=150, threshold=0.0)
    plugin = plugin_with(make, route)
    result = plugin.handle(ask("Where did my sister Priya move?", history=HISTORY))
    sent = result.request.messages
    memory = [m for m in sent if is_memory_message(m, "memrules memory:")]
    assert len(memory) == 1
    assert plugin.count_tokens(sent) <= BUDGET
    report = result.memory
    assert report is not None
    # Some memories fit, not all twenty: those left out are reported over budget.
    assert 0 < len(report.gate.memories) < len(FACTS)
    assert report.gate.over_budget
    assert report.gate.text == memory[0].text
    assert result.memory_tokens == plugin.count_tokens(memory)


def test_without_a_reservation_the_memory_message_goes_on_top_of_the_budget(
    make: Plugins,
) -> None:
    route = RouteRetrieval(auto_store=True, retrieval_limit=20, threshold=0.0)
    plugin = plugin_with(make, route)
    result = plugin.handle(ask("Where did my sister Priya move?", history=HISTORY))
    sent = result.request.messages
    assert any(is_memory_message(m, "memrules memory:") for m in sent)
    assert plugin.count_tokens(sent) > BUDGET
