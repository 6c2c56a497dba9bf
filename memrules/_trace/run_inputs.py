"""The optional inputs of a traced pipeline run, as JSON and back.

An ``apply`` line may say the prompt-cache inputs it was given: ``cache``
(the provider's rule: ``{"provider": "openai", "model": ..., "minimum":
..., "step": ..., "lifetime": ...}`` or the Anthropic rule's fields),
``now`` (seconds) and ``previous`` (the conversation's previous request:
``{"request": n}`` when it is the ``sent`` of the conversation's last
``apply`` line, ``n``, else the request in full: ``received``, ``sent``
with its ``counts`` and ``overhead``, ``origin`` and ``at``). A
``remember`` line may say its ``session_time`` (``{"date": "2023-05-08"}``
or ``{"datetime": "2023-05-08T10:00:00+00:00"}``) and its ``context``
(the `IndexContext` fields, or null for none). A key is
written only when the run was given something other than the default, so
the lines of runs without them read as they always did.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

import attrs

from memrules._core.errors import TraceError
from memrules._core.prompt_cache import Sent, SentRequest
from memrules._core.seam_records import IndexContext
from memrules._counting.cache import AnthropicRule, CacheRule, OpenAIRule
from memrules._trace.lines import messages_from, messages_json

__all__ = [
    "context_from",
    "context_json",
    "rule_from",
    "rule_json",
    "sent_request_from",
    "sent_request_json",
    "time_from",
    "time_json",
]


def rule_json(rule: CacheRule) -> dict[str, Any]:
    provider = "openai" if isinstance(rule, OpenAIRule) else "anthropic"
    return {"provider": provider, **attrs.asdict(rule)}


def rule_from(data: Any, where: str) -> CacheRule:
    if not isinstance(data, Mapping) or data.get("provider") not in ("openai", "anthropic"):
        msg = f"{where}: cache={data!r} is not a cache rule"
        raise TraceError(msg)
    fields = {k: v for k, v in data.items() if k != "provider"}
    kind = OpenAIRule if data["provider"] == "openai" else AnthropicRule
    try:
        return kind(**fields)
    except TypeError as exc:
        msg = f"{where}: cache: {exc}"
        raise TraceError(msg) from None


def sent_request_json(request: SentRequest) -> dict[str, Any]:
    return {
        "received": messages_json(request.received),
        "sent": {
            "messages": messages_json(request.sent.messages),
            "counts": list(request.sent.counts),
            "overhead": request.sent.overhead,
        },
        "origin": list(request.origin),
        "at": request.at,
    }


def sent_request_from(data: Any, where: str) -> SentRequest:
    try:
        sent = data["sent"]
        return SentRequest(
            received=messages_from(data["received"], f"{where}: previous.received"),
            sent=Sent(
                messages=messages_from(sent["messages"], f"{where}: previous.sent.messages"),
                counts=tuple(sent["counts"]),
                overhead=sent["overhead"],
            ),
            origin=tuple(data["origin"]),
            at=data["at"],
        )
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"{where}: previous is not a request as sent ({type(exc).__name__}: {exc})"
        raise TraceError(msg) from None


def time_json(when: date | datetime) -> dict[str, str]:
    return {"datetime" if isinstance(when, datetime) else "date": when.isoformat()}


def time_from(data: Any, where: str) -> date | datetime:
    try:
        if "datetime" in data:
            return datetime.fromisoformat(data["datetime"])
        return date.fromisoformat(data["date"])
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"{where}: {data!r} is not a date or a datetime ({exc})"
        raise TraceError(msg) from None


def context_json(context: IndexContext | None) -> dict[str, Any] | None:
    if context is None:
        return None
    fields = attrs.asdict(context)
    if context.time is not None:
        fields["time"] = time_json(context.time)
    return fields


def context_from(data: Any, where: str) -> IndexContext | None:
    if data is None:
        return None
    if not isinstance(data, Mapping):
        msg = f"{where}: context={data!r} is not an index context"
        raise TraceError(msg)
    fields = dict(data)
    if fields.get("time") is not None:
        fields["time"] = time_from(fields["time"], f"{where}: context.time")
    try:
        return IndexContext(**fields)
    except (TypeError, ValueError) as exc:
        msg = f"{where}: context: {exc}"
        raise TraceError(msg) from None
