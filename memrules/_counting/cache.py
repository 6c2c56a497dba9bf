"""How many tokens of a request a provider's prompt cache can serve, and what it costs.

Pure: no clock, no I/O. The caller gives the previous request of the
conversation and this one (`Sent`: the messages and each one's token
count) and, for lifetimes, the seconds since the previous request.

The shared prefix is message-level: the leading messages equal by value, in
order (``Message`` equality). A provider never serves more than that, and
each provider's rule serves less:

OpenAI (`OpenAIRule`)
    Automatic. Nothing is served unless the request is at least ``minimum``
    tokens (1,024); what is served is the shared prefix rounded down to a
    multiple of ``step`` (128), and nothing once ``lifetime`` seconds have
    passed (in-memory retention: caches are cleared after 5 to 10 minutes
    idle, so 300 s by default; ``24h`` retention is ``lifetime=86400``).
    Every uncached token of a request long enough to cache is written; the
    write is billed at the family's ``write`` multiplier (1.0, i.e. no fee,
    before the GPT-5.6 family; 1.25 from it on).
Anthropic (`AnthropicRule`)
    Served up to the last ``cache_control`` breakpoint of the previous
    request that lies within the shared prefix, whose prefix is at least the
    model's minimum and whose lifetime (``5m`` by default, ``1h`` when its
    ``ttl`` says so) has not passed, provided this request has a breakpoint
    at or after it (the provider looks back from each breakpoint, up to
    about 20 blocks, for an entry; that limit is not modelled). Breakpoints
    are read where the Anthropic adapter keeps them: a block's unmapped
    keys in ``extra["anthropic"]`` (text, tool use, tool result and the
    text blocks inside a result) and an opaque block's
    ``payload`` (images, documents); a breakpoint counts at the end of the
    message holding it (token positions inside a message are not known).
    Only the first ``max_breakpoints`` (4, the API's limit) count.
    ``automatic=True`` is the request-level ``cache_control``: one more
    breakpoint on the last message. Written: the tokens from what was served
    up to the last breakpoint, each segment between breakpoints billed at
    its breakpoint's lifetime (1.25x for 5 minutes, 2x for an hour).

Sources, read 2026-12-01 through the docs search: OpenAI's prompt caching
guide (developers.openai.com/api/docs/guides/prompt-caching: automatic from
1,024 tokens, hits in 128-token increments, write fee 1.25x from GPT-5.6);
Anthropic's prompt caching page (platform.claude.com/docs/en/build-with-claude/
prompt-caching) and copies of its tables on gateway docs (docs.orq.ai,
docs.litellm.ai, docs.electronhub.ai): at most 4 breakpoints, 5-minute or
1-hour lifetime, writes 1.25x / 2x, reads 0.1x, minimum 1,024 tokens for
Sonnet 4.x, Opus 4/4.1 and 4.8; 2,048 for Haiku 3/3.5 and Opus 4.7; 4,096
for Opus 4.5/4.6 and Haiku 4.5; 512 for the 5-series Opus. The sources
disagree on Sonnet 4.6 (1,024 or 2,048); the table says 2,048, the safer
figure for a cost estimate. OpenAI's cached-input rates per family are the
pricing page's (gpt-4o 0.5x, gpt-4.1 and o-series 0.25x, gpt-5 0.1x); set
your own `PriceTable` when they change.

>>> from memrules import message
>>> system = message("system", "rules")
>>> before = Sent(messages=(system, message("user", "a")), counts=(2000, 10))
>>> now = Sent(messages=(*before.messages, message("user", "b")), counts=(2000, 10, 30))
>>> m = measure(before, now, OpenAIRule())
>>> m.shared, m.cached, m.uncached
(2010, 1920, 120)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

import attrs

from memrules._core.messages import Message, Opaque, Text, ToolCall, ToolResult
from memrules._core.prompt_cache import SECONDS, CacheMeasure, Lifetime, Sent, breakpoints

__all__ = [
    "ANTHROPIC_MINIMUMS",
    "DEFAULT_PRICES",
    "PRICES_READ",
    "AnthropicRule",
    "CacheMeasure",
    "CacheRule",
    "FamilyPrice",
    "OpenAIRule",
    "PriceTable",
    "Sent",
    "breakpoints",
    "is_warm",
    "lifetime",
    "measure",
    "rule_for",
    "shared_messages",
    "without_controls",
]

PRICES_READ = "2026-12-01"
"""The date the default prices and minimums were read."""

_SECONDS = SECONDS


@attrs.frozen(kw_only=True, slots=True)
class FamilyPrice:
    """Multipliers of one model family's input price: ``cached`` for a
    token served from the cache, ``write`` for a token written with the
    default lifetime, ``write_long`` with the long one (Anthropic's hour).
    ``prefix`` matches model names (``claude-sonnet-4``)."""

    prefix: str
    cached: float
    write: float = 1.0
    write_long: float = 1.0


@attrs.frozen(kw_only=True, slots=True)
class PriceTable:
    """Families by model-name prefix; the longest matching prefix wins."""

    families: tuple[FamilyPrice, ...]

    def for_model(self, model: str) -> FamilyPrice:
        best: FamilyPrice | None = None
        for family in self.families:
            if model.startswith(family.prefix) and (
                best is None or len(family.prefix) > len(best.prefix)
            ):
                best = family
        if best is None:
            known = ", ".join(f.prefix for f in self.families)
            msg = f"model={model!r} matches no price family; known prefixes: {known}"
            raise KeyError(msg)
        return best


DEFAULT_PRICES = PriceTable(
    families=(
        FamilyPrice(prefix="gpt-4o", cached=0.5),
        FamilyPrice(prefix="gpt-4.1", cached=0.25),
        FamilyPrice(prefix="o3", cached=0.25),
        FamilyPrice(prefix="o4", cached=0.25),
        FamilyPrice(prefix="gpt-5", cached=0.1),
        FamilyPrice(prefix="gpt-5.6", cached=0.1, write=1.25, write_long=1.25),
        FamilyPrice(prefix="claude", cached=0.1, write=1.25, write_long=2.0),
    )
)
"""Multipliers read on `PRICES_READ` (see the module docs)."""

ANTHROPIC_MINIMUMS: tuple[tuple[str, int], ...] = (
    ("claude-opus-5", 512),
    ("claude-opus-4-8", 1024),
    ("claude-opus-4-7", 2048),
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-opus-4", 1024),
    ("claude-sonnet-4-6", 2048),
    ("claude-sonnet", 1024),
    ("claude-haiku-4-5", 4096),
    ("claude-haiku", 2048),
    ("claude-3-haiku", 2048),
    ("claude-3-5-haiku", 2048),
    ("claude", 1024),
)
"""Minimum cacheable prefix by model-name prefix, longest match first."""


def anthropic_minimum(model: str) -> int:
    """The minimum cacheable prefix of an Anthropic ``model``."""
    best = max(
        (item for item in ANTHROPIC_MINIMUMS if model.startswith(item[0])),
        key=lambda item: len(item[0]),
        default=("", 1024),
    )
    return best[1]


@attrs.frozen(kw_only=True, slots=True)
class OpenAIRule:
    """OpenAI's automatic prompt cache (see the module docs)."""

    model: str = "gpt-5"
    minimum: int = 1024
    step: int = 128
    lifetime: float = 300.0

    @property
    def name(self) -> str:
        return f"openai(minimum={self.minimum}, step={self.step}, lifetime={self.lifetime:g}s)"


@attrs.frozen(kw_only=True, slots=True)
class AnthropicRule:
    """Anthropic's breakpoint cache (see the module docs). ``minimum`` is
    the model's (`anthropic_minimum`) unless given."""

    model: str = "claude-sonnet-4-5"
    minimum: int | None = None
    max_breakpoints: int = 4
    automatic: bool = False
    automatic_lifetime: Lifetime = "5m"

    @property
    def min_tokens(self) -> int:
        return anthropic_minimum(self.model) if self.minimum is None else self.minimum

    @property
    def name(self) -> str:
        auto = f", automatic={self.automatic_lifetime}" if self.automatic else ""
        return f"anthropic(minimum={self.min_tokens}, breakpoints<={self.max_breakpoints}{auto})"


CacheRule: TypeAlias = OpenAIRule | AnthropicRule


def lifetime(rule: CacheRule, previous: Sent | None = None) -> float:
    """Seconds after a request that its cache entries can still be read:
    OpenAI's ``lifetime``; under Anthropic's rule the longest lifetime of
    the breakpoints ``previous`` carried (the automatic one included), 5
    minutes when it carried none."""
    if isinstance(rule, OpenAIRule):
        return rule.lifetime
    points = [] if previous is None else _points(previous, rule)
    return max((_SECONDS[ttl] for _, ttl in points), default=_SECONDS["5m"])


def is_warm(rule: CacheRule, previous: Sent | None, elapsed: float) -> bool:
    """Whether the cache may still hold what ``previous`` wrote,
    ``elapsed`` seconds later."""
    return previous is not None and elapsed <= lifetime(rule, previous)


def rule_for(provider: str, model: str | None = None) -> CacheRule:
    """The rule of ``provider`` (``openai`` or ``anthropic``) for ``model``
    (the rule's default model when None; the Anthropic rule with the
    request-level breakpoint)."""
    if provider == "openai":
        return OpenAIRule() if model is None else OpenAIRule(model=model)
    if provider == "anthropic":
        if model is None:
            return AnthropicRule(automatic=True)
        return AnthropicRule(model=model, automatic=True)
    msg = f"provider={provider!r} has no cache rule; known: openai, anthropic"
    raise ValueError(msg)


def _part_without_control(part: Any) -> Any:
    if isinstance(part, (Text, ToolCall, ToolResult)):
        kept = part.extra.get("anthropic")
        if isinstance(part, ToolResult) and not isinstance(part.content, str):
            part = attrs.evolve(part, content=tuple(_part_without_control(p) for p in part.content))
        if isinstance(kept, Mapping) and "cache_control" in kept:
            rest = {k: v for k, v in kept.items() if k != "cache_control"}
            extra = {k: v for k, v in part.extra.items() if k != "anthropic"}
            if rest:
                extra["anthropic"] = rest
            return attrs.evolve(part, extra=extra)
    elif (
        isinstance(part, Opaque)
        and isinstance(part.payload, Mapping)
        and "cache_control" in part.payload
    ):
        payload = {k: v for k, v in part.payload.items() if k != "cache_control"}
        return attrs.evolve(part, payload=payload)
    return part


def without_controls(message: Message) -> Message:
    """``message`` without its ``cache_control`` marks: a breakpoint says
    where to cache, and is no part of the content the cache is keyed by."""
    parts = tuple(_part_without_control(p) for p in message.parts)
    if all(a is b for a, b in zip(parts, message.parts, strict=True)):
        return message
    return attrs.evolve(message, parts=parts)


def _same(old: Message, new: Message) -> bool:
    return old is new or old == new or without_controls(old) == without_controls(new)


def shared_messages(previous: Sent | None, current: Sent) -> int:
    """How many leading messages ``current`` shares with ``previous`` (equal
    by value, in order, ``cache_control`` marks aside: a breakpoint that
    moved on to a later message leaves the content the same); 0 without a
    previous request or when the overhead differs."""
    if previous is None or previous.overhead != current.overhead:
        return 0
    n = 0
    for old, new in zip(previous.messages, current.messages, strict=False):
        if not _same(old, new):
            break
        n += 1
    return n


def measure(
    previous: Sent | None,
    current: Sent,
    rule: CacheRule,
    *,
    elapsed: float = 0.0,
    prices: PriceTable = DEFAULT_PRICES,
) -> CacheMeasure:
    """The cache's part in ``current``, given the conversation's
    ``previous`` request (None for the first) sent ``elapsed`` seconds
    before, under ``rule``, priced by ``prices``."""
    if elapsed < 0:
        msg = f"elapsed={elapsed!r} must be >= 0 (seconds since the previous request)"
        raise ValueError(msg)
    shared_count = shared_messages(previous, current)
    same_head = previous is not None and previous.overhead == current.overhead
    shared = current.prefix_tokens(shared_count) if same_head else 0
    tokens = current.tokens
    price = prices.for_model(rule.model)
    if isinstance(rule, OpenAIRule):
        cached = written = long = 0
        if tokens >= rule.minimum:
            if previous is not None and elapsed <= rule.lifetime and shared >= rule.minimum:
                cached = shared // rule.step * rule.step
            written = tokens - cached
    else:
        cached, written, long = _anthropic(previous, current, shared_count, rule, elapsed)
    uncached = tokens - cached
    plain = uncached - written
    cost = plain + cached * price.cached + (written - long) * price.write + long * price.write_long
    return CacheMeasure(
        tokens=tokens,
        shared=shared,
        cached=cached,
        uncached=uncached,
        written=written,
        written_long=long,
        cost=cost,
        rule=rule.name,
        elapsed=elapsed,
    )


def _points(sent: Sent, rule: AnthropicRule) -> list[tuple[int, Lifetime]]:
    points = list(breakpoints(sent.messages)[: rule.max_breakpoints])
    if rule.automatic and sent.messages:
        points.append((len(sent.messages) - 1, rule.automatic_lifetime))
    return points


def _anthropic(
    previous: Sent | None,
    current: Sent,
    shared_count: int,
    rule: AnthropicRule,
    elapsed: float,
) -> tuple[int, int, int]:
    """(cached, written, written at the long lifetime) under Anthropic's rule.

    The entries in the cache are those the previous request wrote, one per
    breakpoint of it; one is read when it lies within the shared prefix, is
    long enough, is still alive, and this request has a breakpoint at or
    after it (the provider looks back from each breakpoint for an entry)."""
    minimum = rule.min_tokens
    points = _points(current, rule)
    last = max((i for i, _ in points), default=-1)
    cached = 0
    if previous is not None:
        for i, ttl in _points(previous, rule):
            end = current.prefix_tokens(i + 1)
            if i < shared_count and i <= last and end >= minimum and elapsed <= _SECONDS[ttl]:
                cached = max(cached, end)
    # A breakpoint at message i writes the prefix through message i.
    ends = sorted((current.prefix_tokens(i + 1), ttl) for i, ttl in points)
    written = long = 0
    mark = cached
    for end, ttl in ends:
        if end >= minimum and end > mark:
            written += end - mark
            if ttl == "1h":
                long += end - mark
            mark = end
    return cached, written, long
