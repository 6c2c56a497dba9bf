"""Whether a memory, or two memories of one user, may reach the model:
the block patterns first (cheap, exact), then the learned detector
(`memrules.memory.detector`).

Used at both ends: when a memory is stored (auto-store refuses a memory
that fails, and says so) and when memories are retrieved (the reflection
gate, `memrules.memory.gate`, blocks them, alone and in pairs).
Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from memrules.memory.config import ReflectionConfig
from memrules.memory.detector import Detector, default_detector

__all__ = ["MAX_PAIRED", "screen_pair", "screen_pairs", "screen_text"]

MAX_PAIRED = 8
"""The retrieved memories read in pairs (the first this many the single
check kept): at most 56 ordered pairs a request."""


def _detector(config: ReflectionConfig) -> Detector | None:
    return default_detector() if config.detector else None


def _threshold(detector: Detector, config: ReflectionConfig, *, pair: bool) -> float:
    if config.detector_threshold is not None:
        return config.detector_threshold
    return detector.pair_threshold if pair else detector.threshold


def screen_text(text: str, config: ReflectionConfig) -> str | None:
    """Why ``text`` must not reach the model (the block pattern it
    matched, or ``detector: 0.97``), or None when it may."""
    pattern = config.blocks(text)
    if pattern is not None:
        return pattern.pattern
    detector = _detector(config)
    if detector is None:
        return None
    score = detector.score(text)
    if score >= _threshold(detector, config, pair=False):
        return f"detector: {score:.3f}"
    return None


def screen_pair(first: str, second: str, config: ReflectionConfig) -> str | None:
    """Why ``first`` and ``second`` read together (either order) must not
    reach the model: an order split across two memories."""
    detector = _detector(config)
    if detector is None:
        return None
    threshold = _threshold(detector, config, pair=True)
    score = max(detector.pair_score(first, second), detector.pair_score(second, first))
    return f"detector (pair): {score:.3f}" if score >= threshold else None


def screen_pairs(texts: Sequence[str], config: ReflectionConfig) -> dict[int, tuple[int, str]]:
    """For the first `MAX_PAIRED` of ``texts``: each index that
    forms a blocked pair, with its partner and the reason."""
    found: dict[int, tuple[int, str]] = {}
    head = list(texts[:MAX_PAIRED])
    for i in range(len(head)):
        for j in range(i + 1, len(head)):
            reason = screen_pair(head[i], head[j], config)
            if reason is not None:
                found.setdefault(i, (j, reason))
                found.setdefault(j, (i, reason))
    return found
