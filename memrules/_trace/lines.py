"""How a trace writes messages, budgets and lines: messages in memrules' lossless
JSON form, and each line as compact UTF-8 JSON (see :mod:`memrules._trace.record`
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
    """The messages :func:`messages_json` wrote; :class:`TraceError` naming
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


def budget_from(data: Any) -> Budget | None:
    """The budget ``Budget.to_dict`` wrote (None for null)."""
    if data is None:
        return None
    kind, limit = data.get("kind"), data.get("limit")
    if kind == "unlimited":
        return Budget.UNLIMITED
    if kind == "messages":
        return Budget.messages(int(limit))
    if kind == "tokens":
        return Budget.tokens(int(limit))
    msg = f"unknown budget kind {kind!r}"
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
