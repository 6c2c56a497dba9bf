"""What enforcing the invariants yields: `Enforced`, the messages that
stand and their diff from the input, and `diff`, which computes it from
where each output message came from; with the views of a measured
conversation that enforcement reads (`TrackView`, `Tracks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from memrules._core.conversation import ToolLinks
from memrules._core.indices import EMPTY, Indices, indices
from memrules._core.messages import Conversation, Message
from memrules._core.survivors import Picked

__all__ = ["Enforced", "TrackView", "Tracks", "diff", "unchanged"]


class TrackView(Protocol):
    """What `enforce` reads of one conversation a pipeline has
    measured (`Track` is one), instead of
    deriving it again from the messages."""

    @property
    def first_system(self) -> int | None:
        """The first system message's index, or None."""

    @property
    def last_user(self) -> int | None:
        """The most recent user message's index, or None."""

    def picked(self) -> Picked:
        """The survivors, by index (see `memrules._core.survivors`)."""

    @property
    def leads_with_user(self) -> bool:
        """Whether the first message that is not a system message is a user message."""

    @property
    def unique_calls(self) -> bool:
        """Whether no call id occurs in more than one place."""

    def splits(self, head: Sequence[int], start: int) -> bool:
        """Whether keeping ``head`` and every message from ``start`` on
        would keep one message of a tool pair and drop the other."""

    def held(self) -> tuple[int, ...]:
        """The indices that must survive (the survivors and the tool
        exchanges they need), ascending."""

    def closes_nothing(self, messages: Sequence[Message]) -> bool:
        """Whether pairing closure would drop nothing from ``messages``, an
        output for this conversation (False when unsure)."""


class Tracks(Protocol):
    """Where `enforce` finds a conversation's `TrackView` and
    tool links (`Measure` is one)."""

    def track(self, conversation: Conversation) -> TrackView:
        """The view of ``conversation``."""

    def links(self, conversation: Conversation) -> ToolLinks:
        """The tool links of ``conversation``."""

    def moved(self, conversation: Conversation, source: Conversation) -> Sequence[int] | None:
        """Where ``conversation`` holds other objects than ``source``, among
        ``source``'s positions, when that is known already; else None."""

    def noted(self, owner: object) -> object | None:
        """What ``owner`` kept with `note` for this conversation, or None."""

    def note(self, owner: object, value: object) -> None:
        """Keep ``value`` for ``owner``: what a check worked out about the
        conversation's last input, read back only by ``owner``."""


@attrs.frozen(kw_only=True, slots=True)
class Enforced:
    """The result of `enforce`: the messages that stand, and the diff
    from the input. Indices in ``removed`` and the first of each ``replaced``
    pair are input indices; ``inserted`` and the second of each pair are
    output indices. ``origin[j]`` is the input index of output message ``j``,
    or None for a new one. ``removed`` is an `Indices`,
    which reads as the tuple of indices it holds (a tuple given is taken
    as one)."""

    messages: Conversation
    removed: Indices = attrs.field(default=EMPTY, converter=indices)
    replaced: tuple[tuple[int, int], ...] = ()
    inserted: tuple[int, ...] = ()
    origin: tuple[int | None, ...] = ()
    closed_calls: tuple[str, ...] = ()
    violation: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.replaced or self.inserted)


def unchanged(before: Conversation, violation: str | None = None) -> Enforced:
    return Enforced(messages=before, origin=identity_origin(len(before)), violation=violation)


_IDENTITY: tuple[int, ...] = ()
"""Owner: this module. The longest identity origin made so far (at most
twice the longest conversation seen), whose prefixes `identity_origin`
hands out: an unchanged conversation's origin costs a C-level slice of
shared ints, not ``n`` new ones each request."""


def identity_origin(n: int) -> tuple[int, ...]:
    """``(0, 1, ..., n - 1)``: the origin of a conversation no step changed."""
    global _IDENTITY
    known = _IDENTITY
    if n > len(known):
        known = tuple(range(max(n, 2 * len(known))))
        _IDENTITY = known
    return known[:n]


def diff(
    before: Conversation,
    messages: Conversation,
    origin: Sequence[int | None],
    closed_calls: tuple[str, ...],
    mended: dict[int, int] | None = None,
    *,
    removed: Indices | None = None,
) -> Enforced:
    """Removed, replaced and inserted messages between kept anchors.

    A message that pairing closure mended replaces the message it was made
    from (``mended`` maps its output index to that input index). Within each
    gap between two kept messages, the other removed input messages and new
    output messages pair up in order as replacements; any surplus is plainly
    removed or inserted. ``removed``, when the caller knows it already (a
    window), is taken as it is for an output that only deletes.
    """
    if not mended and None not in origin:
        # Only deletions: everything not kept was removed.
        if removed is None:
            removed = Indices.gaps(origin, len(before))  # type: ignore[arg-type]
        if not removed:
            return unchanged(before)
        return Enforced(
            messages=messages,
            removed=removed,
            origin=tuple(origin),
            closed_calls=closed_calls,
        )
    sources = mended or {}
    gone_all: list[range] = []  # runs: a gap of thousands costs one entry
    replaced: list[tuple[int, int]] = []
    inserted: list[int] = []
    prev = -1
    new: list[int] = []

    def settle(upto: int) -> None:
        if not sources:
            # Nothing mended: the gap's removed and new messages pair up in
            # order, already sorted (the common case of a rewrite in place
            # is one of each; a kept neighbour, none).
            gap = range(prev + 1, upto)
            pairs = min(len(gap), len(new))
            if pairs:
                replaced.extend(zip(gap[:pairs], new[:pairs], strict=True))
            if len(gap) > pairs:
                gone_all.append(gap[pairs:])
            if len(new) > pairs:
                inserted.extend(new[pairs:])
            return
        known = [(sources[j], j) for j in new if j in sources]
        taken = {i for i, _ in known}
        gone = [i for i in range(prev + 1, upto) if i not in taken]
        made = [j for j in new if j not in sources]
        pairs = min(len(gone), len(made))
        replaced.extend(sorted([*known, *zip(gone[:pairs], made[:pairs], strict=True)]))
        gone_all.extend(Indices.of(gone[pairs:]).ranges)
        inserted.extend(made[pairs:])

    for j, i in enumerate(origin):
        if i is None:
            new.append(j)
            continue
        if new or i != prev + 1:  # else no gap before this kept message
            settle(i)
            new = []
        prev = i
    settle(len(before))
    if not (gone_all or replaced or inserted):
        return unchanged(before)
    return Enforced(
        messages=messages,
        removed=Indices(gone_all),
        replaced=tuple(replaced),
        inserted=tuple(inserted),
        origin=tuple(origin),
        closed_calls=closed_calls,
    )
