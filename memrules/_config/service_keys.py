"""The service's keys: the sections a whole config file may hold besides the
pipeline's (the working graph, conversation state, the seams, retrieval
memory, provider editing), the keys of a file's top level only (``stores``,
``routes``), and the whole table the YAML reader uses.

The pipeline's own keys are in `memrules._config.keys`; this module adds
what the request hook and its routes need, and is imported only by a config
that is more than a pipeline's."""

from __future__ import annotations

import types
from collections.abc import Mapping

from memrules._adapters.context_editing import ProviderEditing
from memrules._config.keys import (
    PIPELINE_SECTION_TYPES,
    PIPELINE_SECTIONS,
    SETTINGS,
    Section,
    SectionTypes,
    mapping_section,
    section_problems,
)
from memrules._config.provider_editing import PROVIDER_EDITING_FIELDS, provider_editing_from_config
from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.yaml_nodes import Node
from memrules.graph.extract import extractor_from_config
from memrules.graph.limits import GraphLimits
from memrules.graph.render import GraphContext
from memrules.memory.config import RetrievalStoreConfig, RouteRetrieval, memory_section
from memrules.seams._settings import SECTIONS as SEAM_SECTIONS
from memrules.state.config import StateStoreConfig

__all__ = [
    "FILE_KEYS",
    "KNOWN_KEYS",
    "SECTIONS",
    "SECTION_TYPES",
    "SERVICE_SECTIONS",
    "service_key_problems",
]


def _state_store_section(node: Node) -> object:
    """``state_store``: a mapping, or a URL alone (``state_store: valkey://host``)."""
    if isinstance(node.value, str):
        try:
            return StateStoreConfig(url=node.value)
        except ConfigError as exc:
            return section_problems("state_store", node, exc)
    return mapping_section("state_store", StateStoreConfig, default=StateStoreConfig())(node)


SERVICE_SECTIONS: Mapping[str, Section] = types.MappingProxyType(
    {
        # The working graph and the conversation state.
        "graph_limits": mapping_section("graph_limits", GraphLimits, default=GraphLimits()),
        "graph_context": mapping_section("graph_context", GraphContext, default=None),
        "graph_extractor": mapping_section(
            "graph_extractor",
            extractor_from_config,
            default=None,
            fields=("type", "facts", "files", "tools", "path_keys"),
        ),
        "state_store": _state_store_section,
        # The seams: store:, embedder:, summarizer: (memrules.seams._settings).
        **SEAM_SECTIONS,
        # The route's retrieval memory entry (memrules.memory.config).
        "memory": memory_section,
        # Provider-side context editing (memrules._config.provider_editing).
        "provider_editing": mapping_section(
            "provider_editing",
            provider_editing_from_config,
            default=None,
            fields=PROVIDER_EDITING_FIELDS,
        ),
    }
)
"""The service's mapping-valued keys, each with the function that reads its YAML node."""

_ORDER = (
    "graph_limits",
    "graph_context",
    "graph_extractor",
    "state_store",
    *SEAM_SECTIONS,
    "index_context",
    "memory",
    "provider_editing",
    "cache",
    "counting",
    "survivors",
)

SECTIONS: Mapping[str, Section] = types.MappingProxyType(
    {key: {**PIPELINE_SECTIONS, **SERVICE_SECTIONS}[key] for key in _ORDER}
)
"""Every mapping-valued key of a config file, the pipeline's and the
service's: the one table the YAML reader uses (in the order a trace's
canonical config writes them)."""

SECTION_TYPES: SectionTypes = {
    **PIPELINE_SECTION_TYPES,
    "graph_limits": ((GraphLimits,), "a GraphLimits"),
    "graph_context": ((GraphContext, type(None)), "a GraphContext or None"),
    "state_store": ((StateStoreConfig,), "a StateStoreConfig"),
    "memory": ((RouteRetrieval, type(None)), "a RouteRetrieval or None"),
    "memory_store": ((RetrievalStoreConfig, type(None)), "a RetrievalStoreConfig or None"),
    "provider_editing": ((ProviderEditing, type(None)), "a ProviderEditing or None"),
}
"""What each section's value must be when a whole config is built from Python."""

FILE_KEYS = ("stores", "routes")
"""Keys of a file's top level only: what every route shares, and the routes."""

KNOWN_KEYS = (*SETTINGS, *SECTIONS, "strategies", *FILE_KEYS)
"""Every top-level key of a config file."""


def service_key_problems(values: Mapping[str, object]) -> list[ConfigProblem]:
    """What is wrong with the service's values that their types do not say."""
    extractor = values.get("graph_extractor")
    if extractor is not None and not callable(extractor):
        message = f"graph_extractor={extractor!r} must be a callable (conversation) -> MemoryGraph"
        return [ConfigProblem(message=message, yaml_path="graph_extractor")]
    return []
