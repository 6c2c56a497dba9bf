"""What a vector store keeps: one `StoredMessage` per message.

A record holds the message itself, losslessly (as JSON that reads back to an
equal `Message`; see
`memrules._core.message_json`), the text it is found by, who it
belongs to (`Scope`), the turn and tool exchange it belonged to, and a
content hash. Its id is a hash of the scope, the turn and the content, so the
same message offloaded twice is one record, whatever the store.

The text a record is indexed by is ``<name or role>: <text>``: the speaker
matters to recall (on a public multi-session chat benchmark dense recall fell
by a third without it). Tool calls read ``name(arguments)``, and a tool
result also names the call it answers, so a question about ``src/app.py``
finds the result of ``read_file({"path": "src/app.py"})``.

With an `IndexContext` the indexed text also carries what a reader
would need to find the message: the day it was said, what its relative dates
("yesterday", "last Friday") meant on that day, and the message before it
(a reply such as "Yes, last Tuesday!" is found by the question it answers).
Only the indexed text grows; the stored message stays as it was.

Everything here is pure: the same messages give the same records.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

import attrs

from memrules._core.conversation import is_turn_start
from memrules._core.dates import format_day, resolve_dates
from memrules._core.errors import ConfigError, StoreError
from memrules._core.message_json import (
    content_hash,
    decode_message,
    encode_message,
    message_json,
)
from memrules._core.messages import Conversation, Message, Text, ToolCall, ToolResult

__all__ = [
    "DEFAULT_CONTEXT",
    "MAX_SCOPE_CHARS",
    "NEIGHBOUR_LABELS",
    "TIME_KEY",
    "IndexContext",
    "RecallHit",
    "Scope",
    "StoreWrite",
    "StoredMessage",
    "build_records",
    "check_storable",
    "content_hash",
    "contextual_text",
    "decode_message",
    "encode_message",
    "index_text",
    "message_json",
    "message_time",
    "record_key",
    "scope_id_problem",
]

MAX_SCOPE_CHARS = 256
"""The longest conversation, user or tenant id, in characters."""


def scope_id_problem(name: str, value: object) -> str | None:
    """What is wrong with ``value`` as the scope id ``name`` (a conversation,
    user or tenant id), if anything: it must be a non-empty string of at
    most `MAX_SCOPE_CHARS` characters that UTF-8 can carry (no lone
    surrogate: no store could keep it, so no forget could find it)."""
    if not isinstance(value, str) or not value or len(value) > MAX_SCOPE_CHARS:
        return (
            f"{name}={value!r:.80} must be a non-empty string of at most "
            f"{MAX_SCOPE_CHARS} characters"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return f"{name}={value!r:.80} holds a lone surrogate, which UTF-8 cannot carry"
    return None


def _scope_id(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not value or len(value) > MAX_SCOPE_CHARS:
        msg = (
            f"{attribute.name}={value!r} must be a non-empty string of at most "
            f"{MAX_SCOPE_CHARS} characters, or None"
        )
        raise ConfigError.single(msg, yaml_path=attribute.name)


def check_storable(scope: Scope) -> None:
    """Raise `ConfigError`, naming the field, when an id of
    ``scope`` is one no store can keep (see `scope_id_problem`):
    refused before anything is written, so nothing is stored that no
    forget could find."""
    for name, value in scope.to_dict().items():
        problem = None if value is None else scope_id_problem(name, value)
        if problem is not None:
            raise ConfigError.single(problem, yaml_path=name)


@attrs.frozen(kw_only=True, slots=True)
class Scope:
    """Whose memory a record is: a conversation, a user, a tenant (each
    None when not known). Searches always match ``user`` and ``tenant``
    exactly (None finds only records stored without one), so one user never
    recalls another's messages; ``conversation_id`` None searches every
    conversation of that user and tenant."""

    conversation_id: str | None = attrs.field(default=None, validator=_scope_id)
    user: str | None = attrs.field(default=None, validator=_scope_id)
    tenant: str | None = attrs.field(default=None, validator=_scope_id)

    def to_dict(self) -> dict[str, str | None]:
        return {"conversation_id": self.conversation_id, "user": self.user, "tenant": self.tenant}


# --- the lossless JSON form of a message ---------------------------------------------


# --- the indexed text --------------------------------------------------------------


def _result_text(part: ToolResult) -> str:
    content = part.content
    if isinstance(content, str):
        return content
    return "\n".join(p.text for p in content if isinstance(p, Text))


def index_text(message: Message, calls: Mapping[str, ToolCall] | None = None) -> str:
    """The text ``message`` is found by: ``<name or role>: <text>``, where
    tool calls read ``name(arguments)`` and a tool result is preceded by the
    call it answers when ``calls`` (call id → call) has it. Opaque parts
    (images, thinking blocks) add nothing."""
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, Text):
            pieces.append(part.text)
        elif isinstance(part, ToolCall):
            pieces.append(f"{part.name}({part.arguments})")
        elif isinstance(part, ToolResult):
            call = None if calls is None else calls.get(part.call_id)
            body = _result_text(part)
            pieces.append(body if call is None else f"{call.name}({call.arguments}) -> {body}")
    return f"{message.name or message.role}: " + "\n".join(p for p in pieces if p)


# --- the context an indexed text may carry ------------------------------------------

TIME_KEY = "time"
"""The metadata key a message's own time is read from: an ISO 8601 date or
date-time string, or seconds since the epoch (UTC)."""

_MAX_NEIGHBOURS = 8
NEIGHBOUR_LABELS = ("(before) ", "(after) ")
"""How a neighbour's line of an indexed text starts (lexical search weighs
those lines less than the message's own text)."""
_MAX_NEIGHBOUR_CHARS = 4000


def _window(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_NEIGHBOURS:
        msg = f"{attribute.name}={value!r} must be a whole number from 0 to {_MAX_NEIGHBOURS}"
        raise ConfigError.single(msg, yaml_path=attribute.name)


def _chars(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    limit = _MAX_NEIGHBOUR_CHARS
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        msg = f"{attribute.name}={value!r} must be a whole number from 1 to {_MAX_NEIGHBOUR_CHARS}"
        raise ConfigError.single(msg, yaml_path=attribute.name)


def _when(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, (date, datetime)):
        msg = f"{attribute.name}={value!r} must be a date, a datetime or None"
        raise ConfigError.single(msg, yaml_path=attribute.name)


def _flag(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, bool):
        msg = f"{attribute.name}={value!r} must be true or false"
        raise ConfigError.single(msg, yaml_path=attribute.name)


@attrs.frozen(kw_only=True, slots=True)
class IndexContext:
    """What the text a message is indexed by adds to the message itself.

    ``before`` and ``after``: how many neighbouring messages of the
    dialogue (system messages, tool calls and tool results skipped: a tool
    result is indexed with its call already, and a file's contents beside
    the next call would only blur what that call is found by) are added
    after it, each as ``(before) <name or role>: <text>`` or ``(after)
    …``, cut to ``neighbour_chars``; the message's own text always comes
    first, so a model that reads only the
    start of a text still reads it. ``time``: when the conversation was
    held (a session's date), for messages without a time of their own in
    ``metadata["time"]`` (`TIME_KEY`); a message with a time is
    indexed with its day (``(8 May 2023)``) and, when ``dates`` is true,
    with what its relative dates meant on that day (``yesterday: 7 May
    2023``; see `resolve_dates`).

    On a public multi-session chat benchmark, the message before and the
    session's date lifted BM25 from 55.6% to 64.6% of the questions
    answered within the first five (``benchmarks/locomo/``).
    """

    before: int = attrs.field(default=1, validator=_window)
    after: int = attrs.field(default=0, validator=_window)
    neighbour_chars: int = attrs.field(default=300, validator=_chars)
    time: date | datetime | None = attrs.field(default=None, validator=_when)
    dates: bool = attrs.field(default=True, validator=_flag)


DEFAULT_CONTEXT = IndexContext()
"""The context ``remember`` indexes with unless told otherwise: the message
before, the day, relative dates resolved."""


def message_time(message: Message) -> date | datetime | None:
    """The time ``message`` carries in ``metadata["time"]``
    (`TIME_KEY`), or None when it has none or it does not read as a
    date: an ISO 8601 string, or seconds since the epoch (read as UTC)."""
    raw = message.metadata.get(TIME_KEY) if message.metadata else None
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        try:
            return datetime.fromtimestamp(raw, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(raw, str):
        try:
            return datetime.fromisoformat(raw.strip())
        except ValueError:
            return None
    return None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _plain_text(message: Message) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, Text) and p.text)


def contextual_text(
    conversation: Conversation,
    i: int,
    context: IndexContext,
    calls: Mapping[str, ToolCall] | None = None,
) -> str:
    """The text ``conversation[i]`` is indexed by under ``context``: its
    `index_text`, then its day and resolved dates (when it has a
    time, its own or ``context.time``), then its neighbours."""
    message = conversation[i]
    lines = [index_text(message, calls)]
    when = message_time(message) or context.time
    if when is not None:
        notes = [format_day(when.date() if isinstance(when, datetime) else when)]
        if context.dates:
            found = resolve_dates(_plain_text(message), when)
            notes += [f"{phrase}: {day}" for phrase, day in found]
        lines.append("(" + "; ".join(notes) + ")")
    before, after = NEIGHBOUR_LABELS
    for label, step, count in ((before, -1, context.before), (after, 1, context.after)):
        j, taken = i + step, 0
        while taken < count and 0 <= j < len(conversation):
            neighbour = conversation[j]
            j += step
            if neighbour.role == "system" or neighbour.call_ids or neighbour.result_ids:
                continue
            taken += 1
            text = _clip(index_text(neighbour, calls), context.neighbour_chars)
            lines.append(label + text)
    return "\n".join(lines)


# --- records -------------------------------------------------------------------------


def _short(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


_SEPARATOR = "\x1f"


def record_key(parts: Sequence[str]) -> str:
    """The record id of the key ``parts`` (scope ids, hashes, text): 32 hex
    digits, a different id for every different sequence of parts.

    Parts free of U+001F are joined by it, as ids always were, so the
    records a store holds keep their ids (and a re-store finds them). A
    part holding U+001F would make that join ambiguous (tenant ``a\x1fb``
    and user ``c`` against tenant ``a`` and user ``b\x1fc``), so such parts
    are written as a JSON array instead, which is unambiguous and, its
    control characters escaped, never holds U+001F, so it cannot equal a
    join (which holds one between every two parts)."""
    if len(parts) > 1 and not any(_SEPARATOR in p for p in parts):
        return _short(_SEPARATOR.join(parts))
    return _short(json.dumps(list(parts), ensure_ascii=True))


@attrs.frozen(kw_only=True, slots=True)
class StoredMessage:
    """One message as a store keeps it.

    ``id`` is a hash of the scope, the turn and the content hash (see
    `build_records`): the same message of the same turn is one record
    however often it is written.
    ``turn`` and ``exchange`` are keys of the turn and the tool exchange the
    message belonged to (the content hashes of the user message that opened
    the turn and of the assistant message that opened the exchange; ``""``
    for none), stable however much of the conversation was compacted since.
    ``text`` is what it is found by (`index_text`); ``payload`` the
    lossless JSON of ``message``.
    """

    id: str
    message: Message
    text: str
    scope: Scope
    turn: str = ""
    exchange: str = ""
    content_hash: str
    payload: str = attrs.field(repr=False)

    def to_dict(self) -> dict[str, str]:
        """What a seam-call record shows of it (the message is in the input)."""
        return {"id": self.id, "turn": self.turn, "exchange": self.exchange}


@attrs.frozen(kw_only=True, slots=True)
class StoreWrite:
    """What one write did: the ids of the records it stored, and of those
    that were there already (which were not embedded again); and whether
    the store confirmed them durable (``True``: on disk where it opened
    them, or acknowledged by a server; ``False``: kept in memory only, lost
    when the process ends; ``None``: the store does not say)."""

    added: tuple[str, ...] = ()
    existing: tuple[str, ...] = ()
    durable: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """The write as JSON; ``durable`` only when it is False (a store
        that keeps its records in memory only says so)."""
        out: dict[str, Any] = {"added": list(self.added), "existing": list(self.existing)}
        if self.durable is False:
            out["durable"] = False
        return out


@attrs.frozen(kw_only=True, slots=True)
class RecallHit:
    """One message found again, best first in a recall's answer.

    ``message`` is the original `Message` (its
    id, name and metadata kept); ``score`` how well it matched in the search
    mode used (cosine for dense, BM25 for lexical, the fused reciprocal-rank
    score for hybrid: comparable within one answer only); ``text`` what it
    was found by; ``turn`` and ``exchange`` the keys of the turn and tool
    exchange it belonged to (hits with the same ``exchange`` came from one
    tool round); ``id`` the record's id.
    """

    message: Message
    score: float
    conversation_id: str | None
    user: str | None = None
    tenant: str | None = None
    turn: str = ""
    exchange: str = ""
    text: str = ""
    id: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The hit as JSON: the message in its lossless form."""
        return {
            "id": self.id,
            "score": self.score,
            "conversation_id": self.conversation_id,
            "user": self.user,
            "tenant": self.tenant,
            "turn": self.turn,
            "exchange": self.exchange,
            "text": self.text,
            "message": json.loads(encode_message(self.message)),
        }


def _starts(conversation: Conversation) -> tuple[list[int], list[int]]:
    """For every message, the index of the user message that opened its turn
    and of the assistant message that opened its exchange (-1: none)."""
    turns: list[int] = []
    exchanges: list[int] = []
    turn = exchange = -1
    for i, m in enumerate(conversation):
        if is_turn_start(m):
            turn, exchange = i, -1
        elif m.role == "assistant" and turn >= 0:
            exchange = i
        turns.append(turn)
        exchanges.append(exchange)
    return turns, exchanges


def build_records(
    conversation: Conversation,
    indices: Iterable[int] | None = None,
    *,
    scope: Scope,
    context: IndexContext | None = None,
) -> tuple[StoredMessage, ...]:
    """The records of ``conversation[i]`` for each of ``indices`` (all by
    default), in order. The conversation is read for the turn and exchange
    of each message, for the calls its tool results answer and, with a
    ``context``, for the neighbours and dates its indexed text carries
    (`contextual_text`; without one, the text is `index_text`).
    The indexed text is no part of a record's id.

    A record's id hashes the scope, the turn, the content and how many equal
    messages came before it in its turn, so two equal messages of one turn
    ("ok", "ok") are two records, and offloading the same history again
    (a client that resends it whole) writes nothing new. Raises
    `StoreError` for a message that cannot be stored losslessly."""
    chosen: Sequence[int] = range(len(conversation)) if indices is None else tuple(indices)
    turn_of, exchange_of = _starts(conversation)
    digests: dict[int, str] = {}

    def digest(i: int) -> str:
        found = digests.get(i)
        if found is None:
            found = digests[i] = content_hash(conversation[i])
        return found

    # How many equal messages precede each chosen one in its turn.
    occurrence: dict[int, int] = {}
    wanted = set(chosen)
    for turn in sorted({turn_of[i] for i in chosen}):
        last = max(i for i in chosen if turn_of[i] == turn)
        seen: dict[str, int] = {}
        for j in range(max(turn, 0), last + 1):
            if turn_of[j] != turn:
                continue
            d = digest(j)
            if j in wanted:
                occurrence[j] = seen.get(d, 0)
            seen[d] = seen.get(d, 0) + 1

    # Turns opened by equal messages ("continue") are told apart by how
    # many such turns came before.
    turn_number: dict[int, int] = {}
    opened: dict[str, int] = {}
    for t in sorted({t for t in turn_of if t >= 0}):
        d = digest(t)
        turn_number[t] = opened.get(d, 0)
        opened[d] = turn_number[t] + 1

    def key(kind: str, i: int) -> str:
        if i < 0:
            return ""
        number = turn_number.get(i, 0) if kind == "turn" else 0
        return _short(f"{kind}\x1f{digest(i)}" + (f"\x1f{number}" if number else ""))

    calls = {
        p.id: p for m in conversation if m.call_ids for p in m.parts if isinstance(p, ToolCall)
    }
    records: list[StoredMessage] = []
    done: set[int] = set()
    for i in chosen:
        if i in done:
            continue
        done.add(i)
        m = conversation[i]
        turn_key = key("turn", turn_of[i])
        parts = [scope.tenant or "", scope.user or "", scope.conversation_id or ""]
        parts += [turn_key, digest(i)]
        if occurrence[i]:
            parts.append(str(occurrence[i]))
        try:
            payload = encode_message(m)
        except StoreError as exc:
            msg = f"messages[{i}]: {exc}"
            raise StoreError(msg) from exc
        records.append(
            StoredMessage(
                id=record_key(parts),
                message=m,
                text=(
                    index_text(m, calls)
                    if context is None
                    else contextual_text(conversation, i, context, calls)
                ),
                scope=scope,
                turn=turn_key,
                exchange=key("exchange", exchange_of[i]),
                content_hash=digest(i),
                payload=payload,
            )
        )
    return tuple(records)
