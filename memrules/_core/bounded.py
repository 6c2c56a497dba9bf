"""The one bounded table every cache in memrules uses.

`BoundedTable` is an `OrderedDict` with a cap:
its oldest entry goes first. Whether "oldest" means first inserted (a FIFO
cache: a hit is one C-level ``dict.get``, nothing moves) or least recently
used (the owner calls `BoundedTable.touch` on a hit) is the owner's
choice, stated where it makes the table. Entries the owner must not drop
(a conversation with a request in progress) are kept by `trim`'s
``keep``.

The table takes no lock: each owner keeps the one it already needs around
its own steps (an insert and its evictions, or a lookup and its ``touch``),
so a lookup that only reads, as the token counters do, stays lock-free.
Subclassing ``OrderedDict`` keeps ``get``, ``in`` and ``len`` the C
implementation's; a hand-written mapping (``cachetools``) makes every hit a
Python call, which costs the counting hot path several times over.

>>> table = BoundedTable(2)
>>> table.add("a", 1); table.add("b", 2); table.add("c", 3)
>>> list(table)
['b', 'c']
>>> table.touch("b"); table.put("d", 4)
>>> list(table)
['b', 'd']
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

__all__ = ["BoundedTable"]

K = TypeVar("K")
V = TypeVar("V")


class BoundedTable(OrderedDict[K, V]):
    """At most ``cap`` entries (at least 0); the oldest goes first.

    Not thread-safe by itself: its owner holds its own lock around
    `add`, `put`, `touch` and `trim`.
    """

    __slots__ = ("cap",)

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap = cap

    def add(self, key: K, value: V) -> None:
        """``value`` under ``key`` unless ``key`` is there already (another
        thread computed it first); the oldest entries dropped to make room."""
        if key in self:
            return
        while len(self) >= self.cap > 0:
            self.popitem(last=False)
        if self.cap > 0:
            self[key] = value

    def put(self, key: K, value: V) -> None:
        """``value`` under ``key``, as the newest entry, replacing any; the
        oldest entries beyond ``cap`` dropped."""
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.cap:
            self.popitem(last=False)

    def touch(self, key: K) -> None:
        """``key`` made the newest entry (used just now), if it is there."""
        if key in self:
            self.move_to_end(key)

    def trim(self, keep: Callable[[V], bool] = lambda value: False) -> None:
        """Drop the oldest entries beyond ``cap``, passing over any whose
        value ``keep`` says must stay (they count, and go once released)."""
        excess = len(self) - self.cap
        if excess <= 0:
            return
        idle = [key for key, value in self.items() if not keep(value)][:excess]
        for key in idle:
            del self[key]
