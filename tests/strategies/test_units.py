"""Turn-moving strategies in an agent loop: one instruction, hundreds of
tool rounds in the same turn."""

from __future__ import annotations

import json

from memrules import MemoryConfig, Pipeline, ToolCall, ToolResult
from memrules._core.messages import Conversation, Message, message
from memrules.seams import Seams
from memrules.strategies import offload, summarize
from tests.support.strategies import COUNTER, ExtractiveSummarizer, MemoryStore


def agent_loop(rounds: int) -> Conversation:
    """A system prompt, one instruction, ``rounds`` completed tool rounds,
    then an assistant message whose call is still waiting for its result."""
    out: list[Message] = [
        message("system", "You are a coding agent."),
        message("user", "Fix the failing test in the parser."),
    ]
    for r in range(rounds):
        path = f"src/module_{r % 40}.py"
        call = ToolCall(id=f"call_{r}", name="read_file", arguments=json.dumps({"path": path}))
        out.append(message("assistant", f"Reading {path}.", call))
        body = "\n".join(f"line {k}: value_{r}_{k} = compute({k})" for k in range(12))
        out.append(message("tool", ToolResult(call_id=f"call_{r}", content=body)))
    pending = ToolCall(id="call_pending", name="run_tests", arguments="{}")
    out.append(message("assistant", "Running the tests.", pending))
    return tuple(out)


def test_the_default_pipeline_offloads_old_rounds_instead_of_deleting_them() -> None:
    history = agent_loop(300)
    total = sum(COUNTER.counts(history))
    store = MemoryStore()
    config = MemoryConfig(max_tokens=total // 4)  # the default eight strategies
    pipeline = Pipeline.from_config(config, seams=Seams(store=store), counter=COUNTER)
    result = pipeline.apply(history)
    out = result.messages

    assert result.report.tokens_after < total // 4
    assert [a.strategy for a in result.report.actions if a.changed] == ["offload"]
    stored = [m for batch in store.batches for m in batch]
    assert len(stored) > 400  # most of the 600 round messages
    # Every message is either still in the request or in the store: nothing deleted.
    kept = {id(m) for m in out}
    assert all(id(m) in kept or any(m is s for s in stored) for m in history)
    assert not kept.intersection(id(m) for m in stored)
    # The instruction, the pending call and the newest three exchanges stay, in order.
    assert out[:2] == history[:2]
    assert out[-7:] == history[-7:]
    # Whole exchanges moved: every stored call has its result stored with it.
    calls = {c for m in stored for c in m.call_ids}
    results = {r for m in stored for r in m.result_ids}
    assert calls == results


def test_summarize_takes_old_rounds_of_the_latest_turn_too() -> None:
    history = agent_loop(40)
    summarizer = ExtractiveSummarizer()
    config = MemoryConfig(max_messages=30, strategies=[summarize(turns=2, keep_exchanges=5)])
    pipeline = Pipeline.from_config(config, seams=Seams(summarizer=summarizer), counter=COUNTER)
    out = pipeline.apply(history).messages
    assert len(out) <= 30
    assert out[1] == history[1]  # the instruction stays first of the turn
    assert out[2].text.startswith("[memrules summary]")
    assert out[2].role == "assistant"  # after the question: the rounds were the assistant's
    assert [m for m in out if m.role == "user"] == [history[1]]
    assert out[-11:] == history[-11:]  # the pending call and five exchanges
    (batch,) = summarizer.seen
    assert batch == history[2 : 2 + len(batch)]


def test_with_keep_exchanges_the_newest_rounds_never_move() -> None:
    history = agent_loop(4)
    store = MemoryStore()
    config = MemoryConfig(max_messages=3, strategies=[offload(turns=10, keep_exchanges=4)])
    pipeline = Pipeline.from_config(config, seams=Seams(store=store), counter=COUNTER)
    result = pipeline.apply(history)
    assert result.messages is history
    assert store.batches == []
