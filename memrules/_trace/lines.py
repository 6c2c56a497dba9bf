"""How a trace writes messages, budgets and lines: messages in memrules' lossless
JSON form, and each line as compact UTF-8 JSON (see `memrules._trace.record`
for the format)."""

from __future__ import annotations

import json
from typing import Any

from memrules._core.budget import Budget
from memrules._core.errors import TraceError
from memrules._core.messages import Conversation, Message
from memrules._core.seam_records import decode_message, message_json

__all__ = ["budget_from", "dump_line", "messages_from", "messages_json"]


def messages_json(messages: Conversation) -> list[Any]:
    """``messages`` in memrules' lossless JSON form."""
    return [message_json(m) for m in messages]


def messages_from(data: Any, where: str) -> Conversation:
    """The messages `messages_json` wrote; `TraceError` naming
    ``where`` for anything else."""
    if not isinstance(data, list):
        msg = f"{where}: expected a list of messages, got {type(data).__name__}"
        raise TraceError(msg)
    out: list[Message] = []
    for i, item in enumerate(data):
        try:
            out.append(decode_message(json.dumps(item)))
        except Exception as exc:
            msg = f"{where}[{i}]: not a message: {type(exc).__name__}: {exc}"
            raise TraceError(msg) from None
    return tuple(out)


def budget_from(data: Any, where: str = "budget") -> Budget | None:
    """The budget ``Budget.to_dict`` wrote (None for null);
    `TraceError` naming ``where`` for anything else."""
    if data is None:
        return None
    kind = data.get("kind") if isinstance(data, dict) else None
    limit = data.get("limit") if isinstance(data, dict) else None
    if kind == "unlimited":
        return Budget.UNLIMITED
    if kind in ("messages", "tokens"):
        if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
            return Budget.messages(limit) if kind == "messages" else Budget.tokens(limit)
        msg = f"{where}: {data!r:.80} is not a budget: its limit is not a whole number"
        raise TraceError(msg)
    msg = f"{where}: {data!r:.80} is not a budget (kind unlimited, messages or tokens)"
    raise TraceError(msg)


def dump_line(value: Any) -> bytes:
    """One line of a trace: compact JSON, keys in the order given, UTF-8 (a
    lone surrogate as its JSON escape), ending in a newline."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:
        msg = f"cannot write a trace line: {exc} (NaN or Infinity is not JSON)"
        raise TraceError(msg) from None
    return (text + "\n").encode("utf-8", "backslashreplace")
