"""Values of the provider prompt cache's measure: what a request sent, what
the cache served of it, and the conversation's previous request.

Pure values only; the rules that compute them are in
`memrules._counting.cache`. They sit in the core so that a
`CompressionReport` can hold a measure and a
`CompressionResult` the request it sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal, TypeAlias

import attrs

from memrules._core.messages import Conversation, Message, Opaque, Text, ToolCall, ToolResult

__all__ = ["SECONDS", "CacheMeasure", "Lifetime", "Sent", "SentRequest", "breakpoints"]

Lifetime: TypeAlias = Literal["5m", "1h"]
SECONDS: Mapping[str, float] = {"5m": 300.0, "1h": 3600.0}
"""Each ``cache_control`` lifetime in seconds."""


def _counts(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True, slots=True)
class Sent:
    """One request as sent: its messages and each message's token count,
    plus ``overhead``, the tokens the request costs beyond its messages
    (framing, tool definitions), counted as part of the first message's
    prefix (they come before every message)."""

    messages: Conversation
    counts: tuple[int, ...] = attrs.field(converter=_counts)
    overhead: int = 0

    def __attrs_post_init__(self) -> None:
        if len(self.counts) != len(self.messages):
            msg = (
                f"counts has {len(self.counts)} entries for {len(self.messages)} messages; "
                "give one count per message"
            )
            raise ValueError(msg)
        if self.overhead < 0 or any(c < 0 for c in self.counts):
            msg = f"overhead={self.overhead!r} and every count must be >= 0"
            raise ValueError(msg)

    @property
    def tokens(self) -> int:
        return self.overhead + sum(self.counts)

    def prefix_tokens(self, messages: int) -> int:
        """Tokens of the first ``messages`` messages, overhead included."""
        return self.overhead + sum(self.counts[:messages])


@attrs.frozen(kw_only=True, slots=True)
class CacheMeasure:
    """What the cache does for one request, in tokens, and its cost in
    input-token units (one uncached, unwritten token costs 1).

    ``cached <= shared <= tokens`` and ``cached + uncached == tokens``;
    ``written`` (of which ``written_long`` at the long lifetime) is part of
    ``uncached``. ``elapsed`` is the seconds since the conversation's
    previous request that the measure assumed."""

    tokens: int
    shared: int
    cached: int
    uncached: int
    written: int
    written_long: int
    cost: float
    rule: str
    elapsed: float = 0.0

    @property
    def share(self) -> float:
        """The fraction of the request served from the cache."""
        return self.cached / self.tokens if self.tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "elapsed": self.elapsed,
            "tokens": self.tokens,
            "shared": self.shared,
            "cached": self.cached,
            "uncached": self.uncached,
            "written": self.written,
            "written_long": self.written_long,
            "cost": self.cost,
        }


@attrs.frozen(kw_only=True, slots=True)
class SentRequest:
    """A conversation's request as the pipeline handled it: the messages it
    was given (``received``), what it sent (``sent``), where each sent
    message came from (``origin``: an index into ``received``, or None for a
    message a strategy made) and when (``at``, seconds on the caller's
    clock; None when unknown).

    Passed back as ``previous=`` with the conversation's next request, it
    is what the cache measure compares with, and what lets a pipeline with
    a ``cache:`` section send the same messages again and append, instead
    of deciding about old messages afresh."""

    received: Conversation
    sent: Sent
    origin: tuple[int | None, ...]
    at: float | None = None

    def __attrs_post_init__(self) -> None:
        if len(self.origin) != len(self.sent.messages):
            msg = (
                f"origin has {len(self.origin)} entries for {len(self.sent.messages)} sent "
                "messages; give one per sent message"
            )
            raise ValueError(msg)


def _ttl(cache_control: Any) -> Lifetime | None:
    if not isinstance(cache_control, Mapping):
        return None
    return "1h" if cache_control.get("ttl") == "1h" else "5m"


def _part_controls(part: Any) -> Iterator[Lifetime]:
    if isinstance(part, (Text, ToolCall, ToolResult)):
        kept = part.extra.get("anthropic")
        if isinstance(kept, Mapping):
            ttl = _ttl(kept.get("cache_control"))
            if ttl is not None:
                yield ttl
        if isinstance(part, ToolResult) and not isinstance(part.content, str):
            for inner in part.content:
                yield from _part_controls(inner)
    elif isinstance(part, Opaque) and isinstance(part.payload, Mapping):
        ttl = _ttl(part.payload.get("cache_control"))
        if ttl is not None:
            yield ttl


def breakpoints(messages: Iterable[Message]) -> tuple[tuple[int, Lifetime], ...]:
    """The ``cache_control`` breakpoints of ``messages``, in order, as
    ``(index of the message holding it, lifetime)``; one entry per block
    that carries one."""
    found: list[tuple[int, Lifetime]] = []
    for index, message in enumerate(messages):
        for part in message.parts:
            found.extend((index, ttl) for ttl in _part_controls(part))
    return tuple(found)
