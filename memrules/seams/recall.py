"""A tool the model can call to fetch what was offloaded, and its answer.

Give the model `recall_tool` (OpenAI or Anthropic form) with the
request; when it calls the tool, `answer_recall` searches the store and
returns the tool message to append. The scope (conversation, user, tenant)
comes from the application, never from the model's arguments, so a model
cannot read another user's memory:

    tools = [recall_tool()]                          # OpenAI chat completions
    ...
    for call in calls:                               # ToolCall parts of the reply
        if call.name == RECALL_TOOL:
            messages += (answer_recall(store, call, conversation_id="c1", user="u1"),)
"""

from __future__ import annotations

import json
from typing import Any, Literal

from memrules._core.errors import ConfigError
from memrules._core.messages import Message, ToolCall, ToolResult
from memrules._core.seam_protocols import VectorStore
from memrules._core.seam_records import Scope

__all__ = ["MAX_RECALL_K", "RECALL_TOOL", "answer_recall", "recall_tool"]

RECALL_TOOL = "recall_memory"
"""The tool's default name."""
MAX_RECALL_K = 20
"""The most results one call may ask for."""

_DESCRIPTION = (
    "Search the earlier part of this conversation (and of this user's earlier conversations) "
    "that is no longer in your context: messages, tool calls and tool results that were moved "
    "to memory. Use it when the user refers to something you cannot see, or you need a detail "
    "(a file's content, a name, a number, a decision) from earlier. Ask with the words likely to "
    "appear in what you are looking for; exact names such as file paths work best."
)

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "What to look for: a question, keywords, or an exact name or path.",
        },
        "k": {
            "type": "integer",
            "description": "How many results to return (default 5).",
            "minimum": 1,
            "maximum": MAX_RECALL_K,
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


def recall_tool(
    format: Literal["openai", "anthropic"] = "openai", *, name: str = RECALL_TOOL
) -> dict[str, Any]:
    """The recall tool's definition: for OpenAI chat completions
    (``{"type": "function", "function": {...}}``) or the Anthropic Messages
    API (``{"name", "description", "input_schema"}``). A fresh dict each
    call."""
    if not isinstance(name, str) or not name or len(name) > 64:
        msg = f"name={name!r} must be a tool name of 1 to 64 characters"
        raise ConfigError.single(msg, yaml_path="name")
    schema = json.loads(json.dumps(_SCHEMA))
    if format == "openai":
        return {
            "type": "function",
            "function": {"name": name, "description": _DESCRIPTION, "parameters": schema},
        }
    if format == "anthropic":
        return {"name": name, "description": _DESCRIPTION, "input_schema": schema}
    msg = f"format={format!r} must be 'openai' or 'anthropic'"
    raise ConfigError.single(msg, yaml_path="format")


def _arguments(call: ToolCall) -> tuple[str, int] | str:
    """The call's query and k, or what is wrong with its arguments."""
    try:
        raw = json.loads(call.arguments or "{}")
    except ValueError:
        return 'the arguments are not JSON; send {"query": "...", "k": 5}'
    if not isinstance(raw, dict):
        return 'the arguments must be an object: {"query": "...", "k": 5}'
    query = raw.get("query")
    if not isinstance(query, str) or not query.strip():
        return "query must be a non-empty string"
    k = raw.get("k", 5)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_RECALL_K:
        return f"k must be a whole number from 1 to {MAX_RECALL_K}"
    return query, k


def answer_recall(
    store: VectorStore,
    call: ToolCall,
    *,
    conversation_id: str | None = None,
    user: str | None = None,
    tenant: str | None = None,
    format: Literal["openai", "anthropic"] = "openai",
    max_chars: int = 2000,
) -> Message:
    """The tool message that answers the recall tool ``call`` from ``store``:
    a ``tool`` message (OpenAI), or a ``user`` message carrying the
    ``tool_result`` (Anthropic), whose content is JSON: ``{"results":
    [{"rank", "score", "conversation_id", "role", "text"}]}``, best first,
    each ``text`` (what the message was found by, tool results with the call
    they answer) cut to ``max_chars``.

    The search runs within ``user`` and ``tenant``, in ``conversation_id``
    (every conversation of theirs when None). Bad arguments from the model
    answer an error result it can read and retry; a store failure raises
    `StoreError`.
    """
    if format not in ("openai", "anthropic"):
        msg = f"format={format!r} must be 'openai' or 'anthropic'"
        raise ConfigError.single(msg, yaml_path="format")
    scope = Scope(conversation_id=conversation_id, user=user, tenant=tenant)
    parsed = _arguments(call)
    if isinstance(parsed, str):
        result = ToolResult(call_id=call.id, content=f"error: {parsed}", is_error=True)
    else:
        query, k = parsed
        hits = store.search(query, k=k, scope=scope)
        results = [
            {
                "rank": rank,
                "score": round(hit.score, 6),
                "conversation_id": hit.conversation_id,
                "role": hit.message.role,
                "text": hit.text if len(hit.text) <= max_chars else hit.text[:max_chars] + " […]",
            }
            for rank, hit in enumerate(hits, start=1)
        ]
        content = json.dumps({"query": query, "results": results}, ensure_ascii=False)
        result = ToolResult(call_id=call.id, content=content)
    return Message(role="tool" if format == "openai" else "user", parts=(result,))
