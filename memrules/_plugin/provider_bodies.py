"""The request hook's provider-specific sides: an Anthropic Messages body in
and out, and the provider-side context edits of the config's
``provider_editing`` (see :mod:`memrules._adapters.context_editing`) around
any body's step.

With ``provider_editing`` set, a request goes through :func:`run_edited`:
the edits memrules makes itself (all of them with ``local: true``, and those
the body's provider lacks) are made to the request's messages before the
step, so compaction sees what is sent; after it, :func:`with_provider_edits`
writes the edits the provider makes into the body, and the plan of what
the provider will clear is counted on the messages sent."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
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
from memrules._core.errors import MessageFormatError
from memrules._core.messages import Conversation
from memrules._plugin.body_shape import check_anthropic_body
from memrules._plugin.request import Request, StepResult, scope_from_metadata

__all__ = [
    "anthropic_body",
    "request_from_anthropic",
    "run_edited",
    "run_edited_async",
    "with_provider_edits",
]


def request_from_anthropic(
    body: Mapping[str, Any],
    *,
    conversation_id: str | None,
    conversation_id_of: Callable[[Mapping[str, Any]], str | None],
    user: str | None,
    tenant: str | None,
    memo: ConversionCache | None = None,
) -> Request:
    """The :class:`Request` of an Anthropic Messages body: its ``system`` and
    ``messages`` (see :func:`~memrules.from_anthropic`, converted with the
    conversation's ``memo``) and ``model``, whose it is found as for an
    OpenAI body. An OpenAI chat body is a :class:`MessageFormatError` that
    names the hook that fits (see :mod:`memrules._plugin.body_shape`)."""
    if not isinstance(body, Mapping):
        msg = f"expected a request object, got {type(body).__name__}"
        raise MessageFormatError(msg)
    check_anthropic_body(body)
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        msg = f"expected a string, got {type(model).__name__}"
        raise MessageFormatError(msg, field="model")
    if conversation_id is None:
        conversation_id = conversation_id_of(body)
    found_user, found_tenant = scope_from_metadata(body)
    return Request(
        messages=from_anthropic(body, memo=memo),
        model=model,
        conversation_id=conversation_id,
        user=found_user if user is None else user,
        tenant=found_tenant if tenant is None else tenant,
    )


def anthropic_body(body: Mapping[str, Any], result: StepResult) -> dict[str, Any]:
    """``body`` with the ``system`` and ``messages`` ``result`` sends."""
    out = {k: v for k, v in body.items() if k != "system"}
    out.update(to_anthropic_request(result.request.messages))
    return out


def run_edited(
    handle: Callable[[Request], StepResult],
    count: Callable[[Conversation], int],
    editing: ProviderEditing | None,
    request: Request,
    provider: Provider,
) -> tuple[Request, StepResult, tuple[EditPlan, ...]]:
    """``handle(request)`` with the local edits of ``editing`` made first:
    the request handled, its result, and the plan of what memrules cleared
    (where it cleared anything) and what the provider will clear."""
    if editing is None:
        return request, handle(request), ()
    request, plans = _edit_locally(count, editing, request, provider)
    result = handle(request)
    return request, result, _plan_provider(count, editing, result, provider, plans)


async def run_edited_async(
    handle: Callable[[Request], Awaitable[StepResult]],
    count: Callable[[Conversation], int],
    editing: ProviderEditing | None,
    request: Request,
    provider: Provider,
) -> tuple[Request, StepResult, tuple[EditPlan, ...]]:
    """:func:`run_edited` with ``handle`` awaited."""
    if editing is None:
        return request, await handle(request), ()
    request, plans = _edit_locally(count, editing, request, provider)
    result = await handle(request)
    return request, result, _plan_provider(count, editing, result, provider, plans)


def _edit_locally(
    count: Callable[[Conversation], int],
    editing: ProviderEditing,
    request: Request,
    provider: Provider,
) -> tuple[Request, list[EditPlan]]:
    """``request`` with the edits memrules makes itself, and their plan."""
    plans: list[EditPlan] = []
    if any(edit is not None for edit in editing.local_for(provider)):
        edited, local = apply_edits(request.messages, editing, count, provider=provider)
        plans.append(local)
        if edited is not request.messages:
            request = attrs.evolve(request, messages=edited)
    return request, plans


def _plan_provider(
    count: Callable[[Conversation], int],
    editing: ProviderEditing,
    result: StepResult,
    provider: Provider,
    plans: list[EditPlan],
) -> tuple[EditPlan, ...]:
    """``plans`` and the plan of what the provider will clear of what ``result`` sends."""
    asked = editing if provider == "anthropic" else None
    if provider == "openai" and editing.compaction is not None:
        asked = ProviderEditing(compaction=editing.compaction)
    if asked is not None and not editing.local:
        _, planned = plan_edits(result.request.messages, asked, count, provider=provider)
        plans.append(planned)
    return tuple(plans)


def with_provider_edits(
    body: dict[str, Any], editing: ProviderEditing | None, provider: Provider
) -> dict[str, Any]:
    """``body`` with the provider-side edits of ``editing`` written in."""
    if editing is None:
        return body
    return write_context_management(body, editing, provider=provider)
