"""A config written down so a trace can carry it, hash it and rebuild it.

`canonical_config` turns a `MemoryConfig` into plain
JSON, in the shape of its YAML: every scalar setting (absent ones as null),
``strategies`` as ``{type, parameters...}``, every section that is set, and,
on a route with a ``memory`` entry, the retrieval-memory store it uses as
``stores.memory`` (backend, collection, search, embedding, threshold and
the reflection gate's settings: what a replay gates by).
Two configs that compact alike have equal canonical forms, whatever the key
order of the YAML they came from, so `config_sha256` (the sha256 of
the form with sorted keys) names a config across machines. Nothing secret
goes in: seam sections hold only environment-variable *names* for keys, and
a password in a URL is written as ``***``.

What a trace cannot carry is said, not guessed: a built-in strategy (or any
attrs class, like the built-ins) is written as its fields; a plain function
as its type and code; a closure that a factory marked with
`strategy_factory` built as its type, its factory's import
path (``"factory"``) and the parameters it was built with, which
`rebuild_config` calls again; any other *closure* (whose parameters
live in its cells) as its type, code and ``"parameters": "unknown"``, and
`rebuild_config` refuses to rebuild it. A graph
extractor other than the offline one, the context window resolver and the
observers are code: a replay answers the first two from the trace and does
not run observers.

`encoder_fingerprint` names the token counter and hashes its
vocabulary (for a tiktoken encoding, the sha256 of its ``.tiktoken`` file,
which is what tiktoken itself checks), so a replay on a machine that counts
differently says so before it compares anything.
"""

from __future__ import annotations

import base64
import enum
import functools
import hashlib
import itertools
import json
import re
import threading
import types
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import yaml

from memrules._config.load import (
    SECTIONS,
    SETTINGS,
    MemoryConfig,
    PipelineConfig,
    load_config,
    service_config,
)
from memrules._core.errors import ConfigError, TraceError
from memrules._core.redaction import redact_text
from memrules._counting.tokens import TokenCounter
from memrules._engine.contract import StrategyFactory
from memrules._engine.interpreter import NamedStrategy
from memrules.graph.extract import _OfflineExtractor
from memrules.memory.config import RetrievalStoreConfig
from memrules.seams._settings import SeamSettings, section_keys
from memrules.state.config import redact
from memrules.strategies.min_step import MinStep
from memrules.strategies.registry import RECIPE

__all__ = [
    "CANONICAL_MARK",
    "canonical_config",
    "config_sha256",
    "described",
    "encoder_fingerprint",
    "rebuild_config",
]

CANONICAL_MARK = "__memrules_canonical__"
"""An attribute a stand-in carries: the canonical value of what it stands in for."""

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def described(value: object) -> str:
    """``repr(value)`` as a trace may hold it: without memory addresses
    (which change between runs) or URL passwords (``://user:***@host``)."""
    return redact_text(_ADDRESS.sub("", repr(value)))


def _code(value: object) -> str:
    kind = value if isinstance(value, (types.FunctionType, type)) else type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def _plain(value: Any) -> Any:
    """A setting's value as JSON: enums as their value, tuples and frozen
    maps as lists and dicts, URLs without passwords."""
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, str):
        return redact(value) if "://" in value else value
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if attrs.has(type(value)):
        return _fields(value, skip_none=True)  # a value of a section (a survivor rule)
    return {"code": _code(value)}


def _fields(instance: Any, *, skip_none: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in attrs.fields(type(instance)):
        if not field.init:
            continue
        value = getattr(instance, field.name)
        if skip_none and value is None:
            continue
        out[field.alias or field.name] = _plain(value)
    return out


def _strategy(named: NamedStrategy) -> dict[str, Any]:
    strategy = named.strategy
    if isinstance(strategy, MinStep):
        inner = _strategy(NamedStrategy(name=named.name, strategy=strategy.strategy))
        return {**inner, "min_step": strategy.tokens}
    marked = getattr(strategy, CANONICAL_MARK, None)
    if marked is not None:
        return dict(marked)
    if attrs.has(type(strategy)):
        return {"type": named.name, **_fields(strategy, skip_none=True)}
    recipe = getattr(strategy, RECIPE, None)
    if isinstance(recipe, Mapping):
        parameters = {str(k): _plain(v) for k, v in recipe["parameters"].items()}
        return {"type": named.name, "factory": recipe["factory"], **parameters}
    out: dict[str, Any] = {"type": named.name, "code": _code(strategy)}
    if getattr(strategy, "__closure__", None) or isinstance(strategy, functools.partial):
        out["parameters"] = "unknown"
    return out


def _sorted(value: Any) -> Any:
    """A plain JSON value with every object's keys sorted."""
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def _seam(settings: SeamSettings) -> dict[str, Any]:
    """A seam section's settings in one order whatever order they were given
    in (a flow mapping in YAML, a dict built in Python): the key naming the
    type, then the type's parameters in its signature's order; the keys of
    any mapping inside sorted."""
    given = settings.to_dict()
    order = {key: i for i, key in enumerate(section_keys(settings.section, settings.kind))}
    keys = sorted(given, key=lambda key: (order.get(key, len(order)), key))
    return {key: _sorted(_plain(given[key])) for key in keys}


def _section(key: str, value: object) -> Any:
    marked = getattr(value, CANONICAL_MARK, None)
    if marked is not None:
        return marked
    if isinstance(value, SeamSettings):
        return _seam(value)
    if isinstance(value, _OfflineExtractor):
        return {"type": "offline", **_fields(value, skip_none=False)}
    if attrs.has(type(value)):
        return _fields(value, skip_none=False)
    return {"code": _code(value)}


def _memory_store(settings: RetrievalStoreConfig) -> dict[str, Any]:
    """``stores.memory`` as its YAML says it: the backend's settings on it
    directly, the embedder's under ``embedding`` (keys by variable name)."""
    out: dict[str, Any] = _seam(settings.store)
    out["embedding"] = None if settings.embedding is None else _seam(settings.embedding)
    out["threshold"] = settings.threshold
    out["reflection"] = _fields(settings.reflection, skip_none=False)
    out["max_memory_chars"] = settings.max_memory_chars
    out["marker"] = settings.marker
    return out


def canonical_config(config: PipelineConfig) -> dict[str, Any]:
    """``config`` as plain JSON in the shape of its YAML (see the module
    docs); a pipeline's config as the `MemoryConfig` of its fields says it,
    so that its hash is the same either way."""
    config = service_config(config)
    out: dict[str, Any] = {key: _plain(getattr(config, key)) for key in SETTINGS}
    out["strategies"] = [_strategy(s) for s in config.strategies]
    for key in SECTIONS:
        value = getattr(config, key, None)
        if value is not None:
            out[key] = _section(key, value)
    if config.memory is not None and config.memory_store is not None:
        out["stores"] = {"memory": _memory_store(config.memory_store)}
    return out


def config_sha256(canonical: Mapping[str, Any]) -> str:
    """The sha256 of a canonical config, keys sorted: equal configs, equal hashes."""
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- the encoder -------------------------------------------------------------------

_VOCABULARIES: dict[str, tuple[object, str]] = {}
_VOCABULARY_LOCK = threading.Lock()


def _tiktoken_sha256(encoding: Any) -> str | None:
    """The sha256 of ``encoding``'s vocabulary in tiktoken's file format
    (``base64(token) rank`` lines, by rank): tiktoken's published hash."""
    name = str(getattr(encoding, "name", ""))
    with _VOCABULARY_LOCK:
        found = _VOCABULARIES.get(name)
        if found is not None and found[0] is encoding:
            return found[1]
    ranks = getattr(encoding, "_mergeable_ranks", None)
    if not isinstance(ranks, dict):
        return None
    digest = hashlib.sha256()
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        digest.update(base64.b64encode(token) + b" " + str(rank).encode("ascii") + b"\n")
    value = digest.hexdigest()
    with _VOCABULARY_LOCK:
        _VOCABULARIES[name] = (encoding, value)
    return value


def encoder_fingerprint(counter: TokenCounter) -> dict[str, Any]:
    """The counter's name and its vocabulary's sha256 (None when it has none
    to hash: the estimator; or none this can read: a Hugging Face tokenizer,
    a count-tokens endpoint)."""
    layer: Any = counter
    vocabulary = None
    for _ in range(4):  # counters may wrap counters (a framing rule around tiktoken)
        encoding = getattr(layer, "encoding", None)
        if encoding is not None:
            vocabulary = _tiktoken_sha256(encoding)
            break
        given = getattr(layer, "vocabulary_sha256", None)
        if isinstance(given, str):
            vocabulary = given
            break
        layer = getattr(layer, "base", None)
        if layer is None:
            break
    return {"encoder": counter.name, "vocabulary_sha256": vocabulary}


# --- rebuilding ----------------------------------------------------------------------


def _inexact(canonical: Mapping[str, Any]) -> list[str]:
    return [
        f"strategies[{i}] ({s.get('type')}, {s.get('code')})"
        for i, s in enumerate(canonical.get("strategies", ()))
        if isinstance(s, Mapping) and s.get("parameters") == "unknown"
    ]


def _yaml_strategy(strategy: Mapping[str, Any]) -> dict[str, Any]:
    """One strategy as YAML: a factory-built one by its factory's import
    path and its parameters, any other by its type and fields."""
    out = {k: v for k, v in strategy.items() if k not in ("code", "factory")}
    if "factory" in strategy:
        out["type"] = strategy["factory"]
    return out


def _renamed(config: MemoryConfig, canonical: Mapping[str, Any]) -> MemoryConfig:
    """``config`` with each factory-built strategy under the name it was
    recorded with (the report's name for it), not its factory's path."""
    recorded = tuple(canonical.get("strategies", ()))[: len(config.strategies)]
    strategies = tuple(
        attrs.evolve(named, name=str(entry["type"]))
        if isinstance(entry, Mapping) and "factory" in entry
        else named
        for named, entry in itertools.zip_longest(config.strategies, recorded)
    )
    if all(a is b for a, b in zip(strategies, config.strategies, strict=True)):
        return config
    return attrs.evolve(config, strategies=strategies)


def _yaml_mapping(canonical: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in canonical.items():
        if key == "strategies":
            out[key] = [_yaml_strategy(s) for s in value]
        elif key == "graph_extractor" and isinstance(value, Mapping) and "code" in value:
            continue  # code: a replay answers its calls from the trace
        elif value is not None or key in SETTINGS:
            out[key] = value
    return out


def rebuild_config(
    canonical: Mapping[str, Any],
    *,
    registry: Mapping[str, StrategyFactory] | None = None,
    allow_imports: bool | Iterable[str] = (),
    where: str = "the trace",
) -> MemoryConfig:
    """The config ``canonical`` describes, built and validated as a YAML
    config is. Raises `TraceError` when it cannot be
    (a closure strategy, whose parameters a trace cannot hold; a module the
    caller does not allow; a strategy that is no longer what was recorded)."""
    strategies = canonical.get("strategies", [])
    if not isinstance(strategies, list) or not all(isinstance(s, Mapping) for s in strategies):
        msg = f"{where}: its config's strategies={strategies!r:.80} are not a list of objects"
        raise TraceError(msg)
    unknown = _inexact(canonical)
    if unknown:
        msg = (
            f"{where}: {', '.join(unknown)} is a closure whose parameters a trace cannot hold; "
            "replay it from Python, passing the pipeline (replay_trace(path, pipelines=...)), "
            "or write the strategy as an attrs class, as the built-ins are"
        )
        raise TraceError(msg)
    text = yaml.safe_dump(_yaml_mapping(canonical), sort_keys=False, allow_unicode=True)
    try:
        config = load_config(text, registry=registry, allow_imports=allow_imports)
    except ConfigError as exc:
        msg = f"{where}: its config cannot be rebuilt: {exc}"
        raise TraceError(msg) from None
    config = _renamed(config, canonical)
    rebuilt = canonical_config(config)
    for key in ("strategies", *SETTINGS):
        if rebuilt.get(key) != canonical.get(key):
            msg = (
                f"{where}: its config rebuilds differently at {key}: recorded "
                f"{json.dumps(canonical.get(key))}, rebuilt {json.dumps(rebuilt.get(key))} "
                "(a strategy's code changed, or it cannot be written down)"
            )
            raise TraceError(msg)
    return config
