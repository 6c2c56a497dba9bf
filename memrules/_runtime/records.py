"""What `Pipeline.remember` stores: the records of a conversation's
messages for a scope and a context, its arguments checked first."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime

import attrs

from memrules._core.errors import ConfigError
from memrules._core.messages import Message, as_messages, check_messages
from memrules._core.seam_records import IndexContext, Scope, StoredMessage, build_records

__all__ = ["remembered_records"]


def remembered_records(
    messages: Iterable[Message],
    conversation_id: object,
    user: str | None,
    tenant: str | None,
    session_time: object,
    context: object,
) -> tuple[StoredMessage, ...]:
    """The records `Pipeline.remember` stores for these arguments,
    which it checks first."""
    if not isinstance(conversation_id, str):
        msg = f"conversation_id={conversation_id!r} must be a non-empty string"
        raise ConfigError.single(msg, yaml_path="conversation_id")
    if context is not None and not isinstance(context, IndexContext):
        msg = f"context={context!r} must be an IndexContext or None"
        raise ConfigError.single(msg, yaml_path="context")
    if session_time is not None:
        if not isinstance(session_time, (date, datetime)):
            msg = f"session_time={session_time!r} must be a date, a datetime or None"
            raise ConfigError.single(msg, yaml_path="session_time")
        context = attrs.evolve(context or IndexContext(before=0), time=session_time)
    scope = Scope(conversation_id=conversation_id, user=user, tenant=tenant)
    conversation = as_messages(messages)
    check_messages(conversation)
    return build_records(conversation, scope=scope, context=context)
