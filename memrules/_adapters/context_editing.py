"""Provider-side context editing as a policy: one setting that the provider
carries out, or memrules does locally, with the same result.

Anthropic clears old tool results and thinking blocks on its side before
the prompt reaches the model (``context_management.edits``:
``clear_tool_uses_20250919`` and ``clear_thinking_20251015``, behind the
``context-management-2025-06-27`` beta); OpenAI's Responses API compacts a
conversation on its side once it passes a threshold (``context_management:
[{"type": "compaction", "compact_threshold": N}]``). A
`ProviderEditing` names those edits once:

- in **provider** mode, `write_context_management` writes them into a
  request body of a provider that has them, and `plan_edits` says
  what the provider will clear (which tool uses, which thinking blocks, how
  many tokens), counted by memrules' counter;
- in **local** mode (``local=True``), or for a body whose provider lacks
  an edit (Anthropic's clearing on an OpenAI body), `apply_edits`
  makes the very same edits to the conversation before compaction.

The selection is one function (`plan_edits`), so both modes take the
same blocks. What it does, as Anthropic documents the edits:

``clear_tool_uses``
    When the request's input tokens exceed ``trigger`` (or its tool uses
    exceed ``trigger_tool_uses``), every tool result but the newest
    ``keep`` is replaced by a placeholder, oldest first, results of
    ``exclude_tools`` never; with ``clear_tool_inputs``, the calls' inputs
    too. Nothing is cleared unless at least ``clear_at_least`` tokens go.
``clear_thinking``
    The thinking blocks (``thinking``, ``redacted_thinking``) of every
    assistant turn but the newest ``keep`` turns that have thinking are
    removed (``keep="all"``: none). A turn is the model's messages after one
    user message that is not only tool results, so the turn of a tool-use
    loop in progress is the newest and keeps its thinking, as the API
    requires. OpenAI reasoning items are left alone: the Responses API
    already drops those of earlier turns itself.
``compaction``
    Written as it is on Responses bodies. There is no local stand-in: the
    local compaction is the pipeline itself, whose budget the config sets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import attrs

from memrules._core.conversation import is_turn_start
from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.messages import Conversation, Message, Opaque, Part, ToolCall, ToolResult

__all__ = [
    "ANTHROPIC_BETA",
    "CLEARED_RESULT",
    "ClearThinking",
    "ClearToolUses",
    "Compaction",
    "EditPlan",
    "ProviderEditing",
    "apply_edits",
    "edits_of",
    "plan_edits",
    "write_context_management",
]

ANTHROPIC_BETA = "context-management-2025-06-27"
"""The ``anthropic-beta`` header value Anthropic's context editing needs."""

CLEARED_RESULT = "[memrules: tool result cleared to save context]"
"""What a locally cleared tool result says instead of its content."""
CLEARED_INPUT = "{}"

_THINKING_KINDS = frozenset({"anthropic:thinking", "anthropic:redacted_thinking"})

Provider = Literal["anthropic", "openai"]


def _problem(field: str, message: str) -> ConfigProblem:
    return ConfigProblem(message=message, yaml_path=f"provider_editing.{field}")


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@attrs.frozen(kw_only=True)
class ClearToolUses:
    """Anthropic's ``clear_tool_uses_20250919``, with its defaults: trigger at
    100,000 input tokens, keep 3 tool uses."""

    trigger: int | None = 100_000
    trigger_tool_uses: int | None = None
    keep: int = 3
    clear_at_least: int = 0
    exclude_tools: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    clear_tool_inputs: bool = False

    def __attrs_post_init__(self) -> None:
        problems = []
        for name in ("trigger", "trigger_tool_uses"):
            value = getattr(self, name)
            if value is not None and (not _whole(value) or value < 1):
                problems.append(
                    _problem(f"clear_tool_uses.{name}", f"{name}={value!r}: expected N >= 1")
                )
        if self.trigger is None and self.trigger_tool_uses is None:
            problems.append(
                _problem("clear_tool_uses.trigger", "give trigger or trigger_tool_uses")
            )
        for name in ("keep", "clear_at_least"):
            value = getattr(self, name)
            if not _whole(value) or value < 0:
                problems.append(
                    _problem(f"clear_tool_uses.{name}", f"{name}={value!r}: expected N >= 0")
                )
        if not all(isinstance(t, str) and t for t in self.exclude_tools):
            message = f"exclude_tools={self.exclude_tools!r}: expected tool names"
            problems.append(_problem("clear_tool_uses.exclude_tools", message))
        if not isinstance(self.clear_tool_inputs, bool):
            message = f"clear_tool_inputs={self.clear_tool_inputs!r}: expected True or False"
            problems.append(_problem("clear_tool_uses.clear_tool_inputs", message))
        if problems:
            raise ConfigError(problems)

    def edit(self) -> dict[str, Any]:
        """The edit as Anthropic's ``context_management.edits`` entry."""
        out: dict[str, Any] = {"type": "clear_tool_uses_20250919"}
        if self.trigger_tool_uses is not None:
            out["trigger"] = {"type": "tool_uses", "value": self.trigger_tool_uses}
        else:
            out["trigger"] = {"type": "input_tokens", "value": self.trigger}
        out["keep"] = {"type": "tool_uses", "value": self.keep}
        if self.clear_at_least:
            out["clear_at_least"] = {"type": "input_tokens", "value": self.clear_at_least}
        if self.exclude_tools:
            out["exclude_tools"] = list(self.exclude_tools)
        if self.clear_tool_inputs:
            out["clear_tool_inputs"] = True
        return out


@attrs.frozen(kw_only=True)
class ClearThinking:
    """Anthropic's ``clear_thinking_20251015``: keep the thinking of the
    newest ``keep`` assistant turns (1 by default, as the API does), or
    ``"all"``."""

    keep: int | Literal["all"] = 1

    def __attrs_post_init__(self) -> None:
        if self.keep != "all" and (not _whole(self.keep) or self.keep < 1):
            message = (
                f"keep={self.keep!r}: expected a number of assistant turns of at least 1, or "
                "'all' (the turn of a tool-use loop in progress must keep its thinking)"
            )
            raise ConfigError([_problem("clear_thinking.keep", message)])

    def edit(self) -> dict[str, Any]:
        keep: Any = "all" if self.keep == "all" else {"type": "thinking_turns", "value": self.keep}
        return {"type": "clear_thinking_20251015", "keep": keep}


@attrs.frozen(kw_only=True)
class Compaction:
    """OpenAI's server-side compaction of Responses requests past
    ``compact_threshold`` tokens."""

    compact_threshold: int

    def __attrs_post_init__(self) -> None:
        if not _whole(self.compact_threshold) or self.compact_threshold < 1:
            message = f"compact_threshold={self.compact_threshold!r}: expected tokens, at least 1"
            raise ConfigError([_problem("compaction.compact_threshold", message)])

    def edit(self) -> dict[str, Any]:
        return {"type": "compaction", "compact_threshold": self.compact_threshold}


@attrs.frozen(kw_only=True)
class ProviderEditing:
    """The config's ``provider_editing:`` section: which provider-side edits
    to ask for, and ``local`` to make them locally instead."""

    clear_tool_uses: ClearToolUses | None = None
    clear_thinking: ClearThinking | None = None
    compaction: Compaction | None = None
    local: bool = False

    def __attrs_post_init__(self) -> None:
        if self.clear_tool_uses is None and self.clear_thinking is None and self.compaction is None:
            message = "asks for no edit; give one of clear_tool_uses, clear_thinking, compaction"
            raise ConfigError([ConfigProblem(message=message, yaml_path="provider_editing")])

    def local_for(self, provider: Provider) -> tuple[ClearToolUses | None, ClearThinking | None]:
        """The clearing edits memrules makes itself on a ``provider`` body:
        all of them in local mode or where the provider lacks them (OpenAI
        has no tool-result or thinking clearing), none otherwise."""
        if self.local or provider != "anthropic":
            return self.clear_tool_uses, self.clear_thinking
        return None, None


# --------------------------------------------------------------------------- the selection


@attrs.frozen(kw_only=True)
class EditPlan:
    """What the edits take from one request: the tool uses whose results
    are cleared (by call id), the thinking blocks removed (as
    ``(message index, part index)``), the tokens that frees, and whether the
    compaction threshold is reached. ``where`` is ``"provider"`` (the
    provider will do it) or ``"local"`` (memrules did)."""

    where: Literal["provider", "local"]
    cleared_tool_uses: tuple[str, ...] = ()
    cleared_thinking: tuple[tuple[int, int], ...] = ()
    cleared_tokens: int = 0
    compacts: bool = False

    @property
    def empty(self) -> bool:
        return not (self.cleared_tool_uses or self.cleared_thinking or self.compacts)


def _tool_results(conversation: Conversation) -> list[tuple[str, str | None]]:
    """``(call id, tool name)`` of every tool result, oldest first."""
    names = {p.id: p.name for m in conversation for p in m.parts if isinstance(p, ToolCall)}
    return [
        (p.call_id, names.get(p.call_id))
        for m in conversation
        if m.result_ids
        for p in m.parts
        if isinstance(p, ToolResult)
    ]


def _clear_tools(
    conversation: Conversation, edit: ClearToolUses, count: Callable[[Conversation], int]
) -> tuple[Conversation, tuple[str, ...]]:
    results = _tool_results(conversation)
    calls = sum(len(m.call_ids) for m in conversation)
    if edit.trigger_tool_uses is not None:
        triggered = calls > edit.trigger_tool_uses
    else:
        triggered = count(conversation) > (edit.trigger or 0)
    if not triggered:
        return conversation, ()
    excluded = set(edit.exclude_tools)
    clearable = [cid for cid, name in results if name not in excluded]
    targets = clearable[: max(0, len(clearable) - edit.keep)]
    if not targets:
        return conversation, ()
    chosen = set(targets)

    def clear(part: Part) -> Part:
        if isinstance(part, ToolResult) and part.call_id in chosen:
            return attrs.evolve(part, content=CLEARED_RESULT)
        if edit.clear_tool_inputs and isinstance(part, ToolCall) and part.id in chosen:
            return attrs.evolve(part, arguments=CLEARED_INPUT)
        return part

    cleared = _rewrite(conversation, clear)
    if edit.clear_at_least and count(conversation) - count(cleared) < edit.clear_at_least:
        return conversation, ()
    return cleared, tuple(targets)


def _thinking_turns(conversation: Conversation) -> list[list[tuple[int, int]]]:
    """The thinking blocks of each assistant turn that has any, oldest first."""
    turns: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    for i, message in enumerate(conversation):
        if is_turn_start(message):
            if current:
                turns.append(current)
            current = []
        elif message.role == "assistant":
            current.extend(
                (i, j)
                for j, p in enumerate(message.parts)
                if isinstance(p, Opaque) and p.kind in _THINKING_KINDS
            )
    if current:
        turns.append(current)
    return turns


def _clear_thinking(
    conversation: Conversation, edit: ClearThinking
) -> tuple[Conversation, tuple[tuple[int, int], ...]]:
    if edit.keep == "all":
        return conversation, ()
    turns = _thinking_turns(conversation)
    gone = tuple(block for turn in turns[: max(0, len(turns) - edit.keep)] for block in turn)
    if not gone:
        return conversation, ()
    by_message: dict[int, set[int]] = {}
    for i, j in gone:
        by_message.setdefault(i, set()).add(j)
    out = list(conversation)
    for i, drop in by_message.items():
        message = out[i]
        out[i] = message.evolve(
            parts=tuple(p for j, p in enumerate(message.parts) if j not in drop)
        )
    return tuple(out), gone


def _rewrite(conversation: Conversation, change: Callable[[Part], Part]) -> Conversation:
    out: list[Message] = []
    changed = False
    for message in conversation:
        if not message.is_tool_carrier:
            out.append(message)
            continue
        parts = tuple(change(p) for p in message.parts)
        if all(a is b for a, b in zip(parts, message.parts, strict=True)):
            out.append(message)
        else:
            out.append(message.evolve(parts=parts))
            changed = True
    return tuple(out) if changed else conversation


def plan_edits(
    conversation: Conversation,
    editing: ProviderEditing,
    count: Callable[[Conversation], int],
    *,
    provider: Provider,
    where: Literal["provider", "local"] = "provider",
) -> tuple[Conversation, EditPlan]:
    """The conversation after the clearing edits ``editing`` asks of a
    ``provider`` body, and what they take (see the module docs).
    ``count`` is the request's token count (the pipeline's). Thinking is
    cleared first, then tool uses, in the order Anthropic applies them;
    the input is never modified."""
    after = conversation
    thinking_gone: tuple[tuple[int, int], ...] = ()
    tools_gone: tuple[str, ...] = ()
    if editing.clear_thinking is not None:
        after, thinking_gone = _clear_thinking(after, editing.clear_thinking)
    if editing.clear_tool_uses is not None:
        after, tools_gone = _clear_tools(after, editing.clear_tool_uses, count)
    compacts = (
        provider == "openai"
        and editing.compaction is not None
        and count(conversation) >= editing.compaction.compact_threshold
    )
    cleared = count(conversation) - count(after) if after is not conversation else 0
    plan = EditPlan(
        where=where,
        cleared_tool_uses=tools_gone,
        cleared_thinking=thinking_gone,
        cleared_tokens=cleared,
        compacts=compacts,
    )
    return after, plan


def apply_edits(
    conversation: Conversation,
    editing: ProviderEditing,
    count: Callable[[Conversation], int],
    *,
    provider: Provider,
) -> tuple[Conversation, EditPlan]:
    """The clearing edits memrules makes itself on a ``provider`` body (see
    `ProviderEditing.local_for`), made: the new conversation (the same
    tuple when nothing goes) and what went."""
    tools, thinking = editing.local_for(provider)
    if tools is None and thinking is None:
        return conversation, EditPlan(where="local")
    local = ProviderEditing(clear_tool_uses=tools, clear_thinking=thinking)
    return plan_edits(conversation, local, count, provider=provider, where="local")


def write_context_management(
    body: Mapping[str, Any], editing: ProviderEditing, *, provider: Provider
) -> dict[str, Any]:
    """``body`` with the provider-side edits ``editing`` asks of a
    ``provider`` body: Anthropic's ``context_management.edits`` (thinking
    first, as the API requires) or a Responses body's compaction entry. A
    body that already has ``context_management`` keeps its own; in local
    mode nothing is written."""
    out = dict(body)
    if "context_management" in body or editing.local:
        return out
    if provider == "anthropic":
        edits = [
            e.edit() for e in (editing.clear_thinking, editing.clear_tool_uses) if e is not None
        ]
        if edits:
            out["context_management"] = {"edits": edits}
    elif editing.compaction is not None:
        out["context_management"] = [editing.compaction.edit()]
    return out


def edits_of(editing: ProviderEditing) -> Iterable[dict[str, Any]]:
    """Every edit ``editing`` names, as the provider's entries."""
    for edit in (editing.clear_thinking, editing.clear_tool_uses, editing.compaction):
        if edit is not None:
            yield edit.edit()
