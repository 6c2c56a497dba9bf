"""Route-local retrieval memory: what a user said in earlier conversations,
found again and put in front of the model when it is relevant.

A config file shares one store, ``stores.memory``, between its routes, and
each route says whether it uses it (``memory: {enabled, retrieval_limit,
auto_store, threshold}``); ``MemoryPlugin.from_config(load_config(path), route=name)`` gives
the route's ready `MemoryPlugin`. On each request of a
route with memory, the plugin:

1. asks the store with the latest user message, within the request's user
   *and* tenant only (a request without both gets no memory, and its report
   says so), keeping hits at or above the threshold, at most
   ``retrieval_limit`` (`memrules.memory.retrieve`);
2. passes them through the reflection gate: block patterns, recency decay,
   near-duplicates, score order, and the ``max_inject_tokens`` budget by
   the script-aware estimator (`memrules.memory.gate`);
3. injects them as one system message right after the first system
   message, after compaction;

and, after the model answers, ``on_response(request, reply)`` keeps the
completed turn as one memory (``auto_store``; `memrules.memory.autostore`).
``forget(user, tenant)`` and ``list_memories(user, tenant)`` serve the
right to be forgotten. Collections are bound to the embedding model's
identity (`memrules.memory.binding`). A store that is down costs a
request its memory, never the request (`memrules.memory.service`);
the metrics are in `memrules.memory.metrics`.

The modules: `memrules.memory.config` (the settings),
`memrules.memory.retrieve`, `memrules.memory.gate`,
`memrules.memory.autostore` and `memrules.memory.classify`
(pure values and functions), `memrules.memory.binding`,
`memrules.memory.service` and `memrules.memory.metrics` (the
shell).
"""

from __future__ import annotations

from memrules._core.public_names import report_public_module
from memrules.memory.autostore import StoreOutcome
from memrules.memory.binding import bound_collection
from memrules.memory.config import (
    DEFAULT_BLOCK_PATTERNS,
    DEFAULT_THRESHOLDS,
    ReflectionConfig,
    RetrievalStoreConfig,
    RouteRetrieval,
)
from memrules.memory.gate import GateResult, Recalled, reflect
from memrules.memory.metrics import RetrievalEvent, RetrievalObserver, StoreEvent
from memrules.memory.retrieve import Retrieval, RetrievalReport
from memrules.memory.service import ListedRecord, RetrievalService
from memrules.memory.text import CUT_MARKER, DEFAULT_MEMORY_MARKER

__all__ = [
    "CUT_MARKER",
    "DEFAULT_BLOCK_PATTERNS",
    "DEFAULT_MEMORY_MARKER",
    "DEFAULT_THRESHOLDS",
    "GateResult",
    "ListedRecord",
    "Recalled",
    "ReflectionConfig",
    "Retrieval",
    "RetrievalEvent",
    "RetrievalObserver",
    "RetrievalReport",
    "RetrievalService",
    "RetrievalStoreConfig",
    "RouteRetrieval",
    "StoreEvent",
    "StoreOutcome",
    "bound_collection",
    "reflect",
]


report_public_module(__name__, __all__, globals())
del report_public_module
