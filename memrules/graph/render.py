"""The graph as one system message: `GraphContext` and
`render_graph`, and where the message goes in a request.

With ``graph_context`` set, `MemoryPlugin` puts one system
message right after the first system message of every request (first, when
there is none), after compaction, so compaction never deletes it and its
tokens do not count against the request that triggered compaction:

    memrules graph memory: what this conversation established, highest weight first.
    nodes:
    - vault (Entity) weight 2
    - Lisbon (Value) weight 2
    relationships:
    - vault -[is_in]-> Lisbon weight 2
    left out: 0 nodes, 0 relationships

The text is a function of the graph's nodes and relationships alone:
entries are ranked by weight, highest first, ties broken by id, and
properties written with sorted keys, so equal graphs give the same bytes in
any process (no dependence on the hash seed or on insertion order). At most
``max_nodes`` nodes and ``max_relationships`` relationships are shown; the
last line says how many of each were left out. An id or label that holds
spaces, brackets, parentheses, quotes, commas or ``=`` is written as a JSON
string, so every line reads one way.

A request that comes back holding the message (the client kept the prompt
it sent) has it replaced in place, and an empty graph removes it.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from memrules._core.checks import is_whole
from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.frozen import thaw
from memrules._core.messages import Conversation, Message, message
from memrules.graph.memory_graph import MemoryGraph
from memrules.graph.model import GraphNode, GraphRelationship

__all__ = [
    "DEFAULT_GRAPH_MARKER",
    "GraphContext",
    "RenderedGraph",
    "find_graph_messages",
    "insert_graph_message",
    "is_graph_message",
    "render_graph",
]

DEFAULT_GRAPH_MARKER = "memrules graph memory:"

_PLAIN = re.compile(r"[^\s\[\]()\"'=,]+")


@attrs.frozen(kw_only=True, slots=True)
class GraphContext:
    """How the graph is rendered into requests (YAML ``graph_context``):
    at most ``max_nodes`` nodes (64; at least 1) and ``max_relationships``
    relationships (128; at least 0), in one system message that starts with
    ``marker``. Checked when built: a bad value raises one
    `ConfigError` naming every problem at its YAML
    path."""

    max_nodes: int = 64
    max_relationships: int = 128
    marker: str = DEFAULT_GRAPH_MARKER

    def __attrs_post_init__(self) -> None:
        problems = []
        for key, minimum in (("max_nodes", 1), ("max_relationships", 0)):
            value = getattr(self, key)
            if not is_whole(value, minimum):
                problems.append(
                    ConfigProblem(
                        message=f"{key}={value!r} must be a whole number of at least {minimum}",
                        yaml_path=f"graph_context.{key}",
                    )
                )
        if not isinstance(self.marker, str) or not self.marker.strip():
            problems.append(
                ConfigProblem(
                    message=f"marker={self.marker!r} must be a non-empty string",
                    yaml_path="graph_context.marker",
                )
            )
        if problems:
            raise ConfigError(problems)


@attrs.frozen(kw_only=True, slots=True)
class RenderedGraph:
    """A rendering: the message ``text``, and how many nodes and
    relationships it shows and leaves out."""

    text: str
    nodes_shown: int
    relationships_shown: int
    nodes_left_out: int
    relationships_left_out: int

    def message(self) -> Message:
        """The system message that carries the text."""
        return message("system", self.text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes_shown": self.nodes_shown,
            "relationships_shown": self.relationships_shown,
            "nodes_left_out": self.nodes_left_out,
            "relationships_left_out": self.relationships_left_out,
        }


def _token(text: str) -> str:
    return text if _PLAIN.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def _weight(weight: float) -> str:
    return "" if weight == 1.0 else f" weight {weight:g}"


def _properties(properties: Mapping[str, Any]) -> str:
    return "".join(
        f" {_token(key)}=" + json.dumps(thaw(properties[key]), ensure_ascii=False, sort_keys=True)
        for key in sorted(properties)
    )


def _node_line(node: GraphNode) -> str:
    labels = f" ({', '.join(map(_token, node.labels))})" if node.labels else ""
    return f"- {_token(node.id)}{labels}{_weight(node.weight)}{_properties(node.properties)}"


def _relationship_line(r: GraphRelationship) -> str:
    return (
        f"- {_token(r.source)} -[{_token(r.type)}]-> {_token(r.target)}"
        f"{_weight(r.weight)}{_properties(r.properties)}"
    )


def _top(entries: Any, count: int) -> list[Any]:
    """The ``count`` heaviest entries, ties by id: a total order, so the
    choice is the same whatever order the map iterates in."""
    return heapq.nsmallest(count, entries, key=lambda e: (-e.weight, e.id))


def render_graph(graph: MemoryGraph, context: GraphContext) -> RenderedGraph | None:
    """The graph message's text for ``graph`` under ``context``; None for an
    empty graph (the message is then removed). See the module docs.

    Computed once per graph value and context: a conversation whose graph did
    not change since its last request pays nothing for it again."""
    if graph.is_empty:
        return None
    return graph.memoized(("render", context), lambda: _render(graph, context))


def _render(graph: MemoryGraph, context: GraphContext) -> RenderedGraph:
    nodes = _top(graph.nodes.values(), context.max_nodes)
    relationships = _top(graph.relationships.values(), context.max_relationships)
    lines = [f"{context.marker} what this conversation established, highest weight first."]
    lines.append("nodes:")
    lines.extend(map(_node_line, nodes))
    if relationships:
        lines.append("relationships:")
        lines.extend(map(_relationship_line, relationships))
    nodes_out = len(graph.nodes) - len(nodes)
    relationships_out = len(graph.relationships) - len(relationships)
    lines.append(f"left out: {nodes_out} nodes, {relationships_out} relationships")
    return RenderedGraph(
        text="\n".join(lines),
        nodes_shown=len(nodes),
        relationships_shown=len(relationships),
        nodes_left_out=nodes_out,
        relationships_left_out=relationships_out,
    )


def is_graph_message(candidate: Message, marker: str) -> bool:
    """Whether ``candidate`` is a graph message: a system message whose
    text starts with ``marker``."""
    return candidate.role == "system" and candidate.text.startswith(marker)


def find_graph_messages(messages: Conversation, marker: str) -> tuple[int, ...]:
    """The indexes of the graph messages in ``messages``."""
    return tuple(i for i, m in enumerate(messages) if is_graph_message(m, marker))


def insert_graph_message(
    messages: Conversation, graph_message: Message, at: int | None = None
) -> Conversation:
    """``messages`` with ``graph_message`` at index ``at``, moved to just
    after the first system message when ``at`` would put it before that
    (the first system message stays first); ``at`` None means just after
    the first system message, or first when there is none."""
    first_system = next((i for i, m in enumerate(messages) if m.role == "system"), None)
    earliest = 0 if first_system is None else first_system + 1
    position = earliest if at is None else min(max(at, earliest), len(messages))
    return (*messages[:position], graph_message, *messages[position:])
