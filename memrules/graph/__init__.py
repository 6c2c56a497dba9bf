"""The working graph: what a conversation established, kept as a persistent
graph and rendered into every request.

- `MemoryGraph` (`memrules.graph.memory_graph`): nodes
  (`GraphNode`) and directed, weighted relationships
  (`GraphRelationship`) in pyrsistent maps, with adjacency indexes for
  `MemoryGraph.neighbors` by `GraphDirection`. Every update
  returns a new graph; a no-op returns the same one.
- `GraphLimits` and `AtCap` (`memrules.graph.limits`):
  the size cap every graph carries, and what happens at it.
- `MergePolicy`, `MergeReport` (`memrules.graph.merge`).
- `GraphSnapshot`, `GraphImportReport`, `save_snapshot`,
  `load_snapshot` (`memrules.graph.snapshot`): versioned JSON,
  saved atomically.
- `GraphContext`, `render_graph` (`memrules.graph.render`):
  the graph as one system message.
- `GraphExtractor`, `offline_extractor`
  (`memrules.graph.extract`): where graphs come from.

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
