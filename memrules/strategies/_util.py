"""Small helpers the built-in strategies share."""

from __future__ import annotations

from collections.abc import Callable, Iterable

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
