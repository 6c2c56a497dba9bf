"""Opening the conversation-state store a :class:`~memrules.graph.StateStoreConfig`
names: the one place that knows every store kind, so :mod:`memrules.graph.state`
(the values and the in-memory store) and :mod:`memrules.graph.valkey` (which
builds on them) do not import each other."""

from __future__ import annotations

from memrules.graph.limits import GraphLimits
from memrules.graph.state import (
    DEFAULT_MAX_CONVERSATIONS,
    InMemoryStateStore,
    StateStore,
    StateStoreConfig,
)

__all__ = ["open_state_store"]


def open_state_store(
    config: StateStoreConfig,
    *,
    max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
    graph_limits: GraphLimits | None = None,
) -> StateStore:
    """The store ``config`` names: an :class:`InMemoryStateStore`, or a
    :class:`~memrules.graph.valkey.ValkeyStateStore` (which needs the
    ``memrules[valkey]`` extra; without it, a
    :class:`~memrules._core.errors.ConfigError` saying so)."""
    if config.in_memory:
        return InMemoryStateStore(max_conversations=max_conversations, graph_limits=graph_limits)
    from memrules.graph.valkey import ValkeyStateStore  # imported here: it needs the extra

    return ValkeyStateStore(
        config.url,
        ttl_seconds=config.ttl_seconds,
        key_prefix=config.key_prefix,
        timeout_seconds=config.timeout_seconds,
        graph_limits=graph_limits,
        max_conversations=max_conversations,
    )
