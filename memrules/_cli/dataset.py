"""Evaluation datasets: conversations with probe questions, as JSON Lines.

One conversation per line:

    {"id": "chat-7", "user": "ana",
     "sessions": [
       {"id": "s1", "time": "2024-03-01T09:00:00Z", "messages": [
         {"id": "m1", "role": "user", "speaker": "Ana", "content": "The vault is in Lisbon."},
         {"id": "m2", "role": "assistant", "content": "Noted."}]},
       {"id": "s2", "time": "2024-03-09T17:30:00Z", "messages": [...]}],
     "questions": [
       {"id": "q1", "question": "Where is the vault?", "answer": "Lisbon",
        "evidence": ["m1"], "after": "m2"}]}

- ``messages`` are OpenAI chat-completions messages (``role``, ``content``,
  ``tool_calls``, ``tool_call_id``, ``name``: an agent's history fits as it
  is) with an ``id`` each, unique in the conversation, and optionally the
  ``speaker`` (it becomes the message's ``name``) and the ``time``. A
  conversation has either ``sessions`` (a multi-session chat: each an
  optional ``id`` and ``time`` and its ``messages``, in order) or
  ``messages`` directly. Times are carried in each message's metadata
  (``time``, ``session``); no strategy reads them.
- ``questions`` probe what the conversation established: ``question`` (the
  text a user would ask), ``evidence`` (the ids of the messages that hold
  the answer, at least one), optionally ``answer`` (a short text the
  answer contains) and ``after`` (the id of the message after which it is
  asked; by default after the last one) and ``category`` (a label the
  report breaks its figures down by, such as ``temporal`` or ``multi-hop``).
- ``user`` (optional) is whose memory it is: what a store files it under.

`read_dataset` reads one conversation at a time and checks each
against this format, raising `DatasetError` naming the file, line
and field of the first problem.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from memrules._adapters import from_openai
from memrules._core.errors import MemrulesError, MessageFormatError
from memrules._core.jsontext import TOO_DEEP, JSONTextError, parse_json
from memrules._core.messages import Conversation, Message

__all__ = ["DatasetError", "EvalConversation", "Question", "parse_conversation", "read_dataset"]


class DatasetError(MemrulesError, ValueError):
    """An evaluation dataset that does not follow the format: names the
    file, the line and the field."""


@attrs.frozen(kw_only=True, slots=True)
class Question:
    """A probe: ``question``, the ids of the messages that hold its answer
    (``evidence``), the ``answer`` text when given, ``after``: how many
    of the conversation's messages precede it, and its ``category`` when given."""

    id: str
    question: str
    evidence: tuple[str, ...]
    answer: str | None = None
    after: int
    category: str | None = None


@attrs.frozen(kw_only=True, slots=True)
class EvalConversation:
    """One dataset line: the conversation's ``messages`` (sessions joined in
    order), its ``questions`` in the order asked, and whose it is."""

    id: str
    messages: Conversation
    questions: tuple[Question, ...] = ()
    user: str | None = None


def _fail(where: str, message: str) -> DatasetError:
    return DatasetError(f"{where}: {message}")


def _string(value: object, where: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise _fail(where, f"expected a non-empty string, got {json.dumps(value)[:40]}")
    return value


def _message(raw: object, where: str, session: Mapping[str, Any]) -> Message:
    if not isinstance(raw, Mapping):
        raise _fail(where, "a message is an object")
    fields = dict(raw)
    mid = _string(fields.pop("id", None), f"{where}.id")
    speaker = _string(fields.pop("speaker", None), f"{where}.speaker", optional=True)
    time = _string(fields.pop("time", None), f"{where}.time", optional=True) or session.get("time")
    if speaker is not None:
        if fields.get("name", speaker) != speaker:
            raise _fail(where, "speaker and name differ; give one")
        fields["name"] = speaker
    try:
        converted = from_openai([fields])
    except MessageFormatError as exc:
        text = str(exc).removeprefix("messages[0]")
        raise _fail(where, text.lstrip(".: ") or "not an OpenAI message") from None
    if len(converted) != 1:
        raise _fail(where, "expected one message")
    (message,) = converted
    metadata = dict(message.metadata)
    if time is not None:
        metadata["time"] = time
    if session.get("id") is not None:
        metadata["session"] = session["id"]
    return message.evolve(id=mid, metadata=metadata)


def _messages(data: Mapping[str, Any], where: str) -> list[Message]:
    has_sessions, has_messages = "sessions" in data, "messages" in data
    if has_sessions == has_messages:
        raise _fail(where, "give either sessions or messages")
    out: list[Message] = []
    if has_messages:
        listed = data["messages"]
        if not isinstance(listed, list):
            raise _fail(f"{where}: messages", "expected a list")
        return [_message(m, f"{where}: messages[{i}]", {}) for i, m in enumerate(listed)]
    sessions = data["sessions"]
    if not isinstance(sessions, list):
        raise _fail(f"{where}: sessions", "expected a list")
    for s, session in enumerate(sessions):
        at = f"{where}: sessions[{s}]"
        if not isinstance(session, Mapping) or not isinstance(session.get("messages"), list):
            raise _fail(at, "a session is an object with a messages list")
        info = {
            "id": _string(session.get("id"), f"{at}.id", optional=True),
            "time": _string(session.get("time"), f"{at}.time", optional=True),
        }
        out.extend(
            _message(m, f"{at}.messages[{i}]", info) for i, m in enumerate(session["messages"])
        )
    return out


def _question(raw: object, where: str, positions: Mapping[str, int], total: int) -> Question:
    if not isinstance(raw, Mapping):
        raise _fail(where, "a question is an object")
    qid = _string(raw.get("id"), f"{where}.id")
    text = _string(raw.get("question"), f"{where}.question")
    answer = _string(raw.get("answer"), f"{where}.answer", optional=True)
    category = raw.get("category")
    if isinstance(category, (int, float)) and not isinstance(category, bool):
        category = str(category)  # LoCoMo numbers its categories
    category = _string(category, f"{where}.category", optional=True)
    evidence = raw.get("evidence")
    if not isinstance(evidence, list) or not evidence:
        raise _fail(f"{where}.evidence", "expected a non-empty list of message ids")
    for i, e in enumerate(evidence):
        if e not in positions:
            raise _fail(f"{where}.evidence[{i}]", f"no message has id {json.dumps(e)}")
    after = total
    if raw.get("after") is not None:
        key = raw["after"]
        if key not in positions:
            raise _fail(f"{where}.after", f"no message has id {json.dumps(key)}")
        after = positions[key] + 1
    late = [e for e in evidence if positions[e] >= after]
    if late:
        raise _fail(f"{where}.evidence", f"{late[0]} comes after the question is asked")
    return Question(
        id=str(qid),
        question=str(text),
        evidence=tuple(evidence),
        answer=answer,
        after=after,
        category=category,
    )


def parse_conversation(data: object, where: str) -> EvalConversation:
    """One dataset line, parsed (see the module docs); ``where`` names it in errors."""
    if not isinstance(data, Mapping):
        raise _fail(where, "a dataset line is a conversation object")
    cid = _string(data.get("id"), f"{where}: id")
    user = _string(data.get("user"), f"{where}: user", optional=True)
    messages = _messages(data, where)
    positions: dict[str, int] = {}
    for i, m in enumerate(messages):
        assert m.id is not None
        if m.id in positions:
            raise _fail(f"{where}: messages", f"two messages have id {json.dumps(m.id)}")
        positions[m.id] = i
    listed = data.get("questions", [])
    if not isinstance(listed, list):
        raise _fail(f"{where}: questions", "expected a list")
    questions = [
        _question(q, f"{where}: questions[{i}]", positions, len(messages))
        for i, q in enumerate(listed)
    ]
    seen: set[str] = set()
    for q in questions:
        if q.id in seen:
            raise _fail(f"{where}: questions", f"two questions have id {json.dumps(q.id)}")
        seen.add(q.id)
    ordered = sorted(questions, key=lambda q: q.after)  # stable: ties keep the file's order
    return EvalConversation(
        id=str(cid), messages=tuple(messages), questions=tuple(ordered), user=user
    )


def read_dataset(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """The dataset's lines, one at a time, parsed as JSON: ``(line number,
    value)``, blank lines skipped. `DatasetError` for a file that
    cannot be read or a line that is not JSON; `parse_conversation`
    checks each value."""
    name = str(path)
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed when the iterator ends
    except OSError as exc:
        msg = f"cannot read the dataset {name}: {exc.strerror or exc}"
        raise DatasetError(msg) from None
    with file:
        for number, raw in enumerate(file, start=1):
            if not raw.strip():
                continue
            try:
                value = parse_json(raw)
            except JSONTextError as exc:
                if exc.reason == TOO_DEEP or exc.reason.startswith("not UTF-8"):
                    msg = f"{name}:{number}: {exc.reason}"
                else:
                    msg = f"{name}:{number}: not JSON: {exc.reason} (column {exc.column})"
                raise DatasetError(msg) from None
            yield number, value
