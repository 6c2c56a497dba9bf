"""Writing OpenAI chat-completions messages: `to_openai`, and `write_back`,
which hands back the caller's own message dicts for the messages a pipeline
kept (see `memrules._adapters.openai` for the format and what is kept).
"""

from __future__ import annotations

import collections
import itertools
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memrules._adapters._common import (
    MISSING,
    Image,
    content_value,
    fail,
    finish,
    split_kind,
    write_opaque,
    write_text,
)
from memrules._adapters.openai_keys import (
    ARGUMENTS_KEY,
    BODY_RANK,
    CALL_RANK,
    PROVIDER,
    RANK,
)
from memrules._core.messages import Message, Text, ToolCall, ToolResult

__all__ = ["Written", "to_openai", "write_back", "write_image"]


def to_openai(conversation: Iterable[Message]) -> list[dict[str, Any]]:
    """Write a conversation as OpenAI chat-completions messages.

    Returns fresh plain ``dict``/``list`` values, ready for ``json.dumps``,
    with every object's keys in the order they were read in.
    A message that OpenAI cannot express (a tool call on a user message, a
    tool message with no result) raises
    `MessageFormatError` naming its index.
    """
    out: list[dict[str, Any]] = []
    for index, message in enumerate(conversation):
        _write_one(message, index, out)
    return out


def _write_one(message: Message, index: int, out: list[dict[str, Any]]) -> None:
    if not isinstance(message, Message):
        fail(f"expected a Message, got {type(message).__name__}", index, "")
    if message.role == "tool":
        _write_tool_message(message, index, out)
    elif message.role == "user" and message.result_ids:
        _write_user_with_results(message, index, out)
    else:
        out.append(_write_message(message, index))


Written = dict[int, tuple[Message, dict[str, Any]]]
"""What `write_back` wrote for the messages it converted, by the
message's ``id``: the message itself (which keeps the id its own) and the
dict, for dicts whose values are all strings, numbers, booleans or None."""


_FLAT = frozenset({str, int, float, bool, type(None)})


def write_back(
    conversation: Sequence[Message],
    source: Sequence[Message],
    raws: Sequence[Any],
    hints: Sequence[int | None] = (),
    *,
    written: Written | None = None,
    keep: Written | None = None,
) -> list[Any]:
    """`to_openai` of ``conversation``, made from ``source``, which
    `from_openai` read from ``raws``: a message of ``source`` that
    ``conversation`` kept (the very object) is written as its raw message,
    the very object too, and only the others are converted. ``hints[j]``,
    where given, is where message ``j`` stands in ``source`` (a report's
    ``origin``); a wrong hint costs one look-up table of ``source``.

    Lossless as `to_openai` is (``to_openai(from_openai(m)) == m``),
    and cheap: the request hook sends back what it kept without converting
    it again. The result shares objects with ``raws``.

    ``written`` is what an earlier call put in its ``keep``: a message it
    converted to a flat dict (every value a string, a number, a boolean or
    None) is that dict copied, not converted again (the caller's edits to
    an earlier result never reach it). ``keep`` gets this call's flat
    dicts: the request hook passes one conversation's last ``keep`` as its
    next ``written``."""
    return _write_back(conversation, source, raws, hints, {} if written is None else written, keep)


def _write_back(
    conversation: Sequence[Message],
    source: Sequence[Message],
    raws: Sequence[Any],
    hints: Sequence[int | None],
    written: Written,
    keep: Written | None,
) -> list[Any]:
    """`write_back`: each message found in ``source`` (by its hint,
    else by one look-up table of ``source``) is its raw message; the others
    are ``written``'s copies or converted, and put in ``keep`` when given."""
    kept = _hinted(conversation, source, raws, hints)
    if kept is None:
        return _write_back_slow(conversation, source, raws, hints, written, keep)
    out, others = kept
    if not others:
        return out
    # A message an earlier call converted is never one the reader made
    # (the source's): its dict, copied (C-level passes over them all).
    messages = list(map(conversation.__getitem__, others))
    entries = list(map(written.get, map(id, messages), itertools.repeat(_NO_ENTRY)))
    hit = list(map(operator.is_, map(_FIRST, entries), messages))
    found: list[Any] = list(itertools.compress(entries, hit))
    collections.deque(
        map(out.__setitem__, itertools.compress(others, hit), map(dict, map(_SECOND, found))),
        maxlen=0,
    )
    if keep is not None:
        keep.update(zip(map(id, map(_FIRST, found)), found, strict=True))
    rest = list(itertools.compress(others, map(operator.not_, hit)))
    if not rest:
        return out
    # The rest, one at a time: the raw message of one found in ``source``
    # elsewhere (one look-up table), else converted.
    made: list[list[Any]] = []
    known = min(len(source), len(raws))
    position = dict(zip(map(id, source[:known]), range(known), strict=True))
    for j in rest:
        message = conversation[j]
        i = position.get(id(message))
        if i is not None:
            made.append([raws[i]])
            continue
        dicts: list[Any] = []
        _write_one(message, j, dicts)
        made.append(dicts)
        if keep is not None and len(dicts) == 1 and set(map(type, dicts[0].values())) <= _FLAT:
            keep[id(message)] = (message, dict(dicts[0]))
    if all(len(dicts) == 1 for dicts in made):
        for j, dicts in zip(rest, made, strict=True):
            out[j] = dicts[0]
        return out
    pieces: list[list[Any]] = [[raw] for raw in out]
    for j, dicts in zip(rest, made, strict=True):
        pieces[j] = dicts
    return [d for dicts in pieces for d in dicts]


_NO_ENTRY = (None, None)


_FIRST = operator.itemgetter(0)


_SECOND = operator.itemgetter(1)


def _hinted(
    conversation: Sequence[Message],
    source: Sequence[Message],
    raws: Sequence[Any],
    hints: Sequence[int | None],
) -> tuple[list[Any], list[int]] | None:
    """When every message has a hint within ``source``: the raw message at
    each hint, and the positions whose hint is None or names another
    object, which the caller writes (C-level passes, no per-message step
    for the kept ones). None when a hint is missing or out of range."""
    n = len(conversation)
    known = min(len(source), len(raws))
    if len(hints) < n or not n or not known:
        return None
    at: list[Any] = list(itertools.islice(hints, n))
    holes = list(
        itertools.compress(itertools.count(), map(operator.is_, at, itertools.repeat(None)))
    )
    collections.deque(map(at.__setitem__, holes, itertools.repeat(0)), maxlen=0)
    if min(at) < 0 or max(at) >= known:
        return None
    picked = map(source.__getitem__, at)
    others = set(itertools.compress(itertools.count(), map(operator.is_not, picked, conversation)))
    others.update(holes)
    return list(map(raws.__getitem__, at)), sorted(others)


def _write_back_slow(
    conversation: Sequence[Message],
    source: Sequence[Message],
    raws: Sequence[Any],
    hints: Sequence[int | None],
    written: Written,
    keep: Written | None,
) -> list[Any]:
    """`write_back` one message at a time."""
    out: list[Any] = []
    position: dict[int, int] | None = None
    known = min(len(source), len(raws))
    for j, message in enumerate(conversation):
        i = hints[j] if j < len(hints) else None
        if i is None or not 0 <= i < known or source[i] is not message:
            if position is None:
                position = dict(zip(map(id, source[:known]), range(known), strict=True))
            i = position.get(id(message))
        if i is not None:
            out.append(raws[i])
            continue
        entry = written.get(id(message))
        if entry is not None and entry[0] is message:
            made = entry[1]
            out.append(dict(made))
        else:
            start = len(out)
            _write_one(message, j, out)
            if keep is None:
                continue
            if len(out) != start + 1 or not set(map(type, out[start].values())) <= _FLAT:
                continue
            made = dict(out[start])
        if keep is not None:
            keep[id(message)] = (message, made)
    return out


def _write_message(
    message: Message, index: int, moved: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    role = message.role
    metadata = message.metadata
    source_role = metadata.get("openai_role")
    if role == "system" and source_role == "developer":
        out: dict[str, Any] = {"role": "developer"}
    else:
        out = {"role": role}

    blocks: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    legacy: dict[str, Any] | None = None
    for j, part in enumerate(message.parts):
        if isinstance(part, Text):
            blocks.append(write_text(part, PROVIDER))
        elif isinstance(part, ToolCall):
            if role != "assistant":
                fail(
                    f"a {role} message cannot carry a tool call in OpenAI format",
                    index,
                    f"parts[{j}]",
                )
            if legacy is None and part.extra.get("openai_function_call"):
                legacy = _write_legacy_call(part)
            else:
                calls.append(_write_tool_call(part))
        elif isinstance(part, ToolResult):
            fail(
                f"a {role} message cannot carry a tool result in OpenAI format",
                index,
                f"parts[{j}]",
            )
        else:
            written = write_opaque(part, PROVIDER)
            if written is not None:
                blocks.append(written)
    blocks.extend(moved)

    empty = None if role == "assistant" and (calls or legacy is not None) else ""
    content = content_value(blocks, metadata.get("openai_content"), empty)
    if content is not MISSING:
        out["content"] = content
    if message.name is not None:
        out["name"] = message.name
    if calls:
        out["tool_calls"] = calls
    if legacy is not None:
        out["function_call"] = legacy
    if not metadata:
        return out
    return finish(out, metadata.get("openai"), metadata.get("openai_keys"), RANK)


def _write_tool_message(message: Message, index: int, out: list[dict[str, Any]]) -> None:
    results = [p for p in message.parts if isinstance(p, ToolResult)]
    if len(results) != len(message.parts) or not results:
        fail("a tool message must hold ToolResult parts only, and at least one", index, "parts")
    if len(results) > 1:
        for result in results:
            written, _ = _write_result(result, None)
            out.append(written)
        return
    metadata = message.metadata
    written, moved = _write_result(results[0], metadata.get("openai_content"))
    if metadata.get("openai_role") == "function":
        del written["tool_call_id"]
        written["role"] = "function"
    if message.name is not None:
        written["name"] = message.name
    if metadata:
        written = finish(written, metadata.get("openai"), metadata.get("openai_keys"), RANK)
    out.append(written)
    if moved:
        out.append({"role": "user", "content": moved})


def _write_user_with_results(message: Message, index: int, out: list[dict[str, Any]]) -> None:
    """A user message carrying tool results (read from Anthropic): one tool
    message per result, then a user message with everything else."""
    moved: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ToolResult):
            written, images = _write_result(part, None)
            out.append(written)
            moved.extend(images)
    rest = message.evolve(parts=tuple(p for p in message.parts if not isinstance(p, ToolResult)))
    if rest.parts or moved:
        out.append(_write_message(rest, index, moved))


def _write_result(
    result: ToolResult, form: str | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The tool message for ``result``, and any parts OpenAI tool messages
    cannot hold (images), which go to a following user message."""
    out: dict[str, Any] = {"role": "tool", "tool_call_id": result.call_id}
    moved: list[dict[str, Any]] = []
    content = result.content
    if isinstance(content, str):
        if content or form is None:
            out["content"] = content
        elif form == "null":
            out["content"] = None
        elif form != "absent":
            out["content"] = content
        return out, moved
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, Text):
            parts.append(write_text(part, PROVIDER))
            continue
        written = write_opaque(part, PROVIDER)
        if written is None:
            continue
        if split_kind(part.kind)[0] == PROVIDER:
            parts.append(written)
        else:
            moved.append(written)
    out["content"] = parts
    return out, moved


def _write_tool_call(part: ToolCall) -> dict[str, Any]:
    extra = part.extra
    kind = extra.get("openai_type", "function")
    if kind not in ARGUMENTS_KEY:
        kind = "function"
    body = _write_body({"name": part.name, ARGUMENTS_KEY[kind]: part.arguments}, extra)
    out: dict[str, Any] = {"id": part.id, "type": kind, kind: body}
    if not extra:
        return out
    return finish(out, extra.get("openai"), extra.get("openai_keys"), CALL_RANK)


def _write_legacy_call(part: ToolCall) -> dict[str, Any]:
    return _write_body({"name": part.name, "arguments": part.arguments}, part.extra)


def _write_body(body: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    if not extra:
        return body
    return finish(body, extra.get("openai_function"), extra.get("openai_function_keys"), BODY_RANK)


def write_image(image: Image) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": image.as_url()}}
