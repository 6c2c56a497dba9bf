"""Conversation state: what a conversation's next request depends on, and
where it lives.

`MemoryPlugin` carries a `ConversationState` (`memrules.ConversationState`) from one request of a
conversation to the next: whether the context warning was given, the
conversation's working graph, and the prompt-cache carry (what a route with a
`cache:` section keeps of the previous request, so that it appends instead of
deciding afresh). The state lives behind a `StateStore`:

- `InMemoryStateStore` (the default, `memory://`): this process only.
- `ValkeyStateStore`: Valkey or Redis by URL (the `memrules[valkey]` extra),
  one server (`valkey://host:6379/0`) or a cluster (`valkey+cluster://host:7000`),
  each conversation one key with a TTL and a version; updates are atomic
  across processes, so any number of replicas of a service share it.

`open_state_store` opens the store a `StateStoreConfig` (YAML `state_store`)
names; a store that fails raises `StateStoreError` (`memrules.StateStoreError`).
The Valkey module imports its client only when a store is made.
"""

from __future__ import annotations

from memrules._core.public_names import report_public_module
from memrules.state.config import StateStoreConfig
from memrules.state.memory import InMemoryStateStore
from memrules.state.model import StateRecord, StateStore
from memrules.state.opening import open_state_store
from memrules.state.valkey import ValkeyStateStore

__all__ = [
    "InMemoryStateStore",
    "StateRecord",
    "StateStore",
    "StateStoreConfig",
    "ValkeyStateStore",
    "open_state_store",
]


report_public_module(__name__, __all__, globals())
del report_public_module
