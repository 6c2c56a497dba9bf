"""How a record is written as a Milvus row, and how a row reads back as a hit.

A message is kept whole, as its JSON split into pieces of at most 65,535
bytes (a Milvus VARCHAR's limit); the indexed text is cut to one piece. A
scope becomes a filter expression with its strings quoted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrules._core.errors import StoreError
from memrules._core.messages import Message
from memrules._core.seam_records import (
    RecallHit,
    Scope,
    decode_message,
)
from memrules.seams._lexical import document_vector
from memrules.seams._local_index import Row

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


PIECE_BYTES = 65_535


PIECES = 256


MAX_TEXT_BYTES = PIECE_BYTES


MAX_MESSAGE_BYTES = PIECE_BYTES * PIECES


FIELDS = ["id", "text", "conversation_id", "user", "tenant", "turn", "exchange", "message"]


def quoted(value: str) -> str:
    """``value`` as a string literal of Milvus's filter language: only the
    escapes Milvus Lite reads (quote, backslash, newline, carriage return,
    tab); any other character, control characters too, as itself (a ``\\u``
    escape is an "unknown escape sequence" to Milvus Lite, so an id holding
    one could be stored but never listed or forgotten)."""
    return '"' + "".join(_ESCAPES.get(c, c) for c in value) + '"'


def scope_filter(scope: Scope) -> str:
    parts = [f"user == {quoted(scope.user or '')}", f"tenant == {quoted(scope.tenant or '')}"]
    if scope.conversation_id is not None:
        parts.append(f"conversation_id == {quoted(scope.conversation_id)}")
    return " and ".join(parts)


def utf8_prefix(text: str, limit: int) -> str:
    data = text.encode("utf-8", "replace")
    return data[:limit].decode("utf-8", "ignore") if len(data) > limit else text


def message_pieces(payload: str) -> list[str]:
    """``payload`` (JSON, ASCII-safe pieces) cut into pieces Milvus takes."""
    data = payload.encode("utf-8")
    if len(data) > MAX_MESSAGE_BYTES:
        msg = (
            f"a message of {len(data):,} bytes as JSON is over Milvus's limit of "
            f"{MAX_MESSAGE_BYTES:,}; clamp it first (clamp_oversized_messages) or use Qdrant"
        )
        raise StoreError(msg)
    out: list[str] = []
    start = 0
    while start < len(data):
        end = min(start + PIECE_BYTES, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:  # not inside a character
            end -= 1
        out.append(data[start:end].decode("utf-8"))
        start = end
    return out or [""]


def sparse_weights(vector: tuple[list[int], list[float]]) -> dict[int, float]:
    """A sparse vector of `memrules.seams._lexical` as index: weight."""
    return dict(zip(*vector, strict=True))


def index_row(
    record_id: str,
    user: str | None,
    tenant: str | None,
    conversation_id: str | None,
    vector: Sequence[float],
    text: str,
) -> Row:
    sparse = document_vector(utf8_prefix(text, MAX_TEXT_BYTES))
    scope = (user or "", tenant or "", conversation_id or "")
    return record_id, scope, vector, sparse


def kept_fields(row: dict[str, Any]) -> dict[str, Any]:
    """What a hit is made of, of a row as written or read."""
    kept = {name: row[name] for name in FIELDS if name != "message"}
    kept["message"] = "".join(row["message"])
    return kept


def scope_parts(scope: Scope) -> dict[str, Any]:
    return {
        "user": scope.user or "",
        "tenant": scope.tenant or "",
        "conversation": scope.conversation_id,
    }


def row_hit(row: Any, record_id: str, score: float, message: Message | None = None) -> RecallHit:
    return RecallHit(
        message=decode_message("".join(row["message"])) if message is None else message,
        score=score,
        conversation_id=row["conversation_id"] or None,
        user=row["user"] or None,
        tenant=row["tenant"] or None,
        turn=row["turn"],
        exchange=row["exchange"],
        text=row["text"],
        id=record_id,
    )
