"""Opening the conversation-state store a `StateStoreConfig` names: the one
place that knows every store kind, so the in-memory store and the Valkey one
(which needs an extra) do not import each other."""

from __future__ import annotations

from memrules.graph.limits import GraphLimits
from memrules.state.config import StateStoreConfig
from memrules.state.memory import DEFAULT_MAX_CONVERSATIONS, InMemoryStateStore
from memrules.state.model import StateStore

__all__ = ["open_state_store"]


def open_state_store(
    config: StateStoreConfig,
    *,
    max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
    graph_limits: GraphLimits | None = None,
) -> StateStore:
    """The store ``config`` names: an `InMemoryStateStore`, or a
    `ValkeyStateStore` (which needs the
    ``memrules[valkey]`` extra; without it, a
    `ConfigError` saying so)."""
    if config.in_memory:
        return InMemoryStateStore(max_conversations=max_conversations, graph_limits=graph_limits)
    from memrules.state.valkey import ValkeyStateStore  # imported here: it needs the extra

    return ValkeyStateStore(
        config.url,
        ttl_seconds=config.ttl_seconds,
        key_prefix=config.key_prefix,
        timeout_seconds=config.timeout_seconds,
        graph_limits=graph_limits,
        max_conversations=max_conversations,
        cluster=config.in_cluster,
        wait_replicas=config.wait_replicas,
    )
