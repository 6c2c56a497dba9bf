"""Coding-agent session logs: Claude Code's and Codex CLI's JSON Lines.

Built from the formats as the tools write them (no published schema; read
from their session files):

- ``claude-code``: ``~/.claude/projects/<project>/<session>.jsonl``, one
  event a line. ``user`` and ``assistant`` events hold a Messages API
  ``message`` (an assistant reply is streamed as several events, one per
  content block, that share ``message.id``: they are joined); ``summary``,
  ``system`` and other events are skipped, as are side chains
  (``isSidechain``, a sub-agent's own loop). A user event the tool wrote
  itself (``isMeta``, or a compaction summary, ``isCompactSummary``) is
  marked ``harness: True``.
- ``codex``: ``~/.codex/sessions/…/rollout-*.jsonl``, one ``{"type",
  "payload"}`` a line; the ``response_item`` payloads are Responses API
  items (``message``, ``function_call``, ``function_call_output``,
  ``reasoning``…), read with `from_responses`. ``developer``
  messages become system messages; the user messages Codex writes itself
  (``<environment_context>``, ``<user_instructions>``, the AGENTS.md text)
  are marked ``harness: True``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memrules._adapters import from_anthropic, from_responses
from memrules._core.errors import MessageFormatError
from memrules._core.messages import Conversation, Message

__all__ = ["HARNESS", "claude_code_messages", "codex_messages", "session_format"]

HARNESS = "harness"

_CODEX_KINDS = frozenset(("session_meta", "response_item", "event_msg", "turn_context"))
_CODEX_HARNESS = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<INSTRUCTIONS>")


def session_format(data: object) -> str | None:
    """``claude-code`` or ``codex`` when ``data`` (a list of parsed lines)
    is such a session log, else None."""
    if not isinstance(data, list) or not data:
        return None
    events = [d for d in data if isinstance(d, Mapping)]
    if len(events) != len(data):
        return None
    if any(e.get("type") in ("user", "assistant") and "message" in e for e in events):
        return "claude-code"
    if any(e.get("type") in _CODEX_KINDS and "payload" in e for e in events):
        return "codex"
    return None


def claude_code_messages(events: Sequence[Mapping[str, Any]], where: str) -> Conversation:
    """A Claude Code session's messages (see the module docs)."""
    raw: list[dict[str, Any]] = []
    harness: list[bool] = []
    last_id: object = None
    for event in events:
        kind = event.get("type")
        message = event.get("message")
        if kind not in ("user", "assistant") or event.get("isSidechain") is True:
            continue
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        if kind == "assistant" and raw and raw[-1]["role"] == "assistant":
            same = message.get("id") is not None and message.get("id") == last_id
            if same:  # one streamed reply: join its blocks
                raw[-1]["content"] = [*_blocks(raw[-1]["content"]), *_blocks(content)]
                continue
        raw.append({"role": kind, "content": content if content is not None else ""})
        harness.append(
            kind == "user" and bool(event.get("isMeta") or event.get("isCompactSummary"))
        )
        last_id = message.get("id")
    try:
        messages = from_anthropic(raw)
    except MessageFormatError as exc:
        msg = f"{where}: {exc}"
        raise ValueError(msg) from None
    if len(messages) != len(raw):
        return messages
    return tuple(
        m.evolve(metadata={**m.metadata, HARNESS: True}) if flag else m
        for m, flag in zip(messages, harness, strict=True)
    )


def _blocks(content: object) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    if isinstance(content, str) and content:
        return [{"type": "text", "text": content}]
    return []


def _codex_item(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    if payload.get("type") == "message" and payload.get("role") == "developer":
        return {**payload, "role": "system"}
    return payload


def codex_messages(events: Sequence[Mapping[str, Any]], where: str) -> Conversation:
    """A Codex CLI session's messages (see the module docs)."""
    items = [
        _codex_item(e["payload"])
        for e in events
        if e.get("type") == "response_item" and isinstance(e.get("payload"), Mapping)
    ]
    try:
        messages = from_responses(items)
    except MessageFormatError as exc:
        msg = f"{where}: {exc}"
        raise ValueError(msg) from None
    return tuple(_codex_marked(m) for m in messages)


def _codex_marked(message: Message) -> Message:
    if message.role == "user" and message.text.lstrip().startswith(_CODEX_HARNESS):
        return message.evolve(metadata={**message.metadata, HARNESS: True})
    return message
