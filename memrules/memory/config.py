"""Retrieval memory's configuration: the shared store (``stores.memory``),
the reflection gate, and each route's ``memory`` entry.

A file's ``stores.memory`` is shared by every route; each route (the file's
top level is the route named ``default``; ``routes:`` names others) says
whether it uses it:

    stores:
      memory:
        backend: milvus              # milvus (default) | qdrant
        uri: memrules_memories.db    # milvus: a Milvus Lite file, or http(s)://host:19530
        # path: memrules_memories_qdrant   # qdrant: a local directory, ':memory:'; or url:
        collection: memrules_memories
        search: dense                # dense (default here) | hybrid | lexical
        embedding: local             # local (default) | {type: openai, base_url, model, ...}
        threshold: 0.3               # keep hits scoring at least this (see below)
        max_memory_chars: 4000       # the longest memory auto-store keeps
        reflection:
          enabled: true
          max_inject_tokens: 2048
          recency_decay_days: 30
          dedup_threshold: 0.9
          block_patterns: ['\\bwire the money\\b']
    memory:
      enabled: true
      retrieval_limit: 5
      auto_store: true
      # threshold: 0.4               # this route's own; inherits stores.memory's when omitted
      # retrieval_tokens: 1200       # memory within the budget: the context gets the rest

**The threshold** is compared with the score of the search mode: a cosine
in dense mode (-1 to 1; the default is 0.3, measured for the local
all-MiniLM-L6-v2: memories that answer a question score 0.45 to 0.7 against
it, unrelated ones under 0.25), a BM25 score in lexical mode (0 or more;
default 0), the fused reciprocal-rank score in hybrid mode (0 to
`MAX_HYBRID_SCORE`; default 0, which keeps every hit: a fused rank
says how a hit ranks, not how well it matches, so hybrid mode takes the
best ``retrieval_limit`` whatever they are). Calibrate it for your
embedding model before overriding it per route.

Everything is checked when the config is built; a problem is a
`ConfigError` at its YAML path.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.seam_protocols import Embedder
from memrules._core.yaml_nodes import Node, locate
from memrules._counting.tokens import estimate_tokens
from memrules.memory.patterns import (
    DEFAULT_BLOCK_PATTERNS,
)
from memrules.memory.reflection_config import (
    ReflectionConfig,
    _is_number,
    _is_whole,
    reflection_section,
)
from memrules.memory.text import DEFAULT_MEMORY_MARKER, header, memory_line
from memrules.seams._fusion import MAX_FUSED_SCORE
from memrules.seams._settings import SeamSettings, seam_settings, section_keys

__all__ = [
    "DEFAULT_BLOCK_PATTERNS",
    "DEFAULT_COLLECTION",
    "DEFAULT_THRESHOLDS",
    "MAX_HYBRID_SCORE",
    "MEMORY_KEYS",
    "ReflectionConfig",
    "RetrievalStoreConfig",
    "RouteRetrieval",
    "memory_section",
    "stores_section",
]

log = logging.getLogger("memrules.memory")

DEFAULT_COLLECTION = "memrules_memories"
"""The logical collection of ``stores.memory`` when none is named."""
_DEFAULT_MILVUS_URI = "memrules_memories.db"
_DEFAULT_QDRANT_PATH = "memrules_memories_qdrant"

MAX_HYBRID_SCORE = MAX_FUSED_SCORE
"""The highest fused score hybrid search gives: first in both rankings."""

DEFAULT_THRESHOLDS: Mapping[str, float] = {"dense": 0.3, "lexical": 0.0, "hybrid": 0.0}
"""``threshold`` by search mode when ``stores.memory`` sets none."""

_THRESHOLD_RANGES: Mapping[str, tuple[float, float]] = {
    "dense": (-1.0, 1.0),
    "lexical": (0.0, float("inf")),
    "hybrid": (0.0, MAX_HYBRID_SCORE),
}


MEMORY_KEYS = ("embedding", "threshold", "reflection", "max_memory_chars", "marker")
"""The keys of ``stores.memory`` that are not the backend's."""

MAX_RETRIEVAL_LIMIT = 100
_MAX_COLLECTION = 255 - 18  # room for "__" and the 16-digit identity suffix


def _ordered(value: Mapping[str, Any], lines: Mapping[str, int]) -> dict[str, Any]:
    """A mapping in the order its keys were written, lists as lists."""
    keys = sorted(value, key=lambda k: lines.get(k, 0))
    return {k: list(value[k]) if isinstance(value[k], tuple) else value[k] for k in keys}


def _store_defaults(value: Mapping[str, Any]) -> dict[str, Any]:
    """``stores.memory``'s backend settings with the memory defaults: dense
    search, the collection `DEFAULT_COLLECTION`, and a file or
    directory of its own (never the offload store's default one: a Qdrant
    directory can be open once per process)."""
    out = dict(value)
    out.setdefault("search", "dense")
    out.setdefault("collection", DEFAULT_COLLECTION)
    backend = out.get("backend", "milvus")
    if backend == "milvus":
        out.setdefault("uri", _DEFAULT_MILVUS_URI)
    elif backend == "qdrant" and "url" not in out:
        out.setdefault("path", _DEFAULT_QDRANT_PATH)
    return out


def _at(problems: Iterable[ConfigProblem], key: str) -> list[ConfigProblem]:
    """A seam section's problems (at ``store.field`` or ``embedder.field``)
    at their place under ``stores.memory`` (the backend's keys sit on it
    directly; the embedder's under ``key``)."""
    base = "stores.memory" + (f".{key}" if key else "")
    placed = []
    for p in problems:
        _, _, field = p.yaml_path.partition(".")
        placed.append(attrs.evolve(p, yaml_path=f"{base}.{field}" if field else base))
    return placed


def _store_settings(value: object) -> SeamSettings:
    if isinstance(value, SeamSettings) and value.section == "store":
        return value
    if isinstance(value, str):
        value = {"backend": value}
    if not isinstance(value, Mapping):
        msg = f"store={value!r} must be a mapping of the backend's settings"
        raise ConfigError.single(msg, yaml_path="stores.memory")
    settings = seam_settings("store", _store_defaults(value))
    if isinstance(settings, list):
        raise ConfigError(_at(settings, ""))
    return settings


def _embedding_settings(value: object) -> SeamSettings | None:
    if value is None or (isinstance(value, SeamSettings) and value.section == "embedder"):
        return value
    if not isinstance(value, (str, Mapping)):
        msg = f"embedding={value!r} must be an embedder's name or a mapping of its settings"
        raise ConfigError.single(msg, yaml_path="stores.memory.embedding")
    settings = seam_settings("embedder", value)
    if isinstance(settings, list):
        raise ConfigError(_at(settings, "embedding"))
    return settings


def _default_store() -> SeamSettings:
    return _store_settings({})


def _default_threshold(config: RetrievalStoreConfig) -> float:
    return DEFAULT_THRESHOLDS.get(config.search, 0.0)


@attrs.frozen(kw_only=True, slots=True)
class RetrievalStoreConfig:
    """The shared retrieval-memory store (YAML ``stores.memory``; see the
    module docs for the keys). ``store`` is the backend's settings (a
    mapping such as ``{"backend": "qdrant", "path": ":memory:"}``, given the
    memory defaults: dense search, collection `DEFAULT_COLLECTION`,
    a file or directory of its own); ``embedding`` the embedder's (None:
    the local model); ``threshold`` the lowest score kept (by default
    `DEFAULT_THRESHOLDS` for the search mode); ``reflection`` the
    gate; ``max_memory_chars`` the longest memory auto-store keeps;
    ``marker`` how the injected message starts.

    A value: it opens nothing. The store it describes is opened, in the
    collection bound to the embedder's identity
    (`memrules.memory.binding`), by whoever serves requests, through
    `SHARED_STORES` (one store per config
    value, closed by its last holder).
    """

    store: SeamSettings = attrs.field(factory=_default_store, converter=_store_settings)
    embedding: SeamSettings | None = attrs.field(default=None, converter=_embedding_settings)
    threshold: float = attrs.field(default=attrs.Factory(_default_threshold, takes_self=True))
    reflection: ReflectionConfig = attrs.field(factory=ReflectionConfig)
    max_memory_chars: int = 4000
    marker: str = DEFAULT_MEMORY_MARKER

    def __attrs_post_init__(self) -> None:
        problems = []

        def problem(key: str, message: str) -> None:
            problems.append(ConfigProblem(message=message, yaml_path=f"stores.memory.{key}"))

        if len(self.collection) > _MAX_COLLECTION:
            problem(
                "collection",
                f"collection={self.collection!r} must be at most {_MAX_COLLECTION} characters "
                "(the store adds the embedder's identity to it)",
            )
        threshold_problem = check_threshold(self.threshold, self.search, "threshold")
        if threshold_problem:
            problem("threshold", threshold_problem)
        if not isinstance(self.reflection, ReflectionConfig):
            problem("reflection", f"reflection={self.reflection!r} must be a ReflectionConfig")
        if not _is_whole(self.max_memory_chars, 64, 16_000):
            problem(
                "max_memory_chars",
                f"max_memory_chars={self.max_memory_chars!r} must be a whole number from 64 "
                "to 16000",
            )
        if not isinstance(self.marker, str) or not self.marker.strip() or "\n" in self.marker:
            problem("marker", f"marker={self.marker!r} must be a non-empty line of text")
        elif isinstance(self.reflection, ReflectionConfig) and self.reflection.enabled:
            budget = self.reflection.max_inject_tokens
            smallest = estimate_tokens(f"{header(self.marker)}\n{memory_line('x', None)}")
            if budget < smallest:
                problems.append(
                    ConfigProblem(
                        message=(
                            f"max_inject_tokens={budget} can never hold a memory: the message "
                            f"with the shortest one estimates {smallest} tokens"
                        ),
                        yaml_path="stores.memory.reflection.max_inject_tokens",
                    )
                )
        from memrules.seams.embedders import local_embedder_missing  # not with this module

        if (self.embedding is None or self.embedding.kind == "local") and local_embedder_missing():
            problem(
                "embedding",
                "the embedding is local (the default), which needs "
                f"{', '.join(local_embedder_missing())}: pip install 'memrules[local-embed]', "
                "or set embedding: to type: openai",
            )
        if problems:
            raise ConfigError(problems)

    @property
    def backend(self) -> str:
        """``milvus`` or ``qdrant``."""
        return self.store.kind

    @property
    def search(self) -> str:
        """The search mode: ``dense``, ``hybrid`` or ``lexical``."""
        return str(dict(self.store.params)["search"])

    @property
    def collection(self) -> str:
        """The logical collection: the configured name, before binding."""
        return str(dict(self.store.params)["collection"])

    def embedder(self) -> Embedder:
        """A new embedder as ``embedding`` describes it (no I/O)."""
        from memrules.seams.embedders import local_embedder  # not with this module

        made: Embedder = self.embedding.build() if self.embedding is not None else local_embedder()
        return made


def check_threshold(value: object, search: str, key: str) -> str | None:
    """What is wrong with ``value`` as a threshold in ``search`` mode, if anything."""
    low, high = _THRESHOLD_RANGES.get(search, (float("-inf"), float("inf")))
    if not _is_number(value) or not low <= value <= high:  # type: ignore[operator]
        top = "" if high == float("inf") else f" and at most {high:.4g}"
        why = (
            " (a fused rank score: first in both rankings scores that)"
            if search == "hybrid"
            else ""
        )
        return f"{key}={value!r} must be a number of at least {low:g}{top} in {search} search{why}"
    return None


@attrs.frozen(kw_only=True, slots=True)
class RouteRetrieval:
    """One route's ``memory`` entry: whether it retrieves (``enabled``), how
    many memories at most (``retrieval_limit``, 1 to 100), whether it
    stores completed turns (``auto_store``; off by default: storing what
    users say is a choice to make on purpose), its own ``threshold``
    (None: the store's), and the share of the request's token budget the
    memory message may take (``retrieval_tokens``, None: none reserved).

    With ``retrieval_tokens`` set, memory is part of the budget rather
    than on top of it: the context is compacted to the budget less
    ``retrieval_tokens`` (but to no less than half the budget:
    `reserved`), and
    the memories go in, best first and at most ``retrieval_limit``, while
    the request with the memory message still fits the whole budget
    (`fill`): how many are recalled follows
    from the budget, and a short context leaves room for more."""

    enabled: bool = True
    retrieval_limit: int = 5
    auto_store: bool = False
    threshold: float | None = None
    retrieval_tokens: int | None = None

    def __attrs_post_init__(self) -> None:
        problems = []

        def problem(key: str, message: str) -> None:
            problems.append(ConfigProblem(message=message, yaml_path=f"memory.{key}"))

        for key in ("enabled", "auto_store"):
            if not isinstance(getattr(self, key), bool):
                problem(key, f"{key}={getattr(self, key)!r} must be true or false")
        if not _is_whole(self.retrieval_limit, 1, MAX_RETRIEVAL_LIMIT):
            problem(
                "retrieval_limit",
                f"retrieval_limit={self.retrieval_limit!r} must be a whole number from 1 to "
                f"{MAX_RETRIEVAL_LIMIT}",
            )
        if self.threshold is not None and not _is_number(self.threshold):
            problem("threshold", f"threshold={self.threshold!r} must be a number, or null")
        if self.retrieval_tokens is not None and not _is_whole(self.retrieval_tokens, 1):
            problem(
                "retrieval_tokens",
                f"retrieval_tokens={self.retrieval_tokens!r} must be a whole number of at "
                "least 1, or null",
            )
        if problems:
            raise ConfigError(problems)

    @property
    def __memrules_canonical__(self) -> dict[str, Any]:
        """This entry in a trace's canonical config (``memrules._trace.canonical``):
        its fields, ``retrieval_tokens`` only when set, so an entry that
        reserves nothing reads and hashes as one that never named the key."""
        out: dict[str, Any] = {
            "enabled": self.enabled,
            "retrieval_limit": self.retrieval_limit,
            "auto_store": self.auto_store,
            "threshold": self.threshold,
        }
        if self.retrieval_tokens is not None:
            out["retrieval_tokens"] = self.retrieval_tokens
        return out

    def threshold_in(self, store: RetrievalStoreConfig) -> float:
        """The threshold this route uses: its own, else the store's."""
        return store.threshold if self.threshold is None else float(self.threshold)


# --- YAML ------------------------------------------------------------------------------


def _problem(message: str, yaml_path: str, line: int | None) -> ConfigProblem:
    return ConfigProblem(message=message, yaml_path=yaml_path, line=line)


def _line_of(path: str, node: Node) -> int | None:
    """The line of ``stores.memory...`` ``path`` within ``stores.memory``'s ``node``."""
    return locate(node, path.removeprefix("stores.memory").lstrip("."))


def _memory_store(node: Node) -> RetrievalStoreConfig | list[ConfigProblem]:
    """``stores.memory``: a mapping (null: every default)."""
    if node.value is None:
        return RetrievalStoreConfig()
    if not node.is_mapping:
        message = f"stores.memory is a mapping of the store's settings, got {node.plain()!r}"
        return [_problem(message, "stores.memory", node.line)]
    lines = dict(node.key_lines)
    raw = _ordered(node.plain(), lines)
    kind = raw.get("backend", "milvus")
    known = (*section_keys("store", kind), *MEMORY_KEYS) if isinstance(kind, str) else ()
    problems = [
        _problem(
            f"unknown key {key!r}; known keys: {', '.join(known)}",
            f"stores.memory.{key}",
            lines.get(key),
        )
        for key in raw
        if known and key not in known
    ]
    fields: dict[str, Any] = {}
    store = {k: v for k, v in raw.items() if k not in MEMORY_KEYS and (not known or k in known)}
    for name, build, value in (
        ("store", _store_settings, store),
        ("embedding", _embedding_settings, _embedding_value(node.value.get("embedding"))),
        ("reflection", reflection_section, node.value.get("reflection")),
    ):
        if value is None:
            continue
        try:
            fields[name] = build(value)
        except ConfigError as exc:
            problems.extend(attrs.evolve(p, line=_line_of(p.yaml_path, node)) for p in exc.problems)
    for key in ("threshold", "max_memory_chars", "marker"):
        if key in raw:
            fields[key] = raw[key]
    if problems and "store" not in fields:
        return problems  # the threshold's range depends on the store's search mode
    try:
        built = RetrievalStoreConfig(**fields)
    except ConfigError as exc:
        seen = {p.yaml_path for p in problems}
        problems.extend(
            attrs.evolve(p, line=_line_of(p.yaml_path, node))
            for p in exc.problems
            if p.yaml_path not in seen
        )
        return problems
    return problems or built


def _embedding_value(node: Node | None) -> object:
    if node is None:
        return None
    if node.is_mapping:
        return _ordered(node.plain(), dict(node.key_lines))
    return node.plain()


def stores_section(node: Node) -> RetrievalStoreConfig | list[ConfigProblem] | None:
    """The ``stores:`` section of a config file: ``memory`` is the one store
    it names today (null: none)."""
    if node.value is None:
        return None
    if not node.is_mapping:
        message = f"stores is a mapping with a memory: key, got {node.plain()!r}"
        return [_problem(message, "stores", node.line)]
    problems = [
        _problem(f"unknown store {key!r}; known: memory", f"stores.{key}", node.key_lines[key])
        for key in node.value
        if key != "memory"
    ]
    memory = node.value.get("memory")
    if memory is None:
        return problems or None
    built = _memory_store(memory)
    if isinstance(built, list):
        return problems + built
    return problems or built


def memory_section(node: Node) -> RouteRetrieval | list[ConfigProblem] | None:
    """A route's ``memory:`` entry: a mapping (null: none)."""
    if node.value is None:
        return None
    if not node.is_mapping:
        message = (
            "memory is a mapping (enabled, retrieval_limit, auto_store, threshold, "
            f"retrieval_tokens), got {node.plain()!r}"
        )
        return [_problem(message, "memory", node.line)]
    known = [f.name for f in attrs.fields(RouteRetrieval)]
    problems = [
        _problem(
            f"unknown key {key!r}; known keys: {', '.join(known)}",
            f"memory.{key}",
            node.key_lines[key],
        )
        for key in node.value
        if key not in known
    ]
    if problems:
        return problems
    try:
        return RouteRetrieval(**{k: v.plain() for k, v in node.value.items()})
    except ConfigError as exc:
        return [
            attrs.evolve(p, line=node.key_lines.get(p.yaml_path.removeprefix("memory."), node.line))
            for p in exc.problems
        ]
