"""Checking two conversations against the invariants after the fact, by
value: `check_invariants` lists every way an output breaks them
relative to its input, `pairing_problems` the tool-pairing ones only.
Unlike `enforce`, which the interpreter runs
on a strategy's own output, these work on any two conversations, including
ones read back from JSON (tests, benchmarks, `memrules.testing`).
"""

from __future__ import annotations

import itertools
from collections import Counter

from memrules._core.conversation import (
    first_system_index,
    is_turn_start,
    last_user_index,
    latest_turn_start,
)
from memrules._core.messages import Conversation, Message, ToolCall, ToolResult
from memrules._core.survivors import DEFAULT_SURVIVORS, SurvivorRule
from memrules._core.survivors import survivors as pick_survivors

__all__ = ["check_invariants", "pairing_problems"]


def pairing_problems(before: Conversation, after: Conversation) -> list[str]:
    """Ways ``after`` breaks tool pairing relative to ``before``: a result whose
    call was in ``before`` but is gone, or a call whose result was in
    ``before`` but is gone. Empty when pairing holds."""
    calls_before = {c for m in before for c in m.call_ids}
    results_before = {r for m in before for r in m.result_ids}
    calls_after = {c for m in after for c in m.call_ids}
    results_after = {r for m in after for r in m.result_ids}
    problems = [
        f"tool result {r!r} outlives its call"
        for m in after
        for r in m.result_ids
        if r in calls_before and r not in calls_after
    ]
    problems += [
        f"tool call {c!r} outlives its result"
        for m in after
        for c in m.call_ids
        if c in results_before and c not in results_after
    ]
    return problems


def check_invariants(
    before: Conversation, after: Conversation, survivors: SurvivorRule = DEFAULT_SURVIVORS
) -> list[str]:
    """Every way ``after`` breaks the invariants relative to ``before``.

    Kept messages are matched by value in order (a subsequence check), so this
    works on any two conversations, including ones read back from JSON.
    A user-role survivor may have lost tool results to closure.
    ``survivors`` is the rule that picks them (the task, the question and
    the pinned messages, see `memrules._core.survivors`).
    """
    problems: list[str] = []
    picked = pick_survivors(before, survivors)
    for i in sorted(picked.indices - {picked.first_system, picked.last_user}):
        kept = before[i]
        if not any(_same_but_results(kept, m) for m in after):
            problems.append(f"{picked.name(i)} is gone or altered")
    first_system = first_system_index(before)
    last_user = last_user_index(before)
    if first_system is not None:
        s = before[first_system]
        if s not in after:
            problems.append("the first system message is gone or altered")
        elif first_system == 0 and (not after or after[0] != s):
            problems.append("the first system message is no longer first")
    if last_user is not None:
        u = before[last_user]
        kept_forms = [m for m in after if m.role == "user"]
        if not any(_same_but_results(u, m) for m in kept_forms):
            problems.append("the most recent user message is gone or altered")
        elif not _same_but_results(u, kept_forms[-1]):
            problems.append("a new user message stands after the most recent user message")
    start = latest_turn_start(before)
    if start is not None:
        opening = before[start]
        found = [j for j, m in enumerate(after) if m == opening]
        if found and any(is_turn_start(m) for m in after[found[-1] + 1 :]):
            problems.append("a new user message opens a turn inside the latest turn")
    problems += pairing_problems(before, after)
    for j, m in enumerate(after):
        if (
            m.role == "assistant"
            and not m.parts
            and not any(b.role == "assistant" and not b.parts for b in before)
        ):
            problems.append(f"output[{j}] is an empty assistant message")
    if not _is_subsequence_of_kept(before, after):
        problems.append("kept messages are out of order")
    return problems


def _same_but_results(original: Message, candidate: Message) -> bool:
    if original == candidate:
        return True
    if candidate.role != original.role or candidate.id != original.id:
        return False
    kept = tuple(p for p in original.parts if not isinstance(p, ToolResult))
    rest = tuple(p for p in candidate.parts if not isinstance(p, ToolResult))
    results = [p for p in candidate.parts if isinstance(p, ToolResult)]
    return rest == kept and all(p in original.parts for p in results)


def _is_subsequence_of_kept(before: Conversation, after: Conversation) -> bool:
    """Messages of ``after`` that occur in ``before`` occur in the same order.

    Matching is by value, and an output message equal to an input message may
    still be a new one, so only unambiguous messages are taken as kept: those
    whose value occurs exactly once in ``before`` and once in ``after``, and
    that are not what pairing closure could have made of another input
    message (the same message with fewer tool parts).
    """
    once_before = _once(before)
    once_after = _once(after)
    position = {m: i for i, m in enumerate(before) if m in once_before}
    carriers: dict[tuple[object, ...], list[Message]] = {}
    for m in before:
        if m.is_tool_carrier:
            carriers.setdefault(_without_tool_parts(m), []).append(m)
    kept = [
        position[m]
        for m in after
        if m in once_after
        and m in position
        and not any(c != m for c in carriers.get(_without_tool_parts(m), ()))
    ]
    return all(a < b for a, b in itertools.pairwise(kept))


def _without_tool_parts(m: Message) -> tuple[object, ...]:
    rest = tuple(p for p in m.parts if not isinstance(p, ToolCall | ToolResult))
    return (m.role, m.id, m.name, m.metadata, rest)


def _once(conversation: Conversation) -> set[Message]:
    counts = Counter(conversation)
    return {m for m, n in counts.items() if n == 1}
