"""Argument checks shared by the generators: a bad size is hypothesis's
`InvalidArgument`, naming the argument and its value."""

from __future__ import annotations

from hypothesis.errors import InvalidArgument

__all__ = ["validate_size"]


def validate_size(min_size: int, max_size: int) -> None:
    """Raise `InvalidArgument` unless ``0 <= min_size <= max_size``."""
    if min_size < 0:
        msg = f"min_size={min_size!r} must be at least 0"
        raise InvalidArgument(msg)
    if max_size < min_size:
        msg = f"max_size={max_size!r} must be at least min_size={min_size!r}"
        raise InvalidArgument(msg)
