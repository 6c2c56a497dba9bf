"""The prompt-cache carry in the conversation's state (memrules.state.carry):
rebuilt exactly from a small value, so a conversation whose requests reach
different replicas gets the decisions one replica would make."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.harness.histories import agent_history, request_points
from memrules import ConversationState, load_pipeline
from memrules._config.load import load_config
from memrules._core.budget import Budget
from memrules._core.messages import message
from memrules._plugin.plugin import MemoryPlugin, Request
from memrules.graph import GraphLimits
from memrules.state import InMemoryStateStore, StateRecord
from memrules.state.carry import CacheCarry, digest, hold, previous_request, rebuild
from memrules.state.model import decode_state, encode_state

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _sent_requests(turns: int = 160) -> list:  # type: ignore[type-arg]
    history = agent_history(turns, seed=3)
    pipeline = load_pipeline(CONFIGS / "cache_aware.yaml")
    previous, out = None, []
    for k, n in enumerate(request_points(history)):
        result = pipeline.apply(
            history.messages[:n], budget=Budget.tokens(32000), previous=previous, now=k * 20.0
        )
        out.append((history.messages, n, result.sent))
        previous = result.sent
    return out


def test_a_carry_rebuilds_the_very_request_it_was_made_from() -> None:
    made = 0
    for messages, n, sent in _sent_requests():
        carry = CacheCarry.of(sent)
        again = CacheCarry.from_dict(json.loads(json.dumps(carry.to_dict())))
        assert again == carry
        # the next request's messages continue this one's
        assert rebuild(again, messages[: n + 3]) == sent
        made += len(carry.made)
    assert made, "no strategy-made message was carried: the test shows too little"


def test_a_carry_is_small_against_the_messages() -> None:
    _messages, _n, sent = _sent_requests()[-1]
    carry = json.dumps(CacheCarry.of(sent).to_dict())
    whole = json.dumps([str(m) for m in sent.received])
    assert len(carry) < len(whole) / 5


def test_messages_that_do_not_continue_give_no_previous_request() -> None:
    messages, n, sent = _sent_requests(40)[-1]
    carry = CacheCarry.of(sent)
    edited = (message("system", "another task"), *messages[1:n])
    assert rebuild(carry, edited) is None
    assert rebuild(carry, messages[: n - 1]) is None
    assert previous_request(None, messages, hold(sent)) is None


def test_the_carry_travels_in_the_encoded_state() -> None:
    _messages, _n, sent = _sent_requests(40)[-1]
    held = hold(sent)
    assert held is not None
    state = ConversationState(warned=True, carry=held.carry)
    back = decode_state(encode_state(state, 3), limits=GraphLimits(), where="k")
    assert back == StateRecord(state=state, version=3)
    old = encode_state(ConversationState(), 1)  # a record written before the carry
    assert decode_state(old, limits=GraphLimits(), where="k").state.carry is None


@pytest.mark.parametrize("replicas", [2, 3])
def test_replicas_sharing_a_store_decide_as_one_plugin(replicas: int) -> None:
    """Round-robin across plugins that share a state store: every request
    sends what one plugin alone sends (before: 12.5% of the prefix carried
    against 94.5%)."""
    history = agent_history(120, seed=11)
    config = load_config(CONFIGS / "cache_aware.yaml")
    alone = MemoryPlugin(config)
    shared = InMemoryStateStore()
    many = [MemoryPlugin(config, state_store=shared) for _ in range(replicas)]
    for k, n in enumerate(request_points(history)):
        request = Request(messages=history.messages[:n], conversation_id="c")
        one = alone.handle(request, now=k * 20.0)
        other = many[k % replicas].handle(request, now=k * 20.0)
        assert other.request.messages == one.request.messages, f"request {k} differs"
    assert shared.load("c").state.carry is not None


def test_a_digest_from_a_base_equals_the_whole_digest() -> None:
    runs = _sent_requests(60)
    held = None
    for _, _, sent in runs:
        step = hold(sent, held)
        assert step is not None
        assert step.carry.received_digest == digest(sent.received)
        held = step
    # a base that the messages do not continue is not used
    other = hold(_sent_requests(20)[-1][2])
    messages = runs[-1][2].received
    assert digest(messages, base=other) == digest(messages)
