"""The pipeline's config: `PipelineConfig`, what shapes compaction (the
budget, counting, the strategies, what survives, what an over-budget request
does), validated when it is built and opening nothing.

This is the core's config: it imports nothing of memory, the graph, the
seams, the provider formats or the plugin (an import-linter contract holds
it to that), so `load_pipeline` of a file that sets only these keys, and
`apply`, load none of them. The service's config (stores, routes, the
working graph, conversation state, retrieval memory: `MemoryConfig`) adds
its fields to these."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from memrules._config.keys import PIPELINE_SECTION_TYPES, SETTINGS, key_problems
from memrules._core.budget import CachePolicy, Trigger
from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.report import OverBudgetMode
from memrules._core.seam_protocols import Seams
from memrules._core.seam_records import DEFAULT_CONTEXT, IndexContext
from memrules._core.survivors import DEFAULT_SURVIVORS, SurvivorRule
from memrules._counting.content import ContentCounting
from memrules._engine.contract import DEFAULT_WARNING_MARKER, Strategy
from memrules._engine.interpreter import NamedStrategy
from memrules.strategies import BUILTIN_ORDER, STRATEGIES

__all__ = ["PipelineConfig", "default_strategies"]


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


def _default_fraction(config: PipelineConfig) -> float | None:
    return None if config.max_tokens is not None else 0.8


@attrs.frozen(kw_only=True, slots=True)
class PipelineConfig:
    """What shapes compaction, validated on construction: a bad value raises
    one `ConfigError` listing every problem, each naming `key=value`
    (`PipelineConfig(max_messages=0)`).

    The fields are `MemoryConfig`'s that a `Pipeline` reads, with the same
    meaning (see `MemoryConfig`): the counter (`model`, `encoder_name`,
    `count_rule`, `counting`), the budget (`context_window_tokens`,
    `max_messages`, `max_tokens`, `max_fraction`, `warn_fraction`,
    `safety_margin`), the strategies and what they keep (`strategies`,
    `survivors`, `offload_turns`, `warning_marker`, `user_first`,
    `repair`, `index_context`), the prompt cache (`cache`) and what an
    over-budget request does (`over_budget`). `source` is the file the
    config came from, if any.

    `load_pipeline` of a file that sets only these keys makes one; a file
    with a service key (`store:`, `memory:`, `graph_context:`, `routes:`...)
    makes a `MemoryConfig`, which is a `PipelineConfig` too.

    >>> PipelineConfig(max_messages=6, strategies=()).trigger.max_messages
    6
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
    strategies: tuple[NamedStrategy, ...] = attrs.field(
        factory=default_strategies, converter=_strategies
    )
    cache: CachePolicy | None = None
    counting: ContentCounting | None = None
    index_context: IndexContext | None = DEFAULT_CONTEXT
    source: str | None = None

    def __attrs_post_init__(self) -> None:
        problems = self._problems()
        if problems:
            raise ConfigError(problems, path=self.source)

    def _problems(self) -> list[ConfigProblem]:
        """Every problem with this config's values (a config that adds
        fields adds their problems)."""
        keys = (*SETTINGS, *PIPELINE_SECTION_TYPES)
        return key_problems({key: getattr(self, key) for key in keys})

    def with_section_seams(self, given: Seams) -> Seams:
        """The seams a pipeline of this config uses: `given`, and, for each
        seam it leaves absent, the one a section of the config describes
        (built, not yet connected). A pipeline's config has no seam
        sections, so this is `given` itself; `MemoryConfig` reads its
        `store:`, `embedder:` and `summarizer:`."""
        return given

    @property
    def trigger(self) -> Trigger:
        return Trigger(
            max_messages=self.max_messages,
            max_tokens=self.max_tokens,
            max_fraction=self.max_fraction,
            context_window_tokens=self.context_window_tokens,
            safety_margin=self.safety_margin,
        )
