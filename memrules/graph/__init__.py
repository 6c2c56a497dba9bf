"""The working graph: what a conversation established, kept as a persistent
graph and rendered into every request.

- :class:`MemoryGraph` (:mod:`~memrules.graph.memory_graph`): nodes
  (:class:`GraphNode`) and directed, weighted relationships
  (:class:`GraphRelationship`) in pyrsistent maps, with adjacency indexes for
  :meth:`~MemoryGraph.neighbors` by :class:`GraphDirection`. Every update
  returns a new graph; a no-op returns the same one.
- :class:`GraphLimits` and :class:`AtCap` (:mod:`~memrules.graph.limits`):
  the size cap every graph carries, and what happens at it.
- :class:`MergePolicy`, :class:`MergeReport` (:mod:`~memrules.graph.merge`).
- :class:`GraphSnapshot`, :class:`GraphImportReport`, :func:`save_snapshot`,
  :func:`load_snapshot` (:mod:`~memrules.graph.snapshot`): versioned JSON,
  saved atomically.
- :class:`GraphContext`, :func:`render_graph` (:mod:`~memrules.graph.render`):
  the graph as one system message.
- :data:`GraphExtractor`, :func:`offline_extractor`
  (:mod:`~memrules.graph.extract`): where graphs come from.

Where each conversation's state lives (`StateStore` and its stores) is
`memrules.state`.
"""

from __future__ import annotations

from memrules._core.public_names import report_public_module
from memrules.graph.extract import GraphExtractor, offline_extractor
from memrules.graph.limits import AtCap, GraphLimits
from memrules.graph.memory_graph import MemoryGraph
from memrules.graph.merge import MergeCounts, MergePolicy, MergeReport
from memrules.graph.model import GraphDirection, GraphNode, GraphRelationship
from memrules.graph.render import DEFAULT_GRAPH_MARKER, GraphContext, RenderedGraph, render_graph
from memrules.graph.snapshot import GraphImportReport, GraphSnapshot, load_snapshot, save_snapshot

__all__ = [
    "DEFAULT_GRAPH_MARKER",
    "AtCap",
    "GraphContext",
    "GraphDirection",
    "GraphExtractor",
    "GraphImportReport",
    "GraphLimits",
    "GraphNode",
    "GraphRelationship",
    "GraphSnapshot",
    "MemoryGraph",
    "MergeCounts",
    "MergePolicy",
    "MergeReport",
    "RenderedGraph",
    "load_snapshot",
    "offline_extractor",
    "render_graph",
    "save_snapshot",
]


report_public_module(__name__, __all__, globals())
del report_public_module
