"""The config value: :class:`MemoryConfig`, which validates itself when it is
built (from Python or from YAML) and opens nothing. The plugin layer builds a
route's live plugin from it (:meth:`memrules.MemoryPlugin.from_config`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from pyrsistent import PMap, pmap

from memrules._adapters.context_editing import ProviderEditing
from memrules._config.keys import (
    DEFAULT_ROUTE,
    ROUTE_NAME,
    SECTION_TYPES,
    SETTINGS,
    key_problems,
)
from memrules._core.budget import CachePolicy, ContextWindowResolver, Trigger
from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.report import OverBudgetMode
from memrules._core.seam_records import DEFAULT_CONTEXT, IndexContext
from memrules._core.survivors import DEFAULT_SURVIVORS, SurvivorRule
from memrules._counting.content import ContentCounting
from memrules._counting.usage import ContextUsageObserver
from memrules._engine.contract import DEFAULT_WARNING_MARKER, Strategy
from memrules._engine.interpreter import NamedStrategy
from memrules.graph.extract import GraphExtractor
from memrules.graph.limits import GraphLimits
from memrules.graph.render import GraphContext
from memrules.memory.config import (
    RetrievalStoreConfig,
    RouteRetrieval,
    check_threshold,
)
from memrules.memory.shared import SHARED_STORES
from memrules.seams._settings import SeamSettings, section_problems
from memrules.state.config import StateStoreConfig
from memrules.strategies import BUILTIN_ORDER, STRATEGIES
from memrules.strategies.registry import near_miss

if TYPE_CHECKING:
    from memrules._plugin.plugin import MemoryPlugin

__all__ = ["NO_MEMORY_STORE", "MemoryConfig", "default_strategies"]


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


# --- MemoryConfig ----------------------------------------------------------------


def _named(value: NamedStrategy | Strategy) -> NamedStrategy:
    if isinstance(value, NamedStrategy):
        return value
    if not callable(value):
        msg = f"strategies must be callables, got {value!r}"
        raise ConfigError.single(msg, yaml_path="strategies")
    name = getattr(value, "__name__", None) or repr(value).split("(", 1)[0]
    return NamedStrategy(name=name, strategy=value)


def _strategies(values: Iterable[NamedStrategy | Strategy]) -> tuple[NamedStrategy, ...]:
    return tuple(_named(v) for v in values)


def default_strategies() -> tuple[NamedStrategy, ...]:
    """The default pipeline: the eight built-ins, each with its defaults."""
    return tuple(NamedStrategy(name=n, strategy=STRATEGIES[n]()) for n in BUILTIN_ORDER)


def _observers(values: Iterable[ContextUsageObserver]) -> tuple[ContextUsageObserver, ...]:
    return tuple(values)


_NO_LIMITS_SET = GraphLimits()
_IN_MEMORY = StateStoreConfig()


def _default_fraction(config: MemoryConfig) -> float | None:
    return None if config.max_tokens is not None else 0.8


@attrs.frozen(kw_only=True, slots=True)
class MemoryConfig:
    """Everything that shapes compaction, validated on construction: a bad
    value raises one :class:`ConfigError` listing every problem, each naming
    ``key=value`` (``MemoryConfig(max_messages=0)``,
    ``MemoryConfig(encoder_name="no-such")``).

    ``model`` is the model the requests go to (``"gpt-4o"``,
    ``"claude-sonnet-4-5"``): it chooses the encoding and the count rule
    from the dated table of :mod:`memrules._counting.models` (exact for
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
    ``"seed"`` for no framing, the counter's own ``"<role> <text>"``; see
    :mod:`memrules._counting.framing`; None: the model's, else
    ``"openai"``), and ``safety_margin`` keeps that fraction of a token
    budget free (0.05: compact to 95% of it). ``strategies`` are
    strategy callables (or
    :class:`NamedStrategy`), the eight built-ins by default. ``observers`` and
    ``context_window_resolver`` are used by :class:`~memrules.MemoryPlugin`,
    and so are the working graph's settings: ``graph_limits`` (each
    conversation's graph cap, a :class:`~memrules.graph.GraphLimits`),
    ``graph_context`` (render the graph into requests, a
    :class:`~memrules.graph.GraphContext`; None, the default, renders
    nothing), ``graph_extractor`` (a
    :data:`~memrules.graph.GraphExtractor` whose graph is merged after each
    request; None by default) and ``state_store`` (a
    :class:`~memrules.graph.StateStoreConfig`: where conversation state
    lives, this process's memory by default).
    ``repair`` removes what a provider would reject: input that is already
    broken (a tool result whose call is absent, two results for one call, a
    result before its call, a call left unanswered) and what comes before
    the first user message after the system messages (see
    :mod:`memrules._runtime.lead`); ``False`` only reports it (the request
    is sent as it came). None, the default, is on in the request hook
    (:class:`~memrules.MemoryPlugin`, which sends requests) and off in
    :meth:`~memrules.Pipeline.apply`; ``user_first`` keeps the first non-system message a
    user message when the input's was (on by default; the task leads
    where it is kept). ``survivors`` says what no strategy may remove
    besides the first system message and the most recent user message
    (a :class:`~memrules._core.survivors.SurvivorRule`: the task, the
    question, pinned and harness messages). ``over_budget`` is what is done with
    a request compaction cannot bring within its budget: ``"send"`` it,
    ``"warn"`` (an :class:`~memrules.OverBudgetWarning`, a log record, a
    metric; the default) and send it, or ``"raise"``
    :class:`~memrules.OverBudgetError`. ``store``, ``embedder`` and
    ``summarizer`` are the seam sections (see :mod:`memrules.seams._settings`;
    None: absent). ``cache`` is how compaction keeps the provider's prompt
    cache (a :class:`~memrules._core.budget.CachePolicy`; None: it does
    not try). ``provider_editing`` asks for provider-side context
    editing (a :class:`~memrules._adapters.context_editing.ProviderEditing`;
    see :mod:`memrules._adapters.context_editing`), None by default.
    ``counting`` prices images, documents and reasoning (the ``counting:``
    section, a :class:`~memrules._counting.content.ContentCounting`: the
    OpenAI image model family and the stated estimates; None: the
    defaults). ``index_context`` is what ``remember`` and ``offload`` index
    a stored message by besides its own text (an
    :class:`~memrules.IndexContext`: the message before it and its day by
    default; None: its own text only). ``source`` is the file the config
    came from, if any.
    """

    encoder_name: str | None = None
    count_rule: str | None = None
    model: str | None = None
    safety_margin: float = 0.0
    context_window_tokens: int = 128_000
    max_messages: int | None = None
    max_tokens: int | None = None
    max_fraction: float | None = attrs.field(
        default=attrs.Factory(_default_fraction, takes_self=True)
    )
    warn_fraction: float | None = None
    offload_turns: int = 10
    warning_marker: str = DEFAULT_WARNING_MARKER
    repair: bool | None = None
    user_first: bool = True
    survivors: SurvivorRule = DEFAULT_SURVIVORS
    over_budget: OverBudgetMode = "warn"
    memory: RouteRetrieval | None = None
    memory_store: RetrievalStoreConfig | None = None
    routes: PMap[str, MemoryConfig] = attrs.field(factory=pmap, converter=_routes)
    strategies: tuple[NamedStrategy, ...] = attrs.field(
        factory=default_strategies, converter=_strategies
    )
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
    cache: CachePolicy | None = None
    counting: ContentCounting | None = None
    index_context: IndexContext | None = DEFAULT_CONTEXT
    source: str | None = None

    def __attrs_post_init__(self) -> None:
        keys = (*SETTINGS, *SECTION_TYPES, "graph_extractor")
        problems = key_problems({key: getattr(self, key) for key in keys})
        problems += section_problems(self.store, self.embedder, self.summarizer)
        if not problems:
            problems += _memory_problems(self)
        if problems:
            raise ConfigError(problems, path=self.source)

    # --- routes ---------------------------------------------------------------------

    @property
    def route_names(self) -> tuple[str, ...]:
        """The routes this config holds: ``default`` (itself), then the
        named ones, sorted."""
        return (DEFAULT_ROUTE, *sorted(self.routes))

    def route_config(self, name: str = DEFAULT_ROUTE) -> MemoryConfig:
        """The config of route ``name`` (``default``: this one). An unknown
        name raises :class:`ConfigError` listing the known ones."""
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

    def route(self, name: str = DEFAULT_ROUTE, **options: Any) -> MemoryPlugin:
        """A ready :class:`~memrules.MemoryPlugin` for route ``name``
        (``default``: the file's top level), with its own pipeline and
        memory: :meth:`MemoryPlugin.from_config(config, route=name, **options)
        <memrules.MemoryPlugin.from_config>`. Every plugin made from one
        config shares its ``stores.memory`` store (one client); each call
        makes a new plugin with its own conversation state, so make one per
        route at start-up. Raises :class:`ConfigError` for an unknown route,
        or a memory collection its embedder cannot use.

        The config stays a value: the plugin, made by the layer that owns
        what is live, opens the store, not the config. This is the one call
        from the config into that layer (declared in ``[tool.importlinter]``),
        made when ``route`` is called, never at import."""
        from memrules._plugin.plugin import MemoryPlugin

        return MemoryPlugin.from_config(self, route=name, **options)

    def close(self) -> None:
        """Close the ``stores.memory`` stores that plugins made from this
        config share, if any are open (a plugin made later opens its store
        again); closing each plugin, or ``with`` blocks, does the same."""
        stores = [self.memory_store, *(r.memory_store for r in self.routes.values())]
        for settings in dict.fromkeys(s for s in stores if s is not None):
            SHARED_STORES.close(settings)

    @property
    def trigger(self) -> Trigger:
        return Trigger(
            max_messages=self.max_messages,
            max_tokens=self.max_tokens,
            max_fraction=self.max_fraction,
            context_window_tokens=self.context_window_tokens,
            safety_margin=self.safety_margin,
        )
