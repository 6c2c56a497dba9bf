"""Auto-store, as values: what one completed turn leaves in memory.

After the model answers, a route with ``auto_store: true`` keeps the turn
as one memory, for the request's user and tenant:

    Q: Where does my sister live now?
    A: In Porto; she moved there last spring.

- **Q** is the turn's question (the latest user message that says
  something), **A** the reply's text with reasoning stripped
  (`strip_reasoning`). A reply that calls
  tools has not finished the turn, and is not stored.
- Both are made valid UTF-8 (a lone surrogate becomes U+FFFD) without
  control characters, and **capped**: the memory is at most
  ``max_memory_chars`` characters; the question keeps at least half of
  them when it needs them, each part cut at a character boundary with
  ``[…]``.
- Small talk (a question that is only a greeting or an acknowledgement)
  and refusals are not stored, nor a turn without a question or an
  answer.
- **Deduplicated by content hash**: the record id hashes the tenant, the
  user and the memory's text (spaces collapsed), unambiguously, so the same
  turn stored twice, in any conversation, is one memory, kept with its
  first time, and another tenant's or user's equal turn is theirs.

The record's message carries the time it was stored
(``metadata.memrules_memory.stored_at``, seconds since the epoch, from the
``now`` the caller gives), which the gate's recency decay reads.

All pure: the shell (`memrules.memory.service`) writes the record.
"""

from __future__ import annotations

import hashlib
import unicodedata
from typing import Any, Literal

import attrs

from memrules._core.messages import Conversation, Message, Text
from memrules._core.seam_records import Scope, StoredMessage, encode_message, record_key
from memrules.memory.classify import is_refusal, is_small_talk, strip_reasoning
from memrules.memory.retrieve import MEMORY_METADATA, question
from memrules.memory.text import clean_text, cut_text

__all__ = ["StoreOutcome", "StoreStatus", "memory_id", "memory_record", "memory_text", "plan_store"]

StoreStatus = Literal["stored", "duplicate", "skipped", "blocked", "error", "disabled"]
"""``stored``: a new memory; ``duplicate``: the same memory was there
already; ``skipped``: the turn is not worth keeping (or has no user and
tenant); ``blocked``: the memory reads as an order to the model (memory
poisoning: the reflection gate's patterns or detector, see
`memrules.memory.screen`) and was refused, ``reason`` says why;
``error``: the store or embedder failed; ``disabled``: the route does not
auto-store."""

_ELLIPSIS = " […]"


@attrs.frozen(kw_only=True, slots=True)
class StoreOutcome:
    """What auto-store did with one turn: its ``status``, why it skipped
    (``reason``) or what failed (``error``), and the memory's ``id`` and
    ``text`` when there was one."""

    status: StoreStatus
    reason: str | None = None
    error: str | None = None
    id: str | None = None
    text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "error": self.error,
            "id": self.id,
            "text": self.text,
        }


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else cut_text(text, limit - len(_ELLIPSIS)) + _ELLIPSIS


def memory_text(asked: str, answer: str, max_chars: int) -> str:
    """``Q: asked\\nA: answer``, cleaned and capped to ``max_chars``
    characters (see the module docs)."""
    asked, answer = clean_text(asked), clean_text(answer)
    room = max_chars - len("Q: \nA: ")
    asked = _cap(asked, max(room - len(answer), room // 2))
    answer = _cap(answer, room - len(asked))
    return f"Q: {asked}\nA: {answer}"


def _normalized(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def memory_id(text: str, *, user: str, tenant: str) -> str:
    """The record id of memory ``text`` for ``user`` and ``tenant``: equal
    texts (spaces collapsed) of one user and tenant are one record, and
    any other tenant, user or text another record (see
    `record_key`)."""
    content = hashlib.sha256(_normalized(text).encode("utf-8")).hexdigest()
    return record_key(("memrules-memory", tenant, user, content))


def memory_record(
    text: str, *, user: str, tenant: str, conversation_id: str | None, now: float
) -> StoredMessage:
    """The store record of memory ``text``, stored at ``now``."""
    message = Message(
        role="assistant",
        parts=(Text(text=text),),
        metadata={MEMORY_METADATA: {"stored_at": float(now)}},
    )
    return StoredMessage(
        id=memory_id(text, user=user, tenant=tenant),
        message=message,
        text=text,
        scope=Scope(conversation_id=conversation_id, user=user, tenant=tenant),
        content_hash=hashlib.sha256(_normalized(text).encode("utf-8")).hexdigest(),
        payload=encode_message(message),
    )


def _reply_text(reply: Message | str) -> str | StoreOutcome:
    if isinstance(reply, str):
        return strip_reasoning(reply)
    if reply.call_ids:
        return StoreOutcome(
            status="skipped", reason="the reply calls tools: the turn is not finished"
        )
    return strip_reasoning(reply.text)


def plan_store(
    messages: Conversation,
    reply: Message | str,
    *,
    user: str,
    tenant: str,
    conversation_id: str | None,
    max_chars: int,
    now: float,
) -> StoredMessage | StoreOutcome:
    """The record to store for the turn that ``messages`` asked and
    ``reply`` answered, or the skipped outcome that says why there is
    none (see the module docs)."""
    asked = question(messages)
    if asked is None:
        return StoreOutcome(status="skipped", reason="no user message with text to remember")
    if is_small_talk(asked):
        return StoreOutcome(
            status="skipped", reason="the question is small talk (a greeting or an acknowledgement)"
        )
    answer = _reply_text(reply)
    if isinstance(answer, StoreOutcome):
        return answer
    answer = clean_text(answer)
    if not answer:
        return StoreOutcome(status="skipped", reason="the reply has no text")
    if is_refusal(answer):
        return StoreOutcome(status="skipped", reason="the reply is a refusal")
    text = memory_text(asked, answer, max_chars)
    return memory_record(text, user=user, tenant=tenant, conversation_id=conversation_id, now=now)
