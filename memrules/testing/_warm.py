"""The warm-equals-cold check: what a strategy remembers between requests
never changes what it gives."""

from __future__ import annotations

import copy
from collections.abc import Callable

import attrs

from memrules._core.messages import Conversation, Message, Text
from memrules._engine.contract import Strategy, StrategyContext
from memrules._engine.incremental import run_strategy
from memrules.testing._checks import render, strategy_output

__all__ = ["check_warm_equals_cold"]


def _requests(conversation: Conversation, requests: int) -> list[Conversation]:
    """Growing prefixes of ``conversation`` (the last is all of it), then all
    of it with one message in ten edited in place (as an earlier strategy
    rewrites a few), then all of it again with every message a new, equal
    object."""
    n = len(conversation)
    ends = sorted({max(1, n * k // requests) for k in range(1, requests + 1)} | {n})
    grown = [conversation[:end] for end in ends if end <= n]
    edited = list(conversation)
    for i in range(1, n, _EDITED):
        edited[i] = _edit(conversation[i])
    rebuilt = tuple(attrs.evolve(m) for m in conversation)
    return [*grown, tuple(edited), rebuilt]


_EDITED = 10


def _edit(m: Message) -> Message:
    """``m`` with a text part more."""
    return m.evolve(parts=(*m.parts, Text(text=" [edited]")))


def _copier(strategy: Strategy) -> Callable[[], Strategy]:
    """A maker of copies of ``strategy`` as it is now."""
    try:
        pristine = copy.deepcopy(strategy)
    except (TypeError, copy.Error):  # a lock, a connection: not copyable
        return lambda: strategy
    return lambda: copy.deepcopy(pristine)


def check_warm_equals_cold(
    strategy: Strategy,
    conversation: Conversation,
    context: Callable[[], StrategyContext],
    *,
    requests: int = 4,
    fresh: Callable[[], Strategy] | None = None,
) -> None:
    """Fail when ``strategy`` gives a warm request anything other than what
    it gives the same request cold.

    The conversation arrives as an agent loop sends it: ``requests``
    growing prefixes of ``conversation`` (the last is the whole of it), then
    the whole of it with one message in ten edited in place (a text part
    more: what a strategy before this one does when it rewrites a few),
    then the whole of it again with every message a new, equal object (a
    caller that rebuilds its messages on every request). Each request goes to one
    context made by ``context()`` (warm: its measure has seen the earlier
    requests, as a pipeline's measure has) after the step the interpreter
    takes first (measuring the request), as the interpreter calls a
    strategy (a strategy's ``incremental`` companion, when it declares one,
    advanced from the state it made of the earlier requests), and to a new
    ``context()`` (cold: the strategy called). The two outputs, and the
    notes of an `Outcome`, must be equal.
    ``context`` makes a context with everything the strategy needs (its
    budget, its seams); each call must make an equal one.

    A cold request is run by a strategy that has run nothing: ``fresh()``
    (a new strategy made as ``strategy`` was), else a deep copy of
    ``strategy`` made before the first request, else (when it cannot be
    copied) ``strategy`` itself, which then cannot show what it keeps of
    its own.

    Whatever a strategy keeps to make a warm request cheap, this is the
    promise it keeps.
    """
    name = getattr(strategy, "__name__", None) or repr(strategy)
    make = fresh if fresh is not None else _copier(strategy)
    warm_context = context()
    for k, request in enumerate(_requests(conversation, requests)):
        warm_context.measure.track(request)
        warm, warm_note = strategy_output(run_strategy(strategy, request, warm_context), name)
        cold, cold_note = strategy_output(make()(request, context()), name)
        if warm != cold or warm_note != cold_note:
            msg = (
                f"{name} gives request {k} ({len(request)} messages) warm what it does not "
                f"give it cold\nrequest:\n{render(request)}\nwarm:\n{render(warm)}"
                f"\ncold:\n{render(cold)}"
            )
            if warm_note != cold_note:
                msg += f"\nwarm note: {warm_note!r}\ncold note: {cold_note!r}"
            raise AssertionError(msg)
