"""The cache policies: hysteresis (``cache.compact_to``) and the append path,
lifetime-aware waiting (``cache.cold_trigger``), ``min_step`` on any
strategy, frozen summaries, and Anthropic ``cache_control`` placement."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.harness.histories import agent_history, request_points
from memrules import from_anthropic, load_config, load_pipeline, to_anthropic_request
from memrules._adapters.breakpoints import place_breakpoints, stable_head
from memrules._core.budget import Budget
from memrules._core.invariants import enforce
from memrules._core.messages import Conversation, Message, Text, message
from memrules._core.prompt_cache import Sent, breakpoints
from memrules._counting.cache import AnthropicRule, measure
from memrules.seams import Seams
from memrules.strategies.seamed import SUMMARY_PREFIX
from memrules.testing import assert_invariants
from tests.support.strategies import ExtractiveSummarizer, agent_histories

OPENAI_LIFETIME = 300.0
CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _config(compact_to: float, cold: float | None, min_step: int, cache: bool = True) -> str:
    lines = ["max_tokens: 100000"]
    if cache:
        lines += ["cache:", f"  compact_to: {compact_to}"]
        if cold is not None:
            lines.append(f"  cold_trigger: {cold}")
    lines += [
        "strategies:",
        "  - type: clear_tool_results",
        "    keep_pairs: 1",
        f"    min_step: {min_step}",
        "  - type: trim_to_budget",
    ]
    return "\n".join(lines) + "\n"


def _events(result: object) -> bool:
    """Whether a strategy changed the conversation (not the append path)."""
    return any(a.changed and a.pass_number > 0 for a in result.report.actions)  # type: ignore[attr-defined]


@settings(max_examples=60, deadline=None)
@given(
    history=agent_histories(max_size=30, long_texts=True),
    data=st.data(),
)
def test_a_cache_policy_keeps_the_invariants_the_budget_and_only_appends_between_events(
    history: Conversation, data: st.DataObject
) -> None:
    compact_to = data.draw(st.sampled_from([0.25, 0.5, 0.8]), label="compact_to")
    cold = data.draw(st.sampled_from([None, 0.6]), label="cold_trigger")
    min_step = data.draw(st.sampled_from([0, 30]), label="min_step")
    gap = data.draw(st.sampled_from([10.0, 400.0]), label="gap")
    pipeline = load_pipeline(_config(compact_to, cold, min_step))
    plain = load_pipeline(_config(compact_to, cold, min_step, cache=False))
    total = pipeline.count(history)
    limit = data.draw(st.integers(max(20, total // 5), max(21, total)), label="budget")
    budget = Budget.tokens(limit)
    previous = None
    sent_before: Conversation | None = None
    for k, n in enumerate(range(1, len(history) + 1)):
        received = history[:n]
        result = pipeline.apply(received, budget=budget, previous=previous, now=k * gap)
        assert_invariants(received, result.messages)
        tokens = pipeline.count(result.messages)
        assert tokens == result.report.tokens_after
        if tokens >= limit:  # never over budget where the plain pipeline fits
            assert plain.apply(received, budget=budget).report.tokens_after >= limit
        refused = False
        if previous is not None and sent_before is not None:
            # What appending to the previous request gives, and whether the
            # interpreter's invariants refuse it (e.g. a new message answers
            # a call that request had dropped, or the previous request
            # rewrote what is still the most recent user message).
            head = tuple(
                received[i] if i is not None else m
                for m, i in zip(sent_before, previous.origin, strict=True)
            )
            appended = (*head, *received[len(previous.received) :])
            refused = enforce(received, appended).violation is not None
            if _events(result):
                # A compaction only when appending would reach the trigger
                # (the budget, or the cold trigger once the cache has
                # expired), or when what appending gives could not stand.
                expired = cold is not None and gap > OPENAI_LIFETIME
                trigger = int(cold * limit) if expired else limit
                assert pipeline.count(appended) >= trigger or refused
        if sent_before is not None and not _events(result) and not refused:
            # Between compaction events a request only appends.
            assert result.messages[: len(sent_before)] == sent_before
        assert result.sent is not None
        previous, sent_before = result.sent, result.messages


def test_hysteresis_compacts_down_to_the_target_and_then_appends() -> None:
    history = agent_history(400, seed=5)
    points = request_points(history)
    pipeline = load_pipeline(CONFIGS / "cache_aware.yaml")
    budget = Budget.tokens(32000)
    previous = None
    events = []
    for k, n in enumerate(points):
        result = pipeline.apply(
            history.messages[:n], budget=budget, previous=previous, now=k * 20.0
        )
        assert result.report.tokens_after < 32000
        if _events(result):
            events.append(k)
            assert result.report.compact_to == 16000  # compact_to: 0.5
            assert result.report.tokens_after < 16000
        previous = result.sent
    # Events are far apart: each one leaves room for many appending requests.
    assert len(events) >= 2
    assert min(b - a for a, b in itertools.pairwise(events)) >= 5


def test_without_a_cache_section_each_request_is_compacted_afresh() -> None:
    history = agent_history(200, seed=5)
    points = request_points(history)
    plain = load_pipeline(attrs.evolve(load_config(CONFIGS / "cache_aware.yaml"), cache=None))
    assert plain.config.cache is None
    budget = Budget.tokens(12000)
    events = sum(_events(plain.apply(history.messages[:n], budget=budget)) for n in points)
    cached = load_pipeline(CONFIGS / "cache_aware.yaml")
    previous = None
    cache_events = 0
    for n in points:
        result = cached.apply(history.messages[:n], budget=budget, previous=previous)
        cache_events += _events(result)
        previous = result.sent
    assert cache_events * 3 < events


def test_compaction_waits_while_the_cache_is_warm_and_runs_once_it_has_expired() -> None:
    history = agent_history(120, seed=2).messages
    pipeline = load_pipeline(
        "max_tokens: 100000\ncache:\n  compact_to: 0.3\n  cold_trigger: 0.5\n"
        "strategies:\n  - type: trim_to_budget\n"
    )
    tokens = pipeline.count(history)
    budget = Budget.tokens(int(tokens * 1.5))  # over the cold trigger, under the budget
    warm = pipeline.apply(
        history,
        budget=budget,
        previous=pipeline.apply(history[:-2], budget=budget, now=0.0).sent,
        now=60.0,
    )
    assert not _events(warm)
    assert warm.messages == history
    cold = pipeline.apply(
        history,
        budget=budget,
        previous=pipeline.apply(history[:-2], budget=budget, now=0.0).sent,
        now=900.0,
    )
    assert _events(cold)
    assert cold.report.tokens_after < budget.limit * 0.3
    assert cold.report.cache is not None
    assert cold.report.cache.cached == 0  # expired: nothing was lost by compacting


def test_min_step_keeps_only_steps_that_save_enough() -> None:
    history = agent_history(60, seed=1).messages
    budget = Budget.tokens(10)

    def saved(step: int) -> int:
        pipeline = load_pipeline(
            f"strategies:\n  - type: clear_tool_results\n    keep_pairs: 1\n    min_step: {step}\n"
        )
        report = pipeline.apply(history, budget=budget).report
        return report.tokens_before - report.tokens_after

    free = saved(0)
    assert free > 0
    assert saved(free) == free
    assert saved(free + 1) == 0
    pipeline = load_pipeline(f"strategies:\n  - type: trim_to_budget\n    min_step: {free * 100}\n")
    result = pipeline.apply(history, budget=budget)
    assert result.messages is history or result.messages == history
    assert "below min_step" in result.report.actions[0].note


def _turns(n: int) -> list[Message]:
    out = [message("system", "You edit code.")]
    for i in range(n):
        out.append(message("user", f"Edit src/app{i}.py: rename the handler and update its tests"))
        out.append(message("assistant", f"Done with src/app{i}.py; tests pass. " * 40))
    return out


def test_frozen_summaries_are_appended_and_never_rewritten() -> None:
    def run(frozen: bool) -> tuple[Conversation, Conversation]:
        pipeline = load_pipeline(
            "max_messages: 12\nstrategies:\n  - type: summarize\n    turns: 2\n"
            f"    keep_exchanges: 1\n    frozen: {str(frozen).lower()}\n",
            seams=Seams(summarizer=ExtractiveSummarizer()),
        )
        first = pipeline.apply(_turns(8)).messages
        second = pipeline.apply([*first, *_turns(12)[len(_turns(8)) :]]).messages
        return first, second

    def summaries(conversation: Conversation) -> list[Message]:
        return [m for m in conversation if m.text.startswith(SUMMARY_PREFIX)]

    first, second = run(frozen=True)
    assert summaries(first)
    kept = summaries(first)
    # The earlier summaries stand where they stood, unchanged; new ones follow.
    assert second[: first.index(kept[-1]) + 1] == first[: first.index(kept[-1]) + 1]
    assert len(summaries(second)) > len(kept)
    first, second = run(frozen=False)  # a rolling summary rewrites the earlier one
    assert summaries(first)[0] not in second


def test_breakpoints_go_on_the_stable_head_and_the_last_message_respecting_the_callers() -> None:
    convo = (
        message("system", "rules"),
        message("user", "a"),
        message("assistant", "b"),
        message("user", "c"),
    )
    placed = place_breakpoints(convo)
    assert breakpoints(placed) == ((0, "5m"), (3, "5m"))
    assert place_breakpoints(placed) is placed  # already there: nothing added
    body = {
        "system": "rules",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"q{i}", "cache_control": {"type": "ephemeral"}}
                ],
            }
            if i < 3
            else {"role": "user", "content": f"q{i}"}
            for i in range(6)
        ],
    }
    theirs = from_anthropic(body)
    assert len(breakpoints(theirs)) == 3
    ours = place_breakpoints(theirs)
    assert len(breakpoints(ours)) == 4  # one more fits under the API's four
    assert set(breakpoints(theirs)) <= set(breakpoints(ours))
    written = to_anthropic_request(theirs, cache_breakpoints=True)
    assert json.dumps(written).count('"cache_control"') == 4
    assert json.dumps(to_anthropic_request(theirs)).count('"cache_control"') == 3
    assert stable_head(convo) == 1


def test_placed_breakpoints_let_anthropic_serve_an_appended_request() -> None:
    history = agent_history(80, seed=4).messages
    pipeline = load_pipeline("{encoder_name: o200k_base, strategies: []}")
    rule = AnthropicRule()  # no automatic breakpoint: only the ones placed

    def sent(conversation: Conversation, mark: bool) -> Sent:
        messages = place_breakpoints(conversation) if mark else conversation
        return Sent(messages=messages, counts=pipeline.measure().sizes(messages))

    before, after = history[:60], history
    assert measure(sent(before, False), sent(after, False), rule).cached == 0
    served = measure(sent(before, True), sent(after, True), rule)
    assert served.cached >= pipeline.count(before) - 50
    assert isinstance(after[0].parts[0], Text)
