"""The request hook (memrules._plugin.plugin): the four steps, their order and their
error rules, the one-shot warning, and the shell's thread safety."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from memrules._config.load import MemoryConfig, load_config
from memrules._core.budget import Budget
from memrules._core.errors import ConfigError, MessageFormatError, ObserverError
from memrules._core.messages import Conversation, Message, message
from memrules._core.report import StopReason
from memrules._core.survivors import SurvivorRule
from memrules._counting.usage import ContextUsage
from memrules._engine.contract import DEFAULT_WARNING_MARKER, StrategyContext
from memrules._plugin.plugin import ConversationState, MemoryPlugin, Request, StepResult, step
from memrules.seams import RecallHit, Scope, StoredMessage, StoreWrite
from memrules.strategies import offload, sliding_window


@attrs.frozen
class WordCounter:
    """One token per word of text: counts a test can do in its head."""

    name: str = "words"

    def count(self, message: Message) -> int:
        return len(message.text.split())

    def counts(self, messages: Sequence[Message]) -> tuple[int, ...]:
        return tuple(map(self.count, messages))

    def count_text(self, text: str) -> int:
        return len(text.split())


def plugin_for(**config: Any) -> MemoryPlugin:
    """A plugin that counts words: unframed, so that a message counts
    what its text does (no framing)."""
    store = config.pop("store", None)
    config.setdefault("count_rule", "seed")
    return MemoryPlugin(MemoryConfig(**config), store=store, counter=WordCounter())


def words(n: int, role: str = "user") -> Message:
    return message(role, " ".join(f"w{i}" for i in range(n)))  # type: ignore[arg-type]


def conversation(*sizes: int) -> Conversation:
    """A system message, then alternating user and assistant messages."""
    roles = ["user", "assistant"]
    return (words(2, "system"), *(words(n, roles[i % 2]) for i, n in enumerate(sizes)))


def warnings_in(messages: Conversation) -> int:
    return sum(m.text.startswith(DEFAULT_WARNING_MARKER) for m in messages)


@attrs.define
class Recording:
    """A strategy that records what it was given and changes nothing."""

    seen: list[tuple[Conversation, Budget]] = attrs.Factory(list)

    def __call__(self, messages: Conversation, context: StrategyContext) -> Conversation:
        self.seen.append((messages, context.budget))
        return messages


# --- step 1: measure and notify ----------------------------------------------


def test_observers_get_the_usage_measured_before_the_warning() -> None:
    seen: list[ContextUsage] = []
    plugin = plugin_for(
        context_window_tokens=100,
        max_fraction=None,
        warn_fraction=0.1,
        observers=[seen.append, seen.append],
    )
    request = Request(messages=conversation(10, 5))
    sent = plugin.on_request(request)
    expected = ContextUsage(tokens=17, window=100, messages=3, window_resolved=False)
    assert seen == [expected, expected]
    assert len(sent.messages) == 4  # the warning came after the reading
    assert plugin.last_usage == expected


def test_observer_error_fails_the_request_and_changes_nothing() -> None:
    calls: list[int] = []
    strategy = Recording()

    def flaky(usage: ContextUsage) -> None:
        calls.append(usage.tokens)
        if len(calls) == 1:
            raise ValueError("gauge offline")

    plugin = plugin_for(
        context_window_tokens=10,
        max_messages=1,
        warn_fraction=0.5,
        observers=[flaky],
        strategies=[strategy],
    )
    before = plugin.state()
    request = Request(messages=conversation(10))
    with pytest.raises(ObserverError, match="gauge offline") as exc:
        plugin.on_request(request)
    assert isinstance(exc.value.__cause__, ValueError)
    assert plugin.state() is before
    assert not plugin.state().warned
    assert plugin.last_result is None
    assert strategy.seen == []  # the pipeline never ran
    assert request.messages == conversation(10)

    # The failed request did not use up the warning.
    sent = plugin.on_request(request)
    assert warnings_in(sent.messages) == 1
    assert plugin.state().warned


def test_observer_error_in_step_leaves_the_given_state_alone() -> None:
    def failing(usage: ContextUsage) -> None:
        raise RuntimeError("no")

    plugin = plugin_for(context_window_tokens=10, warn_fraction=0.1, max_fraction=None)
    state = ConversationState()
    with pytest.raises(ObserverError):
        step(
            state,
            Request(messages=conversation(10)),
            pipeline=plugin.pipeline,
            observers=[failing],
            resolver=None,
        )
    assert state == ConversationState()


# --- step 2: the one-shot warning ---------------------------------------------


def test_warning_is_appended_once_and_not_again_when_the_client_drops_it() -> None:
    plugin = plugin_for(context_window_tokens=100, max_fraction=None, warn_fraction=0.2)
    history = conversation(10, 10)  # 22 tokens: over 20%
    first = plugin.on_request(Request(messages=history))
    assert first.messages[:-1] == history
    last = first.messages[-1]
    assert last.role == "system"
    assert last.text == (
        f"{DEFAULT_WARNING_MARKER} this conversation uses 22% of a 100-token context window; "
        "older messages may be dropped."
    )
    assert plugin.last_result is not None
    assert plugin.last_result.warned
    # The client keeps its own history, without the warning, and goes on.
    second = plugin.on_request(Request(messages=(*history, words(30))))
    assert warnings_in(second.messages) == 0
    assert plugin.last_result is not None
    assert not plugin.last_result.warned


def test_warning_is_not_duplicated_when_the_client_sends_it_back() -> None:
    plugin = plugin_for(context_window_tokens=100, max_fraction=None, warn_fraction=0.2)
    first = plugin.on_request(Request(messages=conversation(10, 10)))
    second = plugin.on_request(Request(messages=(*first.messages, words(5, "assistant"))))
    assert warnings_in(second.messages) == 1


def test_a_warning_already_in_the_request_counts_as_given() -> None:
    plugin = plugin_for(context_window_tokens=100, max_fraction=None, warn_fraction=0.2)
    given = message("system", f"{DEFAULT_WARNING_MARKER} earlier")
    sent = plugin.on_request(Request(messages=(*conversation(10, 10), given)))
    assert warnings_in(sent.messages) == 1
    assert plugin.state().warned
    # So a later request that dropped it gets none either.
    later = plugin.on_request(Request(messages=conversation(10, 10, 10)))
    assert warnings_in(later.messages) == 0


@pytest.mark.parametrize(
    ("tokens", "warn_fraction", "warned"),
    [(19, 0.2, False), (20, 0.2, True), (21, 0.2, True), (100, None, False)],
)
def test_warning_threshold_is_at_or_above(
    tokens: int, warn_fraction: float | None, warned: bool
) -> None:
    plugin = plugin_for(context_window_tokens=100, max_fraction=None, warn_fraction=warn_fraction)
    request = Request(messages=(words(2, "system"), words(tokens - 2)))
    sent = plugin.on_request(request)
    assert warnings_in(sent.messages) == int(warned)
    assert plugin.state().warned is warned
    if not warned:
        assert sent is request  # nothing changed: the same request comes back


def test_custom_marker_and_reset() -> None:
    plugin = plugin_for(
        context_window_tokens=10, max_fraction=None, warn_fraction=0.5, warning_marker="NB:"
    )
    request = Request(messages=conversation(8))
    assert plugin.on_request(request).messages[-1].text.startswith("NB: this conversation")
    assert len(plugin.on_request(request).messages) == 2
    plugin.reset()
    assert not plugin.state().warned
    assert plugin.on_request(request).messages[-1].text.startswith("NB:")


def test_the_warning_is_in_the_prompt_the_pipeline_compacts() -> None:
    strategy = Recording()
    plugin = plugin_for(
        context_window_tokens=256,
        max_messages=6,
        warn_fraction=0.2,
        strategies=[strategy, sliding_window(keep_messages=4)],
    )
    history = conversation(20, 1, 20, 1, 20, 1, 20)  # 8 messages, 85 tokens
    sent = plugin.on_request(Request(messages=history))
    (compacted_input, budget), *_ = strategy.seen
    assert len(compacted_input) == 9
    assert compacted_input[-1].text.startswith(DEFAULT_WARNING_MARKER)
    assert budget == Budget.messages(6)
    # The task (the first user message) survives the window, so the request
    # still starts with a user message; the question and the warning follow.
    assert [m.role for m in sent.messages] == ["system", "user", "user", "system"]
    assert sent.messages[1] is history[1]
    assert sent.messages[2] is history[-1]
    assert sent.messages[-1] is compacted_input[-1]
    assert plugin.last_result is not None
    assert plugin.last_result.compacted


# --- step 3: the budget and the resolver ------------------------------------------


def test_resolver_window_wins_over_context_window_tokens() -> None:
    asked: list[str | None] = []
    seen: list[ContextUsage] = []

    def resolver(model: str | None) -> int | None:
        asked.append(model)
        return 40 if model == "small" else None

    plugin = plugin_for(
        context_window_tokens=1000,
        max_fraction=0.5,
        warn_fraction=0.5,
        observers=[seen.append],
        context_window_resolver=resolver,
        strategies=[sliding_window(keep_messages=3)],
        survivors=SurvivorRule(task=False),  # the task would leave no room for the warning
    )
    messages = conversation(10, 4, 6)  # 22 tokens

    big = plugin.on_request(Request(messages=messages, model="large"))
    assert seen[-1] == ContextUsage(tokens=22, window=1000, messages=4, window_resolved=False)
    assert plugin.last_report is not None
    assert plugin.last_report.budget == Budget.tokens(500)
    assert big.messages == messages

    small = plugin.on_request(Request(messages=messages, model="small"))
    assert seen[-1] == ContextUsage(tokens=22, window=40, messages=4, window_resolved=True)
    assert plugin.last_report is not None
    assert plugin.last_report.budget == Budget.tokens(20)  # max_fraction × the resolved window
    assert plugin.last_report.compacted
    assert warnings_in(small.messages) == 1  # warn_fraction uses it too
    assert asked == ["large", "small"]


@pytest.mark.parametrize("answer", [0, -5, True, 2.5, "128k"])
def test_a_resolver_answer_that_is_no_window_is_a_config_error(answer: object) -> None:
    plugin = plugin_for(context_window_resolver=lambda model: answer, warn_fraction=0.1)
    with pytest.raises(ConfigError, match="context_window_resolver"):
        plugin.on_request(Request(messages=conversation(10)))
    assert plugin.state() == ConversationState()


def test_no_trigger_compacts_nothing() -> None:
    strategy = sliding_window(keep_messages=1)
    history = conversation(*[50] * 30)
    untriggered = plugin_for(max_fraction=None, context_window_tokens=10, strategies=[strategy])
    request = Request(messages=history)
    sent = untriggered.on_request(request)
    assert sent is request
    report = untriggered.last_report
    assert report is not None
    assert report.budget == Budget.UNLIMITED
    assert report.stop_reason == StopReason.NO_TRIGGER
    assert not report.compacted

    # The same strategy does act once a trigger is set.
    triggered = plugin_for(max_messages=5, context_window_tokens=10, strategies=[strategy])
    assert len(triggered.on_request(request).messages) < len(history)


# --- step 4 and the shell ----------------------------------------------------------


def test_nothing_to_do_returns_the_same_request_and_state() -> None:
    plugin = plugin_for(context_window_tokens=1000, warn_fraction=0.9)
    state = plugin.state()
    request = Request(messages=conversation(3, 3))
    assert plugin.on_request(request) is request
    assert plugin.state() is state


def test_concurrent_requests_warn_exactly_once() -> None:
    def slow_gauge(usage: ContextUsage) -> None:
        time.sleep(0.002)  # widen the window between reading and writing the state

    plugin = plugin_for(
        context_window_tokens=100, max_fraction=None, warn_fraction=0.1, observers=[slow_gauge]
    )
    threads_n = 16
    barrier = threading.Barrier(threads_n)
    results: list[StepResult] = []
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            barrier.wait()
            results.append(plugin.handle(Request(messages=conversation(10, i + 1))))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == threads_n
    assert sum(warnings_in(r.request.messages) for r in results) == 1
    assert sum(r.warned for r in results) == 1
    assert plugin.state().warned


def test_compress_runs_every_strategy_once_without_budget() -> None:
    first, second = Recording(), Recording()
    seen: list[ContextUsage] = []
    plugin = plugin_for(
        max_messages=2, warn_fraction=0.1, observers=[seen.append], strategies=[first, second]
    )
    messages = conversation(10, 10, 10)
    compaction = plugin.compress(messages)
    assert [b for _, b in first.seen] == [Budget.UNLIMITED]
    assert [b for _, b in second.seen] == [Budget.UNLIMITED]
    assert compaction.report.stop_reason == StopReason.SINGLE_PASS
    assert compaction.messages is messages
    assert seen == []  # out of band: no observers, no warning, no state change
    assert plugin.state() == ConversationState()


def test_count_tokens_is_what_step_one_counts() -> None:
    seen: list[ContextUsage] = []
    plugin = MemoryPlugin(MemoryConfig(observers=[seen.append]))
    messages = (message("system", "You are terse."), message("user", "hello there"))
    plugin.on_request(Request(messages=messages))
    # OpenAI's framing (the default count_rule), cl100k_base: 3 a message, the
    # role ("system", "user": 1 each), the text (4 and 2), 3 for the reply
    assert plugin.count_tokens(messages) == seen[0].tokens == (3 + 1 + 4) + (3 + 1 + 2) + 3


def test_the_seams_given_to_the_plugin_reach_its_pipeline() -> None:
    stored: list[Conversation] = []

    @attrs.frozen
    class Store:
        def add(self, records: Sequence[StoredMessage]) -> StoreWrite:
            stored.append(tuple(r.message for r in records))
            return StoreWrite(added=tuple(r.id for r in records))

        def search(
            self, query: str, *, k: int, scope: Scope, mode: str | None = None
        ) -> tuple[RecallHit, ...]:
            return ()

    class Summarizer:
        def summarize(self, messages: Conversation) -> str:
            return "summary"

    store, summarizer = Store(), Summarizer()
    no_task = SurvivorRule(task=False)  # offload the whole first turn, its user message too
    config = MemoryConfig(max_messages=3, strategies=[offload(turns=1)], survivors=no_task)
    plugin = MemoryPlugin(config, summarizer=summarizer, store=store)
    assert plugin.pipeline.seams.store is store
    assert plugin.pipeline.seams.summarizer is summarizer
    history = conversation(2, 2, 2, 2)
    sent = plugin.on_request(Request(messages=history))
    assert stored == [history[1:3]]
    assert sent.messages == (history[0], *history[3:])


def test_openai_requests_round_trip_and_keep_other_keys() -> None:
    plugin = plugin_for(context_window_tokens=20, max_fraction=None, warn_fraction=0.5)
    body = {
        "model": "gpt-4o",
        "temperature": 0.2,
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "one two three four five six seven eight"},
        ],
    }
    out = plugin.on_openai_request(body)
    assert out["temperature"] == 0.2
    assert out["model"] == "gpt-4o"
    assert out["messages"][:2] == body["messages"]
    assert out["messages"][2]["role"] == "system"
    assert out["messages"][2]["content"].startswith(DEFAULT_WARNING_MARKER)
    assert len(body["messages"]) == 2  # the input is untouched


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: Request.from_openai({"model": 4, "messages": []}), "model"),
        (lambda: Request.from_openai({"model": "m"}), "messages"),
        (lambda: Request(messages=[{"role": "user", "content": "hi"}]), "messages[0]"),
    ],
)
def test_malformed_requests_name_the_field(make: Callable[[], Request], field: str) -> None:
    with pytest.raises(MessageFormatError, match=field.replace("[", r"\[")):
        make()


def test_each_conversation_gets_its_warning_once() -> None:
    plugin = plugin_for(context_window_tokens=10, max_fraction=None, warn_fraction=0.5)
    history = conversation(6)
    for _ in range(3):
        for cid in ("alice", "bob"):
            plugin.on_request(Request(messages=history, conversation_id=cid))
    warned = [
        plugin.handle(Request(messages=history, conversation_id=cid)).warned
        for cid in ("alice", "bob", "carol")
    ]
    assert warned == [False, False, True]  # alice and bob were warned on their first request
    assert plugin.state("alice").warned
    assert plugin.state("bob").warned
    assert not plugin.state().warned  # the default conversation never asked


def test_a_conversation_id_comes_from_the_openai_body() -> None:
    plugin = plugin_for(context_window_tokens=10, max_fraction=None, warn_fraction=0.5)
    body = {"model": "m", "messages": [{"role": "user", "content": "a b c d e f"}]}
    first = plugin.on_openai_request({**body, "metadata": {"conversation_id": "x"}})
    again = plugin.on_openai_request({**body, "metadata": {"conversation_id": "x"}})
    other = plugin.on_openai_request(body, conversation_id="y")
    assert [len(b["messages"]) for b in (first, again, other)] == [2, 1, 2]
    by_user = MemoryPlugin(
        MemoryConfig(context_window_tokens=10, max_fraction=None, warn_fraction=0.5),
        counter=WordCounter(),
        conversation_id_of=lambda b: b.get("user"),
    )
    by_user.on_openai_request({**body, "user": "u1"})
    assert by_user.state("u1").warned


def test_the_conversation_table_is_bounded() -> None:
    plugin = MemoryPlugin(
        MemoryConfig(context_window_tokens=10, max_fraction=None, warn_fraction=0.5),
        counter=WordCounter(),
        max_conversations=3,
    )
    history = conversation(6)
    for k in range(10):
        plugin.on_request(Request(messages=history, conversation_id=f"c{k}"))
    assert plugin.conversations == 3
    assert plugin.state("c9").warned
    assert not plugin.state("c0").warned  # forgotten: its next request starts afresh
    with pytest.raises(ConfigError, match="max_conversations=0"):
        MemoryPlugin(MemoryConfig(), max_conversations=0)


def test_the_warning_counts_toward_the_trigger() -> None:
    """The budget is about what is sent, and the warning is sent: a request
    one token under the budget that gets the warning is compacted."""
    plugin = plugin_for(
        context_window_tokens=100,
        max_tokens=12,
        warn_fraction=0.1,
        strategies=[sliding_window(keep_messages=2)],
    )
    history = conversation(4, 5)  # 2 + 4 + 5 = 11 words: under 12
    result = plugin.handle(Request(messages=history))
    assert result.usage.tokens == 11
    assert result.warned
    assert result.report.tokens_before > 12
    assert result.compacted


def test_a_plugin_closes_the_offload_store_its_config_built(tmp_path: Path) -> None:
    pytest.importorskip("qdrant_client")
    where = str(tmp_path / "offload")
    config = load_config(f"store: {{backend: qdrant, path: {where!r}, search: lexical}}\n")
    with MemoryPlugin(config) as plugin:
        assert plugin.pipeline.seams.store.collections() == ()  # type: ignore[union-attr]
    # The directory can be open once per process: only a closed client lets this in.
    with MemoryPlugin(config) as again:
        assert again.pipeline.seams.store.collections() == ()  # type: ignore[union-attr]
