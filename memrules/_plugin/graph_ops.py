"""Each conversation's state and working graph, read and replaced in the
plugin's state store.

Every write is one atomic `update` of the store, as a pure function of the
state then current, so many threads (or replicas) merging into one
conversation lose no update. A store built elsewhere may hand out graphs
under other limits: what is read is first put under the plugin's
(`GraphOps.adopt`)."""

from __future__ import annotations

import attrs

from memrules._core.errors import GraphError
from memrules.graph.limits import GraphLimits
from memrules.graph.memory_graph import MemoryGraph
from memrules.graph.merge import MergePolicy, MergeReport
from memrules.graph.snapshot import GraphImportReport, GraphSnapshot
from memrules.state.model import ConversationState, StateRecord, StateStore

__all__ = ["GraphOps"]


@attrs.frozen(kw_only=True)
class GraphOps:
    """The conversations' state in ``states``, with graphs under ``limits``."""

    states: StateStore
    limits: GraphLimits

    def adopt(self, state: ConversationState) -> ConversationState:
        """``state`` with its graph under `limits` (the same state when it is)."""
        if state.graph.limits == self.limits:
            return state
        return attrs.evolve(state, graph=state.graph.with_limits(self.limits))

    def record(self, conversation_id: str | None) -> StateRecord:
        """The conversation's state and its version in the store."""
        record = self.states.load(conversation_id)
        state = self.adopt(record.state)
        return record if state is record.state else attrs.evolve(record, state=state)

    def state(self, conversation_id: str | None) -> ConversationState:
        """The state the conversation's next request starts from."""
        return self.record(conversation_id).state

    def merge(
        self, conversation_id: str | None, other: MemoryGraph, policy: MergePolicy
    ) -> MergeReport:
        """Merge ``other`` into the conversation's graph under ``policy``."""
        if not isinstance(other, MemoryGraph):
            msg = f"can only merge a MemoryGraph, got {type(other).__name__}"
            raise GraphError(msg)
        policy = MergePolicy(policy)
        reports: list[MergeReport] = []

        def change(current: ConversationState) -> ConversationState:
            current = self.adopt(current)
            graph, report = current.graph.merge(other, policy)
            reports.append(report)
            return current if graph is current.graph else attrs.evolve(current, graph=graph)

        record = self.states.update(conversation_id, change)
        return attrs.evolve(reports[-1], version=record.version)

    def replace(self, conversation_id: str | None, graph: MemoryGraph) -> GraphImportReport:
        """Make ``graph``, cut to `limits`, the conversation's graph."""
        if not isinstance(graph, MemoryGraph):
            msg = f"expected a MemoryGraph, got {type(graph).__name__}"
            raise GraphError(msg)
        fitted = graph.with_limits(self.limits)
        evicted_nodes: tuple[str, ...] = ()
        evicted_relationships: tuple[str, ...] = ()
        if fitted is not graph:
            evicted_nodes = tuple(sorted(set(graph.nodes) - set(fitted.nodes)))
            evicted_relationships = tuple(
                sorted(set(graph.relationships) - set(fitted.relationships))
            )
        report = GraphImportReport(
            nodes=len(fitted.nodes),
            relationships=len(fitted.relationships),
            evicted_nodes=evicted_nodes,
            evicted_relationships=evicted_relationships,
        )
        return self._replace(conversation_id, fitted, report)

    def replace_snapshot(
        self, conversation_id: str | None, snapshot: GraphSnapshot
    ) -> GraphImportReport:
        """Make the graph ``snapshot`` describes the conversation's graph."""
        graph, report = MemoryGraph.from_snapshot(snapshot, limits=self.limits)
        return self._replace(conversation_id, graph, report)

    def _replace(
        self, conversation_id: str | None, graph: MemoryGraph, report: GraphImportReport
    ) -> GraphImportReport:
        def change(current: ConversationState) -> ConversationState:
            current = self.adopt(current)
            return current if current.graph is graph else attrs.evolve(current, graph=graph)

        record = self.states.update(conversation_id, change)
        return attrs.evolve(report, version=record.version)
