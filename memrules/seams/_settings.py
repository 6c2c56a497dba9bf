"""The ``store:``, ``embedder:`` and ``summarizer:`` sections of a config,
and the seams they build.

Each section is optional; without it the seam is absent (``offload`` or
``summarize`` then does nothing), unless code passes its own:

    store:
      backend: milvus          # or qdrant, valkey
      uri: memory.db           # milvus: a Milvus Lite file, or http(s)://host:19530
      # url: valkey://127.0.0.1:6379   # valkey: a server with its Search module
      collection: memrules_memory
      search: hybrid           # or dense, lexical
    embedder:
      type: openai             # local (the default) needs memrules[local-embed]
      base_url: http://127.0.0.1:8080/v1
      model: nomic-embed-text
      api_key_env: EMBEDDINGS_API_KEY
      dimensions: 768
    summarizer: extractive     # or a mapping: type: openai, base_url, model, ...

A section is a mapping of its type (``backend`` for the store, ``type`` for
the others, each with a default) and that type's parameters, or just the
type's name. Every problem is a `ConfigProblem` at
its YAML path and line. A section holds names, never secrets: API keys are
read from the environment variables ``api_key_env`` names, when used.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.redaction import redact_text
from memrules._core.seam_protocols import Embedder, Summarizer, VectorStore
from memrules._core.yaml_nodes import Node

__all__ = [
    "SECTIONS",
    "SeamSettings",
    "build_seams",
    "embedder_section",
    "seam_settings",
    "section_keys",
    "store_section",
    "summarizer_section",
]

_Factory = Callable[..., Any]

# The backends are imported when a section's own type is read or built,
# not with this module nor with another type's section, so importing
# memrules loads no HTTP client and no store package, and a config with a
# Milvus store does not import the Qdrant and Valkey modules.


class _Factories(Mapping[str, _Factory]):
    """Type name -> factory, each factory imported from its module when
    first looked up (the names are known without importing anything)."""

    def __init__(self, where: Mapping[str, tuple[str, str]]) -> None:
        self._where = dict(where)

    def __getitem__(self, name: str) -> _Factory:
        module, attribute = self._where[name]
        factory: _Factory = getattr(importlib.import_module(module), attribute)
        return factory

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, name: object) -> bool:
        return name in self._where


_STORES = _Factories(
    {
        "milvus": ("memrules.seams.milvus", "milvus_store"),
        "qdrant": ("memrules.seams.qdrant", "qdrant_store"),
        "valkey": ("memrules.seams.valkey", "valkey_store"),
    }
)
_EMBEDDERS = _Factories(
    {
        "local": ("memrules.seams.embedders", "local_embedder"),
        "openai": ("memrules.seams.embedders", "openai_embedder"),
    }
)
_SUMMARIZERS = _Factories(
    {
        "extractive": ("memrules.seams.summarizers", "extractive_summarizer"),
        "openai": ("memrules.seams.summarizers", "openai_summarizer"),
    }
)


def _stores() -> Mapping[str, _Factory]:
    return _STORES


def _embedders() -> Mapping[str, _Factory]:
    return _EMBEDDERS


def _summarizers() -> Mapping[str, _Factory]:
    return _SUMMARIZERS


# section -> (the key naming the type, the default type, its type -> factory table)
_KINDS: dict[str, tuple[str, str, Callable[[], Mapping[str, _Factory]]]] = {
    "store": ("backend", "milvus", _stores),
    "embedder": ("type", "local", _embedders),
    "summarizer": ("type", "extractive", _summarizers),
}


def _kinds(section: str) -> tuple[str, str, Mapping[str, _Factory]]:
    """The key naming ``section``'s type, its default type, and type -> factory."""
    type_key, default, factories = _KINDS[section]
    return type_key, default, factories()


def _local_embedder() -> Embedder:
    from memrules.seams.embedders import local_embedder

    return local_embedder()


def _local_embedder_missing() -> list[str]:
    from memrules.seams.embedders import local_embedder_missing

    return local_embedder_missing()


def _parameters(factory: _Factory) -> tuple[str, ...]:
    return tuple(p for p in inspect.signature(factory).parameters if p != "embedder")


def section_keys(section: str, kind: str) -> tuple[str, ...]:
    """The keys a ``section`` of type ``kind`` takes: the key naming the
    type, then the type's parameters (none for an unknown type)."""
    type_key, _, kinds = _kinds(section)
    factory = kinds.get(kind)
    return (type_key, *(_parameters(factory) if factory is not None else ()))


@attrs.frozen(kw_only=True, slots=True, repr=False)
class SeamSettings:
    """One section: which ``section`` (store, embedder, summarizer), its
    ``kind`` (milvus, qdrant, valkey, local, openai, extractive) and the parameters
    given, in order. Checked when made (`seam_settings`)."""

    section: str
    kind: str
    params: tuple[tuple[str, Any], ...] = ()

    def __repr__(self) -> str:
        key = _KINDS[self.section][0]
        shown = ", ".join(f"{k}={v!r}" for k, v in ((key, self.kind), *self.params))
        return redact_text(f"{self.section}({shown})")

    def build(self, **extra: Any) -> Any:
        """The seam these settings describe (no I/O: seams connect on first use)."""
        factory = _kinds(self.section)[2][self.kind]
        return factory(**dict(self.params), **extra)

    def to_dict(self) -> dict[str, Any]:
        key = _KINDS[self.section][0]
        return {key: self.kind, **dict(self.params)}


def _problem(message: str, where: str, line: int | None = None) -> ConfigProblem:
    return ConfigProblem(message=message, yaml_path=where, line=line)


def _check(
    settings: SeamSettings, lines: Mapping[str, int], line: int | None
) -> list[ConfigProblem]:
    """Build the seam once to check the parameters; nothing is opened."""
    section = settings.section
    extra: dict[str, Any] = {"embedder": _local_embedder()} if section == "store" else {}
    try:
        settings.build(**extra)
    except ConfigError as exc:
        return [
            _problem(
                p.message,
                f"{section}.{p.yaml_path}" if p.yaml_path else section,
                lines.get(p.yaml_path, line),
            )
            for p in exc.problems
        ]
    except TypeError as exc:  # a parameter of the wrong kind for the factory
        return [_problem(str(exc), section, line)]
    return []


def seam_settings(
    section: str,
    value: str | Mapping[str, Any],
    *,
    lines: Mapping[str, int] | None = None,
    line: int | None = None,
) -> SeamSettings | list[ConfigProblem]:
    """Check one section's value (a type name, or a mapping), as read from
    YAML or given in Python: the settings, or every problem found, each at
    ``section.key`` (and its line, from ``lines``, when known)."""
    type_key, default, kinds = _kinds(section)
    lines = lines or {}
    if isinstance(value, str):
        value = {type_key: value}
    if not isinstance(value, Mapping):
        message = (
            f"{section} must be a mapping ({type_key}: one of {', '.join(kinds)}, and its "
            f"settings) or the name of one, got {value!r}"
        )
        return [_problem(message, section, line)]
    kind = value.get(type_key, default)
    if not isinstance(kind, str) or kind not in kinds:
        message = f"{type_key}={kind!r} must be one of {', '.join(kinds)}"
        return [_problem(message, f"{section}.{type_key}", lines.get(type_key, line))]
    allowed = _parameters(kinds[kind])
    problems = []
    for key in value:
        if key != type_key and key not in allowed:
            message = (
                f"unknown key {key!r} for {type_key} {kind}; known keys: "
                f"{', '.join((type_key, *allowed))}"
            )
            problems.append(_problem(message, f"{section}.{key}", lines.get(key, line)))
    required = [
        name
        for name, p in inspect.signature(kinds[kind]).parameters.items()
        if p.default is inspect.Parameter.empty and name != "embedder" and name not in value
    ]
    if required:
        message = f"{type_key} {kind} needs {', '.join(required)}"
        problems.append(_problem(message, section, line))
    if problems:
        return problems
    params = tuple((k, v) for k, v in value.items() if k != type_key)
    settings = SeamSettings(section=section, kind=str(kind), params=params)
    problems = _check(settings, lines, line)
    return problems or settings


def _section(section: str) -> Callable[[Node], SeamSettings | list[ConfigProblem]]:
    def read(node: Node) -> SeamSettings | list[ConfigProblem]:
        value = node.plain()
        lines = dict(node.key_lines) if node.is_mapping else {}
        if isinstance(value, Mapping):  # in the order written (a pmap has none)
            ordered = sorted(value, key=lambda k: lines.get(k, 0))
            value = {
                k: list(value[k]) if isinstance(value[k], tuple) else value[k] for k in ordered
            }
        return seam_settings(section, value, lines=lines, line=node.line)

    read.__name__ = f"{section}_section"
    read.__doc__ = f"The `{section}:` section of a YAML config (see the stores guide)."
    return read


store_section = _section("store")
embedder_section = _section("embedder")
summarizer_section = _section("summarizer")

SECTIONS: Mapping[str, Callable[[Node], SeamSettings | list[ConfigProblem]]] = {
    "store": store_section,
    "embedder": embedder_section,
    "summarizer": summarizer_section,
}
"""The seam sections: YAML key → its reader (a node in; the settings, or the
problems at their YAML paths and lines, out)."""


def section_problems(
    store: SeamSettings | None, embedder: SeamSettings | None, summarizer: SeamSettings | None
) -> list[ConfigProblem]:
    """What is wrong with the sections together (or with a value given in
    Python that is not a section's settings)."""
    problems = []
    for section, value in (("store", store), ("embedder", embedder), ("summarizer", summarizer)):
        if value is not None and (not isinstance(value, SeamSettings) or value.section != section):
            message = f"{section}={value!r} must be the settings of a {section}: section"
            problems.append(_problem(message, section))
    if embedder is not None and store is None:
        message = (
            "embedder: is set but there is no store: section; the embedder only embeds what "
            "the store keeps (add a store: section, or remove embedder:)"
        )
        problems.append(_problem(message, "embedder"))
    if isinstance(store, SeamSettings) and embedder is None:
        missing = _local_embedder_missing()
        if missing:
            message = (
                f"the store's embedder is local (the default), which needs {', '.join(missing)}: "
                "pip install 'memrules[local-embed]', or set embedder: to type: openai"
            )
            problems.append(_problem(message, "store"))
    return problems


def build_seams(
    store: SeamSettings | None,
    embedder: SeamSettings | None,
    summarizer: SeamSettings | None,
    *,
    given_store: VectorStore | None = None,
    given_summarizer: Summarizer | None = None,
) -> tuple[VectorStore | None, Summarizer | None]:
    """The store and summarizer the sections describe, where code gave none."""
    built_store = given_store
    if built_store is None and store is not None:
        made: Embedder = embedder.build() if embedder is not None else _local_embedder()
        built_store = store.build(embedder=made)
    built_summarizer = given_summarizer
    if built_summarizer is None and summarizer is not None:
        built_summarizer = summarizer.build()
    return built_store, built_summarizer
