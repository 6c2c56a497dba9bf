"""The service's config: `MemoryConfig`, a `PipelineConfig` (the
pipeline's settings) with what the request hook and its routes add: the
routes, the shared memory store, the seams' sections, the working graph,
conversation state, retrieval memory and provider editing. It validates
itself when it is built (from Python or from YAML) and opens nothing: the
plugin layer builds a route's live plugin from it
(`MemoryPlugin.from_config(config, route=name)`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import attrs
from pyrsistent import PMap, pmap

from memrules._adapters.context_editing import ProviderEditing
from memrules._config.keys import DEFAULT_ROUTE, ROUTE_NAME, SETTINGS, key_problems
from memrules._config.pipeline_config import PipelineConfig, default_strategies
from memrules._config.service_keys import SECTION_TYPES, service_key_problems
from memrules._core.budget import ContextWindowResolver
from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.seam_protocols import Seams
from memrules._counting.usage import ContextUsageObserver
from memrules.graph.extract import GraphExtractor
from memrules.graph.limits import GraphLimits
from memrules.graph.render import GraphContext
from memrules.memory.config import (
    RetrievalStoreConfig,
    RouteRetrieval,
    check_threshold,
)
from memrules.memory.shared import SHARED_STORES
from memrules.seams._settings import SeamSettings, build_seams, section_problems
from memrules.state.config import StateStoreConfig
from memrules.strategies.registry import near_miss

__all__ = [
    "NO_MEMORY_STORE",
    "MemoryConfig",
    "PipelineConfig",
    "default_strategies",
    "service_config",
]


NO_MEMORY_STORE = "memory is enabled but there is no stores.memory"


def _local_qdrant(settings: object) -> str | None:
    """The directory of a Qdrant store in local mode on disk, if it is one."""
    if not isinstance(settings, (SeamSettings, RetrievalStoreConfig)):
        return None
    store = settings.store if isinstance(settings, RetrievalStoreConfig) else settings
    params = dict(store.params)
    if store.kind != "qdrant" or params.get("url") is not None:
        return None
    path = params.get("path", "memrules_qdrant")
    return None if path == ":memory:" else os.path.abspath(str(path))


def _memory_problems(config: MemoryConfig) -> list[ConfigProblem]:
    """What is wrong with a config's retrieval memory and routes."""
    problems = []
    memory, store = config.memory, config.memory_store
    if isinstance(memory, RouteRetrieval) and memory.enabled and store is None:
        message = (
            f"{NO_MEMORY_STORE}: add stores.memory (the store every route shares) at the top "
            "of the file, or memory_store=RetrievalStoreConfig(...) in Python"
        )
        problems.append(ConfigProblem(message=message, yaml_path="memory"))
    if (
        isinstance(memory, RouteRetrieval)
        and isinstance(store, RetrievalStoreConfig)
        and memory.threshold is not None
    ):
        wrong = check_threshold(memory.threshold, store.search, "threshold")
        if wrong is not None:
            problems.append(ConfigProblem(message=wrong, yaml_path="memory.threshold"))
    if isinstance(memory, RouteRetrieval) and isinstance(store, RetrievalStoreConfig):
        others = {"warning_marker": config.warning_marker}
        if isinstance(config.graph_context, GraphContext):
            others["graph_context.marker"] = config.graph_context.marker
        for key, other in others.items():
            if isinstance(other, str) and (
                other.startswith(store.marker) or store.marker.startswith(other)
            ):
                message = (
                    f"stores.memory.marker={store.marker!r} and {key}={other!r}: one starts with "
                    "the other, so the plugin would take one message for the other; make them "
                    "differ"
                )
                problems.append(ConfigProblem(message=message, yaml_path="stores.memory.marker"))
    directory = _local_qdrant(config.store)
    if directory is not None and directory == _local_qdrant(store):
        message = (
            f"the store: section and stores.memory are both Qdrant's local mode in {directory!r}, "
            "and a directory can be open once per process: give one of them another path"
        )
        problems.append(ConfigProblem(message=message, yaml_path="store.path"))
    for name, route in config.routes.items():
        where = f"routes.{name}"
        if not isinstance(name, str) or not ROUTE_NAME.fullmatch(name):
            message = (
                f"route name {name!r} must be 1 to 64 letters, digits, '_', '.' or '-', "
                "starting with a letter or digit"
            )
            problems.append(ConfigProblem(message=message, yaml_path=where))
        elif name == DEFAULT_ROUTE:
            message = (
                f"a route may not be named {DEFAULT_ROUTE!r}: the top level of the file is the "
                "default route; put its settings there"
            )
            problems.append(ConfigProblem(message=message, yaml_path=where))
        elif not isinstance(route, MemoryConfig):
            message = f"routes[{name!r}]={route!r} must be a MemoryConfig"
            problems.append(ConfigProblem(message=message, yaml_path=where))
        elif route.routes:
            message = "a route has no routes of its own: routes sit at the top of the file"
            problems.append(ConfigProblem(message=message, yaml_path=f"{where}.routes"))
    return problems


def _routes(value: Mapping[str, MemoryConfig] | None) -> PMap[str, MemoryConfig]:
    if value is None:
        return pmap()
    if not isinstance(value, Mapping):
        msg = f"routes={value!r} must be a mapping of route names to MemoryConfig"
        raise ConfigError.single(msg, yaml_path="routes")
    return value if isinstance(value, PMap) else pmap(dict(value))


def _observers(values: Iterable[ContextUsageObserver]) -> tuple[ContextUsageObserver, ...]:
    return tuple(values)


_NO_LIMITS_SET = GraphLimits()
_IN_MEMORY = StateStoreConfig()


@attrs.frozen(kw_only=True, slots=True)
class MemoryConfig(PipelineConfig):
    """Everything that shapes compaction and the service around it (the
    pipeline's fields are `PipelineConfig`'s), validated on construction: a bad
    value raises one `ConfigError` listing every problem, each naming
    ``key=value`` (``MemoryConfig(max_messages=0)``,
    ``MemoryConfig(encoder_name="no-such")``).

    ``model`` is the model the requests go to (``"gpt-4o"``,
    ``"claude-sonnet-4-5"``): it chooses the encoding and the count rule
    from the dated model table of the counting guide (exact for
    OpenAI's models, a stated estimate with a margin for Claude and
    Gemini); the request hook uses the body's ``model`` the same way.
    ``encoder_name``, when set, is the counter instead: a bundled tiktoken
    encoding (``o200k_base``, ``cl100k_base``) or an OpenAI model name,
    ``"estimate"`` for the script-aware estimator, ``"hf:<tokenizer.json,
    directory or package>"`` for a Hugging Face tokenizer, or
    ``"anthropic:<model>"`` for Anthropic's count-tokens endpoint. With
    neither, a request whose model is unknown counts the larger of
    ``cl100k_base``'s and ``o200k_base``'s counts. ``count_rule`` frames each message's
    count the way a provider does (``"openai"``, ``"anthropic"``, or
    ``"seed"`` for no framing, the counter's own ``"<role> <text>"``; see the
    counting guide; None: the model's, else
    ``"openai"``), and ``safety_margin`` keeps that fraction of a token
    budget free (0.05: compact to 95% of it). ``strategies`` are
    strategy callables (or
    `NamedStrategy`), the eight built-ins by default. ``observers`` and
    ``context_window_resolver`` are used by `MemoryPlugin`,
    and so are the working graph's settings: ``graph_limits`` (each
    conversation's graph cap, a `GraphLimits`),
    ``graph_context`` (render the graph into requests, a
    `GraphContext`; None, the default, renders
    nothing), ``graph_extractor`` (a
    `GraphExtractor` whose graph is merged after each
    request; None by default) and ``state_store`` (a
    `StateStoreConfig`: where conversation state
    lives, this process's memory by default).
    ``repair`` removes what a provider would reject: input that is already
    broken (a tool result whose call is absent, two results for one call, a
    result before its call, a call left unanswered) and what comes before
    the first user message after the system messages (see the
    request hook guide); ``False`` only reports it (the request
    is sent as it came). None, the default, is on in the request hook
    (`MemoryPlugin`, which sends requests) and off in
    `Pipeline.apply`; ``user_first`` keeps the first non-system message a
    user message when the input's was (on by default; the task leads
    where it is kept). ``survivors`` says what no strategy may remove
    besides the first system message and the most recent user message
    (a `SurvivorRule`: the task, the
    question, pinned and harness messages). ``over_budget`` is what is done with
    a request compaction cannot bring within its budget: ``"send"`` it,
    ``"warn"`` (an `OverBudgetWarning`, a log record, a
    metric; the default) and send it, or ``"raise"``
    `OverBudgetError`. ``store``, ``embedder`` and
    ``summarizer`` are the seam sections (see the configuration guide;
    None: absent). ``cache`` is how compaction keeps the provider's prompt
    cache (a `CachePolicy`; None: it does
    not try). ``provider_editing`` asks for provider-side context
    editing (a `ProviderEditing`), None by default.
    ``counting`` prices images, documents and reasoning (the ``counting:``
    section, a `ContentCounting`: the
    OpenAI image model family and the stated estimates; None: the
    defaults). ``index_context`` is what ``remember`` and ``offload`` index
    a stored message by besides its own text (an
    `IndexContext`: the message before it and its day by
    default; None: its own text only). ``source`` is the file the config
    came from, if any.
    """

    memory: RouteRetrieval | None = None
    memory_store: RetrievalStoreConfig | None = None
    routes: PMap[str, MemoryConfig] = attrs.field(factory=pmap, converter=_routes)
    observers: tuple[ContextUsageObserver, ...] = attrs.field(default=(), converter=_observers)
    context_window_resolver: ContextWindowResolver | None = None
    graph_limits: GraphLimits = _NO_LIMITS_SET
    graph_context: GraphContext | None = None
    graph_extractor: GraphExtractor | None = None
    state_store: StateStoreConfig = _IN_MEMORY
    store: SeamSettings | None = None
    embedder: SeamSettings | None = None
    summarizer: SeamSettings | None = None
    provider_editing: ProviderEditing | None = None

    def _problems(self) -> list[ConfigProblem]:
        values = {key: getattr(self, key) for key in (*SETTINGS, *SECTION_TYPES, "graph_extractor")}
        problems = key_problems(values, SECTION_TYPES) + service_key_problems(values)
        problems += section_problems(self.store, self.embedder, self.summarizer)
        if not problems:
            problems += _memory_problems(self)
        return problems

    def with_section_seams(self, given: Seams) -> Seams:
        """`given`, and, for each seam it leaves absent, the one this
        config's `store:` (with `embedder:`) or `summarizer:` section
        describes (built, not yet connected)."""
        store, summarizer = build_seams(
            self.store,
            self.embedder,
            self.summarizer,
            given_store=given.store,
            given_summarizer=given.summarizer,
        )
        if store is given.store and summarizer is given.summarizer:
            return given
        return Seams(summarizer=summarizer, store=store)

    # --- routes: each route's live plugin is MemoryPlugin.from_config(config, route=name),
    # made by the layer that owns what is live (the config never imports it) ------------

    @property
    def route_names(self) -> tuple[str, ...]:
        """The routes this config holds: ``default`` (itself), then the
        named ones, sorted."""
        return (DEFAULT_ROUTE, *sorted(self.routes))

    def route_config(self, name: str = DEFAULT_ROUTE) -> MemoryConfig:
        """The config of route ``name`` (``default``: this one). An unknown
        name raises `ConfigError` listing the known ones."""
        if name == DEFAULT_ROUTE:
            return self
        found = self.routes.get(name) if isinstance(name, str) else None
        if found is None:
            msg = (
                f"route={name!r} is not a route of this config{near_miss(str(name), self.routes)}; "
                f"known routes: {', '.join(self.route_names)}"
            )
            raise ConfigError.single(msg, path=self.source, yaml_path="routes")
        return found

    def close(self) -> None:
        """Close the ``stores.memory`` stores that plugins made from this
        config share, if any are open (a plugin made later opens its store
        again); closing each plugin, or ``with`` blocks, does the same."""
        stores = [self.memory_store, *(r.memory_store for r in self.routes.values())]
        for settings in dict.fromkeys(s for s in stores if s is not None):
            SHARED_STORES.close(settings)


def service_config(config: PipelineConfig) -> MemoryConfig:
    """``config`` as the service reads it: itself when it is a `MemoryConfig`,
    else the `MemoryConfig` of its fields with the service's defaults (no
    routes, no stores, no graph, state in this process)."""
    if isinstance(config, MemoryConfig):
        return config
    fields = {f.name: getattr(config, f.name) for f in attrs.fields(PipelineConfig)}
    return MemoryConfig(**fields)
