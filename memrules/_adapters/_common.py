"""What both adapters share: reading untrusted JSON and naming what is wrong.

Every check raises :class:`~memrules._errors.MessageFormatError` with the
message index and the field path (``content[2].type``), so malformed input
never surfaces as a ``KeyError`` or ``TypeError`` from deep inside a loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from pyrsistent import thaw

from memrules._errors import MessageFormatError

__all__ = [
    "MISSING",
    "array",
    "fail",
    "is_array",
    "mapping",
    "optional_str",
    "plain",
    "required_str",
    "split_kind",
    "type_name",
    "unmapped",
]


class _Missing:
    """The value of a key that is absent, as distinct from one that is null."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def type_name(value: object) -> str:
    """A JSON-minded name for the type of ``value``, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, str):
        return "str"
    if isinstance(value, Sequence):
        return "list"
    return type(value).__name__


def fail(message: str, index: int | None, field: str) -> NoReturn:
    raise MessageFormatError(message, index=index, field=field)


def is_array(value: object) -> bool:
    """True for a JSON array: a list, tuple or other sequence that is not text."""
    return isinstance(value, list) or (
        isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))
    )


def array(value: object, index: int | None, field: str, what: str) -> Sequence[Any]:
    if not is_array(value):
        fail(f"expected a list of {what}, got {type_name(value)}", index, field)
    return value  # type: ignore[return-value]


def mapping(value: object, index: int | None, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        fail(f"expected an object, got {type_name(value)}", index, field)
    return value


def required_str(raw: Mapping[str, Any], key: str, index: int | None, field: str) -> str:
    """``raw[key]``, which must be present and a string."""
    value = raw.get(key, MISSING)
    where = f"{field}.{key}" if field else key
    if value is MISSING:
        fail("missing", index, where)
    if not isinstance(value, str):
        fail(f"expected a string, got {type_name(value)}", index, where)
    return value


def optional_str(raw: Mapping[str, Any], key: str, index: int | None, field: str) -> Any:
    """``raw[key]`` if it is a string, None or MISSING; anything else is an error."""
    value = raw.get(key, MISSING)
    if value is MISSING or value is None or isinstance(value, str):
        return value
    where = f"{field}.{key}" if field else key
    fail(f"expected a string, got {type_name(value)}", index, where)


def unmapped(raw: Mapping[str, Any], known: frozenset[str]) -> dict[str, Any] | None:
    """The entries of ``raw`` whose keys are not in ``known``, or None if there
    are none. These are kept verbatim so that the round trip is lossless."""
    if len(raw) <= len(known) and all(k in known for k in raw):
        return None
    rest = {k: v for k, v in raw.items() if k not in known}
    return rest or None


def plain(value: Any) -> Any:
    """A frozen JSON value back as plain lists and dicts (a fresh copy)."""
    return thaw(value)


def split_kind(kind: str) -> tuple[str, str]:
    """``"anthropic:image"`` -> ``("anthropic", "image")``; ``"image"`` -> ``("", "image")``."""
    provider, sep, rest = kind.partition(":")
    if not sep:
        return "", kind
    return provider, rest
