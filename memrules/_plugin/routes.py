"""A config's routes as plugins: :meth:`MemoryConfig.route` and
:meth:`MemoryConfig.close`, defined here, in the layer that owns what is
live, and attached to :class:`~memrules.MemoryConfig` when this layer is
imported (``import memrules`` imports it). The config layer stays below the
plugin: it never imports it, and a config never opens or holds a store.

``config.route(name)`` is :meth:`MemoryPlugin.from_config(config,
route=name) <memrules.MemoryPlugin.from_config>`; ``config.close()`` closes
the ``stores.memory`` stores its plugins share, for code that does not close
each plugin (closing the plugins, or ``with`` blocks, does the same).
"""

from __future__ import annotations

from typing import Any

from memrules._config.load import DEFAULT_ROUTE, MemoryConfig
from memrules._plugin.plugin import MemoryPlugin
from memrules.memory.shared import SHARED_STORES

__all__ = ["close_stores", "route"]


def route(config: MemoryConfig, name: str = DEFAULT_ROUTE, **options: Any) -> MemoryPlugin:
    """A ready :class:`~memrules.MemoryPlugin` for route ``name``
    (``default``: the file's top level), with its own pipeline and memory:
    :meth:`MemoryPlugin.from_config(config, route=name, **options)
    <memrules.MemoryPlugin.from_config>`. Every plugin made from one config
    shares its ``stores.memory`` store (one client); each call makes a new
    plugin with its own conversation state, so make one per route at
    start-up. Raises :class:`~memrules._core.errors.ConfigError` for an
    unknown route, or a memory collection its embedder cannot use."""
    return MemoryPlugin.from_config(config, route=name, **options)


def close_stores(config: MemoryConfig) -> None:
    """Close the ``stores.memory`` stores that plugins made from ``config``
    share, if any are open (a plugin made later opens its store again)."""
    stores = [config.memory_store, *(r.memory_store for r in config.routes.values())]
    for settings in dict.fromkeys(s for s in stores if s is not None):
        SHARED_STORES.close(settings)


MemoryConfig.route = route
MemoryConfig.close = close_stores
