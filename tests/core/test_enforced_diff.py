"""The diff of an output that rewrites a few messages in place of a long
conversation: its work is per gap, not per kept message, and it is the diff
the general pairing gives."""

from __future__ import annotations

import itertools
import sys
from types import FrameType
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from memrules._core import enforced
from memrules._core.enforced import diff
from memrules._core.messages import message


def gap_settlements(run: Any) -> tuple[Any, int]:
    """``run()`` and how many times the diff settled a gap (calls to its
    ``settle``, counted by the profiler hook)."""
    calls = 0
    code_file = enforced.__file__

    def hook(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        code = frame.f_code
        if event == "call" and code.co_name == "settle" and code.co_filename == code_file:
            calls += 1

    sys.setprofile(hook)
    try:
        out = run()
    finally:
        sys.setprofile(None)
    return out, calls


def test_a_rewrite_in_place_settles_only_its_gaps() -> None:
    before = tuple(message("user", f"m{i}") for i in range(2000))
    rewritten = {100, 101, 700, 1999}
    messages = tuple(message("user", "new") if i in rewritten else m for i, m in enumerate(before))
    origin = [None if i in rewritten else i for i in range(len(before))]
    found, calls = gap_settlements(lambda: diff(before, messages, origin, ()))
    assert found.replaced == ((100, 100), (101, 101), (700, 700), (1999, 1999))
    assert found.removed == ()
    assert found.inserted == ()
    assert calls <= len(rewritten) + 1


@st.composite
def outputs(draw: st.DrawFn) -> tuple[int, list[int | None], dict[int, int]]:
    """An input size, an output's origin (kept input indices ascending, new
    messages between them) and which new messages mend which removed ones."""
    size = draw(st.integers(0, 12))
    kept = sorted(draw(st.sets(st.integers(0, max(0, size - 1)), max_size=size))) if size else []
    origin: list[int | None] = []
    for i in kept:
        origin.extend([None] * draw(st.integers(0, 2)))
        origin.append(i)
    origin.extend([None] * draw(st.integers(0, 2)))
    gone = [i for i in range(size) if i not in kept]
    new = [j for j, i in enumerate(origin) if i is None]
    mended: dict[int, int] = {}
    if draw(st.booleans()):
        for j in new:
            # mend only from a removed message of the same gap
            before_j = [i for i in origin[:j] if i is not None]
            after_j = [i for i in origin[j:] if i is not None]
            low = before_j[-1] if before_j else -1
            high = after_j[0] if after_j else size
            choices = [i for i in gone if low < i < high and i not in mended.values()]
            if choices and draw(st.booleans()):
                mended[j] = draw(st.sampled_from(choices))
    return size, origin, mended


def _general(size: int, origin: list[int | None], mended: dict[int, int]) -> tuple[Any, ...]:
    """The diff's pairing written out plainly, gap by gap."""
    gone_all: list[int] = []
    replaced: list[tuple[int, int]] = []
    inserted: list[int] = []
    anchors = [(j, i) for j, i in enumerate(origin) if i is not None]
    bounds = [(-1, -1), *anchors, (len(origin), size)]
    for (j0, i0), (j1, i1) in itertools.pairwise(bounds):
        new = list(range(j0 + 1, j1))
        known = [(mended[j], j) for j in new if j in mended]
        taken = {i for i, _ in known}
        gone = [i for i in range(i0 + 1, i1) if i not in taken]
        made = [j for j in new if j not in mended]
        pairs = min(len(gone), len(made))
        replaced.extend(sorted([*known, *zip(gone[:pairs], made[:pairs], strict=True)]))
        gone_all.extend(gone[pairs:])
        inserted.extend(made[pairs:])
    return tuple(gone_all), tuple(replaced), tuple(inserted)


@given(outputs())
def test_the_diff_is_the_gap_by_gap_pairing(
    case: tuple[int, list[int | None], dict[int, int]],
) -> None:
    size, origin, mended = case
    before = tuple(message("user", f"m{i}") for i in range(size))
    messages = tuple(message("user", "new") if i is None else before[i] for i in origin)
    found = diff(before, messages, origin, (), mended or None)
    gone, replaced, inserted = _general(size, origin, mended)
    assert tuple(found.removed) == gone
    assert found.replaced == replaced
    assert found.inserted == inserted
