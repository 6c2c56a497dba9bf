"""OpenAI's framing, counted on the request's own JSON: the benchmark's
independent check of the ``openai`` count rule.

This is the counting loop of OpenAI's guide "How to count tokens with
tiktoken", applied to chat-completions message objects as they are sent
(never to memrules' messages): 3 tokens per message, every string field
encoded on its own, 1 more for a ``name``, 3 for the reply's priming. The
guide stops short of tool traffic, so a tool call counts its ``id``,
``type``, function ``name`` and ``arguments``, a tool message its
``tool_call_id``, and a list ``content`` the text of its text parts (image
parts count nothing). It shares no code with :mod:`memrules._counting.framing`, so a
window that the rule keeps within a budget is checked against a count the
rule did not make.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["PER_MESSAGE", "PER_NAME", "PRIMING", "openai_message_tokens", "openai_request_tokens"]

PER_MESSAGE = 3
PER_NAME = 1
PRIMING = 3


def openai_message_tokens(message: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """One chat-completions message object, counted as the guide does."""
    total = PER_MESSAGE
    for key, value in message.items():
        if key == "content":
            if isinstance(value, str):
                total += count(value)
            elif isinstance(value, list):
                total += sum(
                    count(part["text"])
                    for part in value
                    if isinstance(part, Mapping) and part.get("type") == "text"
                )
        elif key == "tool_calls" and isinstance(value, list):
            for call in value:
                kind = call.get("type", "function")
                body = call.get(kind, {})
                arguments = body.get("arguments", body.get("input", ""))
                total += count(call["id"]) + count(kind) + count(body["name"]) + count(arguments)
        elif isinstance(value, str):
            total += count(value)
            if key == "name":
                total += PER_NAME
    return total


def openai_request_tokens(
    messages: Iterable[Mapping[str, Any]], count: Callable[[str], int]
) -> int:
    """A request's messages, counted as the guide does, with the reply's
    priming."""
    return sum(openai_message_tokens(m, count) for m in messages) + PRIMING
