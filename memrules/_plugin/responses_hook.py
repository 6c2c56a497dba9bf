"""The request hook's Responses API side: a ``POST /v1/responses`` body in, the
compacted body out.

A body's ``input`` (an item list, or one string: a user message) is read
with `from_responses`; its
``instructions`` string becomes the leading system message, so that it is
counted and, as the first system message, never compacted away. Counting
follows the config's ``count_rule`` (``openai`` by default: OpenAI's chat
framing over the items as messages). The body that goes out has the new
``input`` and the instructions back in ``instructions``; every other key is
as it was. A body the pipeline did not change comes back equal to the one
that came in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memrules._adapters.conversion_cache import ConversionCache
from memrules._adapters.responses import from_responses, to_responses
from memrules._core.errors import MessageFormatError
from memrules._core.messages import Conversation, Message, Text
from memrules._plugin.conversation_caches import ConversationCache
from memrules._plugin.request import Request, StepResult

__all__ = ["INSTRUCTIONS_KEY", "responses_body", "responses_messages"]

INSTRUCTIONS_KEY = "responses_instructions"
"""The metadata key that marks the system message holding the body's ``instructions``."""


def responses_messages(body: Mapping[str, Any], memo: ConversionCache | None) -> Conversation:
    """The messages of a Responses body: its ``input`` (converted with the
    conversation's conversion cache ``memo``: the items it converted for the
    conversation's last request are not read again) after its
    ``instructions`` as the leading system message. Raises
    `MessageFormatError` for a malformed ``input`` or ``instructions``."""
    raw = body.get("input")
    if raw is None:
        msg = "missing: a Responses body needs an input (an item list or a string)"
        raise MessageFormatError(msg, field="input")
    items = [{"role": "user", "content": raw}] if isinstance(raw, str) else raw
    messages = from_responses(items, memo=memo)
    instructions = body.get("instructions")
    if instructions is None:
        return messages
    if not isinstance(instructions, str):
        msg = f"expected a string, got {type(instructions).__name__}"
        raise MessageFormatError(msg, field="instructions")
    lead = Message(
        role="system", parts=(Text(text=instructions),), metadata={INSTRUCTIONS_KEY: True}
    )
    return (lead, *messages)


def responses_body(
    body: Mapping[str, Any], request: Request, result: StepResult, memo: ConversationCache
) -> dict[str, Any]:
    """``body`` with the ``input`` (and ``instructions``) that ``result``
    sends for ``request``. A string ``input`` the request kept as it was
    stays a string. Every item sent is written afresh (``memo``, the
    conversation's, is not asked)."""
    sent = result.request.messages
    out = dict(body)
    lead = [m for m in sent if m.metadata.get(INSTRUCTIONS_KEY)]
    if lead:
        out["instructions"] = lead[0].text
        sent = tuple(m for m in sent if m is not lead[0])
    raw = body.get("input")
    kept = [m for m in request.messages if not m.metadata.get(INSTRUCTIONS_KEY)]
    if isinstance(raw, str) and len(sent) == 1 and sent[0] is kept[0]:
        return out
    out["input"] = to_responses(sent)
    return out
