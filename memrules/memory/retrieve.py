"""Retrieval, as values: what a request asks memory, what memory answered,
and where the answer goes in the request.

The I/O (embedding the question, searching the store) is the shell's
(`memrules.memory.service`); everything here is pure:

- `question` is the text the store is asked with: the latest user
  message that says something (not one that only carries tool results);
- `plan` decides whether to ask at all: not without a user *and* a
  tenant (memory is scoped by both, so a request without them gets none,
  and its `Retrieval` says why), not without a question, not for
  small talk;
- `select` turns the store's hits into `Recalled`
  values: those of the caller's user and tenant only (the store matches
  them already; this is a second lock on the same door), at or above the
  threshold, at most ``retrieval_limit``;
- `strip_memory_messages` and `insert_memory_message` place the
  message: one system message right after the first system message (first
  when there is none). A memory message the request already holds (the
  plugin's own, from an earlier request the client kept) is taken out
  before the request is measured, and the new one takes its place;
- `reserved` and `fill` put memory inside the request's budget
  (a route's ``retrieval_tokens``): the context is compacted to the budget
  less the reservation, then memories go in, best first, while the request
  with the memory message still fits the whole budget. How many are
  recalled follows from the budget rather than from a fixed count, and a
  request never goes over its budget for memory's sake: when not even the
  first memory fits, none goes in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

from memrules._core.budget import Budget
from memrules._core.conversation import is_turn_start
from memrules._core.messages import Conversation, Message
from memrules._core.seam_records import MAX_SCOPE_CHARS, RecallHit
from memrules.memory.classify import is_small_talk
from memrules.memory.config import RouteRetrieval
from memrules.memory.gate import GateResult, Recalled, longest, memory_message, render

__all__ = [
    "MEMORY_METADATA",
    "Retrieval",
    "RetrievalReport",
    "RetrievalStatus",
    "SkipReason",
    "fill",
    "insert_memory_message",
    "is_memory_message",
    "plan",
    "question",
    "reserved",
    "scope_problem",
    "select",
    "stored_at",
    "strip_memory_messages",
]

RetrievalStatus = Literal["hit", "miss", "error", "skipped"]
"""``hit``: memories at or above the threshold were found; ``miss``: none
were; ``error``: the store or embedder failed (the request went on without
memory); ``skipped``: memory was not asked (no user or tenant, no
question, small talk)."""

SkipReason = Literal["no_scope", "no_question", "small_talk"]
"""Why retrieval was skipped, as a short code (a metric label)."""

MEMORY_METADATA = "memrules_memory"
"""The metadata key of a stored memory's message: ``{"stored_at": seconds}``."""


@attrs.frozen(kw_only=True, slots=True)
class Retrieval:
    """What retrieval did for one request: its ``status`` (see
    `RetrievalStatus`), why it was skipped (``reason``, and as a code
    ``skipped``) or what failed
    (``error``), the ``question`` asked, for whom (``user``, ``tenant``),
    on which ``backend``, and the ``memories`` kept (best first, at or
    above ``threshold``, at most the route's limit). No timing: the same
    request and store answers give the same value."""

    status: RetrievalStatus
    reason: str | None = None
    skipped: SkipReason | None = None
    error: str | None = None
    question: str | None = None
    user: str | None = None
    tenant: str | None = None
    backend: str = ""
    threshold: float | None = None
    memories: tuple[Recalled, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "skipped": self.skipped,
            "error": self.error,
            "question": self.question,
            "user": self.user,
            "tenant": self.tenant,
            "backend": self.backend,
            "threshold": self.threshold,
            "memories": [m.to_dict() for m in self.memories],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Retrieval:
        """The retrieval `to_dict` wrote, with its memories: what a
        replay answers for the store it does not ask."""
        return cls(
            status=data["status"],
            reason=data["reason"],
            skipped=data["skipped"],
            error=data["error"],
            question=data["question"],
            user=data["user"],
            tenant=data["tenant"],
            backend=data["backend"],
            threshold=data["threshold"],
            memories=tuple(Recalled.from_dict(m) for m in data["memories"]),
        )


@attrs.frozen(kw_only=True, slots=True)
class RetrievalReport:
    """What memory did for one request: the ``retrieval``, what the
    ``gate`` made of it, and the ``now`` (seconds since the epoch) the gate
    decayed scores by: with these a replay injects the same bytes."""

    retrieval: Retrieval
    gate: GateResult
    now: float | None = None

    @property
    def injected(self) -> bool:
        """Whether a memory message went into the request."""
        return self.gate.text is not None

    def to_dict(self) -> dict[str, Any]:
        return {"retrieval": self.retrieval.to_dict(), "gate": self.gate.to_dict(), "now": self.now}


def question(messages: Conversation) -> str | None:
    """The latest user message's text, when one says something (a user
    message that only carries tool results does not); None otherwise."""
    for m in reversed(messages):
        if is_turn_start(m):
            text = m.text.strip()
            if text:
                return text
    return None


def scope_problem(user: object, tenant: object) -> str | None:
    """Why ``user`` and ``tenant`` cannot scope memory, if they cannot:
    each must be a non-empty string of at most 256 characters."""
    problems = []
    for name, value, key in (("user", user, "user_id"), ("tenant", tenant, "tenant_id")):
        if value is None:
            problems.append(f"the request names no {name} (metadata.{key})")
        elif not isinstance(value, str) or not value or len(value) > MAX_SCOPE_CHARS:
            problems.append(
                f"{name}={value!r:.60} is not a non-empty string of at most "
                f"{MAX_SCOPE_CHARS} characters"
            )
    if not problems:
        return None
    return "no memory without a user and a tenant: " + "; ".join(problems)


def plan(messages: Conversation, *, user: str | None, tenant: str | None) -> str | Retrieval:
    """The question to ask memory for a request, or the skipped
    `Retrieval` that says why none is asked (see the module docs)."""
    problem = scope_problem(user, tenant)
    if problem is not None:
        return Retrieval(status="skipped", reason=problem, skipped="no_scope")
    asked = question(messages)
    if asked is None:
        return Retrieval(
            status="skipped",
            reason="no user message with text to ask",
            skipped="no_question",
            user=user,
            tenant=tenant,
        )
    if is_small_talk(asked):
        return Retrieval(
            status="skipped",
            reason="the question is small talk (a greeting or an acknowledgement)",
            skipped="small_talk",
            question=asked,
            user=user,
            tenant=tenant,
        )
    return asked


def stored_at(message: Message) -> float | None:
    """When a memory's message was stored (its ``memrules_memory`` metadata),
    if it says so with a finite number."""
    found = message.metadata.get(MEMORY_METADATA)
    value = found.get("stored_at") if isinstance(found, Mapping) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def select(
    hits: Iterable[RecallHit],
    *,
    user: str,
    tenant: str,
    threshold: float,
    limit: int,
) -> tuple[Recalled, ...]:
    """The memories of ``hits`` (best first) that belong to ``user`` and
    ``tenant`` and score at least ``threshold``, at most ``limit``, in
    their order."""
    kept = [
        Recalled(
            id=hit.id,
            text=hit.message.text,
            score=hit.score,
            stored_at=stored_at(hit.message),
            conversation_id=hit.conversation_id,
        )
        for hit in hits
        if hit.user == user and hit.tenant == tenant and hit.score >= threshold
    ]
    return tuple(kept[:limit])


def is_memory_message(candidate: Message, marker: str) -> bool:
    """Whether ``candidate`` is a memory message: a system message whose
    text starts with ``marker``."""
    return candidate.role == "system" and candidate.text.startswith(marker)


def strip_memory_messages(messages: Conversation, marker: str) -> Conversation:
    """``messages`` without memory messages (the same tuple when there are none)."""
    if not any(is_memory_message(m, marker) for m in messages):
        return messages
    return tuple(m for m in messages if not is_memory_message(m, marker))


def insert_memory_message(messages: Conversation, memory: Message) -> Conversation:
    """``messages`` with ``memory`` right after the first system message, or
    first when there is none."""
    first = next((i for i, m in enumerate(messages) if m.role == "system"), None)
    at = 0 if first is None else first + 1
    return (*messages[:at], memory, *messages[at:])


def reserved(budget: Budget, route: RouteRetrieval) -> Budget:
    """The budget the context is compacted to when memory shares ``budget``:
    a token budget less the route's ``retrieval_tokens``, but never less
    than half of it (a reservation set for a large budget does not starve
    the context of a small one); a message budget, no budget, or a route
    that reserves nothing leave it as it is."""
    if route.retrieval_tokens is None or budget.kind != "tokens":
        return budget
    return Budget.tokens(max(budget.limit - route.retrieval_tokens, (budget.limit + 1) // 2, 1))


def fill(
    context: Conversation,
    memories: Sequence[Recalled],
    *,
    budget: Budget,
    count: Callable[[Conversation], int],
    marker: str,
    limit: int,
) -> tuple[Conversation, tuple[Recalled, ...]]:
    """``context`` with one memory message holding the longest run of
    ``memories`` (best first, at most ``limit``) with which the request
    still fits ``budget``, measured by ``count`` (the pipeline's tokens of
    a whole request), and the memories it holds; ``context`` as it was,
    with no memories, when not even the first fits (or ``context`` alone
    does not).

    The run's length is found by bisection (a request's tokens do not fall
    as memories are added, so a few measures find it), and what comes
    back is a request that was measured and fits, whatever ``count``
    says of other lengths."""
    candidates = tuple(memories[:limit])

    def request(n: int) -> Conversation:
        return insert_memory_message(context, memory_message(render(candidates[:n], marker)))

    def fits(n: int) -> bool:
        sent = request(n)
        return not budget.is_over(messages=len(sent), tokens=count(sent))

    low = longest(fits, len(candidates))
    if low == 0:
        return context, ()
    return request(low), candidates[:low]
