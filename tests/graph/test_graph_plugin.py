"""The working graph in MemoryPlugin: the per-conversation graph calls, their
atomicity under threads, and the graph step of every request."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from memrules import ConversationState, SurvivorRule
from memrules._cli.main import main as cli_main
from memrules._config.load import MemoryConfig
from memrules._core.errors import GraphError, StateStoreError
from memrules._core.messages import Conversation, message
from memrules._counting.usage import ContextUsage
from memrules._engine.contract import StrategyContext
from memrules._plugin.plugin import MemoryPlugin, Request, step
from memrules.graph import (
    GraphContext,
    GraphLimits,
    GraphNode,
    GraphRelationship,
    GraphSnapshot,
    MemoryGraph,
    MergePolicy,
    offline_extractor,
)
from memrules.state import InMemoryStateStore, StateRecord
from memrules.strategies import drop_observations, sliding_window
from tests.plugin.test_plugin import WordCounter
from tests.support.graph_deltas import deltas, policy_for, sequential

MARKER = "memrules graph memory:"
THREADS = 16


def plugin_for(**config: Any) -> MemoryPlugin:
    """A plugin that counts words: unframed, so that a message counts
    what its text does (no framing)."""
    state_store = config.pop("state_store", None)
    config.setdefault("count_rule", "seed")
    return MemoryPlugin(MemoryConfig(**config), counter=WordCounter(), state_store=state_store)


def graph_plugin(**config: Any) -> MemoryPlugin:
    config.setdefault("graph_context", GraphContext())
    config.setdefault("graph_extractor", offline_extractor())
    return plugin_for(**config)


def history(*users: str) -> Conversation:
    msgs = [message("system", "You are terse.")]
    for i, text in enumerate(users):
        if i:
            msgs.append(message("assistant", "noted"))
        msgs.append(message("user", text))
    return tuple(msgs)


def graph_messages(messages: Conversation) -> list[int]:
    return [i for i, m in enumerate(messages) if m.text.startswith(MARKER)]


def fact(subject: str, value: str, **properties: Any) -> MemoryGraph:
    return MemoryGraph.of(
        [GraphNode(id=subject), GraphNode(id=value)],
        [
            GraphRelationship(
                id=f"{subject}-is", source=subject, target=value, type="is", properties=properties
            )
        ],
    )


# --- the graph calls ---------------------------------------------------------------------


def test_graph_calls_per_conversation() -> None:
    plugin = plugin_for()
    assert plugin.graph("c").is_empty
    report = plugin.merge_graph("c", fact("vault", "Lisbon"))
    assert (report.version, report.nodes.added, report.changed) == (1, 2, True)
    assert set(plugin.graph("c").nodes) == {"vault", "Lisbon"}
    assert plugin.graph().is_empty  # the default conversation is another one
    again = plugin.merge_graph("c", fact("vault", "Lisbon"))
    assert (again.version, again.changed) == (1, False)
    assert plugin.snapshot("c") == plugin.graph("c").snapshot()
    assert plugin.record("c").version == 1

    replaced = plugin.replace_graph("c", fact("key", "friday"))
    assert (replaced.version, replaced.nodes) == (2, 2)
    assert set(plugin.graph("c").nodes) == {"key", "friday"}
    imported = plugin.replace_snapshot("c", fact("owner", "ops").snapshot())
    assert imported.version == 3
    assert set(plugin.graph("c").nodes) == {"owner", "ops"}
    plugin.reset("c")
    assert plugin.graph("c").is_empty


def test_an_invalid_snapshot_leaves_the_graph_and_version_alone() -> None:
    plugin = plugin_for()
    plugin.merge_graph(None, fact("vault", "Lisbon"))
    before = plugin.record()
    bad = GraphSnapshot(
        nodes=[GraphNode(id="a"), GraphNode(id="a")],
        relationships=[GraphRelationship(id="r", source="a", target="ghost", type="t")],
    )
    with pytest.raises(GraphError) as raised:
        plugin.replace_snapshot(None, bad)
    assert raised.value.ids == ("a", "r")
    assert plugin.record() is before
    with pytest.raises(GraphError, match="can only merge a MemoryGraph"):
        plugin.merge_graph(None, bad)  # type: ignore[arg-type]
    with pytest.raises(GraphError, match="expected a MemoryGraph"):
        plugin.replace_graph(None, bad)  # type: ignore[arg-type]


def test_the_plugin_graph_keeps_the_configured_cap() -> None:
    plugin = plugin_for(graph_limits=GraphLimits(max_nodes=2))
    assert plugin.graph().limits.max_nodes == 2
    report = plugin.replace_graph(
        None, MemoryGraph.of([GraphNode(id=n, weight=w) for n, w in (("a", 3), ("b", 1), ("c", 2))])
    )
    assert report.evicted_nodes == ("b",)
    assert set(plugin.graph().nodes) == {"a", "c"}
    merged = plugin.merge_graph(None, fact("x", "y"))
    assert merged.nodes.evicted == ("x", "y")  # they weigh 1, less than a and c


def test_a_store_built_elsewhere_gets_the_plugins_limits() -> None:
    store = InMemoryStateStore()
    store.update("c", lambda s: attrs.evolve(s, graph=fact("a", "b")))
    plugin = plugin_for(graph_limits=GraphLimits(max_nodes=1), state_store=store)
    assert len(plugin.graph("c").nodes) == 1
    assert plugin.graph("c").limits.max_nodes == 1


@pytest.fixture
def preempt_often() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_sixteen_threads_merging_into_one_conversation_lose_nothing(
    preempt_often: None,
) -> None:
    plugin = plugin_for()
    results: list[tuple[int, bool, MemoryGraph, MergePolicy]] = []
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def work(k: int) -> None:
        start.wait()
        try:
            for j, delta in enumerate(deltas(k)):
                policy = policy_for(k, j)
                report = plugin.merge_graph("shared", delta, policy)
                assert report.version is not None
                results.append((report.version, report.changed, delta, policy))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == THREADS * 4
    final = plugin.graph("shared")
    assert final == sequential(results)
    writes = sorted(v for v, changed, _, _ in results if changed)
    assert writes == list(range(1, len(writes) + 1))  # one version per write, none lost
    assert plugin.record("shared").version == len(writes)
    assert {f"t{k}-{j}" for k in range(THREADS) for j in range(4)} <= set(final.nodes)


# --- the graph step of a request ---------------------------------------------------------------


def test_the_graph_message_goes_after_the_first_system_message() -> None:
    plugin = graph_plugin()
    result = plugin.handle(Request(messages=history("The vault is in Lisbon. Reply with: noted")))
    sent = result.request.messages
    assert graph_messages(sent) == [1]
    assert "- vault -[is_in]-> Lisbon weight 2" in sent[1].text
    assert result.rendered is not None
    assert result.graph_tokens == plugin.count_tokens((sent[1],)) == len(sent[1].text.split())
    assert result.merge is not None
    assert result.merge.relationships.added == 1
    assert result.report.tokens_after == sum(
        len(m.text.split()) + 0 for m in sent if m is not sent[1]
    )
    assert plugin.graph().relationship("fact:vault:is_in").target == "Lisbon"


def test_the_message_is_replaced_in_place_on_the_next_request() -> None:
    plugin = graph_plugin()
    first = plugin.on_request(Request(messages=history("The vault is in Lisbon.")))
    # The client kept the prompt it sent, graph message included, and moved on.
    kept = (*first.messages, message("assistant", "ok"), message("user", "The key is red."))
    second = plugin.on_request(Request(messages=kept))
    assert graph_messages(second.messages) == [1]
    assert "key -[is]-> red" in second.messages[1].text
    assert second.messages[1] is not first.messages[1]
    # Moved by the client: replaced where it stands.
    moved = (kept[0], *kept[2:4], kept[1], *kept[4:])
    third = plugin.on_request(Request(messages=moved))
    assert graph_messages(third.messages) == [3]


def test_nothing_new_returns_the_same_request() -> None:
    plugin = graph_plugin()
    sent = plugin.on_request(Request(messages=history("The vault is in Lisbon.")))
    again = Request(messages=sent.messages)
    assert plugin.on_request(again) is again
    state = plugin.state()
    plugin.on_request(again)
    assert plugin.state() is state


def test_the_message_is_removed_when_the_graph_is_empty() -> None:
    plugin = graph_plugin(graph_extractor=None)
    plugin.merge_graph(None, fact("vault", "Lisbon"))
    sent = plugin.on_request(Request(messages=history("hello")))
    assert graph_messages(sent.messages) == [1]
    plugin.replace_graph(None, MemoryGraph())
    result = plugin.handle(Request(messages=sent.messages))
    assert graph_messages(result.request.messages) == []
    assert result.rendered is None
    assert result.graph_tokens == 0


def test_the_message_survives_compaction_and_is_not_counted() -> None:
    seen: list[ContextUsage] = []
    plugin = graph_plugin(
        max_messages=4,
        strategies=[drop_observations(max_drop=5), sliding_window(keep_messages=4)],
        observers=[seen.append],
        survivors=SurvivorRule(task=False),  # turn 1 may go: the graph carries its fact
    )
    users = ["The vault is in Lisbon.", "The key rotates on friday.", "x", "y", "z"]
    first = plugin.on_request(Request(messages=history(*users[:1])))
    prompt = (*first.messages, *history(*users)[2:])  # the stale graph message kept
    result = plugin.handle(Request(messages=prompt))
    sent = result.request.messages
    assert result.compacted
    assert len(sent) == 5  # four under the budget, then the graph message
    assert graph_messages(sent) == [1]
    assert "vault -[is_in]-> Lisbon" in sent[1].text  # turn 1 is gone, its fact is not
    assert not any("Lisbon" in m.text for m in sent if m is not sent[1])
    assert seen[-1].messages == len(prompt) - 1  # the stale message counted for nothing
    assert result.report.messages_after == 4
    assert result.graph_tokens > 0


def test_without_graph_context_marker_messages_pass_through() -> None:
    plugin = plugin_for()
    messages = (message("system", "s"), message("system", f"{MARKER} mine"), message("user", "u"))
    request = Request(messages=messages)
    assert plugin.on_request(request) is request


def test_a_failing_extractor_is_recorded_and_the_request_goes_on() -> None:
    def broken(conversation: Conversation) -> MemoryGraph:
        raise RuntimeError("entity model offline")

    plugin = graph_plugin(graph_extractor=broken)
    plugin.merge_graph(None, fact("vault", "Lisbon"))
    result = plugin.handle(Request(messages=history("hi")))
    assert result.graph_error is not None
    assert "RuntimeError: entity model offline" in result.graph_error
    assert result.delta is None
    assert graph_messages(result.request.messages) == [1]  # the graph it had is still shown
    wrong = graph_plugin(graph_extractor=lambda c: {"nodes": []})
    assert "returned dict" in str(wrong.handle(Request(messages=history("hi"))).graph_error)


def test_a_merge_during_a_request_is_not_lost() -> None:
    plugin: MemoryPlugin

    def merging_observer(usage: ContextUsage) -> None:
        plugin.merge_graph("c", fact("owner", "ops"))

    plugin = graph_plugin(observers=[merging_observer])
    plugin.handle(Request(messages=history("The vault is in Lisbon."), conversation_id="c"))
    assert {"owner", "vault", "Lisbon"} <= set(plugin.graph("c").nodes)
    assert plugin.record("c").version == 2


def test_replicas_sharing_a_store_share_the_conversation() -> None:
    store = InMemoryStateStore()
    one, other = graph_plugin(state_store=store), graph_plugin(state_store=store)
    one.on_request(Request(messages=history("The vault is in Lisbon."), conversation_id="c"))
    question = history("hello", "x", "Where is the vault?")
    sent = other.on_request(Request(messages=question, conversation_id="c"))
    assert "vault -[is_in]-> Lisbon" in sent.messages[1].text


def test_a_store_that_fails_fails_the_request_before_anything_is_written() -> None:
    @attrs.define
    class DownStore:
        inner: InMemoryStateStore = attrs.Factory(InMemoryStateStore)
        down: bool = False

        def load(self, conversation_id: str | None) -> StateRecord:
            if self.down:
                raise StateStoreError("state store valkey://db:6379 failed: connection refused")
            return self.inner.load(conversation_id)

        def update(self, conversation_id: str | None, change: Any) -> StateRecord:
            if self.down:
                raise StateStoreError("state store valkey://db:6379 failed: connection refused")
            return self.inner.update(conversation_id, change)

        def forget(self, conversation_id: str | None) -> None:
            self.inner.forget(conversation_id)

        def lock(self, conversation_id: str | None) -> Any:
            return self.inner.lock(conversation_id)

        def __len__(self) -> int:
            return len(self.inner)

    store = DownStore()
    plugin = graph_plugin(state_store=store)
    plugin.merge_graph(None, fact("vault", "Lisbon"))
    store.down = True
    with pytest.raises(StateStoreError, match="connection refused"):
        plugin.on_request(Request(messages=history("The key is red.")))
    with pytest.raises(StateStoreError):
        plugin.merge_graph(None, fact("key", "red"))
    with pytest.raises(StateStoreError):
        plugin.graph()
    assert plugin.last_result is None
    store.down = False
    assert set(plugin.graph().nodes) == {"vault", "Lisbon"}


def test_step_stays_pure() -> None:
    plugin = graph_plugin()
    state = ConversationState()
    request = Request(messages=history("The vault is in Lisbon."))
    result = step(state, request, pipeline=plugin.pipeline, observers=(), resolver=None)
    assert state == ConversationState()
    assert state.graph.is_empty
    assert not result.state.graph.is_empty
    assert plugin.graph().is_empty  # the plugin's own state was not touched


def test_strategies_never_see_the_graph_message() -> None:
    seen: list[Conversation] = []

    def recording(conversation: Conversation, context: StrategyContext) -> Conversation:
        seen.append(conversation)
        return conversation

    plugin = graph_plugin(strategies=[recording], max_messages=1)  # always over budget
    first = plugin.on_request(Request(messages=history("The vault is in Lisbon.")))
    plugin.on_request(Request(messages=(*first.messages, message("user", "more"))))
    assert seen
    assert not any(m.text.startswith(MARKER) for c in seen for m in c)


# --- the demo -----------------------------------------------------------------------------------


def test_demo_graph_answers_from_the_graph(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["demo", "--graph"]) == 0
    out = capsys.readouterr().out
    turn4 = out[out.index("Turn 4:") :]
    assert "  prompt: 8 messages in, 5 out (SSAUS), warning true, compacted\n" in turn4
    assert "  graph: 6 nodes and 3 relationships in the message" in turn4
    assert turn4.endswith("  reply: Lisbon.\n")
    assert "Graph: graph_context max_nodes 64, max_relationships 128" in out


def test_demo_graph_json_shows_the_message_and_its_tokens(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli_main(["demo", "--graph", "--json"]) == 0
    transcript = json.loads(capsys.readouterr().out)
    last = transcript["turns"][3]
    assert last["reply"] == "Lisbon."
    assert last["shape_out"] == "SSAUS"
    assert last["prompt"][1]["content"].startswith(MARKER)
    assert "- vault -[is_in]-> Lisbon" in last["prompt"][1]["content"]
    assert last["graph"]["tokens"] > 0
    assert last["report"]["messages_after"] == 4  # the graph message came after compaction
    assert transcript["config"]["graph_context"]["max_nodes"] == 64
