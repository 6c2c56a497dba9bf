"""The reflection gate: which retrieved memories are injected, and the
message that carries them.

`reflect` takes the memories retrieval kept (each at or above the
route's threshold) and, in order:

1. **blocks** every memory that matches a block pattern in any of its
   normalised forms (memory poisoning: a stored turn is text a user wrote,
   and may have been written to steer the model later; see
   `memrules.memory.patterns` and `memrules.memory.normalize`),
   that the learned detector scores as an order to the model
   (`memrules.memory.detector`), alone or read together with another
   of the first `MAX_PAIRED` memories kept
   (an order split across two memories blocks both), and every memory
   that imitates the block's own framing (its marker, or a line dated as
   the block dates memories);
2. **decays** each score by the memory's age: ``score × 0.5 ** (age_days /
   recency_decay_days)`` (a negative cosine is divided by that factor
   instead), the age counted from ``now``, which the caller gives (the
   shell's clock by default, a recorded time in a replay: the gate reads no
   clock). A memory with no stored time, or one from the future, is not
   decayed;
3. **orders** by decayed score, highest first (ties by id);
4. **drops near-duplicates**: a memory whose word set (`text_units`)
   has a Jaccard similarity of at least ``dedup_threshold`` with a memory
   kept before it, unless the two hold different numbers (``budget 10,000``
   and ``budget 20,000`` are two facts, not one said twice);
5. **trims** to ``max_inject_tokens``, measured with the script-aware
   estimator (`estimate_tokens`: ⌈1.3 × Latin word units +
   1.5 × Han, Hiragana, Katakana and Hangul characters⌉) over the whole
   message it would send, header included: memories go in while the
   message fits; the first that does not ends the list, except when it is
   the first of all: then it is cut, at a character boundary (never between
   a character and its combining mark), and ends with `CUT_MARKER`.

The message is one system message: a header line that starts with the
marker and says the lines below are data, not instructions, and one line
per memory, the memory one JSON string (``- [2024-05-01] "Q: …\\nA: …"``
with the date it was stored; see `quote`): a
stored text can neither end its string nor its line, nor spell the marker,
a dated line or a chat template's tokens inside it.

Everything here is pure: the same memories, settings and ``now`` give the
same bytes.

Invariants: the message's estimate never exceeds ``max_inject_tokens`` (a
property test holds it to that for any text); the memories it holds are a
subsequence of the gate's order, each whole or (the first only) a prefix
of itself; no blocked memory and no duplicate is ever injected.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from memrules._core.messages import Message, message
from memrules._counting.tokens import estimate_tokens
from memrules.memory.config import ReflectionConfig
from memrules.memory.screen import screen_pairs, screen_text
from memrules.memory.text import (
    CUT_MARKER,
    cut_text,
    forges_framing,
    header,
    memory_line,
    numbers,
    text_units,
)

__all__ = [
    "GateResult",
    "Recalled",
    "decay",
    "jaccard",
    "longest",
    "memory_message",
    "reflect",
    "render",
    "within",
]


@attrs.frozen(kw_only=True, slots=True)
class Recalled:
    """One retrieved memory: its record ``id``, ``text`` (``Q: …\\nA: …``
    for an auto-stored turn), ``score`` (the search's; after the gate, the
    decayed one), when it was stored (``stored_at``, seconds since the
    epoch, None when unknown), and the conversation it came from."""

    id: str
    text: str
    score: float
    stored_at: float | None = None
    conversation_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "score": self.score,
            "stored_at": self.stored_at,
            "conversation_id": self.conversation_id,
            "text": self.text,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Recalled:
        """The memory `to_dict` wrote (a trace's recorded retrieval)."""
        return cls(
            id=data["id"],
            text=data["text"],
            score=data["score"],
            stored_at=data["stored_at"],
            conversation_id=data["conversation_id"],
        )


@attrs.frozen(kw_only=True, slots=True)
class GateResult:
    """What the gate did: the ``memories`` injected, in order (decayed
    scores; the first one's text cut when ``cut`` names it), the message
    ``text`` (None: nothing to inject) and its estimated ``tokens``; the ids
    ``blocked`` (with the pattern each matched), the ``duplicates`` (id
    dropped, id kept), and those left out ``over_budget``."""

    memories: tuple[Recalled, ...] = ()
    text: str | None = None
    tokens: int = 0
    blocked: tuple[tuple[str, str], ...] = ()
    duplicates: tuple[tuple[str, str], ...] = ()
    over_budget: tuple[str, ...] = ()
    cut: str | None = None

    def message(self) -> Message | None:
        """The system message to inject, if any."""
        return None if self.text is None else memory_message(self.text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "injected": [m.id for m in self.memories],
            "scores": [m.score for m in self.memories],
            "tokens": self.tokens,
            "blocked": [{"id": i, "pattern": p} for i, p in self.blocked],
            "duplicates": [{"id": i, "of": kept} for i, kept in self.duplicates],
            "over_budget": list(self.over_budget),
            "cut": self.cut,
        }


def memory_message(text: str) -> Message:
    """The system message that carries the memory block ``text``."""
    return message("system", text)


def render(memories: Sequence[Recalled], marker: str) -> str:
    """The message text for ``memories``, in their order."""
    return "\n".join(
        [header(marker), *(memory_line(m.text, m.stored_at, marker) for m in memories)]
    )


_DAY = 86_400.0


def decay(
    score: float, stored_at: float | None, now: float | None, half_life: float | None
) -> float:
    """``score`` decayed by age: halved every ``half_life`` days since
    ``stored_at`` (as of ``now``); unchanged when any of them is None or
    the memory is from the future. A negative score (a cosine below 0) is
    divided by the factor instead: older is always worse."""
    if stored_at is None or now is None or half_life is None:
        return score
    factor = math.pow(0.5, max(0.0, (now - stored_at) / _DAY) / half_life)
    return score * factor if score >= 0 else score / factor


def jaccard(a: str, b: str) -> float:
    """The Jaccard similarity of the word sets (`text_units`) of
    ``a`` and ``b``: 1 for two texts without words."""
    return _overlap(frozenset(text_units(a)), frozenset(text_units(b)))


def _overlap(left: frozenset[str], right: frozenset[str]) -> float:
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def _blocked(
    memories: Iterable[Recalled], config: ReflectionConfig, marker: str
) -> tuple[list[Recalled], list[tuple[str, str]]]:
    kept, blocked = [], []
    for m in memories:
        forged = forges_framing(m.text, marker)
        reason = screen_text(m.text, config) if forged is None else None
        if forged is not None:
            blocked.append((m.id, f"forged framing: {forged}"))
        elif reason is not None:
            blocked.append((m.id, reason))
        else:
            kept.append(m)
    paired = screen_pairs([m.text for m in kept], config)
    if paired:
        blocked.extend(
            (m.id, f"{paired[i][1]} with {kept[paired[i][0]].id}")
            for i, m in enumerate(kept)
            if i in paired
        )
        kept = [m for i, m in enumerate(kept) if i not in paired]
    return kept, blocked


def _deduplicated(
    memories: Iterable[Recalled], threshold: float
) -> tuple[list[Recalled], list[tuple[str, str]]]:
    # Each memory's words and numbers are read once, not once per pair.
    kept: list[tuple[Recalled, frozenset[str], tuple[str, ...]]] = []
    dropped = []
    for m in memories:
        units, held = frozenset(text_units(m.text)), numbers(m.text)
        twin = next(
            (
                k
                for k, k_units, k_held in kept
                if k_held == held and _overlap(units, k_units) >= threshold
            ),
            None,
        )
        if twin is None:
            kept.append((m, units, held))
        else:
            dropped.append((m.id, twin.id))
    return [k for k, _, _ in kept], dropped


def longest(fits: Callable[[int], bool], most: int) -> int:
    """The largest ``n`` in ``0..most`` for which ``fits(n)`` holds (0 when
    none above 0 does), by bisection: ``fits`` must hold up to some ``n``
    and not beyond it, as a measure that never falls as ``n`` grows gives."""
    low, high = 0, most
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _fit(memory: Recalled, marker: str, budget: int) -> Recalled | None:
    """``memory`` with its text cut (at a character boundary, then
    `CUT_MARKER`) to the longest prefix whose message fits ``budget``;
    None when not even one character fits."""

    def fits(length: int) -> bool:
        text = f"{cut_text(memory.text, length)} {CUT_MARKER}"
        return estimate_tokens(render((attrs.evolve(memory, text=text),), marker)) <= budget

    # The estimate never falls as the prefix grows.
    prefix = cut_text(memory.text, longest(fits, len(memory.text)))
    if not prefix.strip():
        return None
    return attrs.evolve(memory, text=f"{prefix} {CUT_MARKER}")


def reflect(
    memories: Sequence[Recalled], config: ReflectionConfig, *, now: float | None, marker: str
) -> GateResult:
    """Pass ``memories`` (best first, as retrieval answered) through the gate
    (see the module docs) as of ``now`` (seconds since the epoch; None: no
    decay). Returns what to inject, and why the others were not; an empty
    ``memories`` gives an empty result. With the gate disabled, every
    memory is injected as it came."""
    if not memories:
        return GateResult()
    if not config.enabled:
        everything = render(memories, marker)
        return GateResult(
            memories=tuple(memories), text=everything, tokens=estimate_tokens(everything)
        )
    kept, blocked = _blocked(memories, config, marker)
    decayed = [
        attrs.evolve(m, score=decay(m.score, m.stored_at, now, config.recency_decay_days))
        for m in kept
    ]
    decayed.sort(key=lambda m: (-m.score, m.id))
    unique, duplicates = _deduplicated(decayed, config.dedup_threshold)
    budget = config.max_inject_tokens
    chosen: list[Recalled] = []
    cut: str | None = None
    over: list[str] = []
    # The message is the header and one line per memory: each line is
    # quoted once, and only the joined text is estimated again.
    lines = [header(marker)]
    for i, m in enumerate(unique):
        line = memory_line(m.text, m.stored_at, marker)
        if estimate_tokens("\n".join([*lines, line])) <= budget:
            chosen.append(m)
            lines.append(line)
            continue
        if not chosen:
            fitted = _fit(m, marker, budget)
            if fitted is not None:
                chosen.append(fitted)
                lines.append(memory_line(fitted.text, fitted.stored_at, marker))
                cut = m.id
                over = [n.id for n in unique[i + 1 :]]
                break
        over = [n.id for n in unique[i:]]
        break
    text = "\n".join(lines) if chosen else None
    return GateResult(
        memories=tuple(chosen),
        text=text,
        tokens=0 if text is None else estimate_tokens(text),
        blocked=tuple(blocked),
        duplicates=tuple(duplicates),
        over_budget=tuple(over),
        cut=cut,
    )


def within(gate: GateResult, chosen: Sequence[Recalled], marker: str) -> GateResult:
    """``gate`` narrowed to ``chosen``, the first of its memories that fit
    the request's budget (`fill`); the rest
    are reported over budget, ahead of those the gate itself left out."""
    kept = tuple(chosen)
    if kept == gate.memories:
        return gate
    text = render(kept, marker) if kept else None
    return attrs.evolve(
        gate,
        memories=kept,
        text=text,
        tokens=0 if text is None else estimate_tokens(text),
        over_budget=tuple(m.id for m in gate.memories[len(kept) :]) + gate.over_budget,
        cut=gate.cut if any(m.id == gate.cut for m in kept) else None,
    )
