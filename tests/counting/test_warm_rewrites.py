"""A warm request through strategies that rewrite tool results in place
(the conversation grown by a round) looks up the counts of what the round
changed, not of every message a rewrite replaced: the measure takes the
last request's rewrite for what the two outputs share. Counted here: the
messages the pipeline hands its counter, never time."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from memrules._config.load import MemoryConfig
from memrules._core.messages import Conversation, Message, Text, ToolCall, ToolResult
from memrules._runtime.pipeline import Pipeline
from memrules.strategies import clear_tool_results, deduplicate_file_reads, trim_to_budget
from tests.support.strategies import COUNTER


@attrs.define
class Spy:
    """The shared counter, telling how many messages each ``counts`` call
    was handed."""

    name: str = "spy"
    handed: list[int] = attrs.Factory(list)

    def count(self, m: Message) -> int:
        return COUNTER.count(m)

    def counts(self, messages: Any) -> tuple[int, ...]:
        self.handed.append(len(messages))
        return COUNTER.counts(messages)

    def count_text(self, text: str) -> int:
        return COUNTER.count_text(text)


def _round(r: int) -> tuple[Message, Message]:
    path = f"src/m{r % 50}.py"  # files are read again: older reads go stale
    call = ToolCall(id=f"call_{r}", name="read_file", arguments=json.dumps({"path": path}))
    source = "\n".join(f"{k:4d}  value_{r}_{k} = compute({k})" for k in range(40))
    return (
        Message(role="assistant", parts=(call,)),
        Message(role="tool", parts=(ToolResult(call_id=f"call_{r}", content=source),)),
    )


def _history(rounds: int) -> Conversation:
    head = (
        Message(role="system", parts=(Text(text="You are a coding agent."),)),
        Message(role="user", parts=(Text(text="Find where the parser loses a token."),)),
    )
    return head + tuple(m for r in range(rounds) for m in _round(r))


def _pipeline(spy: Spy, **keeps: Any) -> Pipeline:
    config = MemoryConfig(
        max_tokens=2_000,
        strategies=(
            deduplicate_file_reads(),
            clear_tool_results(keep_pairs=3, **keeps),
            trim_to_budget(),
        ),
    )
    return Pipeline(config=config, counter=spy)


KEEPS: list[dict[str, Any]] = [
    {},
    {"preview_chars": 0, "recent_turns": 0},
    {"keep_first": 3, "recent_turns": 2, "error_pattern": r"value_\d*7_39", "error_tail_chars": 90},
]


@pytest.mark.parametrize("keeps", KEEPS, ids=repr)
def test_a_warm_rewrite_counts_what_the_round_changed(keeps: dict[str, Any]) -> None:
    spy = Spy()
    pipeline = _pipeline(spy, **keeps)
    memo = pipeline.measure()
    history = _history(200)
    pipeline.apply(history, memo=memo)
    first = sum(spy.handed)
    spy.handed.clear()
    grown = history + _round(200)
    warm = pipeline.apply(grown, memo=memo)
    # The round's two messages; the earlier reads of the file it reads
    # again (200 rounds over 50 files: 4), whose stubs now name the new
    # read; the result it pushed out of the kept pairs. A dozen at most,
    # where each rewrite replaces about 200 messages.
    assert first > 400
    assert sum(spy.handed) <= 12, spy.handed
    cold = _pipeline(Spy(), **keeps).apply(grown)
    assert warm.messages == cold.messages
    assert warm.report.actions == cold.report.actions
