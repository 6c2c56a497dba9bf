"""Configuration: :class:`MemoryConfig`, and reading it from YAML.

Keys are the seed's ``MemoryConfig`` names. Everything is validated when the
config is built, from Python or from YAML, by one table of settings; all
problems are gathered into one :class:`ConfigError` that names the file, the
YAML path and the line of each::

    context_window_tokens: 256
    max_messages: 6
    strategies:
      - type: sliding_window
        keep_messages: 4

YAML tells an absent key from a null one, so ``max_tokens`` alone replaces
the default ``max_fraction`` (0.8); ``max_fraction: null`` is still accepted,
and setting both is an error.

Keys whose value is a mapping (``graph_context: {max_nodes: 64}``) are
*sections*: :data:`SECTIONS` maps each to the function that reads its YAML
node into a value, placing each problem at ``key.field`` and its line.

**Trust.** A config chooses built-in strategies and their parameters, and
strategies that installed distributions publish in the ``memrules.strategies``
entry-point group. It imports a module (``type: "package.module:function"``)
only when the caller lists that module in ``allow_imports``, which a config
cannot widen; and it is read within the limits of :mod:`memrules._core.yaml_nodes`.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import os
import re
import types
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeAlias

import attrs
import tiktoken
import tiktoken.model
from pyrsistent import PMap, pmap

from memrules._core.budget import ContextWindowResolver, Trigger
from memrules._core.errors import ConfigError, ConfigProblem, EncodingError
from memrules._core.yaml_nodes import MAX_CONFIG_BYTES, Node, locate, parse_yaml
from memrules._counting.framing import COUNT_RULES, DEFAULT_COUNT_RULE
from memrules._counting.schemes import DESCRIBED, is_scheme, scheme_problem
from memrules._counting.tokens import load_encoding
from memrules._counting.usage import ContextUsageObserver
from memrules._engine.contract import DEFAULT_WARNING_MARKER, Strategy, StrategyFactory
from memrules._engine.interpreter import NamedStrategy
from memrules.graph.extract import GraphExtractor, extractor_from_config
from memrules.graph.limits import GraphLimits
from memrules.graph.render import GraphContext
from memrules.graph.state import StateStoreConfig
from memrules.memory.config import (
    MemoryStoreConfig,
    RouteMemory,
    check_threshold,
    memory_section,
    stores_section,
)
from memrules.seams._settings import SECTIONS as SEAM_SECTIONS
from memrules.seams._settings import SeamSettings, section_problems
from memrules.strategies import BUILTIN_ORDER, STRATEGIES
from memrules.strategies.registry import checked_factory, near_miss, show, strategy_factory

__all__ = [
    "DEFAULT_ROUTE",
    "ENTRY_POINT_GROUP",
    "ESTIMATE",
    "SECTIONS",
    "SETTINGS",
    "MemoryConfig",
    "default_strategies",
    "load_config",
    "strategy_factory",
]

ENTRY_POINT_GROUP = "memrules.strategies"

DEFAULT_ROUTE = "default"
"""The name of the route a file's top level describes."""

_ROUTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

ESTIMATE = "estimate"
"""The ``encoder_name`` that selects the script-aware estimator instead of tiktoken."""

TEXT_SOURCE = "<YAML text>"
"""How errors name a config given as YAML text rather than a file."""


# --- the settings table: the one definition of what each key accepts -----------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


Check: TypeAlias = Callable[[object], str | None]
"""What a key accepts: None when the value fits, else what was expected."""


def _whole(minimum: int, *, nullable: bool) -> Check:
    expected = f"a whole number of at least {minimum}" + (" or null" if nullable else "")

    def check(value: object) -> str | None:
        if value is None and nullable:
            return None
        return None if _is_int(value) and value >= minimum else expected  # type: ignore[operator]

    return check


def _fraction(value: object) -> str | None:
    if value is None:
        return None
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return None if is_number and 0 < value <= 1 else "a number above 0 and at most 1, or null"  # type: ignore[operator]


def _margin(value: object) -> str | None:
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return None if is_number and 0 <= value < 1 else "a number of at least 0 and below 1"  # type: ignore[operator]


def _count_rule(value: object) -> str | None:
    if isinstance(value, str) and value in COUNT_RULES:
        return None
    return "one of " + ", ".join(COUNT_RULES)


def _flag(value: object) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def _marker(value: object) -> str | None:
    return None if isinstance(value, str) and value else "a non-empty string"


def _encoder(value: object) -> str | None:
    if value == ESTIMATE:
        return None
    if is_scheme(value):
        return scheme_problem(str(value))
    known = isinstance(value, str) and value in tiktoken.list_encoding_names()
    if isinstance(value, str) and value and not known:
        try:
            tiktoken.model.encoding_name_for_model(value)
            known = True
        except KeyError:
            pass
    if not known:
        names = ", ".join(sorted(tiktoken.list_encoding_names()))
        return (
            f"a tiktoken encoder ({names}), a model name such as 'gpt-4o', {ESTIMATE!r}, "
            f"or {DESCRIBED}"
        )
    try:
        load_encoding(str(value))
    except EncodingError as exc:
        return f"an encoder that loads ({exc})"
    return None


SETTINGS: Mapping[str, Check] = types.MappingProxyType(
    {
        "encoder_name": _encoder,
        "count_rule": _count_rule,
        "safety_margin": _margin,
        "context_window_tokens": _whole(1, nullable=False),
        "max_messages": _whole(1, nullable=True),
        "max_tokens": _whole(1, nullable=True),
        "max_fraction": _fraction,
        "warn_fraction": _fraction,
        "offload_turns": _whole(1, nullable=False),
        "warning_marker": _marker,
        "repair": _flag,
        "user_first": _flag,
    }
)
"""The scalar keys a config sets, each with its check: the one definition
that :class:`MemoryConfig` and the YAML reader share."""


# --- sections: keys whose value is a mapping -------------------------------------

Section: TypeAlias = Callable[[Node], object]
"""Reads one section's YAML node into its value; returns a list of
:class:`ConfigProblem` (each at ``key.field``, with its line) instead when
the node cannot be used. A null node gives the section's default."""


def _section_problems(key: str, node: Node, exc: ConfigError) -> list[ConfigProblem]:
    """``exc``'s problems placed at the section's fields and their lines."""
    placed = []
    for p in exc.problems:
        field = p.yaml_path.removeprefix(f"{key}.").split(".", 1)[0]
        line = node.key_lines.get(field, node.line) if node.is_mapping else node.line
        yaml_path = p.yaml_path if p.yaml_path.startswith(f"{key}.") else key
        placed.append(attrs.evolve(p, yaml_path=yaml_path, line=line))
    return placed


def _mapping_section(
    key: str, build: Callable[..., object], *, default: object, fields: tuple[str, ...] = ()
) -> Section:
    """A section read by ``build(**fields)``: a mapping of its parameters
    (``fields`` when its signature takes ``**kwargs``), or null for
    ``default``. ``build`` raises :class:`ConfigError` for values it cannot
    use, at ``key.field`` paths."""

    def read(node: Node) -> object:
        known = fields or _parameters(build)
        if node.value is None:
            return default
        if not node.is_mapping:
            message = f"{key} is a mapping of {', '.join(known)}; got {_type_name(node.plain())}"
            return [ConfigProblem(message=message, yaml_path=key, line=node.line)]
        problems = [
            ConfigProblem(
                message=f"unknown key {name!r}{near_miss(name, known)}; known: {', '.join(known)}",
                yaml_path=f"{key}.{name}",
                line=node.key_lines[name],
            )
            for name in node.value
            if name not in known
        ]
        if problems:
            return problems
        try:
            return build(**{name: value.plain() for name, value in node.value.items()})
        except ConfigError as exc:
            return _section_problems(key, node, exc)

    return read


def _state_store_section(node: Node) -> object:
    """``state_store``: a mapping, or a URL alone (``state_store: valkey://host``)."""
    if isinstance(node.value, str):
        try:
            return StateStoreConfig(url=node.value)
        except ConfigError as exc:
            return _section_problems("state_store", node, exc)
    return _mapping_section("state_store", StateStoreConfig, default=StateStoreConfig())(node)


SECTIONS: Mapping[str, Section] = types.MappingProxyType(
    {
        # The working graph and the conversation state (issue 9).
        "graph_limits": _mapping_section("graph_limits", GraphLimits, default=GraphLimits()),
        "graph_context": _mapping_section("graph_context", GraphContext, default=None),
        "graph_extractor": _mapping_section(
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
    }
)
"""The mapping-valued keys, each with the function that reads its YAML node:
the one definition the YAML reader uses for them (their values' own classes
check themselves when built from Python)."""

# What each section's value must be when MemoryConfig is built from Python.
_SECTION_TYPES: Mapping[str, tuple[tuple[type, ...], str]] = {
    "graph_limits": ((GraphLimits,), "a GraphLimits"),
    "graph_context": ((GraphContext, type(None)), "a GraphContext or None"),
    "state_store": ((StateStoreConfig,), "a StateStoreConfig"),
    "memory": ((RouteMemory, type(None)), "a RouteMemory or None"),
    "memory_store": ((MemoryStoreConfig, type(None)), "a MemoryStoreConfig or None"),
}

FILE_KEYS = ("stores", "routes")
"""Keys of a file's top level only: what every route shares, and the routes."""

KNOWN_KEYS = (*SETTINGS, *SECTIONS, "strategies", *FILE_KEYS)

# Seed names that are no top-level key here, and where they went.
_MOVED = {
    "max_drop_system_observations": (
        "the seed's max_drop_system_observations is drop_observations.max_drop: "
        "'- type: drop_observations' with 'max_drop: N' under strategies"
    ),
}


def _problems(values: Mapping[str, object]) -> list[ConfigProblem]:
    """Every problem with ``values`` (settings by key), each at its key."""
    problems = []
    for key, value in values.items():
        check = SETTINGS.get(key)
        expected = check(value) if check is not None else None
        if expected is not None:
            message = f"{key}={show(value)} must be {expected}"
            problems.append(ConfigProblem(message=message, yaml_path=key))
    for key, (kinds, expected) in _SECTION_TYPES.items():
        if key in values and not isinstance(values[key], kinds):
            message = f"{key}={values[key]!r} must be {expected}"
            problems.append(ConfigProblem(message=message, yaml_path=key))
    extractor = values.get("graph_extractor")
    if extractor is not None and not callable(extractor):
        message = f"graph_extractor={extractor!r} must be a callable (conversation) -> MemoryGraph"
        problems.append(ConfigProblem(message=message, yaml_path="graph_extractor"))
    if values.get("max_tokens") is not None and values.get("max_fraction") is not None:
        message = (
            f"max_tokens={values['max_tokens']!r} and max_fraction={values['max_fraction']!r} "
            "are both set; keep one (max_tokens alone replaces the default max_fraction)"
        )
        problems.append(ConfigProblem(message=message, yaml_path="max_fraction"))
    return problems


_NO_MEMORY_STORE = "memory is enabled but there is no stores.memory"


def _local_qdrant(settings: object) -> str | None:
    """The directory of a Qdrant store in local mode on disk, if it is one."""
    if not isinstance(settings, (SeamSettings, MemoryStoreConfig)):
        return None
    store = settings.store if isinstance(settings, MemoryStoreConfig) else settings
    params = dict(store.params)
    if store.kind != "qdrant" or params.get("url") is not None:
        return None
    path = params.get("path", "memrules_qdrant")
    return None if path == ":memory:" else os.path.abspath(str(path))


def _memory_problems(config: MemoryConfig) -> list[ConfigProblem]:
    """What is wrong with a config's retrieval memory and routes."""
    problems = []
    memory, store = config.memory, config.memory_store
    if isinstance(memory, RouteMemory) and memory.enabled and store is None:
        message = (
            f"{_NO_MEMORY_STORE}: add stores.memory (the store every route shares) at the top "
            "of the file, or memory_store=MemoryStoreConfig(...) in Python"
        )
        problems.append(ConfigProblem(message=message, yaml_path="memory"))
    if (
        isinstance(memory, RouteMemory)
        and isinstance(store, MemoryStoreConfig)
        and memory.threshold is not None
    ):
        wrong = check_threshold(memory.threshold, store.search, "threshold")
        if wrong is not None:
            problems.append(ConfigProblem(message=wrong, yaml_path="memory.threshold"))
    if isinstance(memory, RouteMemory) and isinstance(store, MemoryStoreConfig):
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
        if not isinstance(name, str) or not _ROUTE_NAME.fullmatch(name):
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
    """The seed's default pipeline: the eight built-ins, each with defaults."""
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

    ``encoder_name`` is a tiktoken encoder or model name, ``"estimate"``
    for the script-aware estimator, ``"hf:<tokenizer.json, directory or
    package>"`` for a Hugging Face tokenizer, or ``"anthropic:<model>"`` for
    Anthropic's count-tokens endpoint. ``count_rule`` frames each message's
    count the way a provider does (``"openai"``, ``"anthropic"``, or
    ``"seed"`` for the seed's unframed ``"<role> <text>"``; see
    :mod:`memrules._counting.framing`), and ``safety_margin`` keeps that fraction of
    a token budget free (0.05: compact to 95% of it). ``strategies`` are
    strategy callables (or
    :class:`NamedStrategy`), the seed's eight by default. ``observers`` and
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
    ``repair`` removes input that is already broken (a tool result whose call
    is absent, two results for one call, a result before its call) instead of
    only reporting it; ``user_first`` keeps the first non-system message a
    user message when the input's was. ``store``, ``embedder`` and
    ``summarizer`` are the seam sections (see :mod:`memrules.seams._settings`;
    None: absent). ``source`` is the file the config came from, if any.
    """

    encoder_name: str = "cl100k_base"
    count_rule: str = DEFAULT_COUNT_RULE
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
    repair: bool = False
    user_first: bool = False
    memory: RouteMemory | None = None
    memory_store: MemoryStoreConfig | None = None
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
    source: str | None = None

    def __attrs_post_init__(self) -> None:
        keys = (*SETTINGS, *_SECTION_TYPES, "graph_extractor")
        problems = _problems({key: getattr(self, key) for key in keys})
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

    # route() and close() are defined by the plugin layer
    # (memrules._plugin.routes), which builds and owns what is live.
    route: ClassVar[Callable[..., Any]]
    close: ClassVar[Callable[[MemoryConfig], None]]

    @property
    def trigger(self) -> Trigger:
        return Trigger(
            max_messages=self.max_messages,
            max_tokens=self.max_tokens,
            max_fraction=self.max_fraction,
            context_window_tokens=self.context_window_tokens,
            safety_margin=self.safety_margin,
        )


# --- reading YAML -------------------------------------------------------------------


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"{type(value).__name__} {value!r}"


def _is_file(source: str) -> bool:
    try:
        return Path(source).is_file()
    except (OSError, ValueError):  # too long for a path, or holds a NUL
        return False


def _is_text(source: str) -> bool:
    """A str that is YAML text, not a path: every non-empty config has a ':'."""
    return "\n" in source or ":" in source or source.strip() in ("", "{}")


def _read_file(path: str) -> str:
    """The file's text, refusing files over :data:`MAX_CONFIG_BYTES` before
    reading them (and reading no more than that from a pipe or device)."""
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            data = b"" if size > MAX_CONFIG_BYTES else file.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError.single("config file not found", path=path) from None
    except IsADirectoryError:
        raise ConfigError.single("is a directory, not a config file", path=path) from None
    except OSError as exc:
        msg = f"cannot read config file: {exc.strerror or exc}"
        raise ConfigError.single(msg, path=path) from None
    if size > MAX_CONFIG_BYTES or len(data) > MAX_CONFIG_BYTES:
        shown = f"{size:,} bytes" if size > MAX_CONFIG_BYTES else "over the limit"
        msg = f"config file is {shown}; the limit is {MAX_CONFIG_BYTES:,} bytes"
        raise ConfigError.single(msg, path=path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        msg = f"config file is not UTF-8 text: {exc.reason} at byte {exc.start}"
        raise ConfigError.single(msg, path=path, line=line) from None


def _read_source(source: str | Path) -> tuple[str, str | None]:
    """The YAML text and its file name (None for text).

    A ``Path`` is a file. A ``str`` is a file when it names an existing one;
    else it is YAML text when it holds a newline or a ``:`` (or is blank or
    ``{}``); else it is a file that does not exist.
    """
    if isinstance(source, Path):
        return _read_file(str(source)), str(source)
    if not isinstance(source, str):
        msg = f"a config is a Path or YAML text, got {type(source).__name__}"
        raise ConfigError.single(msg)
    if _is_file(source):
        return _read_file(source), source
    if _is_text(source):
        return source, None
    msg = "config file not found"
    if not source.endswith((".yaml", ".yml")):
        msg += " (a str with no newline and no ':' is a file path; YAML text has one)"
    raise ConfigError.single(msg, path=source)


def _unknown_key(key: str, registry: Mapping[str, StrategyFactory]) -> str:
    if key in _MOVED:
        return f"unknown key {key!r}; {_MOVED[key]}"
    owners = [name for name, factory in registry.items() if key in _parameters(factory)]
    if owners:
        return (
            f"unknown key {key!r}; it is a parameter of {', '.join(owners)}: "
            f"set it on a strategies entry of that type"
        )
    return f"unknown key {key!r}{near_miss(key, KNOWN_KEYS)}; known keys: {', '.join(KNOWN_KEYS)}"


def _parameters(factory: Callable[..., Any]) -> tuple[str, ...]:
    try:
        return tuple(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        return ()


def load_config(
    source: str | Path,
    *,
    registry: Mapping[str, StrategyFactory] | None = None,
    allow_imports: bool | Iterable[str] = (),
) -> MemoryConfig:
    """Read and validate a YAML config from a file or from YAML text.

    ``source`` is a file when it is a :class:`~pathlib.Path` or a ``str``
    naming an existing file, YAML text when it is a ``str`` with a newline or
    a ``:``; any other ``str`` is a file that was not found. Errors name the
    file, or ``<YAML text>``.

    ``registry`` maps ``type`` names to factories (the built-ins by default;
    it replaces them: pass ``{**STRATEGIES, ...}`` to add). ``allow_imports``
    lists the modules (and their submodules) that ``type:
    "package.module:function"`` may import; none by default, ``True`` for any
    (trusted configs only: importing runs the module's code). Entry points in
    the ``memrules.strategies`` group need no allowing.

    Raises one :class:`ConfigError` listing every problem found.
    """
    text, path = _read_source(source)
    label = path if path is not None else TEXT_SOURCE
    root = parse_yaml(text, path=label)
    registry = STRATEGIES if registry is None else registry
    allowed: bool | tuple[str, ...]
    if isinstance(allow_imports, bool):
        allowed = allow_imports
    elif isinstance(allow_imports, str):  # one module, not its letters
        allowed = (allow_imports,)
    else:
        allowed = tuple(allow_imports)
    if root is None:
        return MemoryConfig(source=path)
    if not root.is_mapping:
        msg = f"a config is a mapping of settings, got {_type_name(root.value)}"
        raise ConfigError.single(msg, path=label, line=root.line)
    problems: list[ConfigProblem] = []
    memory_store: MemoryStoreConfig | None = None
    stores_failed = False
    if "stores" in root.value:
        value = stores_section(root.value["stores"])
        if isinstance(value, list):
            problems.extend(_placed(p, root, "") for p in value)
            stores_failed = True
        else:
            memory_store = value
    routes: dict[str, MemoryConfig] = {}
    routes_node = root.value.get("routes")
    if routes_node is not None and routes_node.value is not None:
        if not routes_node.is_mapping:
            message = (
                "routes is a mapping of route names to their settings, got "
                f"{_type_name(routes_node.plain())}"
            )
            problems.append(
                ConfigProblem(message=message, yaml_path="routes", line=routes_node.line)
            )
        else:
            for name, node in routes_node.value.items():
                built = _route_from_yaml(
                    node, f"routes.{name}.", registry, allowed, memory_store, path
                )
                if isinstance(built, list):
                    problems.extend(built)
                else:
                    routes[name] = built
    fields, found = _fields_from_yaml(root, "", registry, allowed)
    problems.extend(found)
    config: MemoryConfig | None = None
    try:
        config = MemoryConfig(**fields, memory_store=memory_store, routes=routes, source=path)
    except ConfigError as exc:
        for p in exc.problems:
            if p.yaml_path == "embedder" and "store" in root.value:
                continue  # the store: section failed, and is reported already
            problems.append(_placed(p, root, ""))
    if not problems and config is not None and memory_store is not None and not any(
        c.memory is not None for c in (config, *config.routes.values())
    ):
        message = (
            "stores.memory is set but no route has a memory: entry; add memory: {enabled: true} "
            "to the routes that should use it, or remove stores.memory"
        )
        unused = ConfigProblem(message=message, yaml_path="stores.memory")
        problems.append(_placed(unused, root, ""))
    if stores_failed:
        problems = [p for p in problems if _NO_MEMORY_STORE not in p.message]
    if problems or config is None:
        raise ConfigError(sorted(problems, key=lambda p: p.line or 0), path=label)
    return config


def _placed(problem: ConfigProblem, node: Node, prefix: str) -> ConfigProblem:
    """``problem`` (at a path within ``node``) with ``prefix`` before its
    path, and its line when it has none."""
    line = problem.line if problem.line is not None else locate(node, problem.yaml_path)
    return attrs.evolve(problem, yaml_path=prefix + problem.yaml_path, line=line)


def _fields_from_yaml(
    node: Node,
    prefix: str,
    registry: Mapping[str, StrategyFactory],
    allowed: bool | tuple[str, ...],
) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """The settings of one route's mapping ``node`` (the file's top level,
    or an entry of ``routes``), and every problem found, at ``prefix`` +
    the key's path."""
    problems: list[ConfigProblem] = []
    fields: dict[str, Any] = {}
    for key, child in node.value.items():
        line = node.key_lines[key]
        if key == "strategies":
            built = _build_from_yaml(child, registry, allowed)
            if isinstance(built, list):
                problems.extend(_placed(p, node, prefix) for p in built)
            else:
                fields["strategies"] = built
        elif key in SETTINGS:
            fields[key] = child.value
        elif key in SECTIONS:
            value = SECTIONS[key](child)
            if isinstance(value, list):
                # A problem with the section as a whole is at its key's line.
                problems.extend(
                    _placed(attrs.evolve(p, line=line) if p.yaml_path == key else p, node, prefix)
                    for p in value
                )
            else:
                fields[key] = value
        elif key in FILE_KEYS:
            if prefix:
                message = f"{key} belongs at the top of the file, which every route shares"
                problems.append(
                    ConfigProblem(message=message, yaml_path=f"{prefix}{key}", line=line)
                )
        else:
            message = _unknown_key(key, registry)
            problems.append(ConfigProblem(message=message, yaml_path=prefix + key, line=line))
    return fields, problems


def _route_from_yaml(
    node: Node,
    prefix: str,
    registry: Mapping[str, StrategyFactory],
    allowed: bool | tuple[str, ...],
    memory_store: MemoryStoreConfig | None,
    path: str | None,
) -> MemoryConfig | list[ConfigProblem]:
    """One entry of ``routes``: a mapping of the same settings as a file's
    top level (null: every default), with the file's ``stores.memory``."""
    if node.value is None:
        return MemoryConfig(memory_store=memory_store, source=path)
    if not node.is_mapping:
        message = f"a route is a mapping of pipeline settings, got {_type_name(node.plain())}"
        return [ConfigProblem(message=message, yaml_path=prefix.rstrip("."), line=node.line)]
    fields, problems = _fields_from_yaml(node, prefix, registry, allowed)
    try:
        config = MemoryConfig(**fields, memory_store=memory_store, source=path)
    except ConfigError as exc:
        problems.extend(
            _placed(p, node, prefix)
            for p in exc.problems
            if not (p.yaml_path == "embedder" and "store" in node.value)
        )
        return problems
    return problems or config


def _build_from_yaml(
    node: Node, registry: Mapping[str, StrategyFactory], allowed: bool | tuple[str, ...]
) -> tuple[NamedStrategy, ...] | list[ConfigProblem]:
    if not node.is_sequence:
        return [
            ConfigProblem(
                message=f"expected a list of strategies, got {_type_name(node.plain())}",
                yaml_path="strategies",
                line=node.line,
            )
        ]
    problems: list[ConfigProblem] = []
    built: list[NamedStrategy] = []
    for i, item in enumerate(node.value):
        result = _build_one(item, f"strategies[{i}]", registry, allowed)
        if isinstance(result, list):
            problems.extend(result)
        else:
            built.append(result)
    return problems if problems else tuple(built)


_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def _allows(allowed: bool | tuple[str, ...], module: str) -> bool:
    if isinstance(allowed, bool):
        return allowed
    return any(module == a or module.startswith(a + ".") for a in allowed)


def _import(name: str, allowed: bool | tuple[str, ...]) -> tuple[Any, bool] | str:
    """The callable ``package.module:attr`` names, imported only from an allowed module."""
    module_name, _, attr_path = name.partition(":")
    if not _MODULE.fullmatch(module_name) or not attr_path:
        return f"{name!r} is not 'package.module:function'"
    if not _allows(allowed, module_name):
        return (
            f"importing {module_name!r} is not allowed: a config imports only the modules its "
            f"caller allows (load_config(..., allow_imports=[{module_name!r}]), or "
            f"memrules compact --allow-imports {module_name}); entry points need no allowing"
        )
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        return f"cannot import {module_name!r}: {exc}"
    except Exception as exc:
        return f"importing {module_name!r} failed: {type(exc).__name__}: {exc}"
    try:
        for part in attr_path.split("."):
            target = getattr(target, part)
    except AttributeError:
        return f"{module_name!r} has no attribute {attr_path!r}"
    if not callable(target):
        return f"{name!r} is {type(target).__name__}, not a callable"
    return target, bool(getattr(target, "__memrules_factory__", False))


def _resolve(
    name: str, registry: Mapping[str, StrategyFactory], allowed: bool | tuple[str, ...]
) -> tuple[Any, bool] | str:
    """The factory or strategy a ``type`` names, and whether it is a factory;
    or what is wrong."""
    if name in registry:
        return checked_factory(registry[name], name=name), True
    if ":" in name:
        return _import(name, allowed)
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP, name=name):
        try:
            target = entry.load()
        except Exception as exc:
            return f"entry point {name!r} ({entry.value}) failed to load: {exc}"
        return target, bool(getattr(target, "__memrules_factory__", False))
    known = ", ".join(sorted(registry))
    return (
        f"unknown strategy type {name!r}{near_miss(name, registry)}; known types: {known}; "
        f"or 'package.module:function' (an allowed import), or an entry point in the "
        f"{ENTRY_POINT_GROUP!r} group"
    )


def _build_one(
    item: Node, where: str, registry: Mapping[str, StrategyFactory], allowed: bool | tuple[str, ...]
) -> NamedStrategy | list[ConfigProblem]:
    if not item.is_mapping:
        message = f"a strategy is a mapping with a 'type' key, got {_type_name(item.plain())}"
        return [ConfigProblem(message=message, yaml_path=where, line=item.line)]
    type_node = item.value.get("type")
    if type_node is None or not isinstance(type_node.value, str) or not type_node.value:
        message = "a strategy needs a 'type' key naming it"
        return [ConfigProblem(message=message, yaml_path=f"{where}.type", line=item.line)]
    name = type_node.value
    resolved = _resolve(name, registry, allowed)
    if isinstance(resolved, str):
        return [ConfigProblem(message=resolved, yaml_path=f"{where}.type", line=type_node.line)]
    target, is_factory = resolved
    params = {k: v for k, v in item.value.items() if k != "type"}
    if not is_factory:
        if params:
            message = (
                f"{name!r} is a strategy function and takes no parameters; got "
                f"{', '.join(sorted(params))} (decorate a factory with @strategy_factory)"
            )
            return [ConfigProblem(message=message, yaml_path=where, line=item.line)]
        return NamedStrategy(name=name, strategy=target)
    try:
        strategy = target(**{k: v.plain() for k, v in params.items()})
    except ConfigError as exc:
        return [_at_parameter(p, item, where) for p in exc.problems]
    return NamedStrategy(name=name, strategy=strategy)


def _at_parameter(problem: ConfigProblem, item: Node, where: str) -> ConfigProblem:
    """A factory's problem, placed at the parameter it names (or the entry)."""
    key = problem.yaml_path
    if key in item.key_lines:
        return attrs.evolve(problem, yaml_path=f"{where}.{key}", line=item.key_lines[key])
    return attrs.evolve(problem, yaml_path=where, line=item.line)
