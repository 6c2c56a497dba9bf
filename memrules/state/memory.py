"""The default state store: `InMemoryStateStore`, this process's memory;
and `LocalLocks`, the per-conversation request locks of stores whose state
lives elsewhere."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from memrules._core.bounded import BoundedTable
from memrules._core.checks import check_whole
from memrules.graph.limits import GraphLimits
from memrules.graph.memory_graph import MemoryGraph
from memrules.state.model import ConversationState, StateRecord

__all__ = ["DEFAULT_MAX_CONVERSATIONS", "InMemoryStateStore", "LocalLocks"]

DEFAULT_MAX_CONVERSATIONS = 10_000

_EMPTY_GRAPH = MemoryGraph()


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
    """The default `StateStore`: this process's memory, at most
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

    def held(self, conversation_id: str | None) -> StateRecord | None:
        """The conversation's record: this process holds the store itself."""
        return self.load(conversation_id)

    def swap(
        self, conversation_id: str | None, seen: StateRecord, new: ConversationState
    ) -> tuple[bool, StateRecord]:
        """`new` in place of ``seen`` when that is still the record (see
        `SwappingStateStore.swap`)."""
        with self._using(conversation_id) as entry, entry.write:
            record = entry.record
            if record is not seen:
                return False, record
            if new is record.state:
                return True, record
            entry.record = StateRecord(state=new, version=record.version + 1)
            return True, entry.record

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
