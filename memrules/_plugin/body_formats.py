"""The request bodies the hook takes, as a table of adapters: one frozen
`BodyFormat` a format (OpenAI chat completions, the Responses API,
Anthropic Messages), each saying how to read the body's messages, how to
write the compacted ones back, and which provider's context edits apply.

One driver runs every format (`MemoryPlugin`'s hooks, sync and async): it
finds the body's conversation, reads the body with that conversation's
conversion cache for the format (`BodyFormat.read`), makes the local
context edits (`EditedRequest.of`), runs the request's step, and writes the
body back with the provider's edits (`EditedRequest.body_for`). Adding a format
is adding a row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from memrules._adapters.context_editing import EditPlan, Provider, ProviderEditing
from memrules._adapters.conversion_cache import ConversionCache
from memrules._adapters.openai import Written, write_back
from memrules._core.messages import Conversation
from memrules._plugin.body_shape import check_anthropic_body, check_openai_body
from memrules._plugin.conversation_caches import ConversationCache
from memrules._plugin.provider_bodies import (
    anthropic_body,
    anthropic_messages,
    edit_locally,
    plan_provider,
    with_provider_edits,
)
from memrules._plugin.request import (
    Request,
    StepResult,
    openai_messages,
    read_request,
)
from memrules._plugin.responses_hook import responses_body, responses_messages

__all__ = ["ANTHROPIC", "OPENAI_CHAT", "RESPONSES", "BodyFormat", "EditedRequest", "openai_body"]


def _no_id(body: Mapping[str, Any]) -> None:
    return None


@attrs.frozen(kw_only=True)
class BodyFormat:
    """How the hook reads and writes one format's request bodies.

    ``name`` keys the conversation's conversion cache for the format;
    ``messages`` converts the body's messages (with the conversation's
    conversion cache); ``write`` makes the body to send from the body, the
    request handled, its result and the conversation's memo; ``check``
    refuses a body of another format (None: none is mistaken for this
    one); ``edits`` is the provider whose context edits the config's
    ``provider_editing`` makes for the format (None: the format takes
    none)."""

    name: str
    messages: Callable[[Mapping[str, Any], ConversionCache | None], Conversation]
    write: Callable[[Mapping[str, Any], Request, StepResult, ConversationCache], dict[str, Any]]
    check: Callable[[Mapping[str, Any]], None] | None = None
    edits: Provider | None = None

    def read(
        self,
        body: Mapping[str, Any],
        whose: tuple[str | None, str | None, str | None],
        conversation_id_of: Callable[[Mapping[str, Any]], str | None],
        memos: Callable[[str | None], ConversationCache],
    ) -> Request:
        """The request of ``body``: its conversation is the first of
        ``whose`` (conversation, user, tenant), else what
        ``conversation_id_of`` finds in it, converted with that
        conversation's conversion cache (from ``memos``)."""
        conversation_id, user, tenant = whose
        memo = None
        if isinstance(body, Mapping):  # else reading it says what is wrong
            if conversation_id is None:
                conversation_id = conversation_id_of(body)
            memo = memos(conversation_id).conversion_for(self.name)
        return read_request(
            body,
            self.check,
            self.messages,
            memo,
            conversation_id=conversation_id,
            conversation_id_of=_no_id,
            user=user,
            tenant=tenant,
        )


def openai_body(
    body: Mapping[str, Any], request: Request, result: StepResult, memo: ConversationCache
) -> dict[str, Any]:
    """``body`` with the messages ``result`` sends: kept messages as the
    body's own objects, and those the conversation's last request converted
    copied from what they became then (``memo.written``, replaced here)."""
    keep: Written = {}
    sent = write_back(
        result.request.messages,
        request.messages,
        body["messages"],
        result.report.origin,
        written=memo.written,
        keep=keep,
    )
    memo.written = keep
    return {**body, "messages": sent}


OPENAI_CHAT = BodyFormat(
    name="openai", messages=openai_messages, write=openai_body, check=check_openai_body
)
RESPONSES = BodyFormat(
    name="responses", messages=responses_messages, write=responses_body, edits="openai"
)
ANTHROPIC = BodyFormat(
    name="anthropic",
    messages=anthropic_messages,
    write=anthropic_body,
    check=check_anthropic_body,
    edits="anthropic",
)


@attrs.frozen(kw_only=True)
class EditedRequest:
    """A body's request with the local context edits made (``request``),
    the ``plans`` of those edits, and what is needed to write the body back."""

    kind: BodyFormat
    body: Mapping[str, Any]
    request: Request
    editing: ProviderEditing | None
    plans: tuple[EditPlan, ...]

    @classmethod
    def of(
        cls,
        kind: BodyFormat,
        body: Mapping[str, Any],
        request: Request,
        editing: ProviderEditing | None,
        count: Callable[[Conversation], int],
    ) -> EditedRequest:
        """``request`` (read from ``body``) with the edits of ``editing`` that
        memrules makes itself for ``kind`` made."""
        if kind.edits is None or editing is None:
            return cls(kind=kind, body=body, request=request, editing=None, plans=())
        edited, plans = edit_locally(count, editing, request, kind.edits)
        return cls(kind=kind, body=body, request=edited, editing=editing, plans=plans)

    def body_for(
        self, result: StepResult, memo: ConversationCache, count: Callable[[Conversation], int]
    ) -> tuple[dict[str, Any], tuple[EditPlan, ...] | None]:
        """The body to send for ``result`` (the step's result of
        `request`), the provider's edits written in, and the plan of every
        edit (None for a format that takes none)."""
        written = self.kind.write(self.body, self.request, result, memo)
        provider = self.kind.edits
        if provider is None:
            return written, None
        if self.editing is None:
            return written, ()
        plans = plan_provider(count, self.editing, result, provider, self.plans)
        return with_provider_edits(written, self.editing, provider), plans
