"""Every built-in strategy gives a warm request what it gives it cold
(`memrules.testing.check_warm_equals_cold`): what the interpreter keeps
for it between requests (its companion's states, its memo, per-message
facts, all in the conversation's measure) never shows."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrules._core.messages import Conversation, message
from memrules._engine.contract import StrategyContext
from memrules.strategies import STRATEGIES
from memrules.testing import check_warm_equals_cold
from tests.support.strategies import (
    ALL_BUILTINS,
    COUNTER,
    PARAMS,
    ExtractiveSummarizer,
    MemoryStore,
    agent_histories,
    agent_loops,
    budgets_for,
    context,
)


@pytest.mark.parametrize("name", ALL_BUILTINS)
@settings(max_examples=12)
@given(data=st.data())
def test_builtin_warm_equals_cold(name: str, data: st.DataObject) -> None:
    conversation = data.draw(
        st.one_of(agent_histories(long_texts=True), agent_loops()), label="conversation"
    )
    budget = data.draw(budgets_for(conversation), label="budget")
    params = data.draw(PARAMS[name], label="params")
    strategy = STRATEGIES[name](**params)
    turns = data.draw(st.integers(1, 4), label="offload_turns")

    def fresh() -> StrategyContext:
        return context(
            budget=budget,
            store=MemoryStore(),
            summarizer=ExtractiveSummarizer(),
            offload_turns=turns,
        )

    check_warm_equals_cold(
        strategy,
        conversation,
        fresh,
        requests=data.draw(st.integers(2, 5), label="requests"),
        fresh=lambda: STRATEGIES[name](**params),
    )


class _Stale:
    """Keeps its first output and hands it to every later request: what a
    cache keyed by too little does."""

    def __init__(self) -> None:
        self.first: Conversation | None = None

    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        if self.first is None:
            self.first = conversation
        return self.first


def test_a_strategy_whose_warm_output_differs_fails_the_check() -> None:
    conversation = tuple(message("user" if i % 2 else "assistant", f"m{i}") for i in range(6))
    with pytest.raises(AssertionError, match="warm what it does not give it cold"):
        check_warm_equals_cold(_Stale(), conversation, lambda: StrategyContext(counter=COUNTER))
