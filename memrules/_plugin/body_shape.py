"""Which hook a request body fits: an Anthropic Messages body handed to the
OpenAI chat hook, or an OpenAI chat body handed to the Anthropic hook, is
refused with a `MessageFormatError` that says
which hook fits, instead of being counted as unknown blocks (or reshaped)
and sent on to a provider that rejects it.

Only marks that the other format has and this one never does are read:

- an Anthropic body: a top-level ``system``, or a content block of type
  ``tool_use``, ``tool_result``, ``thinking``, ``redacted_thinking``,
  ``document`` or ``server_tool_use``, or an ``image`` block with a
  ``source``;
- an OpenAI chat body: a message of role ``tool``, ``developer`` or
  ``function``, a message with ``tool_calls``, ``tool_call_id`` or
  ``function_call``, or a content part of type ``image_url``,
  ``input_audio``, ``file`` or ``refusal``.

A body of ``system``, ``user`` and ``assistant`` messages with string
contents reads the same in both formats and is accepted by both hooks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memrules._core.errors import MessageFormatError

__all__ = ["check_anthropic_body", "check_openai_body"]

_ANTHROPIC_BLOCKS = frozenset(
    ("tool_use", "tool_result", "thinking", "redacted_thinking", "document", "server_tool_use")
)
_OPENAI_PARTS = frozenset(("image_url", "input_audio", "file", "refusal"))
_OPENAI_ROLES = frozenset(("tool", "developer", "function"))
_OPENAI_KEYS = ("tool_calls", "tool_call_id", "function_call")


def _messages(body: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    messages = body.get("messages")
    if not isinstance(messages, list | tuple):
        return []
    return [(i, m) for i, m in enumerate(messages) if isinstance(m, Mapping)]


def _blocks(message: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    content = message.get("content")
    if not isinstance(content, list | tuple):
        return []
    return [(j, b) for j, b in enumerate(content) if isinstance(b, Mapping)]


def _refuse(what: str, hook: str, converter: str, *, index: int | None = None, field: str) -> None:
    msg = f"{what}: pass this body to {hook} (or read it with {converter})"
    raise MessageFormatError(msg, index=index, field=field)


def check_openai_body(body: Mapping[str, Any]) -> None:
    """Raise `MessageFormatError` when ``body`` is an Anthropic
    Messages body (see the module docs), naming the mark and the hook that
    fits."""
    hook, converter = "on_anthropic_request", "from_anthropic"
    if body.get("system") is not None:
        _refuse("an Anthropic Messages body (a top-level system)", hook, converter, field="system")
    for i, message in _messages(body):
        for j, block in _blocks(message):
            kind = block.get("type")
            if kind in _ANTHROPIC_BLOCKS or (kind == "image" and "source" in block):
                what = f"an Anthropic Messages body (a {kind!r} block)"
                _refuse(what, hook, converter, index=i, field=f"content[{j}]")


def check_anthropic_body(body: Mapping[str, Any]) -> None:
    """Raise `MessageFormatError` when ``body`` is an OpenAI chat
    completions body (see the module docs), naming the mark and the hook
    that fits."""
    hook, converter = "on_openai_request", "from_openai"
    for i, message in _messages(body):
        role = message.get("role")
        if role in _OPENAI_ROLES:
            what = f"an OpenAI chat body (a message of role {role!r})"
            _refuse(what, hook, converter, index=i, field="role")
        for key in _OPENAI_KEYS:
            if key in message:
                _refuse(f"an OpenAI chat body ({key})", hook, converter, index=i, field=key)
        for j, block in _blocks(message):
            kind = block.get("type")
            if kind in _OPENAI_PARTS:
                what = f"an OpenAI chat body (a {kind!r} part)"
                _refuse(what, hook, converter, index=i, field=f"content[{j}]")
