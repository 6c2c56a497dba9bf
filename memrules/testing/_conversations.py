"""The generator of whole agent histories: `conversations`.

A builder appends one message at a time and keeps the calls still awaiting
their results, so that call ids are unique and every result comes after its
call; the knobs turn each shape compaction meets on or off (tool calls in
either provider's style, observations, the context warning, unanswered calls,
orphan results, empty parts, repeated file reads, reused message objects,
user messages a harness wrote, pinned messages).
"""

from __future__ import annotations

import json

import attrs
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from memrules._core.messages import (
    Conversation,
    Message,
    Opaque,
    Part,
    Role,
    Text,
    ToolCall,
    ToolResult,
)
from memrules._engine.contract import DEFAULT_WARNING_MARKER
from memrules.testing._messages import FILE_TOOL, TOOLS, opaques, texts
from memrules.testing._validation import validate_size

__all__ = ["FILE_PATHS", "conversations"]

FILE_PATHS = ("src/app.py", "README.md", "docs/guide.md", "tests/test_app.py")
"""The few paths file reads draw from, so that paths repeat."""

HARNESS_REPLIES = (
    "Please always provide EXACTLY ONE action in triple backticks.",
    "Your last command timed out; try a shorter one.",
    "",
)
"""What an agent harness says in a user message of its own (marked
``harness: true`` in the message's metadata)."""


class _Builder:
    """Appends messages one step at a time; knows the calls awaiting results."""

    def __init__(self, draw: st.DrawFn, *, knobs: _Knobs) -> None:
        self.draw = draw
        self.k = knobs
        self.out: list[Message] = []
        self.pending: list[ToolCall] = []
        self.calls = 0
        self.orphans = 0
        self.plain: dict[Role, list[Message]] = {}

    # small pieces

    def text(self) -> str:
        return self.draw(self.k.text)

    def text_parts(self, *, allow_empty: bool) -> tuple[Part, ...]:
        if allow_empty and self.k.empty_parts and self.draw(st.integers(0, 9)) == 0:
            return ()
        body: list[Part] = [Text(text=self.text())]
        extra = self.draw(st.integers(0, 5))
        if extra == 0:
            body.append(Text(text=self.text()))
        elif extra == 1:
            body.insert(self.draw(st.integers(0, 1)), self.draw(opaques()))
        return tuple(body)

    def add(
        self,
        role: Role,
        parts: tuple[Part, ...],
        *,
        name: str | None = None,
        metadata: dict[str, object] | None = None,
    ) -> None:
        ident = f"m{len(self.out)}" if self.draw(st.booleans()) else None
        if self.k.pinned and self.draw(st.integers(0, 14)) == 0:
            metadata = {**(metadata or {}), "pinned": True}
        m = Message(role=role, parts=parts, id=ident, name=name, metadata=metadata)
        self.out.append(m)
        if not m.is_tool_carrier:
            self.plain.setdefault(role, []).append(m)

    def reuse(self, role: Role) -> bool:
        """Sometimes append an earlier message object again, as callers
        reusing a canned message do; True when it did."""
        earlier = self.plain.get(role)
        if not (self.k.repeats and earlier) or self.draw(st.integers(0, 7)) != 0:
            return False
        self.out.append(self.draw(st.sampled_from(earlier)))
        return True

    def call(self) -> ToolCall:
        prefix = self.draw(st.sampled_from(("call_", "toolu_", "fc_")))
        call_id = f"{prefix}{self.calls}"
        self.calls += 1
        # File reads are half the calls, so that paths repeat often.
        tools = (FILE_TOOL,) * 3 + TOOLS[1:] if self.k.file_reads else TOOLS[1:]
        name = self.draw(st.sampled_from(tools))
        if name in (FILE_TOOL, "write_file"):
            args: object = {"path": self.draw(st.sampled_from(FILE_PATHS))}
            shape = self.draw(st.integers(0, 7))
            if shape == 0:
                args = {"limit": 100, **args}  # type: ignore[dict-item]
            elif shape == 1:
                args = {"path": 7}
            arguments = "not json {" if shape == 2 else json.dumps(args)
        elif name == "search":
            arguments = json.dumps({"query": self.text()})
        else:
            arguments = "{}"
        return ToolCall(id=call_id, name=name, arguments=arguments)

    def content(self, call: ToolCall) -> str | tuple[Text | Opaque, ...]:
        if self.draw(st.integers(0, 5)) == 0:
            inner: list[Text | Opaque] = [Text(text=self.text()), Text(text=self.text())]
            if self.draw(st.booleans()):
                inner.insert(1, self.draw(opaques()))
            return tuple(inner)
        return self.text()

    def result(self, call: ToolCall) -> ToolResult:
        is_error = self.draw(st.integers(0, 9)) == 0
        return ToolResult(call_id=call.id, content=self.content(call), is_error=is_error)

    # how many messages flushing every pending call needs at least

    def reserve(self, pending: int) -> int:
        if pending == 0 or self.k.unanswered_calls:
            return 0
        return 1 if self.k.anthropic_style else pending

    # steps

    def step(self, room: int) -> None:
        k = self.k
        if self.pending and room <= self.reserve(len(self.pending)):
            self.results(room, flush_all=True)
            return
        options = ["user", "user", "assistant"]
        if self.pending:
            options += ["results"] * 4
        if k.tool_calls and room > self.reserve(len(self.pending) + 1):
            options += ["calls"] * 3
        if k.system_messages:
            options.append("observation")
        if k.context_warning:
            options.append("warning")
        if k.orphan_results:
            options.append("orphan")
        if k.harness_messages:
            options.append("harness")
        kind = self.draw(st.sampled_from(options))
        if kind == "user":
            self.user()
        elif kind == "assistant":
            if not self.reuse("assistant"):
                self.add("assistant", self.text_parts(allow_empty=True))
        elif kind == "calls":
            self.new_calls(room)
        elif kind == "results":
            self.results(room, flush_all=False)
        elif kind == "observation":
            if not self.reuse("system"):
                self.add("system", (Text(text=f"observation: {self.text()}"),))
        elif kind == "harness":
            reply = self.draw(st.sampled_from(HARNESS_REPLIES))
            self.add("user", (Text(text=reply),), metadata={"harness": True})
        elif kind == "warning":
            pct = self.draw(st.integers(50, 99))
            marker = k.warning_marker
            self.add("system", (Text(text=f"{marker} {pct}% of the context window is used"),))
        else:
            self.orphan()

    def user(self) -> None:
        answer = bool(self.pending) and self.k.anthropic_style and self.draw(st.integers(0, 3)) == 0
        if not answer and self.reuse("user"):
            return
        parts = self.text_parts(allow_empty=True)
        if answer:
            # Anthropic: tool_result blocks first, then the user's own text.
            answered = self.take(len(self.pending))
            results: tuple[Part, ...] = tuple(self.result(c) for c in answered)
            parts = results + (parts or (Text(text=self.text()),))
        self.add("user", parts)

    def new_calls(self, room: int) -> None:
        most = 3 if self.k.parallel_calls else 1
        while most > 1 and room <= self.reserve(len(self.pending) + most):
            most -= 1
        calls = tuple(self.call() for _ in range(self.draw(st.integers(1, most))))
        lead: tuple[Part, ...] = ()
        shape = self.draw(st.integers(0, 3))
        if shape == 0:
            lead = (Text(text=self.text()),)
        elif shape == 1:
            lead = (self.draw(opaques()),)
        self.add("assistant", lead + calls)
        self.pending.extend(calls)

    def take(self, most: int) -> list[ToolCall]:
        """The oldest pending calls (at most ``most``), dropping some as
        never answered when that is allowed."""
        taken = self.pending[:most]
        del self.pending[:most]
        if self.k.unanswered_calls:
            taken = [c for c in taken if self.draw(st.integers(0, 6)) != 0]
        return taken

    def results(self, room: int, *, flush_all: bool) -> None:
        too_many = flush_all and room < len(self.pending)
        anthropic = self.k.anthropic_style and (too_many or self.draw(st.booleans()))
        count = len(self.pending)
        if not flush_all:
            count = self.draw(st.integers(1, count))
        if anthropic:
            answered = self.take(count)
            parts: tuple[Part, ...] = tuple(self.result(c) for c in answered)
            if self.draw(st.integers(0, 3)) == 0:
                parts += (Text(text=self.text()),)
            if parts:
                self.add("user", parts)
            return
        answered = self.take(min(count, room))
        for c in answered:
            self.add("tool", (self.result(c),), name=c.name)

    def orphan(self) -> None:
        result = ToolResult(call_id=f"orphan_{self.orphans}", content=self.text())
        self.orphans += 1
        if self.k.anthropic_style and self.draw(st.booleans()):
            self.add("user", (result,))
        else:
            self.add("tool", (result,))


@attrs.frozen(kw_only=True)
class _Knobs:
    text: st.SearchStrategy[str]
    tool_calls: bool
    parallel_calls: bool
    anthropic_style: bool
    system_messages: bool
    context_warning: bool
    unanswered_calls: bool
    orphan_results: bool
    empty_parts: bool
    file_reads: bool
    repeats: bool
    harness_messages: bool
    pinned: bool
    warning_marker: str


@st.composite
def _conversations(draw: st.DrawFn, *, min_size: int, max_size: int, knobs: _Knobs) -> Conversation:
    target = draw(st.integers(min_size, max_size))
    builder = _Builder(draw, knobs=knobs)
    if target and draw(st.integers(0, 3)) > 0:
        builder.add("system", (Text(text=f"You are a helpful agent. {builder.text()}"),))
    while len(builder.out) < target:
        builder.step(target - len(builder.out))
    return tuple(builder.out)


def conversations(
    *,
    min_size: int = 0,
    max_size: int = 20,
    tool_calls: bool = True,
    parallel_calls: bool = True,
    anthropic_style: bool = True,
    system_messages: bool = True,
    context_warning: bool = True,
    unanswered_calls: bool = True,
    orphan_results: bool = False,
    empty_parts: bool = True,
    file_reads: bool = True,
    large_texts: bool = False,
    repeats: bool = True,
    harness_messages: bool = True,
    pinned: bool = True,
    warning_marker: str = DEFAULT_WARNING_MARKER,
    text: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[Conversation]:
    """Agent histories of ``min_size`` to ``max_size`` messages.

    Usually a system prompt first, then user and assistant messages, and with
    the knobs (each on unless said otherwise):

    - ``tool_calls``: assistant messages with tool calls, answered by ``tool``
      messages (OpenAI) or, with ``anthropic_style``, by ``tool_result`` parts
      inside user messages, alone or before the user's text;
      ``parallel_calls`` puts up to three calls in one message;
    - ``file_reads``: ``read_file`` calls with a ``path`` argument drawn from
      `FILE_PATHS`, so that paths repeat (plus malformed arguments);
    - ``unanswered_calls``: sometimes a call never gets its result;
    - ``orphan_results`` (off): results whose call is not in the conversation;
    - ``system_messages``: observations (system messages after the first);
      ``context_warning``: sometimes a system message that starts with
      ``warning_marker``;
    - ``empty_parts``: sometimes a message with no parts, or an empty text;
    - ``large_texts`` (off): long prose too, for budgets and clamping;
    - ``repeats``: sometimes the very same message object appears twice (a
      caller reusing a canned reminder or "continue"); never one with tool parts;
    - ``harness_messages``: sometimes a user message an agent harness wrote
      (a format reminder, marked ``harness: true``), which is not the
      person's question;
    - ``pinned``: sometimes a message whose metadata says ``pinned: true``.

    Call ids are unique within a conversation and every result comes after
    its call. ``text`` replaces the text generator (`texts`).
    """
    validate_size(min_size, max_size)
    if not warning_marker:
        msg = "warning_marker='' cannot mark anything"
        raise InvalidArgument(msg)
    if parallel_calls and not tool_calls:
        parallel_calls = False
    knobs = _Knobs(
        text=text if text is not None else texts(large=large_texts),
        tool_calls=tool_calls,
        parallel_calls=parallel_calls,
        anthropic_style=anthropic_style,
        system_messages=system_messages,
        context_warning=context_warning,
        unanswered_calls=unanswered_calls,
        orphan_results=orphan_results,
        empty_parts=empty_parts,
        file_reads=file_reads,
        repeats=repeats,
        harness_messages=harness_messages,
        pinned=pinned,
        warning_marker=warning_marker,
    )
    return _conversations(min_size=min_size, max_size=max_size, knobs=knobs)
