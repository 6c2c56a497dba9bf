"""Memory collections bound to the embedding model's identity.

Vectors of two models cannot be compared, and equal dimensions do not prove
two models compatible. So, with a model that runs here (the local embedder,
or any embedder whose identity names no endpoint), the physical collection
is the configured (logical) name plus a digest of the embedder's identity:
its model, tokenizer, settings and dimension:

    memrules_memories__3f9a1c0e5b7d2a64

Changing the model starts a new, empty collection; the old one is never
deleted and never adopted, and a config that still names the old model
reads it as before. Restarting with the same model reuses its collection.

A remote endpoint (an identity that names a ``base_url``) cannot prove which
model produced its vectors, so the configured collection is kept as it is
and a warning is logged once, when the store is opened: after changing the
endpoint's model, point ``collection`` at a new one. The store still
records the identity it was made for and refuses another
(`CollectionError`), and a collection whose
vectors are of another dimension than the embedder's is refused at
start-up, never compared.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from memrules._core.seam_protocols import Embedder
from memrules.seams._store import MessageStore

if TYPE_CHECKING:
    from memrules.memory.config import RetrievalStoreConfig

__all__ = ["bound_collection", "generations", "identity_digest", "is_remote", "open_store"]

log = logging.getLogger("memrules.memory")

_SUFFIX = re.compile(r"__[0-9a-f]{16}")


def is_remote(identity: Mapping[str, Any]) -> bool:
    """Whether an embedder identity names an endpoint (``base_url``): its
    vectors come from a model memrules cannot see."""
    return "base_url" in identity


def identity_digest(identity: Mapping[str, Any]) -> str:
    """16 hex digits that stand for ``identity`` (its canonical JSON, hashed)."""
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def bound_collection(collection: str, embedder: Embedder) -> str:
    """The physical collection for ``collection`` and ``embedder``: the name
    with its identity digest, or ``collection`` itself for a remote one.

    >>> class Local:
    ...     identity = {"model": "m", "dimension": 3}
    >>> class Remote:
    ...     identity = {"base_url": "http://127.0.0.1:8080/v1", "model": "m"}
    >>> bound_collection("memories", Local()), bound_collection("memories", Remote())
    ('memories__da9716932cfc0b40', 'memories')
    """
    identity = embedder.identity
    if is_remote(identity):
        return collection
    return f"{collection}__{identity_digest(identity)}"


def generations(collection: str, names: Iterable[str]) -> tuple[str, ...]:
    """Of ``names`` (a store's collections), those that hold ``collection``'s
    data for some embedder: the name itself (a remote embedder's) and every
    identity-bound one, sorted."""
    return tuple(
        sorted(
            n
            for n in names
            if n == collection
            or (n.startswith(collection) and _SUFFIX.fullmatch(n[len(collection) :]))
        )
    )


def open_store(settings: RetrievalStoreConfig, *, embedder: Embedder | None = None) -> MessageStore:
    """The store ``settings`` describe, in the collection bound to its
    embedder (``embedder``, when given, instead of the one ``settings``
    describe: a model already loaded). No I/O: it connects on first use.
    With a remote embedder, logs the warning of the module docs. Each call
    makes a new store; `SHARED_STORES` keeps
    one per config value for the plugins that share it."""
    embedder = settings.embedder() if embedder is None else embedder
    physical = bound_collection(settings.collection, embedder)
    if physical == settings.collection:
        log.warning(
            "memory store %r: the embedder %r is a remote endpoint, which cannot prove which "
            "model made its vectors; the configured collection %r is used as it is. After "
            "changing the endpoint's model, point stores.memory.collection at a new collection.",
            settings.store,
            embedder,
            settings.collection,
        )
    params = tuple((k, v) for k, v in settings.store.params if k != "collection")
    bound = attrs.evolve(settings.store, params=(*params, ("collection", physical)))
    store: MessageStore = bound.build(embedder=embedder)
    return store
