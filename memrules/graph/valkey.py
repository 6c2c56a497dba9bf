"""Conversation state in Valkey (or Redis): :class:`ValkeyStateStore`.

Needs the ``memrules[valkey]`` extra (the ``valkey`` client). Each
conversation is one hash, ``<key_prefix>conversation:<id>`` (the default
conversation, id None, is ``<key_prefix>default``), with two fields:
``state``, the JSON of :func:`~memrules.graph.state.encode_state` (the
version, the warning flag and the graph's snapshot), and ``stamp``, the
version and a random token, new with every write. Every write sets the key's
TTL, and so does every request that changes nothing, so a conversation lives
``ttl_seconds`` past its last request.

Decoding a big graph costs far more than reading a stamp, so the store keeps
the states it last read or wrote for up to ``cache_size`` conversations, by
stamp: a read whose stamp matches reuses the decoded state, and only a stamp
that another process wrote makes it fetch and decode ``state`` again (a
conversation that was forgotten and begun again has another stamp, whatever
its version).

Updates are optimistic transactions: ``WATCH`` the key, read it, compute the
new state in Python (a pure function: a graph merge), then ``MULTI`` /
``SET`` / ``EXEC``. When another process wrote the key in between, ``EXEC``
fails and the update starts again on the newer state, up to
``max_attempts`` times (200 by default, with a random backoff of up to
50 ms that grows with each attempt: a few seconds at worst). So merges from any
number of replicas are applied one after another and none is lost; each
successful write adds one to the version.

A server that cannot be reached, times out or answers an error fails the call
with :class:`~memrules._core.errors.StateStoreError`, naming the URL without its
password; nothing is written.

>>> store = ValkeyStateStore("valkey://127.0.0.1:6379/0")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from memrules._core.bounded import BoundedTable
from memrules._core.errors import ConfigError, StateStoreError
from memrules.graph.limits import GraphLimits
from memrules.graph.memory_graph import MemoryGraph
from memrules.graph.state import (
    DEFAULT_MAX_CONVERSATIONS,
    ConversationState,
    LocalLocks,
    StateRecord,
    decode_state,
    encode_state,
    redact,
)

__all__ = ["ValkeyStateStore"]

_GLOB = re.compile(r"([*?\[\]\\])")


def _client_module() -> Any:
    try:
        import valkey  # the optional extra: imported only when a Valkey store is asked for
    except ImportError:
        msg = "a Valkey state store needs the valkey client: pip install 'memrules[valkey]'"
        raise ConfigError.single(msg, yaml_path="state_store.url") from None
    return valkey


class ValkeyStateStore:
    """A :class:`~memrules.graph.state.StateStore` in Valkey or Redis (see
    the module docs).

    ``url`` is a ``valkey://``, ``valkeys://``, ``redis://``, ``rediss://``
    or ``unix://`` URL; ``client`` may be a ready ``valkey.Valkey`` instead
    (``url`` then only names it in errors). ``timeout_seconds`` bounds each
    command; ``graph_limits`` are the limits of the graphs it reads back;
    ``max_conversations`` bounds this process's table of request locks,
    ``cache_size`` its decoded states (see the module docs). Connecting is
    lazy: a server that is down fails the first call, not the constructor.
    """

    def __init__(
        self,
        url: str,
        *,
        ttl_seconds: int = 86_400,
        key_prefix: str = "memrules:",
        timeout_seconds: float = 5.0,
        graph_limits: GraphLimits | None = None,
        max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
        max_attempts: int = 200,
        cache_size: int = 128,
        client: Any = None,
    ) -> None:
        valkey = _client_module()
        self.url = url
        self.ttl_seconds = ttl_seconds
        self.key_prefix = key_prefix
        self.max_attempts = max_attempts
        self._errors: tuple[type[BaseException], ...] = (valkey.exceptions.ValkeyError,)
        self._watch_error: type[BaseException] = valkey.exceptions.WatchError
        self._limits = GraphLimits() if graph_limits is None else graph_limits
        self._fresh = StateRecord(state=ConversationState(graph=MemoryGraph(limits=self._limits)))
        self._locks = LocalLocks(max_conversations)
        self.cache_size = cache_size
        # least recently used first: _cached touches each hit
        self._cache: BoundedTable[str, tuple[bytes, StateRecord]] = BoundedTable(cache_size)
        self._cache_lock = threading.Lock()
        if client is None:
            try:
                client = valkey.Valkey.from_url(
                    url, socket_timeout=timeout_seconds, socket_connect_timeout=timeout_seconds
                )
            except ValueError as exc:
                msg = f"url={redact(url)!r} is no Valkey URL: {exc}"
                raise ConfigError.single(msg, yaml_path="state_store.url") from None
        self._client = client

    def __repr__(self) -> str:
        return (
            f"ValkeyStateStore({redact(self.url)!r}, ttl_seconds={self.ttl_seconds!r}, "
            f"key_prefix={self.key_prefix!r})"
        )

    def key(self, conversation_id: str | None) -> str:
        """The key that holds the conversation."""
        if conversation_id is None:
            return f"{self.key_prefix}default"
        return f"{self.key_prefix}conversation:{conversation_id}"

    def _failed(self, exc: BaseException, doing: str) -> StateStoreError:
        msg = f"state store {redact(self.url)} failed {doing}: {type(exc).__name__}: {exc}"
        return StateStoreError(msg)

    def _cached(self, key: str, stamp: bytes | None) -> StateRecord | None:
        if stamp is None:
            return self._fresh
        with self._cache_lock:
            found = self._cache.get(key)
            if found is None or found[0] != stamp:
                return None
            self._cache.touch(key)
            return found[1]

    def _remember(self, key: str, stamp: bytes, record: StateRecord) -> None:
        with self._cache_lock:
            self._cache.put(key, (stamp, record))

    def _read(self, client: Any, key: str) -> StateRecord:
        """The record under ``key``, through the cache: the stamp first, the
        state only when the stamp is not the one cached."""
        record = self._cached(key, client.hget(key, "stamp"))
        if record is not None:
            return record
        stamp, raw = client.hmget(key, ["stamp", "state"])
        if stamp is None or raw is None:
            return self._fresh  # forgotten in between (or half a hash: not ours)
        record = decode_state(raw, limits=self._limits, where=repr(key))
        self._remember(key, stamp, record)
        return record

    def load(self, conversation_id: str | None) -> StateRecord:
        key = self.key(conversation_id)
        try:
            return self._read(self._client, key)
        except self._errors as exc:
            raise self._failed(exc, f"reading {key!r}") from exc

    def update(
        self,
        conversation_id: str | None,
        change: Callable[[ConversationState], ConversationState],
    ) -> StateRecord:
        key = self.key(conversation_id)
        for attempt in range(self.max_attempts):
            try:
                with self._client.pipeline(transaction=True) as pipe:
                    pipe.watch(key)
                    record = self._read(pipe, key)
                    new = change(record.state)
                    if new is record.state:
                        pipe.unwatch()
                        if record.version:
                            self._client.expire(key, self.ttl_seconds)
                        return record
                    written = StateRecord(state=new, version=record.version + 1)
                    data = encode_state(new, written.version)
                    stamp = f"{written.version}:{uuid.uuid4().hex}".encode()
                    pipe.multi()
                    pipe.hset(key, mapping={"stamp": stamp, "state": data})
                    pipe.expire(key, self.ttl_seconds)
                    pipe.execute()
                    self._remember(key, stamp, written)
                    return written
            except self._watch_error:
                time.sleep(random.uniform(0, min(0.05, 0.0005 * 2 ** min(attempt, 10))))
            except self._errors as exc:
                raise self._failed(exc, f"updating {key!r}") from exc
        msg = (
            f"state store {redact(self.url)}: gave up updating {key!r} after "
            f"{self.max_attempts} attempts lost to concurrent writes; nothing was written"
        )
        raise StateStoreError(msg)

    def forget(self, conversation_id: str | None) -> None:
        key = self.key(conversation_id)
        with self._cache_lock:
            self._cache.pop(key, None)
        try:
            self._client.delete(key)
        except self._errors as exc:
            raise self._failed(exc, f"deleting {key!r}") from exc

    def lock(self, conversation_id: str | None) -> contextlib.AbstractContextManager[None]:
        return self._locks(conversation_id)

    def keys(self) -> Iterator[str]:
        """The keys of the conversations this store's prefix holds."""
        pattern = _GLOB.sub(r"\\\1", self.key_prefix) + "*"
        try:
            for key in self._client.scan_iter(match=pattern, count=1000):
                yield key.decode() if isinstance(key, bytes) else str(key)
        except self._errors as exc:
            raise self._failed(exc, "listing keys") from exc

    def __len__(self) -> int:
        return sum(1 for _ in self.keys())

    def close(self) -> None:
        """Close the client's connections."""
        with contextlib.suppress(*self._errors):
            self._client.close()
