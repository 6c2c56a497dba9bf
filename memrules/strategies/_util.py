"""Small helpers the built-in strategies share."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable

from memrules._core.bounded import BoundedTable
from memrules._core.errors import ConfigError
from memrules._core.messages import Conversation, Message, Part


def check_positive(name: str, value: int, *, minimum: int = 1) -> None:
    """Raise :class:`ConfigError` naming ``name=value`` when ``value`` is
    under ``minimum``. Types are checked before a factory runs (see
    :func:`memrules.strategies.registry.checked_factory`); minimums here."""
    if value < minimum:
        msg = f"{name}={value!r} must be at least {minimum}"
        raise ConfigError.single(msg, yaml_path=name)


def rewrite_parts(
    conversation: Conversation,
    indices: Iterable[int],
    rewrite: Callable[[Part], Part],
) -> Conversation:
    """``conversation`` with ``rewrite`` applied to every part of the messages
    at ``indices``. Messages whose parts all come back unchanged (the same
    objects) are kept as they were; the same tuple when nothing changed."""
    out: list[Message] | None = None
    for i in indices:
        m = conversation[i]
        parts = tuple(rewrite(p) for p in m.parts)
        if all(a is b for a, b in zip(parts, m.parts, strict=True)):
            continue
        if out is None:
            out = list(conversation)
        out[i] = m.evolve(parts=parts)
    return conversation if out is None else tuple(out)


REWRITE_CACHE_SIZE = 65_536


class RewriteCache:
    """What a strategy's part rewrite made of each message it saw, so that a
    warm request (a hook's conversation grown by a turn hands the strategy the
    same messages again) rewrites, re-encodes and re-counts only the messages
    it has not seen.

    Owner: one strategy instance, shared by every conversation its pipeline
    runs. Bound: ``size`` entries, first in, first out (a
    :class:`~memrules._core.bounded.BoundedTable` under the cache's lock).
    An entry is keyed by the message's value and the rewrite's ``key`` (what
    the rewrite of that message depends on besides the message: the ids it
    targets, the stub it writes) and holds the counter it was made with; it
    is used only for that very counter, so a strategy shared by pipelines
    with different counters stays exact. Entries hold their messages: at
    most ``size`` of them stay alive for the cache.
    """

    __slots__ = ("_lock", "_table")

    def __init__(self, size: int = REWRITE_CACHE_SIZE) -> None:
        self._table: BoundedTable[tuple[Message, Hashable], tuple[object, Message | None, int]] = (
            BoundedTable(size)
        )
        self._lock = threading.Lock()

    def rewrite_parts(
        self,
        conversation: Conversation,
        indices: Iterable[int],
        rewrite: Callable[[Part], Part],
        *,
        key: Callable[[Message], Hashable],
        counter: object,
        saving: Callable[[Message, Message], int] | None = None,
    ) -> tuple[Conversation, int]:
        """:func:`rewrite_parts`, taking what the cache knows, and the tokens
        the changed messages save by ``saving(before, after)`` (0 without it).
        ``rewrite`` and ``saving`` must depend only on the message, its
        ``key`` and ``counter``."""
        table = self._table
        out: list[Message] | None = None
        saved = 0
        for i in indices:
            m = conversation[i]
            entry_key = (m, key(m))
            entry = table.get(entry_key)
            if entry is None or entry[0] is not counter:
                made = rewrite_parts((m,), (0,), rewrite)[0]
                after = None if made is m else made  # None: the message stays as it is
                gain = 0 if after is None or saving is None else saving(m, after)
                with self._lock:
                    table.put(entry_key, (counter, after, gain))
            else:
                _, after, gain = entry
            if after is None:
                continue
            saved += gain
            if out is None:
                out = list(conversation)
            out[i] = after
        return (conversation if out is None else tuple(out)), saved

    def clear(self) -> None:
        """Forget every entry (the next request computes them again)."""
        with self._lock:
            self._table.clear()

    def __len__(self) -> int:
        """How many messages' rewrites the cache holds."""
        return len(self._table)

    def __reduce__(self) -> tuple[type[RewriteCache], tuple[()]]:
        """A copy or an unpickled cache starts empty (the lock does not copy)."""
        return (RewriteCache, ())
