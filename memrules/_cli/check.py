"""``memrules check CONFIG...``: validate configs without running them.

Each config is read and validated as ``memrules compact`` would read it
(the same trust flags), and nothing is opened: no store, model or network.
A config that loads is printed as it resolves: per route, the budget the
trigger keys set, the counter, the pipeline's strategies with every
parameter (defaults filled in), and the seams (store, embedder, summarizer,
retrieval memory). A config that does not load prints every problem, one
line each, with its file, line and YAML path. Every file is checked, even
after one fails; the exit status is 2 when any failed, 0 otherwise.

>>> from memrules._config.load import load_config
>>> print(describe(load_config("max_messages: 6\\nstrategies: [{type: sliding_window}]")))
<YAML text>: ok
  route default:
    budget: more than 6 messages
    counter: the request's model (else the larger of cl100k_base and o200k_base), count rule openai
    survivors: first system message, task, question, latest user; requests start with a user message
    pipeline: 1 strategy
      1. sliding_window(keep_messages=40)
    seams: none
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import attrs

from memrules._config.config import MemoryConfig
from memrules._config.keys import TEXT_SOURCE
from memrules._config.load import load_config
from memrules._core.budget import Budget, resolve_budget
from memrules._core.errors import ConfigError
from memrules._counting.models import count_rule_for, model_counting

__all__ = ["CheckOutcome", "check_configs", "describe"]


def _budget(config: MemoryConfig) -> str:
    """The budget in words, with the keys it comes from."""
    budget = resolve_budget(config.trigger)
    if budget == Budget.UNLIMITED:
        return "unlimited (no trigger: nothing is compacted)"
    if budget.kind == "messages":
        return f"more than {budget.limit:,} messages"
    if config.max_tokens is not None:
        source = f"max_tokens {config.max_tokens:,}"
    else:
        source = (
            f"max_fraction {config.max_fraction} of a {config.context_window_tokens:,}-token window"
        )
    if config.safety_margin:
        source += f", less a safety margin of {config.safety_margin}"
    return f"{budget.limit:,} tokens ({source})"


def _seams(config: MemoryConfig) -> list[str]:
    found = [
        f"{name}: {section!r}"
        for name, section in (
            ("store", config.store),
            ("embedder", config.embedder),
            ("summarizer", config.summarizer),
        )
        if section is not None
    ]
    if config.memory is not None and config.memory_store is not None:
        found.append(f"retrieval memory: {config.memory!r}")
        found.append(f"retrieval store: {config.memory_store.store!r}")
        found.append(f"retrieval embedding: {config.memory_store.embedding!r}")
    if config.graph_context is not None:
        found.append(f"working graph: {config.graph_context!r}")
    if config.graph_extractor is not None:
        found.append(f"graph extractor: {config.graph_extractor!r}")
    return found


def _survivors(config: MemoryConfig) -> str:
    """What no strategy may remove, in words."""
    rule = config.survivors
    kept = ["first system message", *(["task"] if rule.task else []), "question", "latest user"]
    if rule.pin:
        kept.append(f"{len(rule.pin)} pin rule{'s' if len(rule.pin) > 1 else ''}")
    text = ", ".join(kept)
    if rule.harness:
        text += f"; {len(rule.harness)} harness rule{'s' if len(rule.harness) > 1 else ''}"
    return text + ("; requests start with a user message" if config.user_first else "")


def _counter(config: MemoryConfig) -> str:
    """What counts the route's tokens, as ``memrules check`` says it."""
    rule = count_rule_for(config.count_rule, config.encoder_name, config.model)
    if config.encoder_name is not None:
        return f"{config.encoder_name}, count rule {rule}"
    row = model_counting(config.model)
    if row is None:
        return (
            "the request's model (else the larger of cl100k_base and o200k_base), "
            f"count rule {rule}"
        )
    margin = "" if row.exact else f" x {row.margin:g} (an estimate)"
    return f"{row.encoder}{margin} for {config.model}, count rule {rule}"


def _route(name: str, config: MemoryConfig) -> list[str]:
    strategies = config.strategies
    count = f"{len(strategies)} strateg{'y' if len(strategies) == 1 else 'ies'}"
    lines = [
        f"  route {name}:",
        f"    budget: {_budget(config)}",
        f"    counter: {_counter(config)}",
        f"    survivors: {_survivors(config)}",
        f"    pipeline: {count}",
        *(f"      {i}. {s.strategy!r}" for i, s in enumerate(strategies, 1)),
    ]
    seams = _seams(config)
    if seams:
        lines.append("    seams:")
        lines.extend(f"      {line}" for line in seams)
    else:
        lines.append("    seams: none")
    return lines


def describe(config: MemoryConfig) -> str:
    """What ``config`` resolves to, route by route, as ``check`` prints it."""
    lines = [f"{config.source or TEXT_SOURCE}: ok"]
    for name in config.route_names:
        lines.extend(_route(name, config.route_config(name)))
    return "\n".join(lines)


@attrs.frozen(kw_only=True)
class CheckOutcome:
    """What checking some configs gave: the text for stdout (one block per
    config that loaded), the problem lines for stderr, and whether every
    config loaded."""

    report: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def check_configs(
    paths: Iterable[str], *, allow_imports: bool | Iterable[str] = ()
) -> CheckOutcome:
    """Load each config in ``paths``; every problem of every config, one
    ``file:line: yaml.path: message`` line each."""
    report: list[str] = []
    problems: list[str] = []
    allowed = allow_imports if isinstance(allow_imports, bool) else tuple(allow_imports)
    for path in paths:
        if not Path(path).is_file():
            problems.append(f"{path}: no such file")
            continue
        try:
            config = load_config(Path(path), allow_imports=allowed)
        except ConfigError as exc:
            problems.extend(p.render(exc.path or path) for p in exc.problems)
            continue
        report.append(describe(config))
    return CheckOutcome(report=tuple(report), problems=tuple(problems))
