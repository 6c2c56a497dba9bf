"""Index sets that cost what they hold in runs, not in items.

A window that drops 9,800 messages of a 10,000-message history removes one
run of indices; writing every index into the report would make each request
cost the whole history again. `Indices` keeps sorted, distinct
indices as runs (``range`` objects) and reads as the tuple it stands for:
it has the length, items, slices, iteration and membership of that tuple,
and compares equal to any sequence of the same items (``Indices.of((1, 2,
3)) == (1, 2, 3)``). `IdsOf` is the ids of some messages of a
conversation, worked out when first read.

Both are immutable values: nothing changes one after it is made (the ids
are computed at most once per object, and a race computes the same tuple
twice), so they are safe to share between threads.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

__all__ = ["EMPTY", "IdsOf", "Indices", "indices"]


class Indices(Sequence[int]):
    """Sorted, distinct, non-negative indices, held as runs (see the module
    docs). Build one with `of` (any ascending indices), `runs`
    or `gaps`."""

    __slots__ = ("_ends", "_runs")

    def __init__(self, runs: Iterable[range] = ()) -> None:
        merged: list[range] = []
        for r in runs:
            if not r:
                continue
            if r.step != 1 or r.start < 0:
                msg = f"runs must be non-negative with step 1, got {r!r}"
                raise ValueError(msg)
            if merged and r.start < merged[-1].stop:
                msg = f"runs must ascend without overlap, got {merged[-1]!r} then {r!r}"
                raise ValueError(msg)
            if merged and r.start == merged[-1].stop:
                merged[-1] = range(merged[-1].start, r.stop)
            else:
                merged.append(r)
        self._runs = tuple(merged)
        self._ends = tuple(itertools.accumulate(len(r) for r in merged))

    @classmethod
    def of(cls, indices: Iterable[int]) -> Indices:
        """``indices`` (ascending, distinct) as runs; an `Indices`
        is returned as it is."""
        if isinstance(indices, Indices):
            return indices
        runs: list[range] = []
        start = stop = -1
        for i in indices:
            if i == stop:
                stop += 1
                continue
            if i < stop or i < 0:
                msg = f"indices must be distinct, non-negative, ascending; got {i} after {stop - 1}"
                raise ValueError(msg)
            if stop > start:
                runs.append(range(start, stop))
            start, stop = i, i + 1
        if stop > start:
            runs.append(range(start, stop))
        return cls(runs)

    @classmethod
    def gaps(cls, kept: Iterable[int], size: int) -> Indices:
        """The indices below ``size`` that ascending ``kept`` leaves out."""
        runs: list[range] = []
        at = 0
        for i in kept:
            if i > at:
                runs.append(range(at, i))
            at = i + 1
        if size > at:
            runs.append(range(at, size))
        return cls(runs)

    @property
    def ranges(self) -> tuple[range, ...]:
        """The runs, ascending."""
        return self._runs

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[int, ...]: ...

    def __getitem__(self, index: int | slice) -> int | tuple[int, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            msg = "Indices index out of range"
            raise IndexError(msg)
        k = bisect.bisect_right(self._ends, index)
        before = self._ends[k - 1] if k else 0
        return self._runs[k][index - before]

    def __iter__(self) -> Iterator[int]:
        return itertools.chain.from_iterable(self._runs)

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        k = bisect.bisect_right(self._runs, value, key=lambda r: r.start) - 1
        return k >= 0 and value in self._runs[k]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Indices):
            return self._runs == other._runs
        if isinstance(other, (tuple, list, range)):
            return len(other) == len(self) and all(map(int.__eq__, self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        shown = ", ".join(
            str(r.start) if len(r) == 1 else f"{r.start}..{r.stop - 1}" for r in self._runs
        )
        return f"Indices({shown})"


EMPTY = Indices()


def indices(value: Iterable[int]) -> Indices:
    """``value`` as `Indices` (the converter of report fields)."""
    return Indices.of(value)


class IdsOf(Sequence[str]):
    """The ids of ``conversation[i]`` for ``i`` in ``indices``, where the
    message has one, in order; read as a tuple, computed on first read."""

    __slots__ = ("_conversation", "_ids", "_indices")

    def __init__(self, conversation: Sequence[Any], indices: Sequence[int]) -> None:
        self._conversation = conversation
        self._indices = indices
        self._ids: tuple[str, ...] | None = None

    def _all(self) -> tuple[str, ...]:
        ids = self._ids
        if ids is None:
            found = (self._conversation[i].id for i in self._indices)
            ids = self._ids = tuple(i for i in found if i is not None)
        return ids

    def __len__(self) -> int:
        return len(self._all())

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._all()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IdsOf):
            return self._all() == other._all()
        if isinstance(other, (tuple, list)):
            return self._all() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return repr(self._all())
