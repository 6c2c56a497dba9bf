"""Conversation state, and the :class:`StateStore` seam that keeps it.

:class:`~memrules.MemoryPlugin` carries a :class:`ConversationState` from one
request of a conversation to the next: whether the context warning was
given, and the conversation's working graph. The state lives behind a
:class:`StateStore`, so that several router replicas, or a process that
restarted, share it:

- :class:`InMemoryStateStore` (the default): this process only, at most
  ``max_conversations`` conversations, the least recently seen idle one
  forgotten past that.
- :class:`~memrules.graph.valkey.ValkeyStateStore`: Valkey or Redis by URL
  (the ``memrules[valkey]`` extra), each conversation one key with a TTL and
  a version number; updates are atomic across processes.

A store's one write is :meth:`StateStore.update`: it hands the current state
to a pure function and stores what it returns, atomically. A store that
cannot serialize updates otherwise may run the function again on a newer
state (optimistic concurrency), which is why it must be pure: merges of
graph values are. Every successful write adds one to the conversation's
``version``; a function that returns the very state it was given writes
nothing.

A store that cannot be reached fails the call with
:class:`~memrules._core.errors.StateStoreError`, having written nothing: never a
half-written graph.

In YAML::

    state_store:
      url: valkey://127.0.0.1:6379/0   # or memory:// (the default)
      ttl_seconds: 86400
      key_prefix: "memrules:"
"""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol, runtime_checkable

import attrs

from memrules._core.bounded import BoundedTable
from memrules._core.checks import check_whole, is_whole
from memrules._core.errors import ConfigError, ConfigProblem, GraphError, StateStoreError
from memrules._core.redaction import redact_url
from memrules.graph.limits import GraphLimits
from memrules.graph.memory_graph import MemoryGraph
from memrules.graph.snapshot import GraphSnapshot

__all__ = [
    "DEFAULT_MAX_CONVERSATIONS",
    "MEMORY_URL",
    "STATE_FORMAT",
    "ConversationState",
    "InMemoryStateStore",
    "LocalLocks",
    "StateRecord",
    "StateStore",
    "StateStoreConfig",
    "decode_state",
    "encode_state",
]

DEFAULT_MAX_CONVERSATIONS = 10_000
MEMORY_URL = "memory://"
STATE_FORMAT = "memrules.state"

_EMPTY_GRAPH = MemoryGraph()


@attrs.frozen(kw_only=True, slots=True)
class ConversationState:
    """What the plugin carries from one request of a conversation to the next.

    ``warned``: the conversation has had its context warning, because the
    plugin appended it or a request arrived already holding it. It never goes
    back to False (but :meth:`MemoryPlugin.reset <memrules.MemoryPlugin.reset>`).
    ``graph``: the conversation's working graph.
    """

    warned: bool = False
    graph: MemoryGraph = _EMPTY_GRAPH


@attrs.frozen(kw_only=True, slots=True)
class StateRecord:
    """A conversation's state as a store holds it, with its ``version``: 0
    for a conversation the store has never written (or forgot), one more for
    each write."""

    state: ConversationState
    version: int = 0


@runtime_checkable
class StateStore(Protocol):
    """Where :class:`~memrules.MemoryPlugin` keeps each conversation's state.

    Conversation ids are strings, or None for the default conversation.
    Every method may raise :class:`~memrules._core.errors.StateStoreError`, and
    then has written nothing.
    """

    def load(self, conversation_id: str | None) -> StateRecord:
        """The conversation's state and version; a fresh state, version 0,
        for a conversation the store does not hold."""
        ...

    def update(
        self,
        conversation_id: str | None,
        change: Callable[[ConversationState], ConversationState],
    ) -> StateRecord:
        """Atomically replace the state with ``change(state)`` and return
        the record written (the record as it was when ``change`` returns its
        argument, which writes nothing). ``change`` must be pure: it may be
        called more than once, on newer states, and only the last call's
        result is kept."""
        ...

    def forget(self, conversation_id: str | None) -> None:
        """Drop the conversation: its next load is fresh."""
        ...

    def lock(self, conversation_id: str | None) -> contextlib.AbstractContextManager[None]:
        """A lock the plugin holds around each request of the conversation,
        so that its requests run one at a time in this process (what makes
        the warning exactly one-shot). Across processes only :meth:`update`
        is atomic."""
        ...

    def __len__(self) -> int:
        """How many conversations the store holds."""
        ...


# --- encoding: for stores that keep bytes ----------------------------------------


def encode_state(state: ConversationState, version: int) -> str:
    """A state and its version as JSON text: ``{"format": "memrules.state",
    "version": N, "warned": B, "graph": <snapshot>}``, with the graph's
    entries in age order, so a decoded graph evicts as the original would."""
    snapshot = state.graph.snapshot().to_dict()
    return json.dumps(
        {"format": STATE_FORMAT, "version": version, "warned": state.warned, "graph": snapshot},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def decode_state(data: str | bytes, *, limits: GraphLimits, where: str) -> StateRecord:
    """The record :func:`encode_state` wrote, its graph under ``limits``.
    Raises :class:`~memrules._core.errors.StateStoreError` naming ``where`` (the
    key) for data that is not such a record: a store that holds nonsense
    must not become a corrupt graph."""
    try:
        raw = json.loads(data)
        if not isinstance(raw, Mapping) or raw.get("format") != STATE_FORMAT:
            msg = f"not a {STATE_FORMAT} record"
            raise ValueError(msg)
        version, warned = raw.get("version"), raw.get("warned")
        if not is_whole(version, 1):
            msg = f"version={version!r} is not a whole number of at least 1"
            raise ValueError(msg)
        if not isinstance(warned, bool):
            msg = f"warned={warned!r} is not true or false"
            raise ValueError(msg)
        snapshot = GraphSnapshot.from_dict(raw.get("graph"))
        graph, _ = MemoryGraph.from_snapshot(snapshot, limits=limits)
    except (ValueError, GraphError) as exc:  # JSONDecodeError is a ValueError
        msg = f"state store entry {where} cannot be read: {exc}"
        raise StateStoreError(msg) from None
    graph = _EMPTY_GRAPH if graph.is_empty and graph.limits == _EMPTY_GRAPH.limits else graph
    return StateRecord(state=ConversationState(warned=warned, graph=graph), version=version)


# --- locks ------------------------------------------------------------------------


def _in_use(entry: _Lock | _Entry) -> bool:
    """Whether a request or update holds ``entry``: a table never drops it then."""
    return entry.users > 0


class _Lock:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0


class LocalLocks:
    """A bounded table of per-conversation locks for this process: at most
    ``cap`` entries kept once nobody holds them, least recently used
    dropped first. A helper for stores whose state lives elsewhere."""

    __slots__ = ("_guard", "_table", "cap")

    def __init__(self, cap: int = DEFAULT_MAX_CONVERSATIONS) -> None:
        self.cap = cap
        # least recently used first; an entry in use is never dropped
        self._table: BoundedTable[str | None, _Lock] = BoundedTable(cap)
        self._guard = threading.Lock()

    @contextlib.contextmanager
    def __call__(self, conversation_id: str | None) -> Iterator[None]:
        with self._guard:
            entry = self._table.get(conversation_id)
            if entry is None:
                entry = self._table[conversation_id] = _Lock()
            else:
                self._table.touch(conversation_id)
            entry.users += 1
        try:
            with entry.lock:
                yield
        finally:
            with self._guard:
                entry.users -= 1
                self._table.trim(keep=_in_use)


# --- the in-memory store ------------------------------------------------------------


class _Entry:
    __slots__ = ("lock", "record", "users", "write")

    def __init__(self, record: StateRecord) -> None:
        self.record = record
        self.lock = threading.Lock()  # held around each request
        self.write = threading.Lock()  # held around each update
        self.users = 0  # requests and updates in progress: never evicted while > 0


class InMemoryStateStore:
    """The default :class:`StateStore`: this process's memory, at most
    ``max_conversations`` conversations. Past that, the least recently seen
    conversation that has no request or update in progress is forgotten
    (its next request starts afresh). Fresh states carry a graph with
    ``graph_limits``.

    Updates of one conversation run one at a time (a lock per conversation),
    so ``change`` runs once; different conversations never wait for each
    other.
    """

    __slots__ = ("_fresh", "_guard", "_table", "max_conversations")

    def __init__(
        self,
        *,
        max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
        graph_limits: GraphLimits | None = None,
    ) -> None:
        check_whole("max_conversations", max_conversations, 1)
        self.max_conversations = max_conversations
        graph = _EMPTY_GRAPH if graph_limits is None else MemoryGraph(limits=graph_limits)
        self._fresh = StateRecord(state=ConversationState(graph=graph))
        # least recently seen first; an entry in use is never dropped
        self._table: BoundedTable[str | None, _Entry] = BoundedTable(max_conversations)
        self._guard = threading.Lock()

    def load(self, conversation_id: str | None) -> StateRecord:
        entry = self._table.get(conversation_id)
        return self._fresh if entry is None else entry.record

    @contextlib.contextmanager
    def _using(self, conversation_id: str | None) -> Iterator[_Entry]:
        with self._guard:
            entry = self._table.get(conversation_id)
            if entry is None:
                entry = self._table[conversation_id] = _Entry(self._fresh)
            else:
                self._table.touch(conversation_id)
            entry.users += 1
            self._table.trim(keep=_in_use)
        try:
            yield entry
        finally:
            with self._guard:
                entry.users -= 1

    def update(
        self,
        conversation_id: str | None,
        change: Callable[[ConversationState], ConversationState],
    ) -> StateRecord:
        with self._using(conversation_id) as entry, entry.write:
            record = entry.record
            new = change(record.state)
            if new is record.state:
                return record
            entry.record = StateRecord(state=new, version=record.version + 1)
            return entry.record

    def forget(self, conversation_id: str | None) -> None:
        with self._guard:
            self._table.pop(conversation_id, None)

    @contextlib.contextmanager
    def lock(self, conversation_id: str | None) -> Iterator[None]:
        with self._using(conversation_id) as entry, entry.lock:
            yield

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"InMemoryStateStore(max_conversations={self.max_conversations})"


# --- configuration ------------------------------------------------------------------

_VALKEY_SCHEMES = ("valkey", "valkeys", "redis", "rediss", "unix")


def _positive(value: object, *, whole: bool) -> bool:
    if isinstance(value, bool):
        return False
    if whole:
        return isinstance(value, int) and value >= 1
    return isinstance(value, (int, float)) and 0 < value < float("inf")


@attrs.frozen(kw_only=True, slots=True)
class StateStoreConfig:
    """Which state store a config asks for (YAML ``state_store``).

    ``url``: ``memory://`` (the default: this process, bounded by the
    plugin's ``max_conversations``), or a Valkey/Redis URL
    (``valkey://host:6379/0``, ``valkeys://`` for TLS, ``redis://``,
    ``rediss://``, ``unix:///path/to.sock``). ``ttl_seconds``: how long a
    Valkey-held conversation outlives its last request (86,400). ``key_prefix``
    starts every key. ``timeout_seconds``: per Valkey command (5). Checked when
    built; the URL's password is never shown in errors or ``repr``.
    """

    url: str = MEMORY_URL
    ttl_seconds: int = 86_400
    key_prefix: str = "memrules:"
    timeout_seconds: float = 5.0

    def __attrs_post_init__(self) -> None:
        problems = []

        def problem(key: str, message: str) -> None:
            problems.append(ConfigProblem(message=message, yaml_path=f"state_store.{key}"))

        if not isinstance(self.url, str):
            problem("url", f"url={self.url!r} must be a string")
        elif self.url != MEMORY_URL:
            scheme = urllib.parse.urlsplit(self.url).scheme
            if scheme not in _VALKEY_SCHEMES:
                known = ", ".join(f"{s}://" for s in _VALKEY_SCHEMES)
                problem(
                    "url",
                    f"url={redact(self.url)!r} must be {MEMORY_URL!r} or a Valkey URL ({known})",
                )
        if not _positive(self.ttl_seconds, whole=True):
            problem(
                "ttl_seconds",
                f"ttl_seconds={self.ttl_seconds!r} must be a whole number of at least 1",
            )
        if not isinstance(self.key_prefix, str) or not self.key_prefix:
            problem("key_prefix", f"key_prefix={self.key_prefix!r} must be a non-empty string")
        if not _positive(self.timeout_seconds, whole=False):
            problem(
                "timeout_seconds",
                f"timeout_seconds={self.timeout_seconds!r} must be a number of seconds above 0",
            )
        if problems:
            raise ConfigError(problems)

    def __repr__(self) -> str:
        return (
            f"StateStoreConfig(url={redact(self.url)!r}, ttl_seconds={self.ttl_seconds!r}, "
            f"key_prefix={self.key_prefix!r}, timeout_seconds={self.timeout_seconds!r})"
        )

    @property
    def in_memory(self) -> bool:
        return self.url == MEMORY_URL


def redact(url: object) -> str:
    """``url`` with its credentials replaced by ``***``
    (:func:`memrules._core.redaction.redact_url`, the one redaction every message uses)."""
    return redact_url(url)
