"""Strategies that move old turns out through a seam: offload and summarize.

Each does nothing when its seam is absent. A seam failure raises
`StrategyError`, so the interpreter records it and
keeps the conversation as it was: offloading is all or nothing.

Every seam call is recorded in the report as a
`SeamCall` with its request and response in JSON,
deterministically (no clock, no randomness), so a replay can answer it
without the seam: for the store, the scope and each record's id, turn and
exchange (the messages themselves are the input's) and the ids it added or
found; for the summarizer, the request it makes (the chat body of an
OpenAI-compatible one, without its key) and the text it answered (none for
a summary refused for saving no tokens: its error says why, and a runaway
answer is not copied into the report).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from memrules._core.conversation import is_turn_start, without_indices
from memrules._core.errors import ConfigError, StoreError, StrategyError
from memrules._core.messages import Conversation, Message, Role, Text, ToolCall
from memrules._core.seam_protocols import JSONRequests, SeamCall, Summarizer
from memrules._core.seam_records import StoreWrite, build_records, encode_message
from memrules._engine.contract import Outcome, Strategy, StrategyContext, StrategyResult
from memrules.strategies._units import take_units
from memrules.strategies._util import check_positive
from memrules.strategies.registry import describe, register

__all__ = ["SUMMARY_PREFIX", "offload", "summarize"]

SUMMARY_PREFIX = "[memrules summary]"
T = TypeVar("T")


def _indices(block: tuple[range, ...]) -> list[int]:
    return [i for unit in block for i in unit]


def _call(
    seam: str,
    operation: str,
    request: Any,
    send: Callable[[], T],
    answer: Callable[[T], Any],
) -> tuple[T, SeamCall]:
    """``send()`` through a seam, and the record of it for the report:
    ``request`` and ``answer(response)``, both JSON. A failure raises
    `StrategyError` carrying that record, so the interpreter keeps
    the conversation as it was."""
    try:
        response = send()
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        call = SeamCall(seam=seam, operation=operation, request=request, error=error)
        msg = f"{seam} failed, the messages stay where they were: {exc}"
        raise StrategyError(msg, seam_calls=(call,)) from exc
    recorded = SeamCall(seam=seam, operation=operation, request=request, response=answer(response))
    return response, recorded


def _written(write: object) -> Any:
    return write.to_dict() if isinstance(write, StoreWrite) else None


def _messages_json(batch: Conversation) -> list[Any]:
    out: list[Any] = []
    for m in batch:
        try:
            out.append(json.loads(encode_message(m)))
        except StoreError:
            out.append({"role": m.role, "text": m.countable_text})
    return out


def _argument(call: ToolCall) -> str:
    """The first string argument of ``call`` (a path, a query), shortened."""
    try:
        raw = json.loads(call.arguments or "{}")
    except ValueError:
        return ""
    if isinstance(raw, dict):
        for value in raw.values():
            if isinstance(value, str) and value:
                return value if len(value) <= 60 else value[:57] + "..."
    return ""


def _describe(conversation: Conversation, unit: range) -> str:
    first = conversation[unit.start]
    if len(unit) == 1 and is_summary(first):
        return "an earlier summary"
    if is_turn_start(first):
        text = " ".join(first.text.split())
        shown = text if len(text) <= 60 else text[:57] + "..."
        return f'the turn "{shown}"' if shown else "a turn"
    calls = [p for i in unit for p in conversation[i].parts if isinstance(p, ToolCall)]
    if not calls:
        return "an exchange"
    named = ", ".join(f"{c.name}({a})" if (a := _argument(c)) else c.name for c in calls[:3]) + (
        f" and {len(calls) - 3} more calls" if len(calls) > 3 else ""
    )
    return f"the exchange {named}"


def _replaced(conversation: Conversation, block: tuple[range, ...], limit: int = 8) -> str:
    """Which turns and exchanges ``block`` holds, in words."""
    shown = [_describe(conversation, unit) for unit in block[:limit]]
    if len(block) > limit:
        shown.append(f"{len(block) - limit} more")
    return "; ".join(shown)


@attrs.frozen(slots=True, repr=False)
class _Offload:
    turns: int
    keep_exchanges: int

    def __call__(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        store = context.seams.store
        if store is None:
            return conversation
        moved = take_units(
            conversation, context, units=self.turns, keep_exchanges=self.keep_exchanges, fill=True
        )
        if not moved:
            return conversation
        gone = _indices(moved)
        records = build_records(
            conversation, gone, scope=context.scope, context=context.index_context
        )
        request = {
            "scope": context.scope.to_dict(),
            "messages": len(gone),
            "records": [r.to_dict() for r in records],
        }
        write, call = _call("store", "add", request, lambda: store.add(records), _written)
        note = f"offloaded {len(gone)} messages ({len(moved)} units)"
        if isinstance(write, StoreWrite) and write.durable is False:
            note += "; the store keeps them in memory only: they are lost when the process ends"
        return Outcome(
            messages=without_indices(conversation, gone),
            note=note,
            seam_calls=(call,),
        )

    def __repr__(self) -> str:
        return describe("offload", self)


@register("offload")
def offload(*, turns: int = 10, keep_exchanges: int = 3) -> Strategy:
    """Move the oldest ``turns`` units into the vector store, or more when
    the budget needs more, all or nothing: when the store fails they stay
    where they were. Without a store it does nothing. A store of memrules
    confirms that what it wrote is kept (flushed, read back, its files the
    ones it opened) before anything leaves the conversation; one that keeps
    records in memory only says so in the report's note (and the seam
    call's ``"durable": false``).

    A unit is a turn before the latest one or, inside the latest turn, a
    completed tool exchange older than the newest ``keep_exchanges`` (see
    `Units`), so an agent loop that runs many
    tool rounds after one instruction offloads its old rounds. Never the
    latest user message, never a pending call, never half an exchange:
    everything that leaves the conversation is in the store.

    Keeps: survivors untouched (their exchanges never move), order, tool
    exchanges whole.
    """
    check_positive("turns", turns)
    check_positive("keep_exchanges", keep_exchanges, minimum=0)
    return _Offload(turns, keep_exchanges)


_CHARS_PER_TOKEN = 16
"""More characters than this per token it would save, and a summary is
refused uncounted: the encoders average about four characters a token, so
only runs of repeated characters pack more, and counting a runaway answer
of megabytes would cost more than the summary could save."""


def _no_saving(
    summary: Message, replaced: int, messages: int, context: StrategyContext
) -> str | None:
    """Why ``summary`` may not replace ``messages`` messages of ``replaced``
    tokens, or None when it saves tokens: a summary that costs as much as
    what it replaces is not one."""
    chars = len(summary.countable_text)
    if chars > _CHARS_PER_TOKEN * replaced:
        size = f"{chars} characters"
    else:
        cost = context.counter.count(summary)
        if cost < replaced:
            return None
        size = f"{cost} tokens"
    return (
        f"refused a summary of {size} for {messages} messages of {replaced} tokens: "
        "it saves none; nothing was replaced"
    )


def is_summary(message: Message) -> bool:
    """Whether ``message`` is a summary ``summarize`` wrote."""
    info = message.metadata.get("memrules") if isinstance(message.metadata, Mapping) else None
    return (isinstance(info, Mapping) and "summary_of" in info) or message.text.startswith(
        SUMMARY_PREFIX
    )


def _last_summary(conversation: Conversation) -> int:
    """The index of the last summary in ``conversation``, or -1."""
    return max((i for i, m in enumerate(conversation) if is_summary(m)), default=-1)


def _after_summaries(conversation: Conversation, moved: tuple[range, ...]) -> tuple[range, ...]:
    """``moved`` without the units at or before the last summary: those
    stay as they were sent (frozen), and the new summary follows them."""
    last = _last_summary(conversation)
    return tuple(unit for unit in moved if unit.start > last)


_REFUSAL = re.compile(
    r"(?:i\s+(?:can\s*not|can'?t|won'?t|am\s+(?:not\s+able|unable)|'?m\s+(?:not\s+able|unable))"
    r"|(?:i'?m\s+|i\s+am\s+)?sorry\b|as\s+an\s+ai\b)",
    re.IGNORECASE,
)
_REFUSAL_CHARS = 300
"""A refusal is short: an answer longer than this that opens like one is
taken for a summary (a long answer that only refuses is rare, and its
cost is checked like any summary's)."""


def _unusable(text: str) -> str | None:
    """Why ``text`` cannot stand for the messages it was asked to summarize,
    or None: it is empty or only whitespace, or it is a refusal, a short
    answer (at most 300 characters) that opens with "I can't", "I cannot",
    "I won't", "I'm unable", "I am not able", "Sorry" / "I'm sorry" or "As
    an AI"."""
    stripped = text.strip()
    if not stripped:
        return "an empty summary" if not text else "a summary of only whitespace"
    if len(stripped) <= _REFUSAL_CHARS and _REFUSAL.match(stripped):
        shown = stripped if len(stripped) <= 80 else stripped[:77] + "..."
        return f"a refusal, not a summary ({shown!r})"
    return None


def _header(conversation: Conversation, moved: tuple[range, ...]) -> str:
    """What a summary of ``moved`` says before the summarizer's text."""
    count = sum(len(unit) for unit in moved)
    return (
        f"{SUMMARY_PREFIX} A summary of {len(moved)} earlier turns or tool exchanges "
        f"({count} messages), in place of {_replaced(conversation, moved)}:\n"
    )


def summary_role(conversation: Conversation, first: int) -> Role:
    """The role of a summary whose replaced messages begin at ``first``:
    the user's when that message opens a turn (the summary then stands for
    whole turns, before the latest user message), else the assistant's (a
    summary of tool exchanges, where a user message would read as a newer
    question than the real one, or open a turn of its own)."""
    return "user" if is_turn_start(conversation[first]) else "assistant"


def _summary(conversation: Conversation, moved: tuple[range, ...], text: str) -> Message:
    gone = _indices(moved)
    return Message(
        role=summary_role(conversation, gone[0]),
        parts=(Text(text=_header(conversation, moved) + text),),
        metadata={
            "memrules": {
                "summary_of": len(gone),
                "replaced_ids": [m.id for i in gone if (m := conversation[i]).id is not None],
            }
        },
    )


def _prompted(summarizer: Summarizer, prompt: str | None) -> Summarizer:
    """``summarizer`` asking with ``prompt`` (its ``with_prompt``), or as it is."""
    if prompt is None:
        return summarizer
    advice = "nothing was replaced (drop the strategy's prompt, or use a summarizer that takes one)"
    with_prompt = getattr(summarizer, "with_prompt", None)
    if not callable(with_prompt):
        msg = f"the summarizer {summarizer!r} takes no prompt (it has no with_prompt); {advice}"
        raise StrategyError(msg)
    try:
        prompted = with_prompt(prompt)
    except Exception as exc:
        msg = f"the summarizer {summarizer!r} takes no prompt: {exc}; {advice}"
        raise StrategyError(msg) from exc
    if not isinstance(prompted, Summarizer):
        msg = (
            f"the summarizer {summarizer!r} takes no prompt: its with_prompt answered "
            f"{type(prompted).__name__}, not a summarizer; {advice}"
        )
        raise StrategyError(msg)
    return prompted


@attrs.frozen(slots=True, repr=False)
class _Summarize:
    turns: int
    keep_exchanges: int
    frozen: bool | None = None  # None, not False: configs without it read as before
    prompt: str | None = None

    def _block(
        self, conversation: Conversation, context: StrategyContext, *, fill: bool
    ) -> tuple[range, ...]:
        """The units to summarize: ``turns`` of them (a summary already
        there, at their head, not counted), or, with ``fill``, as many as
        the budget needs with the summary in their place. With ``frozen``
        the units up to the last summary stay, and are not counted."""
        last = _last_summary(conversation) if self.frozen else -1

        def summarized(unit: range) -> bool:
            return all(is_summary(conversation[i]) for i in unit)

        moved = take_units(
            conversation,
            context,
            units=self.turns,
            keep_exchanges=self.keep_exchanges,
            fill=fill,
            replacement=lambda block: _summary(conversation, block, ""),
            free=None if self.frozen else summarized,
            stays=(lambda unit: unit.start <= last) if self.frozen else None,
        )
        return _after_summaries(conversation, moved) if self.frozen else moved

    def __call__(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        summarizer = context.seams.summarizer
        if summarizer is None:
            return conversation
        moved = self._block(conversation, context, fill=True)
        gone = _indices(moved)
        if not gone or (
            context.budget.kind != "tokens" and all(is_summary(conversation[i]) for i in gone)
        ):
            # Only summaries: rewriting them saves no message; under a token
            # budget a shorter one may still save tokens (checked below).
            return conversation
        summarizer = _prompted(summarizer, self.prompt)
        batch = tuple(conversation[i] for i in gone)
        request = (
            summarizer.request_json(batch)
            if isinstance(summarizer, JSONRequests)
            else {"messages": _messages_json(batch)}
        )
        text, call = _call(
            "summarizer",
            "summarize",
            request,
            lambda: summarizer.summarize(batch),
            lambda answer: {"text": answer},
        )
        if not isinstance(text, str):
            msg = f"the summarizer answered {type(text).__name__}, not text; nothing was replaced"
            raise StrategyError(msg, seam_calls=(attrs.evolve(call, response=None, error=msg),))
        unusable = _unusable(text)
        if unusable is not None:
            msg = f"the summarizer answered {unusable}; nothing was replaced"
            raise StrategyError(msg, seam_calls=(attrs.evolve(call, error=msg),))
        summary = _summary(conversation, moved, text)
        sizes = context.sizes(conversation)
        refused = _no_saving(summary, sum(sizes[i] for i in gone), len(batch), context)
        if refused is not None:
            return Outcome(
                messages=conversation,
                note=refused,
                seam_calls=(attrs.evolve(call, response=None, error=refused),),
            )
        first = gone[0]
        rest = without_indices(conversation, gone)
        note = f"summarized {len(batch)} messages ({len(moved)} units"
        if not context.budget.is_unlimited:
            beyond = len(moved) - len(self._block(conversation, context, fill=False))
            if beyond > 0:
                note += f", {beyond} more than turns={self.turns} takes, to fit the budget"
        return Outcome(
            messages=(*rest[:first], summary, *rest[first:]),
            note=note + ")",
            seam_calls=(call,),
        )

    def __repr__(self) -> str:
        return describe("summarize", self)


@register("summarize")
def summarize(
    *, turns: int = 10, keep_exchanges: int = 3, frozen: bool = False, prompt: str | None = None
) -> Strategy:
    """Replace the oldest ``turns`` units with one message from the
    summarizer that says it is a summary, of how much, and in place of
    which turns (by their opening words) and tool exchanges (by their
    calls), where the first of them stood; its metadata lists the ids of
    the messages it replaced. Without a summarizer it does nothing. Units
    are chosen as ``offload`` chooses them, never splitting a tool
    exchange, so all that goes is summarized.

    With a budget, one call takes as many units as it takes to fit,
    counting the summary itself (one message, and its header's tokens; the
    summarizer's text is not known before it is written): the note then
    says how many units beyond ``turns`` the budget needed. A summary
    already in the conversation is summarized again with the units after
    it; alone, only under a token budget (a shorter one may save tokens; a
    message budget it cannot help).

    The summary takes the role of the first message it replaces: a user
    message in place of whole turns (which open at a user message, before
    the latest one); an assistant message in place of tool exchanges
    (which open at an assistant message), so that it is never taken for
    the latest user message or the start of a turn.

    An answer that is empty, only whitespace, or a refusal (a short answer
    that opens with "I can't", "I cannot", "I won't", "I'm unable",
    "Sorry" or "As an AI") is an error: it is in the report's errors with
    the seam call, and nothing is replaced. A summary that would not cost
    fewer tokens than the messages it replaces is refused: nothing
    changes, and the action's note and seam call say so.

    ``prompt`` is the instruction the summarizer is given in place of its
    own (`SUMMARY_PROMPT` for an
    OpenAI-compatible one): the strategy asks the summarizer's
    ``with_prompt(prompt)`` for one that uses it, and a summarizer without
    one (the extractive summarizer, which has no prompt) is an error.

    With ``frozen``, summaries are appended, never rewritten: the
    summaries already in the conversation (and what precedes them) stay
    as they are, and a new summary covers only units after the last one,
    so the prefix a provider cached up to a summary is sent again as it
    was.

    Keeps: survivors untouched (their exchanges are never summarized),
    order, tool exchanges whole; with ``frozen``, every earlier summary and
    what precedes it, unchanged.
    """
    check_positive("turns", turns)
    check_positive("keep_exchanges", keep_exchanges, minimum=0)
    if prompt is not None and not prompt.strip():
        msg = f"prompt={prompt!r} must say something (leave it out for the summarizer's own)"
        raise ConfigError.single(msg, yaml_path="prompt")
    return _Summarize(turns, keep_exchanges, True if frozen else None, prompt)
