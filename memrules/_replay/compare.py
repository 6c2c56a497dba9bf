"""How a replay says what differs: each difference of a request's recorded and
replayed lines, named where a person would look (`output message 3: parts`),
and the config keys a rebuilt pipeline reads differently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memrules._core.jsondiff import Difference, describe, differences

__all__ = ["SHOWN_PER_REQUEST", "about", "compare_request", "config_differences"]

SHOWN_PER_REQUEST = 5


def _code_valued(value: object) -> bool:
    return isinstance(value, Mapping) and "code" in value


def config_differences(recorded: Mapping[str, Any], rebuilt: Mapping[str, Any]) -> list[str]:
    out = []
    for key in dict.fromkeys((*recorded, *rebuilt)):
        if _code_valued(recorded.get(key)):
            continue  # code (an extractor): the replay answers it from the trace
        if recorded.get(key) != rebuilt.get(key):
            out.append(key)
    return out


def _readable(path: str, data: Mapping[str, Any]) -> str:
    """A difference's path, said as where a person would look."""
    head, _, rest = path.partition(".")
    name, bracket, index_text = head.partition("[")
    index = index_text.split("]", 1)[0] if bracket else ""
    tail = path[len(f"{name}[{index}]") :].lstrip(".") if bracket else rest
    if name == "output" and index:
        return f"output message {index}" + (f": {tail}" if tail else "")
    if name == "messages" and index:
        return f"input message {index}" + (f": {tail}" if tail else "")
    if name == "calls" and index.isdigit():
        calls = data.get("calls") or []
        at = int(index)
        call = calls[at] if at < len(calls) and isinstance(calls[at], Mapping) else {}
        seam = f" ({call.get('seam')}.{call.get('operation')})" if call else ""
        return f"seam call {index}{seam}" + (f": {tail}" if tail else "")
    if name == "hits" and index:
        return f"hit {index}" + (f": {tail}" if tail else "")
    if not bracket and rest and name in ("report", "state", "usage", "write", "outcome", "memory"):
        return f"{name}: {rest}"
    return path


def about(data: Mapping[str, Any]) -> str:
    kind = data.get("kind", "?")
    conversation = data.get("conversation_id")
    return f"{kind}, conversation {conversation}" if conversation is not None else str(kind)


def compare_request(
    number: int, recorded: Mapping[str, Any], replayed: Mapping[str, Any]
) -> list[str]:
    found = differences(dict(recorded), dict(replayed), limit=SHOWN_PER_REQUEST)
    prefix = f"request {number} ({about(recorded)})"
    return [
        f"{prefix}: {describe(Difference(_readable(d.path, recorded), d.recorded, d.replayed))}"
        for d in found
    ]
