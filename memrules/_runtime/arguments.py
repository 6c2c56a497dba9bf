"""A coroutine that takes a function's arguments, written once: what
`Pipeline.apply_async` is to `Pipeline.apply`."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

__all__ = ["arguments_of"]

P = ParamSpec("P")
R = TypeVar("R")


def arguments_of(
    sync: Callable[P, R],
) -> Callable[[Callable[..., Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Give the decorated coroutine function ``sync``'s arguments: type
    checkers check its calls against ``sync``'s signature and
    `inspect.signature` shows ``sync``'s, so the keywords are written in one
    place. The coroutine takes them as ``**options`` and passes them on."""

    def take(run: Callable[..., Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        run.__signature__ = inspect.signature(sync)  # type: ignore[attr-defined]
        return run

    return take
