"""The reflection gate's configuration (YAML ``stores.memory.reflection``):
`ReflectionConfig`, checked when it is built, and read from its YAML node."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.yaml_nodes import Node
from memrules.memory.patterns import (
    DEFAULT_BLOCK_PATTERNS,
    BlockPattern,
    PatternError,
    compile_pattern,
    first_match,
)

__all__ = ["ReflectionConfig", "reflection_section"]

_DEFAULTS = tuple(compile_pattern(p) for p in DEFAULT_BLOCK_PATTERNS)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_whole(value: object, minimum: int, maximum: int | None = None) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= minimum
        and (maximum is None or value <= maximum)
    )


def _patterns(value: Iterable[str] | None) -> tuple[str, ...]:
    """``block_patterns`` as a tuple: a string is one pattern, null none;
    anything else that is not a list is checked (and refused) as itself."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, Iterable):
        return (value,)
    return tuple(value)


@attrs.frozen(kw_only=True, slots=True)
class ReflectionConfig:
    """The reflection gate (YAML ``stores.memory.reflection``), applied to
    retrieved memories before they are injected (see
    `memrules.memory.gate`): drop those matching a block pattern,
    decay scores by age (half-life ``recency_decay_days``; None: no
    decay), drop near-duplicates (word-set Jaccard at least
    ``dedup_threshold``), order by score, and trim to
    ``max_inject_tokens`` (the script-aware estimate). ``block_patterns``
    are regular expressions added to `DEFAULT_BLOCK_PATTERNS` (or
    used alone with ``default_block_patterns: false``), matched
    case-insensitively by RE2, in time linear in the memory (one RE2
    cannot match so is a `ConfigError`; see
    `memrules.memory.patterns`). ``detector: true`` adds the learned
    detector (`memrules.memory.detector`) after the patterns, for
    each memory and for pairs of them, at its trained threshold or at
    ``detector_threshold`` (a probability above 0 and at most 1: lower
    blocks more); it is off by default because it blocks too many
    ordinary conversation turns (see the retrieval guide). The same checks
    refuse a poisoned memory when it is stored. ``enabled: false`` injects what retrieval found, in
    its order, untouched."""

    enabled: bool = True
    max_inject_tokens: int = 2048
    recency_decay_days: float | None = 30.0
    dedup_threshold: float = 0.9
    block_patterns: tuple[str, ...] = attrs.field(default=(), converter=_patterns)
    default_block_patterns: bool = True
    detector: bool = False
    detector_threshold: float | None = None
    compiled: tuple[BlockPattern, ...] = attrs.field(init=False, eq=False, repr=False, hash=False)

    def __attrs_post_init__(self) -> None:
        problems = []

        def problem(key: str, message: str) -> None:
            where = f"stores.memory.reflection.{key}"
            problems.append(ConfigProblem(message=message, yaml_path=where))

        for key in ("enabled", "default_block_patterns", "detector"):
            if not isinstance(getattr(self, key), bool):
                problem(key, f"{key}={getattr(self, key)!r} must be true or false")
        if not _is_whole(self.max_inject_tokens, 1):
            problem(
                "max_inject_tokens",
                f"max_inject_tokens={self.max_inject_tokens!r} must be a whole number of at "
                "least 1",
            )
        decay = self.recency_decay_days
        if decay is not None and not (_is_number(decay) and 0 < decay < float("inf")):
            problem(
                "recency_decay_days",
                f"recency_decay_days={decay!r} must be a number of days above 0, or null "
                "for no decay",
            )
        dedup = self.dedup_threshold
        if not (_is_number(dedup) and 0 < dedup <= 1):
            problem("dedup_threshold", f"dedup_threshold={dedup!r} must be above 0 and at most 1")
        cut = self.detector_threshold
        if cut is not None and not (_is_number(cut) and 0 < cut <= 1):
            problem(
                "detector_threshold",
                f"detector_threshold={cut!r} must be a probability above 0 and at most 1, or "
                "null for the trained threshold",
            )
        compiled = []
        for i, pattern in enumerate(self.block_patterns):
            if not isinstance(pattern, str) or not pattern:
                problem(f"block_patterns[{i}]", f"{pattern!r} must be a regular expression")
                continue
            try:
                compiled.append(compile_pattern(pattern))
            except PatternError as exc:
                problem(
                    f"block_patterns[{i}]",
                    f"{pattern!r} is not a regular expression the gate can match in bounded "
                    f"time: {exc}",
                )
        if problems:
            raise ConfigError(problems)
        defaults = _DEFAULTS if self.default_block_patterns else ()
        object.__setattr__(self, "compiled", (*defaults, *compiled))

    def blocks(self, text: str) -> BlockPattern | None:
        """The first block pattern a form of ``text`` matches, if any (see
        `first_match`)."""
        return first_match(text, self.compiled, squeezed=self.default_block_patterns)


def reflection_section(node: object) -> ReflectionConfig:
    """The gate's settings from ``node`` (null: the defaults)."""
    assert isinstance(node, Node)
    if node.value is None:
        return ReflectionConfig()
    if not node.is_mapping:
        msg = f"reflection is a mapping of the gate's settings, got {node.plain()!r}"
        raise ConfigError.single(msg, yaml_path="stores.memory.reflection")
    known = [f.name for f in attrs.fields(ReflectionConfig) if f.init]
    unknown = [k for k in node.value if k not in known]
    if unknown:
        raise ConfigError(
            [
                ConfigProblem(
                    message=f"unknown key {k!r}; known keys: {', '.join(known)}",
                    yaml_path=f"stores.memory.reflection.{k}",
                )
                for k in unknown
            ]
        )
    values = {k: v.plain() for k, v in node.value.items()}
    patterns = values.get("block_patterns")
    if patterns is not None and not isinstance(patterns, tuple):
        msg = f"block_patterns={patterns!r} must be a list of regular expressions"
        raise ConfigError.single(msg, yaml_path="stores.memory.reflection.block_patterns")
    return ReflectionConfig(**values)
