"""The OpenAI chat-completions format's roles, keys and the order its writer
writes them in, shared by the reader (`from_openai`) and the writer
(`to_openai`).
"""

from __future__ import annotations

from memrules._adapters._common import rank
from memrules._core.messages import Role

__all__ = [
    "ARGUMENTS_KEY",
    "BODY_KEYS",
    "BODY_RANK",
    "CALL_KEYS",
    "CALL_RANK",
    "KNOWN_KEYS",
    "LEGACY_ID",
    "LEGACY_KEYS",
    "PLAIN_KEYS",
    "PROVIDER",
    "RANK",
    "ROLES",
]

PROVIDER = "openai"


ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}


# The order the writers write their own keys in (see _common, "Key order").
RANK = rank("role", "tool_call_id", "content", "name", "tool_calls", "function_call")


CALL_RANK = rank("id", "type", "function", "custom")


BODY_RANK = rank("name", "arguments", "input")


PLAIN_KEYS = frozenset({"role", "content", "name"})


KNOWN_KEYS: dict[str, frozenset[str]] = {
    "system": PLAIN_KEYS,
    "developer": PLAIN_KEYS,
    "user": PLAIN_KEYS,
    "assistant": PLAIN_KEYS | {"tool_calls", "function_call"},
    "tool": PLAIN_KEYS | {"tool_call_id"},
    "function": PLAIN_KEYS,
}


CALL_KEYS = {
    "function": frozenset({"id", "type", "function"}),
    "custom": frozenset({"id", "type", "custom"}),
}


BODY_KEYS = {"function": frozenset({"name", "arguments"}), "custom": frozenset({"name", "input"})}


ARGUMENTS_KEY = {"function": "arguments", "custom": "input"}


LEGACY_KEYS = frozenset({"name", "arguments"})


LEGACY_ID = "memrules_function_call_{}"
