"""Input that is already broken: found, reported and, on request, removed.

Providers reject a conversation whose tool traffic does not pair up, and no
compaction can make such input valid by itself. `input_problems` names
what is wrong, with the message index:

- a tool result whose call is nowhere in the conversation (an orphan);
- a second result for one call;
- a result that comes before its call;
- a call that nobody answered although the conversation goes on after it
  (a user or assistant message follows: both providers want the results
  right after the call); a call that nothing but system messages follows
  may still be waiting for its result and is not a problem;
- a call id used twice.

The pipeline lists them in `CompressionReport.input_problems`. With
``repair: true`` it first removes them (`repair`): orphan, repeated and
early results go; an unanswered call goes with its whole parallel unit (every
call of its message, and their results); a message left with no parts goes.
A call id used twice is reported only, since nothing tells which use is
meant. Nothing else is touched.
"""

from __future__ import annotations

import attrs

from memrules._core.enforced import identity_origin
from memrules._core.invariants import Enforced, diff
from memrules._core.messages import Conversation, Message, ToolCall, ToolResult

__all__ = ["InputProblem", "input_problems", "repair"]


@attrs.frozen(kw_only=True, slots=True)
class InputProblem:
    """One thing wrong with the input: where (``index``), which tool id, and
    what; ``removable`` when `repair` takes it out."""

    index: int
    tool_id: str
    kind: str
    text: str
    removable: bool = True

    def __str__(self) -> str:
        return f"messages[{self.index}]: {self.text}"


def input_problems(conversation: Conversation) -> tuple[InputProblem, ...]:
    """Every way ``conversation``'s tool traffic is broken (see module docs)."""
    if not any(m.is_tool_carrier for m in conversation):
        return ()
    call_at: dict[str, int] = {}
    for i, m in enumerate(conversation):
        for c in m.call_ids:
            call_at.setdefault(c, i)
    last_turn = max(
        (i for i, m in enumerate(conversation) if m.role in ("user", "assistant")), default=-1
    )
    problems: list[InputProblem] = []
    seen_calls: dict[str, int] = {}
    answered: dict[str, int] = {}
    for i, m in enumerate(conversation):
        if not m.is_tool_carrier:
            continue
        for r in m.result_ids:
            if r in seen_calls:
                if r in answered:
                    first = answered[r]
                    text = f"a second result for tool call {r!r} (the first is messages[{first}])"
                    problems.append(
                        InputProblem(index=i, tool_id=r, kind="repeated_result", text=text)
                    )
                else:
                    answered[r] = i
            elif r in call_at:
                text = f"tool result {r!r} comes before its call (messages[{call_at[r]}])"
                problems.append(InputProblem(index=i, tool_id=r, kind="early_result", text=text))
            else:
                text = f"tool result {r!r} has no call"
                problems.append(InputProblem(index=i, tool_id=r, kind="orphan_result", text=text))
        for c in m.call_ids:
            if c in seen_calls:
                text = f"tool call id {c!r} is used again (first in messages[{seen_calls[c]}])"
                problems.append(
                    InputProblem(
                        index=i, tool_id=c, kind="repeated_call", text=text, removable=False
                    )
                )
            else:
                seen_calls[c] = i
    for c, i in seen_calls.items():
        if c not in answered and i < last_turn:
            text = f"tool call {c!r} has no result, and the conversation goes on after it"
            problems.append(InputProblem(index=i, tool_id=c, kind="unanswered_call", text=text))
    problems.sort(key=lambda p: (p.index, p.kind, p.tool_id))
    return tuple(problems)


def repair(conversation: Conversation, problems: tuple[InputProblem, ...]) -> Enforced:
    """``conversation`` without the removable ``problems`` (see module docs),
    with the diff from it; the same tuple when there is nothing to remove."""
    bad_results: dict[int, set[str]] = {}  # message index → result ids to drop there
    dead_calls: set[str] = set()
    for p in problems:
        if not p.removable:
            continue
        if p.kind == "unanswered_call":
            dead_calls.update(conversation[p.index].call_ids)
        else:
            bad_results.setdefault(p.index, set()).add(p.tool_id)
    if not (bad_results or dead_calls):
        return Enforced(messages=conversation, origin=identity_origin(len(conversation)))
    messages: list[Message] = []
    origin: list[int | None] = []
    mended: dict[int, int] = {}
    for i, m in enumerate(conversation):
        drop = bad_results.get(i, set())
        if not (
            drop or (m.is_tool_carrier and not dead_calls.isdisjoint((*m.call_ids, *m.result_ids)))
        ):
            messages.append(m)
            origin.append(i)
            continue
        parts = tuple(p for p in m.parts if not _dead(p, drop, dead_calls))
        if not parts:
            continue
        mended[len(messages)] = i
        messages.append(m.evolve(parts=parts))
        origin.append(None)
    return diff(conversation, tuple(messages), origin, tuple(sorted(dead_calls)), mended)


def _dead(part: object, results: set[str], calls: set[str]) -> bool:
    if isinstance(part, ToolCall):
        return part.id in calls
    if isinstance(part, ToolResult):
        return part.call_id in results or part.call_id in calls
    return False
