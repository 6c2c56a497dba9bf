"""What a plugin opens, in order, and closes: the retrieval-memory store
first (its embedding model loading in a background thread from then on, so
that it loads while the pipeline's encoder and the state store do), then
the pipeline and its offload store, the state store, the trace, and the
retrieval service over the memory store.

Everything opened is put in the plugin's `Opened` as soon as it is open, so
that a failure half way closes what was opened and nothing else."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from memrules._config.load import PipelineConfig, service_config
from memrules._core.checks import check_whole
from memrules._core.report import OverBudgetMode
from memrules._core.seam_protocols import Seams, Summarizer, VectorStore
from memrules._counting.tokens import TokenCounter
from memrules._plugin.conversation_caches import ConversationCache, ConversationCaches
from memrules._plugin.graph_ops import GraphOps
from memrules._plugin.hook import Hook
from memrules._plugin.memory_endpoints import MemoryEndpoints
from memrules._plugin.step import memory_settings
from memrules._runtime.logged import LoggedClock
from memrules._runtime.over_budget import check_mode
from memrules._runtime.pipeline import Pipeline
from memrules._trace.plugin_tracer import PluginTracer
from memrules.memory.config import RetrievalStoreConfig
from memrules.memory.metrics import RetrievalObserver
from memrules.memory.service import RetrievalService, load_ahead
from memrules.memory.shared import SHARED_STORES
from memrules.state.model import StateStore
from memrules.state.opening import open_state_store

__all__ = ["Opened", "open_hook"]


class Opened:
    """What one plugin opened and closes: the thread loading the memory
    model, the state store, its hold on the shared memory store, the offload
    store the config built, and the trace."""

    def __init__(self) -> None:
        self.loading: threading.Thread | None = None
        self.states: StateStore | None = None
        self.shared: RetrievalStoreConfig | None = None
        self.built_store: VectorStore | None = None
        self.tracer: PluginTracer | None = None

    def close(self) -> None:
        """Close everything, once (after a model still loading has loaded)."""
        loading, self.loading = self.loading, None
        if loading is not None:
            loading.join()  # a model still loading is not left running
        states, self.states = self.states, None
        close = getattr(states, "close", None)
        if callable(close):
            close()
        if self.shared is not None:
            settings, self.shared = self.shared, None
            SHARED_STORES.release(settings)
        built, self.built_store = self.built_store, None
        close_built = getattr(built, "close", None)
        if callable(close_built):
            close_built()
        tracer, self.tracer = self.tracer, None
        if tracer is not None:
            tracer.close()


def open_hook(
    config: PipelineConfig,
    opened: Opened,
    *,
    summarizer: Summarizer | None,
    store: VectorStore | None,
    counter: TokenCounter | None,
    max_conversations: int,
    conversation_id_of: Callable[[Mapping[str, Any]], str | None],
    state_store: StateStore | None,
    trace: str | os.PathLike[str] | None,
    memory_store: VectorStore | None,
    memory_observers: Iterable[RetrievalObserver],
    clock: Callable[[], float],
    edits_in_place: bool,
    over_budget: OverBudgetMode | None,
) -> Hook:
    """The hook `MemoryPlugin` runs, for its arguments (see there); what it
    opens goes into ``opened``, which is closed when opening fails."""
    try:
        check_whole("max_conversations", max_conversations, 1)
        config = service_config(config)  # a pipeline's config: the service's defaults
        mode = config.over_budget if over_budget is None else check_mode(over_budget)
        if not isinstance(edits_in_place, bool):
            msg = f"edits_in_place={edits_in_place!r} must be True or False"
            raise ValueError(msg)
        settings = memory_settings(config)
        if settings is not None:
            if memory_store is None:
                memory_store = SHARED_STORES.acquire(settings)
                opened.shared = settings
            opened.loading = load_ahead(memory_store)
        made = Pipeline.from_config(
            config, seams=Seams(summarizer=summarizer, store=store), counter=counter
        )
        # The hook sends requests: with repair: null it repairs what a provider rejects.
        pipeline = attrs.evolve(made, default_repair=True)
        # The offload store the config's store: section built is the plugin's to close.
        opened.built_store = pipeline.seams.store if store is None else None
        states = state_store
        if states is None:
            states = open_state_store(
                config.state_store,
                max_conversations=max_conversations,
                graph_limits=config.graph_limits,
            )
        opened.states = states
        tracer = None
        if trace is not None:  # the seams, extractor, resolver and store through the seam log
            tracer = opened.tracer = PluginTracer(trace, pipeline, states)
            pipeline, states = tracer.pipeline, tracer.states
        service = None
        if settings is not None:
            assert config.memory is not None
            assert memory_store is not None
            if tracer is not None:
                memory_store = tracer.memory_store(settings, memory_store)
            service = RetrievalService(
                settings,
                config.memory,
                store=memory_store,
                observers=memory_observers,
                clock=LoggedClock(clock),
                source=config.source,
                loading=opened.loading,
            )
            service.start()
        memory = MemoryEndpoints(
            service=service,
            tracer=tracer,
            source=config.source,
            conversation_id_of=conversation_id_of,
        )
        return Hook(
            pipeline=pipeline,
            graphs=GraphOps(states=states, limits=config.graph_limits),
            memos=ConversationCaches(
                lambda: ConversationCache(pipeline, edits_in_place=edits_in_place),
                max_conversations,
            ),
            memory=memory,
            clock=clock,
            over_budget=mode,
            tracer=tracer,
            conversation_id_of=conversation_id_of,
        )
    except BaseException:
        opened.close()
        raise
