"""A warm request through the hook does per-message work only for what the
turn changed: counted on memrules' own functions (messages taken into a
tool structure, pairing closures run, tool arguments parsed, rewrite
lookups, messages counted, message texts read, opaque parts priced), never
timed. Each bound is a few times the two messages a round adds; a request
that redid the history would do it for its hundreds of messages."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memrules import MemoryPlugin, load_config
from memrules._adapters.openai import from_openai
from memrules._core import invariants
from memrules._core.messages import Message, ToolCall, ToolResult, message
from memrules._counting import framing
from memrules._counting.lines import Shape as _Shape
from memrules._counting.measure import Measure
from memrules._counting.named import counter_for
from memrules._counting.tokens import TiktokenCounter
from memrules._engine.contract import Outcome, StrategyContext
from memrules._engine.incremental import Memo, run_strategy
from memrules.strategies import _tool_common, clamp_oversized_messages, file_reads, tool_results

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
ROUNDS = 150
NEW = 2  # messages a round adds: the call and its result


def agent_body(rounds: int) -> list[dict[str, Any]]:
    """A system prompt, a user request, then ``rounds`` read_file rounds
    (every fourth reads an earlier path again, so reads go stale; every
    tenth call is a ``plan``, which coding_agent.yaml never clears), with
    results long enough to clear, as OpenAI chat-completions dicts."""
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find where the parser loses the last token."},
    ]
    for r in range(rounds):
        name = "plan" if r % 10 == 9 else "read_file"
        path = f"src/module_{r // 4 if r % 4 == 3 else r}.py"
        call = {
            "id": f"call_{r}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps({"path": path})},
        }
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        body = "\n".join(f"{k:4d}  value_{r}_{k} = compute({k}, 'x' * {k})" for k in range(80))
        if r % 7 == 5:  # now and then a failure, the latest of which keeps a longer tail
            body += f"\nTraceback (most recent call last):\nValueError: round {r}"
        out.append({"role": "tool", "tool_call_id": f"call_{r}", "content": body})
    return out


class Counted:
    """How often a memrules function ran (``when`` picks the calls that count)."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        owner: object,
        name: str,
        when: Callable[..., bool] = lambda *args, **kwargs: True,
        weight: Callable[..., int] = lambda *args, **kwargs: 1,
    ) -> None:
        self.calls = 0
        inner = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            if when(*args, **kwargs):
                self.calls += weight(*args, **kwargs)
            return inner(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)


def warm_plugin(config_name: str = "coding_agent.yaml") -> Iterator[Any]:
    """A plugin that has seen the conversation twice (the first request
    appends the near-limit warning, so the second is the first that only
    grows), then the third request's body: one round more."""
    history = agent_body(ROUNDS + 2)
    plugin = MemoryPlugin.from_config(load_config(CONFIGS / config_name))
    for size in (len(history) - 2 * NEW, len(history) - NEW):
        body = {"model": "gpt-4o", "messages": history[:size]}
        plugin.on_openai_request(json.loads(json.dumps(body)), conversation_id="warm")
    yield plugin
    body = {"model": "gpt-4o", "messages": history}
    yield plugin.on_openai_request(json.loads(json.dumps(body)), conversation_id="warm")


def _run(steps: Iterator[Any]) -> Any:
    next(steps)
    return next(steps)


def test_a_rewrite_in_place_takes_its_input_structure(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = warm_plugin()
    next(steps)
    taken = Counted(monkeypatch, _Shape, "_tool_message")
    sent = next(steps)
    assert sum("cleared to save context" in str(m.get("content")) for m in sent["messages"]) > 50
    # The input's new round, not each rewritten conversation's whole history.
    assert taken.calls <= 4 * NEW


def test_a_rewrite_in_place_needs_no_pairing_closure(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = warm_plugin()
    next(steps)
    closed = Counted(monkeypatch, invariants, "_closure", weight=lambda before, after: len(before))
    next(steps)
    assert closed.calls == 0


def test_enforce_reads_an_in_place_rewrite_without_closure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = TiktokenCounter("cl100k_base")
    measure = Measure(counter)
    before = [message("system", "rules"), message("user", "go")]
    for r in range(50):
        before.append(message("assistant", ToolCall(id=f"c{r}", name="f", arguments="{}")))
        before.append(message("tool", ToolResult(call_id=f"c{r}", content=f"result {r} " * 30)))
    conversation = measure.conversation(before)
    after = tuple(
        m.evolve(parts=(ToolResult(call_id=m.result_ids[0], content="cleared"),))
        if m.result_ids and i < 80
        else m
        for i, m in enumerate(conversation)
    )
    closed = Counted(monkeypatch, invariants, "_closure", weight=lambda before, after: len(before))
    enforced = invariants.enforce(conversation, after, measure=measure)
    assert closed.calls == 0
    assert enforced.messages is after
    assert enforced.violation is None
    assert enforced.replaced == tuple((i, i) for i in range(3, 80, 2))
    assert enforced.origin == tuple(None if i in range(3, 80, 2) else i for i in range(102))
    # The same answer as the general reading: matched by identity, then diffed.
    origin = invariants._match(conversation, after)
    assert not isinstance(origin, str)
    general = invariants.diff(conversation, after, origin, ())
    assert (general.replaced, general.origin, general.removed) == (
        enforced.replaced,
        enforced.origin,
        enforced.removed,
    )


def test_a_warm_request_parses_only_the_new_tool_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    steps = warm_plugin()
    next(steps)
    parsed = Counted(monkeypatch, file_reads, "_argument")
    next(steps)
    assert parsed.calls <= NEW


def test_a_warm_request_looks_up_only_the_new_rewrites(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = warm_plugin()
    next(steps)

    def rewrite(memo: Memo, key: Any, make: Any) -> bool:
        return getattr(make, "func", None) is _tool_common._rewritten

    looked = Counted(monkeypatch, Memo, "of", when=rewrite)
    next(steps)
    # A round pushes one result out of the kept pairs and may make one read stale.
    assert 0 < looked.calls <= 4 * NEW


def test_clamp_takes_the_counts_the_measure_has(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = counter_for("cl100k_base")
    context = StrategyContext(counter=counter)
    history = [message("system", "rules"), message("user", "go")]
    history += [message("assistant", f"answer {r} " * (5 + r % 90)) for r in range(200)]
    conversation = context.measure.conversation(history)
    context.measure.total(conversation)  # what the interpreter measures first
    counted = Counted(monkeypatch, type(counter), "count")
    clamped = clamp_oversized_messages(max_part_tokens=64)(conversation, context)
    assert counted.calls == 0  # the oversized are found on the measure's counts
    assert sum(m is not o for m, o in zip(clamped, conversation, strict=True)) > 50


def test_a_warm_request_reads_only_the_new_message_texts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    steps = warm_plugin()
    next(steps)
    inner = Message.text.fget
    assert inner is not None
    read = []

    def text(m: Message) -> str:
        read.append(m)
        return inner(m)

    monkeypatch.setattr(Message, "text", property(text))
    next(steps)
    assert len(read) <= 4 * NEW


def test_estimates_price_only_messages_with_opaque_parts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    steps = warm_plugin()
    next(steps)
    priced = Counted(monkeypatch, framing, "content_costs")
    next(steps)
    assert priced.calls == 0  # no message here has an image, a document or reasoning


class Watched(tuple[Message, ...]):
    """A conversation that counts the messages read out of it: by
    iteration (C-level passes included), by index and by slice."""

    reads = 0

    def __iter__(self) -> Iterator[Message]:
        for m in super().__iter__():
            Watched.reads += 1
            yield m

    def __getitem__(self, at: Any) -> Any:
        found = super().__getitem__(at)
        Watched.reads += len(found) if isinstance(at, slice) else 1
        return found


@pytest.mark.parametrize(
    "make",
    [
        file_reads.deduplicate_file_reads,
        functools.partial(tool_results.clear_tool_results, keep_pairs=5, exclude_tools=("plan",)),
        functools.partial(tool_results.clear_tool_results, keep_pairs=5, clear_at_least=10**9),
        functools.partial(
            tool_results.clear_tool_results,
            keep_pairs=1,
            keep_first=4,
            recent_turns=3,
            preview_chars=0,
            error_pattern=r"value_\d+5_79",
            error_tail_chars=500,
        ),
    ],
    ids=[
        "deduplicate_file_reads",
        "clear_tool_results",
        "clear_tool_results (too little)",
        "clear_tool_results (keeps)",
    ],
)
def test_a_warm_tool_result_strategy_reads_only_the_new_messages(
    make: Callable[[], Any],
) -> None:
    """Each request is the last one grown by a round: the strategy reads a
    few messages per round added, not the history (which a pass over the
    conversation, even a C-level one, would read whole), and gives what
    the same strategy gives cold."""
    strategy = make()
    history = from_openai(agent_body(ROUNDS + 2))
    counter = counter_for("o200k_base")
    context = StrategyContext(counter=counter)
    previous: tuple[Message, ...] = ()
    for size in range(len(history) - 10 * NEW, len(history) + 1, NEW):
        conversation = Watched(history[:size])
        context.measure.track(conversation)  # what the interpreter does first
        # The measure's one C-level pass for where the objects moved (made
        # when first asked, then shared by every strategy) is not the
        # strategy's reading.
        context.measure.moved(conversation, previous)
        previous = conversation
        Watched.reads = 0
        warm = run_strategy(strategy, conversation, context)
        reads = Watched.reads
        cold = make()(tuple(conversation), StrategyContext(counter=counter))
        assert _messages(warm) == _messages(cold)
        if size > len(history) - 10 * NEW:
            # The new round, the result it pushes out of the kept pairs,
            # the read it makes stale and the survivors; clear_tool_results
            # also reads the messages it leaves whole: from the end back to
            # the latest exchanges (``recent_turns``) and the first ones
            # (``keep_first``), a few messages more whatever the length.
            guards = 2 * getattr(strategy, "recent_turns", -1) + getattr(strategy, "keep_first", 0)
            assert reads <= 4 * NEW + 3 + guards, (size, reads)


def _messages(result: Any) -> tuple[Message, ...]:
    return tuple(result.messages if isinstance(result, Outcome) else result)


@pytest.mark.parametrize(
    "make",
    [
        file_reads.deduplicate_file_reads,
        functools.partial(tool_results.clear_tool_results, keep_pairs=5, exclude_tools=("plan",)),
        functools.partial(
            tool_results.clear_tool_results, keep_pairs=2, keep_first=3, recent_turns=2
        ),
    ],
    ids=["deduplicate_file_reads", "clear_tool_results", "clear_tool_results (keeps)"],
)
def test_a_message_only_the_last_request_had_is_taken_back(make: Callable[[], Any]) -> None:
    """The last request ended with a message the next one does not hold
    (the hook's one-shot warning): the next request starts from the note
    up to that message, and gives what a cold run gives."""
    strategy = make()
    history = from_openai(agent_body(ROUNDS + 2))
    counter = counter_for("o200k_base")
    context = StrategyContext(counter=counter)
    size = len(history) - 4 * NEW
    warning = message("user", "[warning] the context is nearly full")
    run_strategy(strategy, (*history[:size], warning), context)
    for end in (size + NEW, size + 3 * NEW):
        warm = run_strategy(strategy, history[:end], context)
        cold = make()(history[:end], StrategyContext(counter=counter))
        assert _messages(warm) == _messages(cold)
