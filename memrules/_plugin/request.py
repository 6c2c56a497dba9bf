"""The plugin's request and its outcome, as values: `Request` (the
messages of one call and whose they are: conversation, user, tenant, model)
and `StepResult` (what the request went through), with the readers of
an OpenAI body's ``metadata``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict

import attrs

from memrules._adapters import from_openai, to_openai
from memrules._adapters.conversion_cache import ConversionCache
from memrules._core.errors import MessageFormatError, MessageTypeError
from memrules._core.messages import Conversation
from memrules._core.prompt_cache import SentRequest
from memrules._core.report import CompressionReport
from memrules._core.seam_records import MAX_SCOPE_CHARS
from memrules._counting.usage import ContextUsage
from memrules._plugin.body_shape import check_openai_body
from memrules._runtime.pipeline import as_conversation
from memrules.graph.memory_graph import MemoryGraph
from memrules.graph.merge import MergeReport
from memrules.graph.render import (
    RenderedGraph,
)
from memrules.memory.retrieve import (
    RetrievalReport,
)
from memrules.state.model import ConversationState

__all__ = [
    "Request",
    "StepResult",
    "Whose",
    "conversation_id_from_metadata",
    "openai_messages",
    "read_request",
    "scope_from_metadata",
    "whose_of",
]


def _conversation_id(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        msg = f"conversation_id={value!r} must be a string or None"
        raise MessageFormatError(msg, field="conversation_id")
    return value


def _scope_id(field: str, value: object) -> str | None:
    """A user or tenant id: a string of at most 256 characters; an empty
    one is none."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_SCOPE_CHARS:
        msg = (
            f"{field}={value!r:.60} must be a string of at most {MAX_SCOPE_CHARS} "
            "characters, or None"
        )
        raise MessageFormatError(msg, field=field)
    return value


def _user(value: object) -> str | None:
    return _scope_id("user", value)


def _tenant(value: object) -> str | None:
    return _scope_id("tenant", value)


def scope_from_metadata(body: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The default way to find whose request an OpenAI body is: the strings
    ``metadata.user_id`` and ``metadata.tenant_id`` (None for either that
    is absent, not a string, or longer than 256 characters: such a request
    gets no memory, and is not refused for it). Whoever can write the body
    can name any user: pass ``user=`` and ``tenant=`` from your
    authentication instead when clients are not trusted."""
    metadata = body.get("metadata")
    if not isinstance(metadata, Mapping):
        return None, None

    def usable(value: object) -> str | None:
        return value if isinstance(value, str) and len(value) <= MAX_SCOPE_CHARS else None

    return usable(metadata.get("user_id")), usable(metadata.get("tenant_id"))


def conversation_id_from_metadata(body: Mapping[str, Any]) -> str | None:
    """The default way to find the conversation of an OpenAI body: the
    string ``metadata.conversation_id``, else None (no ``metadata``, or no
    ``conversation_id`` in it). Any other value (``5``, ``{"a": 1}``) is a
    `MessageFormatError`, as an empty string
    is: the client named a conversation, and the request is not merged into
    the default one in silence."""
    metadata = body.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    found = metadata.get("conversation_id")
    if found is None or isinstance(found, str):
        return found
    msg = f"{found!r:.60} must be a string naming the conversation, or absent"
    raise MessageFormatError(msg, field="metadata.conversation_id")


@attrs.frozen(kw_only=True, slots=True)
class Request:
    """A chat request as the hook sees it: the messages, the model they go
    to (which the `ContextWindowResolver` is asked
    about), the conversation they belong to (None: the plugin's default
    conversation), and whose it is: the ``user`` and ``tenant`` retrieval
    memory is scoped by (both needed for memory). Building one checks that
    every message is a `Message`."""

    messages: Conversation = attrs.field(converter=as_conversation)
    model: str | None = None
    conversation_id: str | None = attrs.field(default=None, converter=_conversation_id)
    user: str | None = attrs.field(default=None, converter=_user)
    tenant: str | None = attrs.field(default=None, converter=_tenant)

    @classmethod
    def from_openai(
        cls,
        body: Mapping[str, Any],
        *,
        conversation_id: str | None = None,
        conversation_id_of: Callable[[Mapping[str, Any]], str | None] = (
            conversation_id_from_metadata
        ),
        memo: ConversionCache | None = None,
        user: str | None = None,
        tenant: str | None = None,
    ) -> Request:
        """The request in an OpenAI chat-completions body (parsed JSON): its
        ``messages`` and ``model``, and the conversation ``conversation_id``
        names, else the one ``conversation_id_of(body)`` finds (by default
        ``metadata.conversation_id``); the ``user`` and ``tenant`` given,
        else ``metadata.user_id`` and ``metadata.tenant_id`` (see
        `scope_from_metadata`). ``memo`` is the conversation's
        `ConversionCache` (see
        `from_openai`). Raises
        `MessageFormatError` for malformed input,
        and for an Anthropic Messages body (naming the hook that fits)."""
        return read_request(
            body,
            check_openai_body,
            openai_messages,
            memo,
            conversation_id=conversation_id,
            conversation_id_of=conversation_id_of,
            user=user,
            tenant=tenant,
        )

    def to_openai(self) -> list[dict[str, Any]]:
        """The messages as OpenAI chat-completions messages, ready for JSON."""
        return to_openai(self.messages)


def read_request(
    body: Mapping[str, Any],
    check: Callable[[Mapping[str, Any]], None] | None,
    messages: Callable[[Mapping[str, Any], ConversionCache | None], Conversation],
    memo: ConversionCache | None,
    *,
    conversation_id: str | None,
    conversation_id_of: Callable[[Mapping[str, Any]], str | None],
    user: str | None,
    tenant: str | None,
) -> Request:
    """The `Request` of a provider's request ``body`` (parsed JSON), read the
    same way for every body format: ``check(body)`` refuses a body of another
    format (None: no check), the ``model`` must be a string, the conversation is
    ``conversation_id`` (else ``conversation_id_of(body)``), the user and
    tenant are ``user`` and ``tenant`` (else the body's ``metadata``, see
    `scope_from_metadata`), and ``messages(body, memo)`` converts the
    format's messages with the conversation's conversion cache ``memo``.
    Raises `MessageFormatError` for a malformed body."""
    if not isinstance(body, Mapping):
        msg = f"expected a request object, got {type(body).__name__}"
        raise MessageFormatError(msg)
    if check is not None:
        check(body)
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        msg = f"expected a string, got {type(model).__name__}"
        raise MessageFormatError(msg, field="model")
    if conversation_id is None:
        conversation_id = conversation_id_of(body)
    found_user, found_tenant = scope_from_metadata(body)
    return Request(
        messages=messages(body, memo),
        model=model,
        conversation_id=conversation_id,
        user=found_user if user is None else user,
        tenant=found_tenant if tenant is None else tenant,
    )


def openai_messages(body: Mapping[str, Any], memo: ConversionCache | None) -> Conversation:
    """The messages of an OpenAI chat body, converted with the conversation's
    conversion cache ``memo`` (see `from_openai`)."""
    found: Any = body.get("messages")  # from_openai names what is wrong with it
    return from_openai(found, memo=memo)


@attrs.frozen(kw_only=True, slots=True)
class StepResult:
    """What one request went through.

    ``state`` is the conversation's state for its next request (the same
    object when nothing changed), ``request`` the request to send (the same object when nothing
    changed), ``usage`` the reading the observers got, ``report`` what the
    pipeline did, and ``warned`` whether this step appended the warning.

    The graph step: ``delta`` is the graph the extractor read (None without
    one, or when it failed: then ``graph_error`` says why), ``merge`` what
    merging it did, ``rendered`` the graph message's rendering (None when
    nothing was rendered) and ``graph_tokens`` its token cost (0 without
    one), which the budget of this request did not include.

    Retrieval memory: ``memory`` is what retrieval found and the gate made
    of it (None on a route without memory), and ``memory_tokens`` the
    memory message's token cost (0 without one), outside the budget too.

    ``sent`` is what the pipeline sent (on a route with a ``cache:``
    section): the conversation's previous request for its next one.
    """

    state: ConversationState
    request: Request
    report: CompressionReport
    usage: ContextUsage
    warned: bool
    delta: MemoryGraph | None = None
    merge: MergeReport | None = None
    rendered: RenderedGraph | None = None
    graph_tokens: int = 0
    graph_error: str | None = None
    memory: RetrievalReport | None = None
    memory_tokens: int = 0
    sent: SentRequest | None = None

    @property
    def compacted(self) -> bool:
        """Whether the pipeline changed the messages."""
        return self.report.compacted


class Whose(TypedDict, total=False):
    """Whose a request body is, given by the caller (from its
    authentication) rather than read from the body: the conversation, the
    user and the tenant. The keywords of every body hook."""

    conversation_id: str | None
    user: str | None
    tenant: str | None


def whose_of(given: Whose) -> tuple[str | None, str | None, str | None]:
    """``given`` as the hook's triple; a keyword it does not know is a
    `MessageTypeError` naming it (as a misspelt keyword argument would be)."""
    for key in given:
        if key not in Whose.__annotations__:
            msg = f"unexpected keyword argument {key!r} (known: conversation_id, user, tenant)"
            raise MessageTypeError(msg, field=key)
    return given.get("conversation_id"), given.get("user"), given.get("tenant")
