"""Context usage readings and the observers that receive them."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

__all__ = ["ContextUsage", "ContextUsageObserver"]


@attrs.frozen(kw_only=True, slots=True)
class ContextUsage:
    """How full a request is: ``tokens`` of a ``window``-token context.
    ``window_resolved`` tells whether the window came from the resolver
    (True) or from ``context_window_tokens`` (False)."""

    tokens: int
    window: int
    messages: int
    window_resolved: bool = False

    @property
    def fraction(self) -> float:
        return self.tokens / self.window if self.window else 0.0


@runtime_checkable
class ContextUsageObserver(Protocol):
    """Receives a `ContextUsage` for every request. An observer that
    raises fails the request before anything is changed."""

    def __call__(self, usage: ContextUsage, /) -> None: ...
