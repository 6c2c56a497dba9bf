"""The checks: the invariants with a readable failure, and one strategy run held to its contract.

`render` shows a conversation one line per message, so that a failing
property says what went in and what came out.
"""

from __future__ import annotations

from memrules._core.invariants import Enforced, check_invariants, enforce
from memrules._core.messages import Conversation, Message, Part, Text, ToolCall, ToolResult
from memrules._core.report import CompressionResult
from memrules._core.survivors import DEFAULT_SURVIVORS, SurvivorRule
from memrules._engine.contract import Outcome, Strategy, StrategyContext
from memrules._engine.interpreter import NamedStrategy, run_once, run_pipeline

__all__ = ["assert_invariants", "check_strategy", "render", "strategy_output"]


def _part_repr(part: Part) -> str:
    def short(text: str) -> str:
        text = text.replace("\n", "\\n")
        return repr(text if len(text) <= 40 else f"{text[:18]}…{text[-18:]}")

    if isinstance(part, Text):
        return short(part.text)
    if isinstance(part, ToolCall):
        return f"call {part.id} {part.name}({short(part.arguments)})"
    if isinstance(part, ToolResult):
        content = part.content if isinstance(part.content, str) else f"<{len(part.content)} parts>"
        return f"result {part.call_id}: {short(content) if isinstance(content, str) else content}"
    return f"<{part.kind}>"


def render(conversation: Conversation) -> str:
    """One line per message: index, role, id and a short view of each part."""
    lines = []
    for i, m in enumerate(conversation):
        ident = f" #{m.id}" if m.id is not None else ""
        body = ", ".join(_part_repr(p) for p in m.parts) or "(no parts)"
        lines.append(f"  [{i}] {m.role}{ident}: {body}")
    return "\n".join(lines) or "  (empty)"


def assert_invariants(
    before: Conversation, after: Conversation, survivors: SurvivorRule = DEFAULT_SURVIVORS
) -> None:
    """Fail with a readable message when ``after`` breaks the invariants the
    interpreter enforces relative to ``before`` (see
    `check_invariants`)."""
    problems = check_invariants(before, after, survivors)
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        msg = f"invariants broken:\n{listed}\nbefore:\n{render(before)}\nafter:\n{render(after)}"
        raise AssertionError(msg)


def strategy_output(result: object, what: str) -> tuple[Conversation, str]:
    """A strategy's result as its messages and its note (an `Outcome`'s);
    fails naming ``what`` for anything else."""
    note = ""
    if isinstance(result, Outcome):
        note = result.note
        result = result.messages
    if not isinstance(result, tuple) or not all(isinstance(m, Message) for m in result):
        msg = f"{what} returned {type(result).__name__}, expected a tuple of Message or an Outcome"
        raise AssertionError(msg)
    return result, note


def _interpret(
    strategy: Strategy, name: str, conversation: Conversation, context: StrategyContext
) -> CompressionResult | None:
    """The interpreter running ``strategy`` once under ``context``'s budget;
    None when that budget is met already (the interpreter would not run it)."""
    named = (NamedStrategy(name=name, strategy=strategy),)
    budget = context.budget
    if budget.is_unlimited:
        return run_once(conversation, named, context)
    tokens = context.measure.total(conversation)
    if budget.is_over(messages=len(conversation), tokens=tokens):
        return run_pipeline(conversation, named, context, max_passes=1)
    return None


def check_strategy(
    strategy: Strategy,
    conversation: Conversation,
    context: StrategyContext,
    *,
    strict: bool = True,
) -> Enforced:
    """Run ``strategy`` once on ``conversation`` and hold it to the contract.

    Checks that it returns a tuple of messages (or an `Outcome`),
    that the output stands after `enforce` and keeps
    the invariants (`assert_invariants`), that the interpreter, running
    it once under ``context.budget``, arrives at the same messages,
    and that a second run gives an equal result (determinism). With
    ``strict`` (the default) it also fails when the raw output breaks an
    invariant the interpreter would have to discard it for, when the
    interpreter records an error, and when a no-op returns a new tuple
    instead of ``conversation`` itself (``new is old`` means nothing happened).

    Returns what `enforce` made of the output.
    Exceptions the strategy raises propagate.
    """
    name = getattr(strategy, "__name__", None) or repr(strategy)
    output, note = strategy_output(strategy(conversation, context), name)
    enforced = enforce(conversation, output, survivors=context.measure.survivors)
    if strict and enforced.violation is not None:
        msg = (
            f"{name}'s output breaks an invariant and would be discarded: "
            f"{enforced.violation}\nbefore:\n{render(conversation)}\noutput:\n{render(output)}"
        )
        raise AssertionError(msg)
    assert_invariants(conversation, enforced.messages, context.measure.survivors)
    if strict and not enforced.changed and output is not conversation:
        msg = (
            f"{name} changed nothing but returned a new tuple; return the input tuple itself "
            f"so that `new is old` tells a no-op\nbefore:\n{render(conversation)}"
        )
        raise AssertionError(msg)
    again, again_note = strategy_output(strategy(conversation, context), name)
    if again != output or again_note != note:
        msg = (
            f"{name} is not deterministic: two runs on the same input differ\n"
            f"first:\n{render(output)}\nsecond:\n{render(again)}"
        )
        raise AssertionError(msg)
    ran = _interpret(strategy, name, conversation, context)
    if ran is not None and ran.messages != enforced.messages:
        msg = (
            f"the interpreter made something else of {name}'s output\n"
            f"enforce:\n{render(enforced.messages)}\ninterpreter:\n{render(ran.messages)}"
        )
        raise AssertionError(msg)
    if strict and ran is not None and ran.report.errors:
        msg = f"the interpreter recorded errors: {list(ran.report.errors)}"
        raise AssertionError(msg)
    return enforced
