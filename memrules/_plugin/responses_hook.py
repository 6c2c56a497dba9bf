"""The request hook's Responses API side: a ``POST /v1/responses`` body in, the
compacted body out.

A body's ``input`` (an item list, or one string: a user message) is read
with :func:`~memrules._adapters.responses.from_responses`; its
``instructions`` string becomes the leading system message, so that it is
counted and, as the first system message, never compacted away. Counting
follows the config's ``count_rule`` (``openai`` by default: OpenAI's chat
framing over the items as messages). The body that goes out has the new
``input`` and the instructions back in ``instructions``; every other key is
as it was. A body the pipeline did not change comes back equal to the one
that came in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from memrules._adapters.conversion_cache import ConversionCache
from memrules._adapters.responses import from_responses, to_responses
from memrules._core.errors import MessageFormatError
from memrules._core.messages import Message, Text
from memrules._plugin.request import Request, StepResult, scope_from_metadata

__all__ = ["INSTRUCTIONS_KEY", "request_from_responses", "responses_body"]

INSTRUCTIONS_KEY = "responses_instructions"
"""The metadata key that marks the system message holding the body's ``instructions``."""


def request_from_responses(
    body: Mapping[str, Any],
    *,
    conversation_id: str | None,
    conversation_id_of: Callable[[Mapping[str, Any]], str | None],
    user: str | None,
    tenant: str | None,
    memo: ConversionCache | None = None,
) -> Request:
    """The :class:`Request` of a Responses body: its ``input`` and
    ``instructions`` as messages, its ``model``, the conversation
    ``conversation_id`` names (else ``conversation_id_of(body)``), and the
    ``user`` and ``tenant`` given (else the body's ``metadata.user_id`` and
    ``metadata.tenant_id``). ``memo`` is the conversation's
    :class:`~memrules._adapters.conversion_cache.ConversionCache`: the input
    items it converted for the conversation's last request are not read
    again. Raises :class:`~memrules._core.errors.MessageFormatError` for a
    malformed body."""
    if not isinstance(body, Mapping):
        msg = f"expected a request object, got {type(body).__name__}"
        raise MessageFormatError(msg)
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        msg = f"expected a string, got {type(model).__name__}"
        raise MessageFormatError(msg, field="model")
    raw = body.get("input")
    if raw is None:
        msg = "missing: a Responses body needs an input (an item list or a string)"
        raise MessageFormatError(msg, field="input")
    items = [{"role": "user", "content": raw}] if isinstance(raw, str) else raw
    messages = from_responses(items, memo=memo)
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            msg = f"expected a string, got {type(instructions).__name__}"
            raise MessageFormatError(msg, field="instructions")
        lead = Message(
            role="system", parts=(Text(text=instructions),), metadata={INSTRUCTIONS_KEY: True}
        )
        messages = (lead, *messages)
    if conversation_id is None:
        conversation_id = conversation_id_of(body)
    found_user, found_tenant = scope_from_metadata(body)
    return Request(
        messages=messages,
        model=model,
        conversation_id=conversation_id,
        user=found_user if user is None else user,
        tenant=found_tenant if tenant is None else tenant,
    )


def responses_body(body: Mapping[str, Any], request: Request, result: StepResult) -> dict[str, Any]:
    """``body`` with the ``input`` (and ``instructions``) that ``result``
    sends. A string ``input`` the request kept as it was stays a string."""
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
