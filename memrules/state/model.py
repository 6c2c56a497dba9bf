"""Conversation state, and the `StateStore` seam that keeps it.

`MemoryPlugin` carries a `ConversationState` from one request of a
conversation to the next: whether the context warning was given, the
conversation's working graph, and the prompt-cache carry (what a route with a
`cache:` section needs of the previous request). The state lives behind a
`StateStore`, so that several replicas of a service, or a process that
restarted, share it (`memrules.state`'s package docs list the stores).

A store's one write is `StateStore.update`: it hands the current state
to a pure function and stores what it returns, atomically. A store that
cannot serialize updates otherwise may run the function again on a newer
state (optimistic concurrency), which is why it must be pure: merges of
graph values are. Every successful write adds one to the conversation's
`version`; a function that returns the very state it was given writes
nothing.

A store that cannot be reached fails the call with `StateStoreError`,
having written nothing: never a half-written graph.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import attrs

from memrules._core.checks import is_whole
from memrules._core.errors import GraphError, StateStoreError
from memrules.graph.limits import GraphLimits
from memrules.graph.memory_graph import MemoryGraph
from memrules.graph.snapshot import GraphSnapshot
from memrules.state.carry import CacheCarry

__all__ = [
    "STATE_FORMAT",
    "ConversationState",
    "StateRecord",
    "StateStore",
    "SwappingStateStore",
    "decode_state",
    "encode_state",
]

STATE_FORMAT = "memrules.state"

_EMPTY_GRAPH = MemoryGraph()


@attrs.frozen(kw_only=True, slots=True)
class ConversationState:
    """What the plugin carries from one request of a conversation to the next.

    `warned`: the conversation has had its context warning, because the
    plugin appended it or a request arrived already holding it. It never goes
    back to False (but `MemoryPlugin.reset`).
    `graph`: the conversation's working graph.
    `carry`: what a route with a `cache:` section keeps of the previous
    request (`CacheCarry`: cut points and a digest, not the messages), so
    that the next request, on whichever replica, appends to what was sent;
    None before the first such request.
    """

    warned: bool = False
    graph: MemoryGraph = _EMPTY_GRAPH
    carry: CacheCarry | None = None


@attrs.frozen(kw_only=True, slots=True)
class StateRecord:
    """A conversation's state as a store holds it, with its ``version``: 0
    for a conversation the store has never written (or forgot), one more for
    each write."""

    state: ConversationState
    version: int = 0


@runtime_checkable
class StateStore(Protocol):
    """Where `MemoryPlugin` keeps each conversation's state.

    Conversation ids are strings, or None for the default conversation.
    Every method may raise `StateStoreError`, and
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
        the warning exactly one-shot). Across processes only `update`
        is atomic."""
        ...

    def __len__(self) -> int:
        """How many conversations the store holds."""
        ...


@runtime_checkable
class SwappingStateStore(StateStore, Protocol):
    """A `StateStore` that also offers the request hook's one-round-trip
    write: the hook runs a request's step on the state this process holds
    (`held`, no round trip) and writes the result with `swap`, a
    compare-and-set on that record. When another process wrote in between,
    `swap` writes nothing and answers the newer record in the same round
    trip, and the hook runs the step again on it."""

    def held(self, conversation_id: str | None) -> StateRecord | None:
        """The record of the conversation this process last read or wrote,
        without asking the server (it may be out of date); None when the
        process holds none."""
        ...

    def swap(
        self, conversation_id: str | None, seen: StateRecord, new: ConversationState
    ) -> tuple[bool, StateRecord]:
        """Atomically: when the conversation's record is still ``seen`` (the
        very record `held`, `load` or `swap` answered), replace its state
        with ``new`` (nothing is written when ``new`` is ``seen.state``) and
        answer ``(True, record written or kept)``; else write nothing and
        answer ``(False, the record now current)``."""
        ...


# --- encoding: for stores that keep bytes ----------------------------------------


def encode_state(state: ConversationState, version: int) -> str:
    """A state and its version as JSON text: ``{"format": "memrules.state",
    "version": N, "warned": B, "graph": <snapshot>, "carry": <carry>}``, with
    the graph's entries in age order, so a decoded graph evicts as the
    original would; `carry` only when the state has one."""
    raw: dict[str, Any] = {
        "format": STATE_FORMAT,
        "version": version,
        "warned": state.warned,
        "graph": state.graph.snapshot().to_dict(),
    }
    if state.carry is not None:
        raw["carry"] = state.carry.to_dict()
    return json.dumps(
        raw,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def decode_state(data: str | bytes, *, limits: GraphLimits, where: str) -> StateRecord:
    """The record `encode_state` wrote, its graph under ``limits``.
    Raises `StateStoreError` naming ``where`` (the
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
        carry = None if raw.get("carry") is None else CacheCarry.from_dict(raw["carry"])
    except (ValueError, TypeError, KeyError, GraphError) as exc:  # JSONDecodeError is a ValueError
        msg = f"state store entry {where} cannot be read: {exc}"
        raise StateStoreError(msg) from None
    graph = _EMPTY_GRAPH if graph.is_empty and graph.limits == _EMPTY_GRAPH.limits else graph
    state = ConversationState(warned=warned, graph=graph, carry=carry)
    return StateRecord(state=state, version=version)
