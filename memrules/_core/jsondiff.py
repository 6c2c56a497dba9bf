"""Where two JSON values differ, said so a person can find it.

`differences` walks a recorded value and a replayed one (parsed JSON:
dicts, lists, strings, numbers, booleans, None) and lists each place they
differ, by path: ``output[3].parts[0].text``. `describe` says one in a
line, showing a long string around its first differing character, so a
one-byte change in a 4,000-character summary is visible.

>>> [describe(d) for d in differences({"a": [1, "abc"]}, {"a": [1, "abd"]})]
['a[1]: recorded "abc", replayed "abd" (first difference at character 2)']
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import attrs

__all__ = [
    "MISSING",
    "Difference",
    "describe",
    "differences",
    "join_path",
    "show",
    "within",
]


class _Missing:
    """The value on the side of a difference that has nothing there."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONTEXT = 24


@attrs.frozen(slots=True)
class Difference:
    """One place where ``recorded`` and ``replayed`` differ (``MISSING``
    where one side has nothing)."""

    path: str
    recorded: Any
    replayed: Any


def join_path(path: str, key: str | int) -> str:
    """``path`` extended by a list index or a mapping key."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def within(path: str, difference: Difference) -> Difference:
    """``difference`` with its path placed under ``path``."""
    inner = difference.path
    if not inner:
        joined = path
    elif inner.startswith("[") or not path:
        joined = path + inner
    else:
        joined = f"{path}.{inner}"
    return attrs.evolve(difference, path=joined)


def _walk(recorded: Any, replayed: Any, path: str) -> Iterator[Difference]:
    if type(recorded) is not type(replayed) and not (
        isinstance(recorded, (int, float))
        and isinstance(replayed, (int, float))
        and not isinstance(recorded, bool)
        and not isinstance(replayed, bool)
    ):
        yield Difference(path, recorded, replayed)
        return
    if isinstance(recorded, dict):
        for key in recorded:
            if key not in replayed:
                yield Difference(join_path(path, key), recorded[key], MISSING)
            else:
                yield from _walk(recorded[key], replayed[key], join_path(path, key))
        for key in replayed:
            if key not in recorded:
                yield Difference(join_path(path, key), MISSING, replayed[key])
        if [k for k in recorded if k in replayed] != [k for k in replayed if k in recorded]:
            yield Difference(f"{path} (key order)", list(recorded), list(replayed))
        return
    if isinstance(recorded, list):
        for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)):
            yield from _walk(a, b, join_path(path, i))
        shorter = min(len(recorded), len(replayed))
        for i in range(shorter, len(recorded)):
            yield Difference(join_path(path, i), recorded[i], MISSING)
        for i in range(shorter, len(replayed)):
            yield Difference(join_path(path, i), MISSING, replayed[i])
        return
    if recorded != replayed or type(recorded) is not type(replayed):
        yield Difference(path, recorded, replayed)


def differences(recorded: Any, replayed: Any, *, limit: int = 20) -> list[Difference]:
    """The first ``limit`` places where the two values differ, in document
    order (mapping keys in the recorded order, then keys only the replayed
    value has; a mapping whose keys are equal but in another order is a
    difference too, since the bytes written differ)."""
    found: list[Difference] = []
    for difference in _walk(recorded, replayed, ""):
        found.append(difference)
        if len(found) >= limit:
            break
    return found


def show(value: Any, *, limit: int = 80) -> str:
    """``value`` as short JSON (``MISSING`` for nothing), cut in the middle
    when longer than ``limit`` characters."""
    if value is MISSING:
        return "MISSING"
    text = json.dumps(value, ensure_ascii=False)
    if len(text) <= limit:
        return text
    half = (limit - 1) // 2
    return f"{text[:half]}…{text[-half:]}"


def _first_change(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def _around(text: str, at: int) -> str:
    start = max(0, at - _CONTEXT)
    end = min(len(text), at + _CONTEXT)
    shown = json.dumps(text[start:end], ensure_ascii=False)
    return ("…" if start else "") + shown + ("…" if end < len(text) else "")


def describe(difference: Difference) -> str:
    """One line: ``path: recorded X, replayed Y``; two strings are shown
    around their first differing character, and where it is."""
    a, b = difference.recorded, difference.replayed
    where = difference.path or "the value"
    if isinstance(a, str) and isinstance(b, str):
        at = _first_change(a, b)
        return (
            f"{where}: recorded {_around(a, at)}, replayed {_around(b, at)} "
            f"(first difference at character {at})"
        )
    return f"{where}: recorded {show(a)}, replayed {show(b)}"
