"""Every built-in strategy is a value: a frozen attrs instance of its
parameters and nothing else (no lock, no cache, no key into a measure), so
that equal configs make equal strategies, a copy is the strategy, and what
makes a warm request cheap is kept by the interpreter, per conversation
(`memrules._engine.incremental`)."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrules._core.messages import Conversation, Message, ToolCall, ToolResult, message
from memrules._engine.contract import Outcome, StrategyContext
from memrules._engine.incremental import NEW, Change, Incremental, Memo, memo, run_strategy
from memrules.strategies import STRATEGIES
from memrules.strategies.min_step import min_step
from memrules.testing import check_warm_equals_cold
from tests.support.strategies import ALL_BUILTINS, COUNTER, PARAMS, agent_histories

_PLAIN = (int, str, bool, float, type(None), tuple, frozenset)


def _plain(value: object) -> bool:
    """Whether ``value`` is a parameter a YAML file could give: a number,
    a string, None, or a tuple of them."""
    if isinstance(value, tuple | frozenset):
        return all(map(_plain, value))
    return isinstance(value, _PLAIN)


@pytest.mark.parametrize("name", ALL_BUILTINS)
@settings(max_examples=8)
@given(data=st.data())
def test_a_builtin_strategy_is_a_value_of_its_parameters(name: str, data: st.DataObject) -> None:
    params = data.draw(PARAMS[name], label="params")
    strategy = STRATEGIES[name](**params)
    fields = attrs.fields(type(strategy))
    assert all(f.init and f.eq for f in fields), [f.name for f in fields if not f.init]
    assert all(_plain(getattr(strategy, f.name)) for f in fields)
    twin = STRATEGIES[name](**params)
    assert twin == strategy
    assert hash(twin) == hash(strategy)
    assert copy.deepcopy(strategy) == strategy
    assert pickle.loads(pickle.dumps(strategy)) == strategy


def test_a_wrapped_strategy_is_a_value_too() -> None:
    made = [min_step(STRATEGIES["clear_tool_results"](keep_pairs=2), 500) for _ in range(2)]
    assert made[0] == made[1]
    assert hash(made[0]) == hash(made[1])


def _agent(rounds: int, prefix: str) -> tuple[Message, ...]:
    """A system prompt, a task, then ``rounds`` tool rounds whose results
    name ``prefix`` (every third path read again, so reads go stale)."""
    out = [message("system", "You are a coding agent."), message("user", f"{prefix}: go")]
    for r in range(rounds):
        arguments = json.dumps({"path": f"{prefix}/{r % 3 if r % 2 else r}.py"})
        out.append(
            message("assistant", ToolCall(id=f"{prefix}{r}", name="read_file", arguments=arguments))
        )
        content = f"{prefix} result {r} " * 60
        out.append(message("tool", ToolResult(call_id=f"{prefix}{r}", content=content)))
    return tuple(out)


def _messages(result: Any) -> tuple[Message, ...]:
    return tuple(result.messages if isinstance(result, Outcome) else result)


@pytest.mark.parametrize(
    "strategy",
    [
        STRATEGIES["clear_tool_results"](keep_pairs=2),
        STRATEGIES["deduplicate_file_reads"](),
        STRATEGIES["clamp_oversized_messages"](max_part_tokens=64, error_tail_chars=40),
    ],
    ids=["clear_tool_results", "deduplicate_file_reads", "clamp_oversized_messages"],
)
def test_two_conversations_through_one_strategy_do_not_see_each_other(strategy: Any) -> None:
    before = pickle.dumps(strategy)
    histories = {"a": _agent(12, "a"), "b": _agent(12, "b")}
    # One measure per conversation, as the plugin keeps them.
    contexts = {name: StrategyContext(counter=COUNTER) for name in histories}
    for end in range(6, 26, 2):
        for name, history in histories.items():
            request = history[:end]
            contexts[name].measure.track(request)
            warm = run_strategy(strategy, request, contexts[name])
            cold = strategy(request, StrategyContext(counter=COUNTER))
            assert _messages(warm) == _messages(cold)
            ids = [i for m in _messages(warm) for i in (*m.call_ids, *m.result_ids)]
            assert all(i.startswith(name) for i in ids)
    assert pickle.dumps(strategy) == before  # running kept nothing in the strategy


def test_the_memo_makes_each_entry_once_per_counter() -> None:
    strategy = STRATEGIES["clear_tool_results"]()
    context = StrategyContext(counter=COUNTER)
    made: list[int] = []

    def make() -> int:
        made.append(1)
        return len(made)

    found = memo(strategy, context)
    assert found is memo(STRATEGIES["clear_tool_results"](), context)  # by value
    assert found.of("key", make) == found.of("key", make) == 1
    other = attrs.evolve(context, counter=copy.copy(COUNTER))
    assert memo(strategy, other) is not found  # another counter, another memo
    small = Memo(COUNTER, size=2)
    for key in "abc":
        small.of(key, make)
    assert len(small) == 2


# A strategy of one's own with a companion: what `check_warm_equals_cold`
# holds to warm == cold like the built-ins.


@attrs.frozen
class _Shout:
    """Upper-cases every user message that ends with ``mark``."""

    mark: str

    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        state = self.advance(None, NEW, conversation, context)
        return self.result(state, conversation, context)

    @property
    def incremental(self) -> Incremental[Conversation]:
        return self

    def _one(self, m: Message) -> Message:
        if m.role == "user" and m.text.endswith(self.mark):
            return message("user", m.text.upper())
        return m

    def same(self, now: Message, was: Message) -> bool:
        return True  # `advance` looks at every moved message again

    def advance(
        self,
        state: Conversation | None,
        change: Change,
        conversation: Conversation,
        context: StrategyContext,
    ) -> Conversation:
        out = list(state[: change.start] if state is not None else ())
        for i in change.moved:
            out[i] = self._one(conversation[i])
        out.extend(map(self._one, conversation[change.start :]))
        return tuple(out)

    def result(
        self, state: Conversation, conversation: Conversation, context: StrategyContext
    ) -> Conversation:
        changed = any(a is not b for a, b in zip(state, conversation, strict=True))
        return state if changed else conversation


@attrs.frozen
class _ShoutForgetful(_Shout):
    """Forgets to look at the moved messages again."""

    def advance(
        self,
        state: Conversation | None,
        change: Change,
        conversation: Conversation,
        context: StrategyContext,
    ) -> Conversation:
        out = list(state[: change.start] if state is not None else ())
        out.extend(map(self._one, conversation[change.start :]))
        return tuple(out)


@settings(max_examples=10)
@given(agent_histories())
def test_a_companion_of_ones_own_is_held_to_warm_equals_cold(conversation: Conversation) -> None:
    check_warm_equals_cold(_Shout("?"), conversation, lambda: StrategyContext(counter=COUNTER))


def test_a_companion_that_forgets_what_moved_fails_the_check() -> None:
    conversation = tuple(
        message("user", f"m{i}?") if i % 2 else message("assistant", f"m{i}") for i in range(24)
    )
    with pytest.raises(AssertionError, match="warm what it does not give it cold"):
        check_warm_equals_cold(
            _ShoutForgetful("?"), conversation, lambda: StrategyContext(counter=COUNTER)
        )


def test_a_state_is_handed_to_advance_once_at_most() -> None:
    """`advance` may build on the state it is handed in place: the
    interpreter never hands that state again, even when the same request
    comes twice (a retry) or a shorter one comes between."""
    handed: list[Conversation] = []  # alive, so that their ids stay theirs

    @attrs.frozen
    class _Recording(_Shout):
        def advance(
            self,
            state: Conversation | None,
            change: Change,
            conversation: Conversation,
            context: StrategyContext,
        ) -> Conversation:
            if state is not None:
                handed.append(state)
            return _Shout.advance(self, state, change, conversation, context)

    conversation = tuple(message("user" if i % 2 else "assistant", f"m{i}?") for i in range(20))
    strategy, context = _Recording("?"), StrategyContext(counter=COUNTER)
    for end in (10, 10, 6, 14, 14, 20):
        request = conversation[:end]
        context.measure.track(request)
        result = run_strategy(strategy, request, context)
        assert result == strategy(request, StrategyContext(counter=COUNTER))
    assert handed
    assert len(handed) == len({id(state) for state in handed})
