"""``Pipeline.measure()``: a conversation's own measure, passed as ``memo=``."""

from __future__ import annotations

from memrules import load_pipeline
from memrules._core.messages import Conversation, message
from memrules._counting.measure import Measure

CONFIG = """
encoder_name: o200k_base
max_tokens: 60
strategies:
  - type: trim_to_budget
"""


def _conversation(name: str, turns: int) -> Conversation:
    return tuple(
        message("user" if i % 2 == 0 else "assistant", f"{name} says {i}: " + "word " * 12)
        for i in range(turns)
    )


def test_measure_is_a_new_empty_measure_of_the_pipelines_counter() -> None:
    pipeline = load_pipeline(CONFIG)
    first, second = pipeline.measure(), pipeline.measure()
    assert isinstance(first, Measure)
    assert first is not second
    assert first.counter is second.counter is pipeline.counter


def test_each_conversation_its_own_measure_answers_as_a_fresh_pipeline() -> None:
    pipeline = load_pipeline(CONFIG)
    measures = {"a": pipeline.measure(), "b": pipeline.measure()}
    for turns in range(2, 12):
        for name, measure in measures.items():
            conversation = _conversation(name, turns)
            got = pipeline.apply(conversation, memo=measure)
            expected = load_pipeline(CONFIG).apply(conversation)
            assert got.messages == expected.messages
            assert got.report == expected.report
            assert pipeline.count(conversation, memo=measure) == load_pipeline(CONFIG).count(
                conversation
            )
