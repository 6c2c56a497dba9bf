"""``memrules mcp``: retrieval memory and compaction as an MCP server.

The server speaks the Model Context Protocol over stdio (the official
``mcp`` SDK, the ``mcp`` extra) and serves one route of one config for one
scope: the user and tenant are the server's own settings (``--user`` and
``--tenant``, or ``MEMRULES_MCP_USER`` / ``MEMRULES_MCP_TENANT``), fixed when
it starts. No tool takes a user or tenant argument, so a caller can neither
read nor write another user's memories, whatever it sends. The tools:

``remember(question, answer, conversation_id=None)``
    keep one completed turn as a memory (the route's ``memory`` entry must
    have ``auto_store: true``; the outcome says ``disabled`` otherwise);
``recall(query)``
    the memories the route would inject for a request whose latest user
    message is ``query``, after the reflection gate (block patterns, the
    learned detector, pairs, decay, duplicates, the token budget), with
    their scores and what the gate left out and why; a ``query`` over
    `MAX_QUERY_CHARS` characters is refused at once;
``forget()``
    delete every memory of the scope; returns how many there were;
``list_memories()``
    every memory of the scope, oldest first;
``compact(messages)``
    OpenAI chat messages compacted by the route's pipeline, with the
    report's token figures.

Every tool answers JSON. A store that is down costs a ``recall`` its
memories (the answer says so), never the server. A call memrules refuses
(a bad message, a query too long) is a tool error whose text says why.
"""

from __future__ import annotations

import os
import time
from typing import Any

from memrules._adapters.frameworks import require
from memrules._adapters.openai import from_openai, to_openai
from memrules._config.load import load_config
from memrules._core.errors import MemrulesError
from memrules._core.messages import Message, Text
from memrules._plugin.plugin import MemoryPlugin
from memrules._plugin.request import Request
from memrules.memory.gate import reflect

__all__ = ["MAX_QUERY_CHARS", "SCOPE_MISSING", "build_server", "scope", "serve"]

MAX_QUERY_CHARS = 8_192
"""The longest ``recall`` query: a question, not a document."""


SCOPE_MISSING = (
    "mcp: the server's scope needs a user and a tenant (--user and --tenant, or "
    "MEMRULES_MCP_USER and MEMRULES_MCP_TENANT): memory is never served without both"
)


def scope(user: str | None, tenant: str | None) -> tuple[str, str] | None:
    """The server's user and tenant: the arguments, else the environment's;
    None when either is missing."""
    user = user or os.environ.get("MEMRULES_MCP_USER")
    tenant = tenant or os.environ.get("MEMRULES_MCP_TENANT")
    return (user, tenant) if user and tenant else None


def _user(text: str) -> Message:
    return Message(role="user", parts=(Text(text=text),))


def build_server(plugin: MemoryPlugin, *, user: str, tenant: str) -> Any:
    """An ``MCPServer`` whose tools use ``plugin`` for ``user`` and ``tenant``
    only (see the module docs). The caller owns ``plugin`` and closes it."""
    server_module = require("mcp.server.mcpserver", "mcp")
    tool_error = require("mcp.server.mcpserver.exceptions", "mcp").ToolError
    server = server_module.MCPServer(
        name="memrules",
        instructions=(
            "Retrieval memory for one user (remember, recall, forget, list_memories) "
            "and compaction of a chat history (compact)."
        ),
    )

    def remember(question: str, answer: str, conversation_id: str | None = None) -> dict[str, Any]:
        """Keep one completed turn (the user's question and the answer) as a memory."""
        request = Request(
            messages=(_user(question),),
            conversation_id=conversation_id,
            user=user,
            tenant=tenant,
        )
        return plugin.on_response(request, answer).to_dict()

    def recall(query: str) -> dict[str, Any]:
        """The memories that answer ``query``, best first, after the reflection gate."""
        if len(query) > MAX_QUERY_CHARS:
            msg = (
                f"recall: the query is {len(query):,} characters; at most {MAX_QUERY_CHARS:,} "
                "are looked up: send the question, not a document"
            )
            raise tool_error(msg)
        memory = plugin.memory
        if memory is None:
            return {"status": "disabled", "reason": "this route has no retrieval memory"}
        retrieval = memory.retrieve((_user(query),), user=user, tenant=tenant)
        settings = memory.settings
        gate = reflect(
            retrieval.memories, settings.reflection, now=time.time(), marker=settings.marker
        )
        answer = retrieval.to_dict()
        answer["memories"] = [m.to_dict() for m in gate.memories]
        answer["gate"] = gate.to_dict()
        return answer

    def forget() -> dict[str, int]:
        """Delete every memory of this server's user: the right to be forgotten."""
        return {"forgotten": plugin.forget(user, tenant)}

    def list_memories() -> dict[str, list[dict[str, Any]]]:
        """Every memory of this server's user, oldest first."""
        return {"memories": [record.to_dict() for record in plugin.list_memories(user, tenant)]}

    def compact(messages: list[dict[str, Any]]) -> dict[str, Any]:
        """OpenAI chat messages compacted by the route's pipeline, and the token figures."""
        try:
            result = plugin.pipeline.apply(from_openai(messages))
        except MemrulesError as exc:
            raise tool_error(f"compact: {exc}") from exc
        report = result.report
        return {
            "messages": to_openai(result.messages),
            "tokens_before": report.tokens_before,
            "tokens_after": report.tokens_after,
            "compacted": report.compacted,
            "stop_reason": report.stop_reason.value,
        }

    for tool in (remember, recall, forget, list_memories, compact):
        server.tool()(tool)
    return server


def serve(config_path: str, *, route: str, user: str, tenant: str) -> int:
    """Serve ``route`` of the config at ``config_path`` for ``user`` and
    ``tenant`` over stdio until the client hangs up; returns the exit status."""
    config = load_config(config_path)
    with MemoryPlugin.from_config(config, route=route) as plugin:
        build_server(plugin, user=user, tenant=tenant).run("stdio")
    return 0
