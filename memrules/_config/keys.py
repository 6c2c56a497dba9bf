"""The pipeline's keys: what each top-level key accepts (`SETTINGS`,
one check per key), the pipeline's keys whose value is a mapping
(`PIPELINE_SECTIONS`, each read by its own function), and the
constants every reader shares (the default route, the entry-point group of
installed strategies).

This is the core's half of the table: it imports nothing of the service
(memory, graph, seams, provider formats). The service's sections (stores,
routes, the working graph, conversation state, retrieval memory, provider
editing) are in `memrules._config.service_keys`, which adds them to these."""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import attrs

from memrules._config.survivors import survivors_from_config
from memrules._core.budget import CachePolicy
from memrules._core.errors import ConfigError, ConfigProblem, EncodingError
from memrules._core.report import OVER_BUDGET_MODES
from memrules._core.seam_records import DEFAULT_CONTEXT, IndexContext
from memrules._core.survivors import DEFAULT_SURVIVORS, SurvivorRule
from memrules._core.yaml_nodes import Node
from memrules._counting.content import ContentCounting, counting_from_config
from memrules._counting.framing import COUNT_RULES
from memrules._counting.models import FAMILIES, TABLE_DATE, model_counting
from memrules._counting.schemes import DESCRIBED, is_scheme, scheme_problem
from memrules._counting.tokens import BUNDLED, is_bundled, load_encoding, preload_encoding
from memrules.strategies.registry import near_miss, show

__all__ = [
    "DEFAULT_ROUTE",
    "ENTRY_POINT_GROUP",
    "ESTIMATE",
    "MOVED",
    "PIPELINE_KEYS",
    "PIPELINE_SECTIONS",
    "PIPELINE_SECTION_TYPES",
    "ROUTE_NAME",
    "SETTINGS",
    "TEXT_SOURCE",
    "Section",
    "SectionTypes",
    "key_problems",
    "mapping_section",
    "parameters",
    "section_problems",
    "type_name",
]


ENTRY_POINT_GROUP = "memrules.strategies"

DEFAULT_ROUTE = "default"
"""The name of the route a file's top level describes."""

ROUTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

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
    if value is None or (isinstance(value, str) and value in COUNT_RULES):
        return None
    return "one of " + ", ".join(COUNT_RULES) + ", or null for the model's"


def _model(value: object) -> str | None:
    if value is None or (isinstance(value, str) and model_counting(value) is not None):
        return None
    return (
        f"a model of the counting table of {TABLE_DATE.isoformat()} ({FAMILIES}), or null; "
        "for another model, set encoder_name instead"
    )


def _flag(value: object) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def _marker(value: object) -> str | None:
    return None if isinstance(value, str) and value else "a non-empty string"


def _encoder(value: object) -> str | None:
    if value is None or value == ESTIMATE:
        return None
    if is_scheme(value):
        return scheme_problem(str(value))
    if not (isinstance(value, str) and is_bundled(value)):
        names = ", ".join(BUNDLED)
        return (
            f"an encoding memrules ships ({names}), an OpenAI model name such as 'gpt-4o', "
            f"{ESTIMATE!r}, or {DESCRIBED}; other encodings would be downloaded at run time, "
            "and memrules never does"
        )
    try:
        # A bundled vocabulary loads offline: in the background, not in the check.
        if not preload_encoding(str(value)):
            load_encoding(str(value))
    except EncodingError as exc:
        return f"an encoder that loads ({exc})"
    return None


def _flag_or_null(value: object) -> str | None:
    return None if value is None or isinstance(value, bool) else "true, false or null"


def _over_budget(value: object) -> str | None:
    return None if value in OVER_BUDGET_MODES else "one of " + ", ".join(OVER_BUDGET_MODES)


SETTINGS: Mapping[str, Check] = types.MappingProxyType(
    {
        "model": _model,
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
        "repair": _flag_or_null,
        "user_first": _flag,
        "over_budget": _over_budget,
    }
)
"""The scalar keys a config sets, each with its check: the one definition
that the configs and the YAML reader share."""


# --- sections: keys whose value is a mapping -------------------------------------

Section: TypeAlias = Callable[[Node], object]
"""Reads one section's YAML node into its value; returns a list of
`ConfigProblem` (each at ``key.field``, with its line) instead when
the node cannot be used. A null node gives the section's default."""


def section_problems(key: str, node: Node, exc: ConfigError) -> list[ConfigProblem]:
    """``exc``'s problems placed at the section's fields and their lines."""
    placed = []
    for p in exc.problems:
        field = p.yaml_path.removeprefix(f"{key}.").split(".", 1)[0]
        line = node.key_lines.get(field, node.line) if node.is_mapping else node.line
        if p.yaml_path.startswith(f"{key}."):
            yaml_path = p.yaml_path
        elif node.is_mapping and field in node.key_lines:
            yaml_path = f"{key}.{p.yaml_path}"  # a value class that names its field alone
        else:
            yaml_path = key
        placed.append(attrs.evolve(p, yaml_path=yaml_path, line=line))
    return placed


def mapping_section(
    key: str, build: Callable[..., object], *, default: object, fields: tuple[str, ...] = ()
) -> Section:
    """A section read by ``build(**fields)``: a mapping of its parameters
    (``fields`` when its signature takes ``**kwargs``), or null for
    ``default``. ``build`` raises `ConfigError` for values it cannot
    use, at ``key.field`` paths."""

    def read(node: Node) -> object:
        known = fields or parameters(build)
        if node.value is None:
            return default
        if not node.is_mapping:
            message = f"{key} is a mapping of {', '.join(known)}; got {type_name(node.plain())}"
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
            return section_problems(key, node, exc)

    return read


_INDEX_CONTEXT = mapping_section(
    "index_context",
    IndexContext,
    default=DEFAULT_CONTEXT,
    fields=tuple(f.name for f in attrs.fields(IndexContext)),
)


def _index_context_section(node: Node) -> object:
    """``index_context``: what ``remember`` and ``offload`` index a message
    by besides its own text (an `IndexContext`'s fields: ``before``,
    ``after``, ``neighbour_chars``, ``time``, ``dates``), ``false`` for its
    own text only, or null (or true) for the default context."""
    if node.value is False:
        return None
    if node.value is True:
        return DEFAULT_CONTEXT
    if node.value is not None and not node.is_mapping:
        known = ", ".join(f.name for f in attrs.fields(IndexContext))
        message = (
            f"index_context is a mapping of {known}, or false for each message's "
            f"own text only; got {type_name(node.plain())}"
        )
        return [ConfigProblem(message=message, yaml_path="index_context", line=node.line)]
    return _INDEX_CONTEXT(node)


PIPELINE_SECTIONS: Mapping[str, Section] = types.MappingProxyType(
    {
        # What remember and offload index a message by (memrules._core.seam_records).
        "index_context": _index_context_section,
        # Keeping the provider's prompt cache (memrules._core.budget.CachePolicy).
        "cache": mapping_section("cache", CachePolicy, default=None),
        # What images, documents and reasoning cost (memrules._counting.content).
        "counting": mapping_section("counting", counting_from_config, default=None),
        # What no strategy may remove (memrules._core.survivors).
        "survivors": mapping_section(
            "survivors",
            survivors_from_config,
            default=DEFAULT_SURVIVORS,
            fields=("task", "pin", "harness"),
        ),
    }
)
"""The pipeline's mapping-valued keys, each with the function that reads its
YAML node (their values' own classes check themselves when built from
Python)."""

SectionTypes: TypeAlias = Mapping[str, tuple[tuple[type, ...], str]]
"""What each section's value must be when a config is built from Python."""

PIPELINE_SECTION_TYPES: SectionTypes = {
    "cache": ((CachePolicy, type(None)), "a CachePolicy or None"),
    "index_context": ((IndexContext, type(None)), "an IndexContext or None"),
    "counting": ((ContentCounting, type(None)), "a ContentCounting or None"),
    "survivors": ((SurvivorRule,), "a SurvivorRule"),
}

PIPELINE_KEYS = (*SETTINGS, *PIPELINE_SECTIONS, "strategies")
"""Every key the pipeline's config reads; a file with others is the service's."""

# Names of earlier configs that are no top-level key now, and where they went.
MOVED = {
    "max_drop_system_observations": (
        "max_drop_system_observations is now drop_observations.max_drop: "
        "'- type: drop_observations' with 'max_drop: N' under strategies"
    ),
}


def key_problems(
    values: Mapping[str, object], section_types: SectionTypes = PIPELINE_SECTION_TYPES
) -> list[ConfigProblem]:
    """Every problem with ``values`` (settings and sections by key), each at
    its key: a setting its check refuses, a section of a type not in
    ``section_types``."""
    problems = []
    for key, value in values.items():
        check = SETTINGS.get(key)
        expected = check(value) if check is not None else None
        if expected is not None:
            message = f"{key}={show(value)} must be {expected}"
            problems.append(ConfigProblem(message=message, yaml_path=key))
    for key, (kinds, expected) in section_types.items():
        if key in values and not isinstance(values[key], kinds):
            message = f"{key}={values[key]!r} must be {expected}"
            problems.append(ConfigProblem(message=message, yaml_path=key))
    if values.get("max_tokens") is not None and values.get("max_fraction") is not None:
        message = (
            f"max_tokens={values['max_tokens']!r} and max_fraction={values['max_fraction']!r} "
            "are both set; keep one (max_tokens alone replaces the default max_fraction)"
        )
        problems.append(ConfigProblem(message=message, yaml_path="max_fraction"))
    return problems


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"{type(value).__name__} {value!r}"


def parameters(factory: Callable[..., Any]) -> tuple[str, ...]:
    try:
        return tuple(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        return ()
