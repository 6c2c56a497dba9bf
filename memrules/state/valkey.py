"""Conversation state in Valkey (or Redis), one server or a cluster: `ValkeyStateStore`.

Needs the `memrules[valkey]` extra (the `valkey` client). Each conversation
is one hash with two fields: `state`, the JSON of `encode_state` (the
version, the warning flag, the graph's snapshot and the prompt-cache carry),
and `stamp`, the version and a random token, new with every write. Every
write sets the key's TTL, and so does every request that changes nothing, so
a conversation lives `ttl_seconds` past its last request.

Keys: `<key_prefix>conversation:<id>` on one server (`<key_prefix>default`
for the default conversation, id None). On a cluster the part after the
prefix is a hash tag, `<key_prefix>{conversation:<id>}`, so everything a
conversation keeps is in one hash slot, on one primary.

Reads and writes are one round trip each, a server-side script: a read sends
the stamp this process last saw and gets the state back only when another
process wrote since; a write is a compare-and-set on the stamp (pipelined
with its `WAIT` for replicas, below, in the same round trip). The store
computes a write on the state it last saw (usually the current one: the
read just before it checked), and when another process wrote in between the
compare-and-set fails, hands back the newer state in the same reply, and the
store runs the (pure) change again on it, up to `max_attempts` times with a
small random backoff. So merges from any number of replicas are applied one
after another and none is lost; each successful write adds one to the
version.

The request hook writes with `swap` instead (`SwappingStateStore`): it runs
the request on the state this process holds (`held`, no round trip) and
`swap` is the same compare-and-set on that record, one round trip; when
another process wrote since, it writes nothing and answers the newer state,
on which the hook runs the request again. A request whose process holds the
current state costs one round trip; one that lost a race, two.

**Cluster mode** (`valkey+cluster://host:port`, `valkeys+cluster://`,
`redis+cluster://`, `rediss+cluster://`, or `cluster=True`; YAML
`state_store: {url: ..., cluster: true}`): the client is valkey-py's
`ValkeyCluster`, started from that one node; it follows `MOVED` and `ASK`
redirections. When a primary fails, the calls of its slots get connection
errors or `CLUSTERDOWN` until a replica takes over; the store retries them
(reloading the slot map) until `timeout_seconds` after the call began, then
fails with `StateStoreError`. Each write then waits (`WAIT`) until
`wait_replicas` replicas (1 by default on a cluster, 0 on one server) hold
it, or as many as the primary has connected (asked once a second): a write
is acknowledged only once a replica that a failover would promote has it, so
an acknowledged write survives the loss of its primary. A primary with no
replica left (its replica was promoted and the old primary has not come back)
takes writes without waiting: no failover can lose them then.
A write that reached the primary but no replica in time fails with
`StateStoreError` saying so: it is not acknowledged, and a later read shows
whether it survived. (Valkey's own caveat applies: `WAIT` makes a write
survive the failure of one node, not every sequence of failures.)

A server that cannot be reached, times out or answers an error fails the
call with `StateStoreError`, naming the URL without its password; nothing is
written (but for the unconfirmed write above).

```python
from memrules.state import ValkeyStateStore

store = ValkeyStateStore("valkey://127.0.0.1:6379/0")  # connects on first use
```
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
from memrules.state.config import cluster_url, redact
from memrules.state.memory import DEFAULT_MAX_CONVERSATIONS, LocalLocks
from memrules.state.model import ConversationState, StateRecord, decode_state, encode_state

__all__ = ["ValkeyStateStore"]

_GLOB = re.compile(r"([*?\[\]\\])")

# KEYS[1] the conversation; ARGV[1] the stamp this process holds ("" for none).
# Returns {} when the key does not exist, {stamp} when the stamp is the one
# held, else {stamp, state}.
_READ = """
local stamp = redis.call('HGET', KEYS[1], 'stamp')
if not stamp then return {} end
if stamp == ARGV[1] then return {stamp} end
return {stamp, redis.call('HGET', KEYS[1], 'state')}
"""

# KEYS[1] the conversation; ARGV: the stamp expected ("" for no key), the new
# stamp, the new state, the TTL. Returns {1} when written, else what _READ
# returns for the stamp expected (with a leading 0).
_WRITE = """
local stamp = redis.call('HGET', KEYS[1], 'stamp')
if (stamp or '') ~= ARGV[1] then
  if not stamp then return {0} end
  return {0, stamp, redis.call('HGET', KEYS[1], 'state')}
end
redis.call('HSET', KEYS[1], 'stamp', ARGV[2], 'state', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return {1}
"""

# KEYS[1]; ARGV: the stamp expected, the TTL: keep a conversation that a
# request left as it was, when it is as the process saw it; else as _WRITE.
_TOUCH = """
local stamp = redis.call('HGET', KEYS[1], 'stamp')
if (stamp or '') ~= ARGV[1] then
  if not stamp then return {0} end
  return {0, stamp, redis.call('HGET', KEYS[1], 'state')}
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {1}
"""


def _client_module() -> Any:
    try:
        import valkey  # the optional extra: imported only when a Valkey store is asked for
    except ImportError:
        msg = "a Valkey state store needs the valkey client: pip install 'memrules[valkey]'"
        raise ConfigError.single(msg, yaml_path="state_store.url") from None
    return valkey


class _UnconfirmedError(Exception):
    """A write the primary took but not enough replicas confirmed in time."""


class ValkeyStateStore:
    """A `StateStore` in Valkey or Redis, one server or a cluster (see the
    module docs).

    `url` is a `valkey://`, `valkeys://`, `redis://`, `rediss://` or
    `unix://` URL, or a `+cluster` one (`valkey+cluster://host:7000`) for a
    cluster; `cluster=True` asks for cluster mode with a plain URL. `client`
    may be a ready `valkey.Valkey` or `valkey.cluster.ValkeyCluster` instead
    (`url` then only names it in errors). `timeout_seconds` bounds each
    command, and on a cluster each call's retries through a failover;
    `wait_replicas` is how many replicas must hold a write before it is
    acknowledged (1 on a cluster, 0 on one server); `graph_limits` are the
    limits of the graphs it reads back; `max_conversations` bounds this
    process's table of request locks, `cache_size` its decoded states.
    Connecting is lazy: a server that is down fails the first call, not the
    constructor.
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
        cluster: bool | None = None,
        wait_replicas: int | None = None,
        client: Any = None,
    ) -> None:
        valkey = _client_module()
        plain, is_cluster = cluster_url(url)
        self.cluster = is_cluster if cluster is None else cluster
        if self.cluster and ("{" in key_prefix or "}" in key_prefix):
            msg = (
                f"key_prefix={key_prefix!r} holds a brace: on a cluster the store makes "
                "each conversation's hash tag itself; use a prefix without braces"
            )
            raise ConfigError.single(msg, yaml_path="state_store.key_prefix")
        self.url = url
        self.ttl_seconds = ttl_seconds
        self.key_prefix = key_prefix
        self.timeout_seconds = timeout_seconds
        self.max_attempts = max_attempts
        self.wait_replicas = (1 if self.cluster else 0) if wait_replicas is None else wait_replicas
        exceptions = valkey.exceptions
        self._errors: tuple[type[BaseException], ...] = (
            exceptions.ValkeyError,
            exceptions.ValkeyClusterException,
        )
        # what a failover looks like from a client: retried on a cluster
        self._no_script: type[BaseException] = exceptions.NoScriptError
        self._transient: tuple[type[BaseException], ...] = (
            exceptions.ConnectionError,
            exceptions.TimeoutError,
            exceptions.ClusterDownError,
            exceptions.TryAgainError,
            exceptions.MasterDownError,
            exceptions.ReadOnlyError,
            exceptions.ValkeyClusterException,
            exceptions.MovedError,
            exceptions.AskError,
        )
        self._limits = GraphLimits() if graph_limits is None else graph_limits
        self._fresh = StateRecord(state=ConversationState(graph=MemoryGraph(limits=self._limits)))
        self._locks = LocalLocks(max_conversations)
        self.cache_size = cache_size
        # least recently used first: _cached touches each hit
        self._cache: BoundedTable[str, tuple[bytes, StateRecord]] = BoundedTable(cache_size)
        self._cache_lock = threading.Lock()
        self._client_lock = threading.Lock()
        self._client = client
        self._scripts: tuple[Any, Any, Any] | None = None
        self._plain_url = plain
        self._valkey = valkey
        self._known_replicas: dict[str, tuple[int, float]] = {}
        self.round_trips = 0
        """Commands sent to the server so far (a script, a `WAIT`): what the
        replica benchmark reports per request."""
        if client is None:
            self._check_url()

    def _check_url(self) -> None:
        try:
            self._valkey.connection.parse_url(self._plain_url)
        except ValueError as exc:
            msg = f"url={redact(self.url)!r} is no Valkey URL: {exc}"
            raise ConfigError.single(msg, yaml_path="state_store.url") from None

    def _connect(self) -> tuple[Any, tuple[Any, Any, Any]]:
        with self._client_lock:
            if self._client is None:
                timeouts = {
                    "socket_timeout": self.timeout_seconds,
                    "socket_connect_timeout": self.timeout_seconds,
                }
                if self.cluster:
                    from valkey.cluster import ValkeyCluster

                    self._client = ValkeyCluster.from_url(self._plain_url, **timeouts)  # type: ignore[no-untyped-call]
                else:
                    self._client = self._valkey.Valkey.from_url(self._plain_url, **timeouts)
            if self._scripts is None:
                client = self._client
                self._scripts = (
                    client.register_script(_READ),
                    client.register_script(_WRITE),
                    client.register_script(_TOUCH),
                )
            return self._client, self._scripts

    def __repr__(self) -> str:
        return (
            f"ValkeyStateStore({redact(self.url)!r}, ttl_seconds={self.ttl_seconds!r}, "
            f"key_prefix={self.key_prefix!r}, cluster={self.cluster!r})"
        )

    def key(self, conversation_id: str | None) -> str:
        """The key that holds the conversation (a hash-tagged one on a cluster)."""
        name = "default" if conversation_id is None else f"conversation:{conversation_id}"
        return f"{self.key_prefix}{{{name}}}" if self.cluster else f"{self.key_prefix}{name}"

    def _failed(self, exc: BaseException, doing: str) -> StateStoreError:
        msg = f"state store {redact(self.url)} failed {doing}: {type(exc).__name__}: {exc}"
        return StateStoreError(msg)

    def _retrying(self, doing: str, call: Callable[[], Any]) -> Any:
        """`call()`, again after a failover's transient errors on a cluster
        until `timeout_seconds` after the first try; any other error, or one
        past the deadline, as `StateStoreError`."""
        deadline = time.monotonic() + self.timeout_seconds
        pause = 0.02
        while True:
            try:
                return call()
            except _UnconfirmedError as exc:
                raise StateStoreError(f"state store {redact(self.url)}: {exc}") from None
            except self._errors as exc:
                if not (self.cluster and isinstance(exc, self._transient)):
                    raise self._failed(exc, doing) from exc
                if time.monotonic() + pause > deadline:
                    msg = (
                        f"state store {redact(self.url)} failed {doing}: the cluster did not "
                        f"answer within timeout_seconds={self.timeout_seconds!r} (a failover "
                        f"in progress?): {type(exc).__name__}: {exc}"
                    )
                    raise StateStoreError(msg) from exc
                self._refresh()
                time.sleep(random.uniform(pause / 2, pause))
                pause = min(pause * 2, 0.5)

    def _refresh(self) -> None:
        """Have the cluster client reload its slot map before the next try."""
        manager = getattr(self._client, "nodes_manager", None)
        if manager is not None:
            with contextlib.suppress(*self._errors):
                manager.initialize()

    def _decode(
        self, key: str, reply: list[Any], held: tuple[bytes, StateRecord] | None = None
    ) -> tuple[bytes | None, StateRecord]:
        """The stamp and record a read script's reply names: its state
        decoded, or `held` (what the process sent the stamp of) when the
        reply has only the stamp."""
        if not reply:
            return None, self._fresh
        stamp = bytes(reply[0])
        if len(reply) == 1:
            if held is not None and held[0] == stamp:
                return stamp, held[1]
            msg = f"state store entry {key!r} answered a stamp this process did not send"
            raise StateStoreError(msg)
        record = decode_state(reply[1], limits=self._limits, where=repr(key))
        self._remember(key, stamp, record)
        return stamp, record

    def _held(self, key: str) -> tuple[bytes, StateRecord] | None:
        with self._cache_lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.touch(key)
            return found

    def _remember(self, key: str, stamp: bytes, record: StateRecord) -> None:
        with self._cache_lock:
            self._cache.put(key, (stamp, record))

    def _forget_cached(self, key: str) -> None:
        with self._cache_lock:
            self._cache.pop(key, None)

    def _read(self, key: str) -> tuple[bytes | None, StateRecord]:
        _, (read, _, _) = self._connect()
        held = self._held(key)
        self.round_trips += 1
        reply = read(keys=[key], args=[b"" if held is None else held[0]])
        return self._decode(key, list(reply), held)

    def load(self, conversation_id: str | None) -> StateRecord:
        key = self.key(conversation_id)
        return self._retrying(f"reading {key!r}", lambda: self._read(key)[1])  # type: ignore[no-any-return]

    def _replicas(self, client: Any, node: Any) -> int:
        """How many replicas `node` (None: the one server) has online,
        asked at most once a second per node."""
        name = "" if node is None else str(node.name)
        now = time.monotonic()
        known = self._known_replicas.get(name)
        if known is not None and known[1] > now:
            return known[0]
        self.round_trips += 1
        if node is None:
            info = client.info("replication")
        else:
            info = client.info("replication", target_nodes=node)
        count = sum(  # replicas done with their first sync: the ones WAIT counts
            1
            for name, replica in info.items()
            if name.startswith("slave")
            and isinstance(replica, dict)
            and replica.get("state") == "online"
        )
        self._known_replicas[name] = (count, now + 1.0)
        return count

    def _need(self, client: Any, key: str) -> tuple[int, Any]:
        """How many replicas a write of `key` waits for (`wait_replicas`, at
        most as many as its primary has online: with none, no failover can
        promote a replica that lacks it), and the node to ask (None: the one
        server)."""
        if self.wait_replicas <= 0:
            return 0, None
        node = client.get_node_from_key(key) if self.cluster else None
        return min(self.wait_replicas, self._replicas(client, node)), node

    def _write(self, client: Any, write: Any, key: str, args: list[Any]) -> list[Any]:
        """The write script's reply, with the write's `WAIT` for replicas in
        the same round trip (a pipeline to the key's primary)."""
        need, node = self._need(client, key)
        self.round_trips += 1
        if need == 0:
            return list(write(keys=[key], args=args))
        # below the socket timeout, so that a slow replica is an answer, not a lost reply
        millis = max(1, int(self.timeout_seconds * 500))
        target = client if node is None else node.valkey_connection
        for _ in range(2):
            pipe = target.pipeline(transaction=False)
            pipe.evalsha(write.sha, 1, key, *args)
            pipe.execute_command("WAIT", need, millis)
            try:
                reply, acked = pipe.execute()
                break
            except self._no_script:
                target.script_load(_WRITE)
        else:  # pragma: no cover - a script loaded just now is there
            msg = "the write script could not be loaded"
            raise StateStoreError(msg)
        reply = list(reply)
        if reply and int(reply[0]) == 1 and int(acked) < need:
            self._known_replicas.pop("" if node is None else str(node.name), None)
            msg = (
                f"the write of {key!r} reached the primary but {acked} of its {need} "
                f"replicas within {millis} ms: it is not acknowledged and may be lost in a "
                "failover (a later read shows whether it was kept)"
            )
            raise _UnconfirmedError(msg)
        return reply

    def _attempt(
        self,
        key: str,
        stamp: bytes | None,
        record: StateRecord,
        new: ConversationState,
        tried: list[bytes] | None = None,
    ) -> tuple[bool, bytes | None, StateRecord]:
        """One compare-and-set of ``new`` over ``record`` (which the process
        holds as of ``stamp``), one round trip: ``(True, stamp, the record
        written or kept)``, or ``(False, stamp, the record now current)``
        when another process wrote since."""
        client, (_, write, touch) = self._connect()
        if new is record.state:
            if not record.version:
                return True, stamp, record
            self.round_trips += 1
            reply = list(touch(keys=[key], args=[stamp or b"", self.ttl_seconds]))
            if reply and int(reply[0]) == 1:
                return True, stamp, record
            self._forget_cached(key)
            return (False, *self._decode(key, reply[1:]))
        written = StateRecord(state=new, version=record.version + 1)
        data = encode_state(new, written.version)
        new_stamp = f"{written.version}:{uuid.uuid4().hex}".encode()
        if tried is not None:
            tried.append(new_stamp)
        try:
            args = [stamp or b"", new_stamp, data, self.ttl_seconds]
            reply = self._write(client, write, key, args)
        except self._transient:
            # the reply was lost, maybe after the write: a read tells
            self._forget_cached(key)
            now, _ = self._read(key)
            if now != new_stamp:
                raise
            if self.wait_replicas > 0:
                msg = (
                    f"the write of {key!r} reached the primary but its reply was lost, "
                    "so no replica confirmed it: it is not acknowledged and may be lost "
                    "in a failover"
                )
                raise _UnconfirmedError(msg) from None
            reply = [1]
        if reply and int(reply[0]) == 0 and len(reply) > 1 and bytes(reply[1]) == new_stamp:
            # The client re-sent the write after a dropped connection (a
            # cluster client does, and so may a client the caller passed):
            # the first send was made, the second found its stamp. It is
            # this write, not another process's, and it counts once.
            reply = [1]
        if reply and int(reply[0]) == 1:
            self._remember(key, new_stamp, written)
            return True, new_stamp, written
        self._forget_cached(key)
        return (False, *self._decode(key, list(reply[1:])))

    def _update(
        self, key: str, change: Callable[[ConversationState], ConversationState]
    ) -> StateRecord:
        held = self._held(key)
        if held is None:
            stamp, record = self._read(key)
        else:
            stamp, record = held
        for attempt in range(self.max_attempts):
            done, stamp, record = self._attempt(key, stamp, record, change(record.state))
            if done:
                return record
            time.sleep(random.uniform(0, min(0.05, 0.0005 * 2 ** min(attempt, 10))))
        msg = (
            f"state store {redact(self.url)}: gave up updating {key!r} after "
            f"{self.max_attempts} attempts lost to concurrent writes; nothing was written"
        )
        raise StateStoreError(msg)

    def held(self, conversation_id: str | None) -> StateRecord | None:
        """The record this process last read or wrote of the conversation
        (no round trip; it may be out of date), None when it holds none."""
        found = self._held(self.key(conversation_id))
        return None if found is None else found[1]

    def _swap(
        self, key: str, seen: StateRecord, new: ConversationState, tried: list[bytes]
    ) -> tuple[bool, StateRecord]:
        held = self._held(key)
        if held is not None and held[1] is seen:
            stamp: bytes | None = held[0]
        elif held is None and seen is self._fresh:
            stamp = None
        else:  # not the record this process holds: what is current, one read
            now, current = self._read(key)
            if now is not None and now in tried:
                # a retry after a lost reply: the write was made, unconfirmed
                if self.wait_replicas > 0:
                    msg = (
                        f"the write of {key!r} reached the primary but its reply was lost, "
                        "so no replica confirmed it: it is not acknowledged and may be lost "
                        "in a failover"
                    )
                    raise _UnconfirmedError(msg)
                return True, current
            return False, current
        done, _, record = self._attempt(key, stamp, seen, new, tried)
        return done, record

    def swap(
        self, conversation_id: str | None, seen: StateRecord, new: ConversationState
    ) -> tuple[bool, StateRecord]:
        """`new` in place of ``seen`` when that is still the record, one
        round trip (see `SwappingStateStore.swap`). A call retried after a
        lost reply finds its own write rather than running the request
        again on top of it."""
        key = self.key(conversation_id)
        tried: list[bytes] = []
        return self._retrying(  # type: ignore[no-any-return]
            f"updating {key!r}", lambda: self._swap(key, seen, new, tried)
        )

    def update(
        self,
        conversation_id: str | None,
        change: Callable[[ConversationState], ConversationState],
    ) -> StateRecord:
        key = self.key(conversation_id)
        return self._retrying(f"updating {key!r}", lambda: self._update(key, change))  # type: ignore[no-any-return]

    def forget(self, conversation_id: str | None) -> None:
        key = self.key(conversation_id)
        self._forget_cached(key)

        def delete() -> None:
            client, _ = self._connect()
            self.round_trips += 1
            client.delete(key)

        self._retrying(f"deleting {key!r}", delete)

    def lock(self, conversation_id: str | None) -> contextlib.AbstractContextManager[None]:
        return self._locks(conversation_id)

    def keys(self) -> Iterator[str]:
        """The keys of the conversations this store's prefix holds (on a
        cluster, of every primary)."""
        pattern = _GLOB.sub(r"\\\1", self.key_prefix) + "*"
        try:
            client, _ = self._connect()
            for key in client.scan_iter(match=pattern, count=1000):
                yield key.decode() if isinstance(key, bytes) else str(key)
        except self._errors as exc:
            raise self._failed(exc, "listing keys") from exc

    def __len__(self) -> int:
        return sum(1 for _ in self.keys())

    def close(self) -> None:
        """Close the client's connections."""
        if self._client is not None:
            with contextlib.suppress(*self._errors):
                self._client.close()
