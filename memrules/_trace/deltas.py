"""Inputs as deltas: a line whose input continues its conversation's previous
line holds only the messages after it (``prefix``, see
`memrules._trace.record`). The writer's side (`InputDeltas`) and the
reader's (`InputRebuilder`) keep the same conversations and forget the
same ones."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memrules._core.bounded import BoundedTable
from memrules._core.checks import is_whole
from memrules._core.errors import TraceError

__all__ = ["KEPT_CONVERSATIONS", "InputDeltas", "InputRebuilder"]


KEPT_CONVERSATIONS = 1024
"""How many conversations' last inputs the writer and the reader keep (the
ones written last); a line may continue only one of those. A reader must
keep at least as many as the writer did."""


def _conversation_key(line: Mapping[str, Any]) -> str:
    """Which conversation a line's input continues: its pipeline and
    conversation id (as JSON text, so an edited trace's odd values still key)."""
    return json.dumps([line.get("pipeline"), line.get("conversation_id")])


def _message_text(message: Any) -> str:
    try:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:
        msg = f"cannot write a trace line: {exc} (NaN or Infinity is not JSON)"
        raise TraceError(msg) from None


class InputDeltas:
    """The writer's side of ``prefix`` (see the module docs): turns each
    numbered line into the line to write, whose input is a delta against the
    conversation's previous line when that line's input is a prefix of it.
    Keeps each conversation's last input as its messages' JSON texts. With
    ``enabled=False`` (a version 1 trace) every line is written whole."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        # least recently written first
        self._last: BoundedTable[str, tuple[int, list[str]]] = BoundedTable(KEPT_CONVERSATIONS)

    def encode(self, number: int, line: Mapping[str, Any]) -> dict[str, Any]:
        """``line`` (without its number) as written, numbered ``number``."""
        out: dict[str, Any] = {"request": number}
        messages = line.get("messages")
        if not self.enabled or not isinstance(messages, list):
            out.update(line)
            return out
        texts = [_message_text(m) for m in messages]
        key = _conversation_key(line)
        last = self._last.get(key)
        self._last.put(key, (number, texts))
        k = 0 if last is None else len(last[1])
        if last is None or k == 0 or k > len(texts) or texts[:k] != last[1]:
            out.update(line)
            return out
        for name, value in line.items():
            if name == "messages":
                out["prefix"] = {"request": last[0], "messages": k}
                out["messages"] = messages[k:]
            else:
                out[name] = value
        return out

    def forget(self, line: Mapping[str, Any]) -> None:
        """Forget the input of ``line``'s conversation (its line was not
        written): the conversation's next line is written whole."""
        self._last.pop(_conversation_key(line), None)


class InputRebuilder:
    """The reader's side of ``prefix``: each line with its input whole again.
    Keeps each conversation's last input (as parsed), unless ``enabled`` is
    false (a version 1 trace, which has no prefix to follow)."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        # least recently read first
        self._last: BoundedTable[str, tuple[int, list[Any]]] = BoundedTable(KEPT_CONVERSATIONS)

    def rebuild(self, number: int, data: dict[str, Any], where: str) -> dict[str, Any]:
        """``data`` (line ``number``) with its whole input and no ``prefix``;
        `TraceError` naming ``where`` for a prefix that cannot be followed."""
        if "prefix" not in data:
            whole = data
        else:
            prefix, tail = data["prefix"], data.get("messages")
            if (
                not isinstance(prefix, dict)
                or not is_whole(prefix.get("request"), 0)
                or not is_whole(prefix.get("messages"), 0)
                or not isinstance(tail, list)
            ):
                msg = (
                    f"{where}: prefix={prefix!r} is not "
                    '{"request": <an earlier request>, "messages": <a count>} before a list '
                    "of messages"
                )
                raise TraceError(msg)
            base, k = prefix["request"], prefix["messages"]
            last = self._last.get(_conversation_key(data))
            if last is None or last[0] != base:
                before = "none kept" if last is None else f"request {last[0]}"
                msg = (
                    f"{where}: its prefix names request {base}, but the line before it of "
                    f"pipeline {data.get('pipeline')!r}, conversation "
                    f"{data.get('conversation_id')!r} is {before} (a trace's prefix names "
                    "the conversation's previous line)"
                )
                raise TraceError(msg)
            if k > len(last[1]):
                msg = (
                    f"{where}: its prefix takes {k} messages of request {base}, whose input "
                    f"has {len(last[1])}"
                )
                raise TraceError(msg)
            whole = {name: value for name, value in data.items() if name != "prefix"}
            whole["messages"] = last[1][:k] + tail
        if self.enabled and isinstance(whole.get("messages"), list):
            self._last.put(_conversation_key(whole), (number, whole["messages"]))
        return whole
