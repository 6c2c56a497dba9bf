"""The request hook's provider-specific sides: an Anthropic Messages body in
and out, and the provider-side context edits of the config's
``provider_editing`` (see `memrules._adapters.context_editing`) around
any body's step.

With ``provider_editing`` set, the edits memrules makes itself (all of them
with ``local: true``, and those the body's provider lacks) are made to the
request's messages before the step (`edit_locally`), so compaction sees what
is sent; after it, `with_provider_edits` writes the edits the provider makes
into the body, and the plan of what the provider will clear is counted on
the messages sent (`plan_provider`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from memrules._adapters import from_anthropic, to_anthropic_request
from memrules._adapters.context_editing import (
    EditPlan,
    Provider,
    ProviderEditing,
    apply_edits,
    plan_edits,
    write_context_management,
)
from memrules._adapters.conversion_cache import ConversionCache
from memrules._core.messages import Conversation
from memrules._plugin.conversation_caches import ConversationCache
from memrules._plugin.request import Request, StepResult

__all__ = [
    "anthropic_body",
    "anthropic_messages",
    "edit_locally",
    "plan_provider",
    "with_provider_edits",
]


def anthropic_messages(body: Mapping[str, Any], memo: ConversionCache | None) -> Conversation:
    """The messages of an Anthropic Messages body, its ``system`` first (see
    `from_anthropic`), converted with the conversation's conversion cache
    ``memo``."""
    return from_anthropic(body, memo=memo)


def anthropic_body(
    body: Mapping[str, Any], request: Request, result: StepResult, memo: ConversationCache
) -> dict[str, Any]:
    """``body`` with the ``system`` and ``messages`` ``result`` sends (every
    message written afresh: ``request`` and ``memo`` are not asked)."""
    out = {k: v for k, v in body.items() if k != "system"}
    out.update(to_anthropic_request(result.request.messages))
    return out


def edit_locally(
    count: Callable[[Conversation], int],
    editing: ProviderEditing,
    request: Request,
    provider: Provider,
) -> tuple[Request, tuple[EditPlan, ...]]:
    """``request`` with the edits memrules makes itself, and their plan
    (none when it makes none)."""
    if not any(edit is not None for edit in editing.local_for(provider)):
        return request, ()
    edited, local = apply_edits(request.messages, editing, count, provider=provider)
    if edited is not request.messages:
        request = attrs.evolve(request, messages=edited)
    return request, (local,)


def plan_provider(
    count: Callable[[Conversation], int],
    editing: ProviderEditing,
    result: StepResult,
    provider: Provider,
    plans: tuple[EditPlan, ...],
) -> tuple[EditPlan, ...]:
    """``plans`` and the plan of what the provider will clear of what ``result`` sends."""
    asked = editing if provider == "anthropic" else None
    if provider == "openai" and editing.compaction is not None:
        asked = ProviderEditing(compaction=editing.compaction)
    if asked is None or editing.local:
        return plans
    _, planned = plan_edits(result.request.messages, asked, count, provider=provider)
    return (*plans, planned)


def with_provider_edits(
    body: dict[str, Any], editing: ProviderEditing | None, provider: Provider
) -> dict[str, Any]:
    """``body`` with the provider-side edits of ``editing`` written in."""
    if editing is None:
        return body
    return write_context_management(body, editing, provider=provider)
