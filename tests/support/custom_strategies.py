"""User-style custom strategies, loaded by import path in the config tests."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from memrules import Conversation, StrategyContext
from memrules._core.conversation import survivor_indices
from memrules.strategies import strategy_factory

StrategyClosure = Callable[[Conversation, StrategyContext], Conversation]


def drop_everything_old(conversation: Conversation, context: StrategyContext) -> Conversation:
    """A plain strategy function: keep only the survivors."""
    keep = survivor_indices(conversation)
    if len(keep) == len(conversation):
        return conversation
    return tuple(m for i, m in enumerate(conversation) if i in keep)


@attrs.frozen
class _KeepLast:
    count: int

    def __call__(self, conversation: Conversation, context: StrategyContext) -> Conversation:
        keep = survivor_indices(conversation) | set(
            range(len(conversation) - self.count, len(conversation))
        )
        if len(keep) >= len(conversation):
            return conversation
        return tuple(m for i, m in enumerate(conversation) if i in keep)

    def __repr__(self) -> str:
        return f"keep_last(count={self.count})"


@strategy_factory
def keep_last(*, count: int) -> _KeepLast:
    """A factory: YAML parameters become keyword arguments."""
    if count < 0:
        msg = f"count={count!r} must be at least 0"
        raise ValueError(msg)
    return _KeepLast(count)


def always_fails(conversation: Conversation, context: StrategyContext) -> Conversation:
    """A strategy that fails on every call, for the CLI's warning and --strict."""
    msg = "the disk is made of cheese"
    raise RuntimeError(msg)


@strategy_factory
def keep_newest(*, count: int) -> StrategyClosure:
    """A factory that returns a closure, as the docs teach: the trace records
    this factory and ``count``, so a replay builds the same strategy."""

    def keep(conversation: Conversation, context: StrategyContext) -> Conversation:
        keep = survivor_indices(conversation) | set(
            range(len(conversation) - count, len(conversation))
        )
        if len(keep) >= len(conversation):
            return conversation
        return tuple(m for i, m in enumerate(conversation) if i in keep)

    return keep
