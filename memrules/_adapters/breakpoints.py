"""Anthropic ``cache_control`` breakpoints, placed where the prefix is stable.

Anthropic caches a request's prefix only up to a block marked with
``cache_control`` (at most four per request), and a later request reads
the entry only when its own prefix through that block is the same. In a
conversation that only appends between compactions, two places stay the
same from one request to the next: the end of the head that compaction
never touches (the system prompt, and the summaries a ``frozen``
``summarize`` appended), and the end of the whole request, which the next
request starts with. `place_breakpoints` marks the last block of the
messages at those places, and leaves alone what the caller marked: their
breakpoints count towards the four, a message that already holds one gets
no second, and nothing is added once there are four.

A breakpoint sits in a block's unmapped Anthropic keys (``extra["anthropic"]``
for text, tool use and tool result blocks, the ``payload`` of an opaque
block), where `from_anthropic` keeps the caller's and
`to_anthropic_request` writes them, and where the cache
measure (`memrules._counting.cache`) reads them.

>>> from memrules import message
>>> from memrules._counting.cache import breakpoints
>>> convo = (message("system", "rules"), message("user", "a"), message("user", "b"))
>>> breakpoints(place_breakpoints(convo))
((0, '5m'), (2, '5m'))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from memrules._core.messages import Conversation, Message, Opaque, Part, Text, ToolCall, ToolResult
from memrules._core.prompt_cache import breakpoints

__all__ = ["MAX_BREAKPOINTS", "place_breakpoints", "stable_head"]

MAX_BREAKPOINTS = 4
"""The API's limit on ``cache_control`` blocks in one request."""

_SUMMARY_KEY = "summary_of"


def _is_frozen_head(message: Message) -> bool:
    if message.role == "system":
        return True
    info = message.metadata.get("memrules")
    return isinstance(info, Mapping) and _SUMMARY_KEY in info


def stable_head(messages: Sequence[Message]) -> int:
    """How many leading messages compaction leaves as they are: the
    system messages and summaries at the start, in a row."""
    n = 0
    for m in messages:
        if not _is_frozen_head(m):
            break
        n += 1
    return n


def _control(ttl: str | None) -> dict[str, str]:
    return {"type": "ephemeral"} if ttl is None else {"type": "ephemeral", "ttl": ttl}


def _marked(part: Part, ttl: str | None) -> Part | None:
    """``part`` with a breakpoint, or None when it cannot carry one."""
    if isinstance(part, (Text, ToolCall, ToolResult)):
        kept = part.extra.get("anthropic")
        keys: dict[str, Any] = dict(kept) if isinstance(kept, Mapping) else {}
        keys["cache_control"] = _control(ttl)
        return attrs.evolve(part, extra={**part.extra, "anthropic": keys})
    if isinstance(part, Opaque) and isinstance(part.payload, Mapping):
        return attrs.evolve(part, payload={**part.payload, "cache_control": _control(ttl)})
    return None


def _mark(message: Message, ttl: str | None) -> Message | None:
    for j in range(len(message.parts) - 1, -1, -1):
        part = _marked(message.parts[j], ttl)
        if part is not None:
            parts = (*message.parts[:j], part, *message.parts[j + 1 :])
            return attrs.evolve(message, parts=parts)
    return None


def place_breakpoints(
    messages: Iterable[Message],
    *,
    at: Sequence[int] | None = None,
    ttl: str | None = None,
    limit: int = MAX_BREAKPOINTS,
) -> Conversation:
    """``messages`` with a ``cache_control`` breakpoint on the last block
    of each message ``at`` names (by default the end of the
    `stable_head` and the last message), as far as ``limit`` allows
    after the caller's own; ``ttl`` ``"1h"`` asks for the hour-long
    lifetime. Returns a new tuple; the same tuple when nothing was placed.
    A tool message's breakpoint goes on its result block, which the
    adapter writes into the user message that carries the results."""
    conversation = tuple(messages)
    if not conversation:
        return conversation
    if at is None:
        head = stable_head(conversation)
        at = [i for i in (head - 1, len(conversation) - 1) if i >= 0]
    present = breakpoints(conversation)
    room = limit - len(present)
    holding = {i for i, _ in present}
    out = list(conversation)
    changed = False
    for i in sorted(set(at)):
        if room <= 0:
            break
        if not 0 <= i < len(out) or i in holding:
            continue
        marked = _mark(out[i], ttl)
        if marked is None:
            continue
        out[i] = marked
        room -= 1
        changed = True
    return tuple(out) if changed else conversation
