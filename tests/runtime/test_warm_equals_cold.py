"""A warm request gives what a cold one gives, for every shipped config.

A conversation grows request by request through one pipeline and one
measure (what a hook does: the counts, tool structure, and the states,
memos and facts the interpreter keeps for the strategies are all there), sometimes handed as
the very message objects of the last request, sometimes as equal copies
(a body parsed again). Each request's result, messages and report, is
compared with a cold run: a pipeline loaded afresh from the same file,
that has seen nothing. The budget is a drawn fraction of the request's
tokens (or messages), so that every strategy of the config gets to act.
The same holds through the request hook, with the config's own budget and
the conversation's state (the one-shot warning, the graph) given to both.
"""

from __future__ import annotations

import functools
import json
import pickle
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memrules import ConversationState, MemoryPlugin, MemrulesError, load_config
from memrules._adapters.openai import from_openai, to_openai
from memrules._core.budget import Budget
from memrules._core.messages import Conversation
from memrules._runtime.pipeline import Pipeline
from memrules.state import InMemoryStateStore
from tests.support.strategies import agent_histories, agent_loops

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
ROUTES = {"routes.yaml": ("default", "code")}  # ``support`` needs a vector store
TARGETS = [
    (path.name, route)
    for path in sorted(CONFIGS.glob("*.yaml"))
    for route in ROUTES.get(path.name, ("default",))
]


def _pipeline(name: str, route: str) -> Pipeline:
    return Pipeline.from_config(load_config(CONFIGS / name).route_config(route))


def _plugin(name: str, route: str) -> MemoryPlugin:
    return MemoryPlugin.from_config(load_config(CONFIGS / name), route=route)


@st.composite
def growing(draw: st.DrawFn) -> tuple[Conversation, list[tuple[int, bool]]]:
    """A conversation and its requests: increasing sizes, each handed as the
    same objects (False) or as equal copies (True)."""
    conversation = draw(
        st.one_of(
            agent_loops(max_rounds=10, large_texts=True),
            agent_histories(max_size=30, long_texts=True),
        ),
        label="conversation",
    )
    n = len(conversation)
    sizes = sorted(draw(st.sets(st.integers(1, max(1, n)), min_size=1, max_size=5), label="sizes"))
    if sizes[-1] != n and n:
        sizes.append(n)
    copies = [draw(st.booleans(), label="copy") for _ in sizes]
    return conversation, list(zip(sizes, copies, strict=True))


@pytest.mark.parametrize(("name", "route"), TARGETS)
@settings(max_examples=20, deadline=None)
@given(case=growing(), fraction=st.floats(0.05, 0.9))
def test_a_warm_pipeline_gives_what_a_cold_one_gives(
    name: str, route: str, case: tuple[Conversation, list[tuple[int, bool]]], fraction: float
) -> None:
    conversation, requests = case
    warm = _pipeline(name, route)
    memo = warm.measure()
    kind = warm.budget().kind
    for size, copy in requests:
        messages = conversation[:size]
        if copy:
            messages = pickle.loads(pickle.dumps(messages))
        if kind == "messages":
            budget = Budget.messages(max(1, int(size * fraction)))
        else:
            budget = Budget.tokens(max(1, int(warm.count(messages) * fraction)))
        # previous=None: what the measure caches, not the request it carries
        # for a cache: section (a run handed it is meant to differ).
        found = warm.apply(messages, budget=budget, memo=memo, previous=None)
        cold = _pipeline(name, route).apply(messages, budget=budget)
        assert found.messages == cold.messages
        assert found.report == cold.report


def _replaced(state: ConversationState, _: ConversationState) -> ConversationState:
    return state


def _sent_form(conversation: Conversation) -> Conversation | None:
    """``conversation`` as the hook reads it back from its OpenAI form (some
    drawn parts have none: None then)."""
    try:
        return from_openai(to_openai(conversation))
    except MemrulesError:
        return None


# A ``cache:`` section sends what the previous request sent plus the new
# messages: a hook that saw the earlier requests is meant to differ from
# one that did not there. Its strategies' caches are held to the cold run
# in the pipeline test above.
HOOK_TARGETS = [
    (name, route)
    for name, route in TARGETS
    if load_config(CONFIGS / name).route_config(route).cache is None
]


@pytest.mark.parametrize(("name", "route"), HOOK_TARGETS)
@settings(max_examples=8, deadline=None)
@given(case=growing())
def test_a_warm_hook_sends_what_a_cold_one_sends(
    name: str, route: str, case: tuple[Conversation, list[tuple[int, bool]]]
) -> None:
    drawn, requests = case
    conversation = _sent_form(drawn)
    assume(conversation is not None)
    assert conversation is not None
    warm = _plugin(name, route)
    for size in sorted({min(size, len(conversation)) for size, _ in requests}):
        body = {"model": "gpt-4o", "messages": to_openai(conversation[:size])}
        # The cold hook has the conversation's state (the one-shot warning
        # given, the graph) and none of what the warm one remembers.
        states = InMemoryStateStore()
        states.update("c", functools.partial(_replaced, warm.state("c")))
        cold = MemoryPlugin.from_config(
            load_config(CONFIGS / name), route=route, state_store=states
        ).on_openai_request(json.loads(json.dumps(body)), conversation_id="c")
        sent = warm.on_openai_request(json.loads(json.dumps(body)), conversation_id="c")
        assert sent == cold
