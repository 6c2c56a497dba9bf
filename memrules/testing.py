"""Property-test your own strategies: hypothesis generators and checks.

Needs the ``testing`` extra (``pip install 'memrules[testing]'``), which brings
hypothesis; ``import memrules`` never imports this module.

    from hypothesis import given
    from memrules import StrategyContext, TiktokenCounter
    from memrules.testing import check_strategy, conversations

    COUNTER = TiktokenCounter.for_name("cl100k_base")

    @given(conversations())
    def test_my_strategy(conversation):
        check_strategy(my_strategy, conversation, StrategyContext(counter=COUNTER))

The generators:

- :func:`texts`: ASCII, prose, CJK, emoji, mixtures, and the empty string;
  with ``large=True`` also long prose for token budgets and clamping.
- :func:`parts`, :func:`messages`: single parts and messages.
- :func:`conversations`: whole agent histories with the shapes compaction
  meets: tool calls (parallel too), OpenAI-style tool messages and
  Anthropic-style results inside user messages, several system messages, the
  context warning, unanswered calls, orphan results, empty parts, repeated
  file reads. Call ids are unique and results follow their calls.
- :func:`budgets`: message, token and unlimited budgets.
- :func:`graphs`, :func:`graph_nodes`, :func:`graph_relationships`,
  :func:`graph_parts`: working graphs and their entries, from small id pools
  so that graphs overlap and merges meet conflicts.

The checks: :func:`assert_invariants` (the invariants of
:mod:`memrules._core.invariants`, with a readable failure) and
:func:`check_strategy` (one strategy run held to the invariants, the
no-op-keeps-identity rule, the interpreter's view, and determinism).
:func:`register_profiles` registers the ``ci`` and ``dev`` hypothesis
profiles this project's own suite runs under.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

import attrs
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from memrules._core.budget import Budget
from memrules._core.invariants import Enforced, check_invariants, enforce
from memrules._core.messages import (
    ROLES,
    Conversation,
    Message,
    Opaque,
    Part,
    Role,
    Text,
    ToolCall,
    ToolResult,
)
from memrules._core.public_names import report_public_module
from memrules._core.report import CompressionResult
from memrules._engine.contract import DEFAULT_WARNING_MARKER, Outcome, Strategy, StrategyContext
from memrules._engine.interpreter import NamedStrategy, run_once, run_pipeline
from memrules.graph import GraphLimits, GraphNode, GraphRelationship, MemoryGraph

__all__ = [
    "FILE_PATHS",
    "FILE_TOOL",
    "NODE_IDS",
    "RELATIONSHIP_IDS",
    "assert_invariants",
    "budgets",
    "check_strategy",
    "conversations",
    "graph_nodes",
    "graph_parts",
    "graph_relationships",
    "graphs",
    "messages",
    "parts",
    "register_profiles",
    "render",
    "texts",
]

FILE_TOOL = "read_file"
"""The tool name :func:`conversations` gives file reads (``deduplicate_file_reads``'s default)."""

FILE_PATHS = ("src/app.py", "README.md", "docs/guide.md", "tests/test_app.py")
"""The few paths file reads draw from, so that paths repeat."""

_TOOLS = (FILE_TOOL, "search", "run_tests", "write_file")

_WORDS = tuple(
    " ".join(
        (
            "the context window is full so we keep the newest turns and drop old tool output",
            "agent reads file config parser error line value returns tuple message summary",
            "budget tokens strategy pipeline report stop reason pass store vector result call",
            "a an of to in on for with by at from it we they this that is was be not or and",
        )
    ).split(" ")
)
_CJK = "你好世界上下文窗口压缩摘要記憶ひらがなカタカナ한국어안녕하세요漢字中文測試"
_EMOJI = ("😀", "🚀", "👍🏽", "👩‍💻", "🇫🇷", "❤️", "🧪", "✨", "🙂", "🤖")
_ASCII = st.characters(min_codepoint=32, max_codepoint=126)


def _validate_size(min_size: int, max_size: int) -> None:
    if min_size < 0:
        msg = f"min_size={min_size!r} must be at least 0"
        raise InvalidArgument(msg)
    if max_size < min_size:
        msg = f"max_size={max_size!r} must be at least min_size={min_size!r}"
        raise InvalidArgument(msg)


def _prose(seed: int, words: int) -> str:
    """``words`` words of pseudo-prose, cheap to draw at any length."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(words):
        word = rng.choice(_WORDS)
        out.append(word)
        if i % 13 == 12:
            out.append(rng.choice((".", ",", ";", "\n")))
    return " ".join(out)


def texts(*, max_size: int = 40, large: bool = False) -> st.SearchStrategy[str]:
    """Text in the scripts a conversation mixes: ASCII (punctuation, digits,
    spaces), English-like prose, CJK, emoji (ZWJ sequences and flags
    included), mixtures of up to four such runs, and the empty string.
    ``max_size`` bounds each run (characters; words for prose);
    ``large=True`` adds long prose, up to about a thousand tokens, for token
    budgets and clamping.
    """
    if max_size < 0:
        msg = f"max_size={max_size!r} must be at least 0"
        raise InvalidArgument(msg)
    words = st.lists(st.sampled_from(_WORDS), max_size=max_size).map(" ".join)
    cjk = st.text(alphabet=_CJK, max_size=max_size)
    emoji = st.lists(st.sampled_from(_EMOJI), max_size=max_size // 4).map("".join)
    ascii_ = st.text(alphabet=_ASCII, max_size=max_size)
    mixed = st.lists(st.one_of(words, cjk, emoji), max_size=4).map(" ".join)
    options = [st.just(""), ascii_, words, words, cjk, emoji, mixed]
    if large:
        options.append(st.builds(_prose, st.integers(0, 2**16), st.integers(40, 900)))
    return st.one_of(options)


def _opaque() -> st.SearchStrategy[Opaque]:
    image = st.builds(
        lambda n: Opaque(kind="image", payload={"type": "image_url", "url": f"https://x/{n}.png"}),
        st.integers(0, 9),
    )
    thinking = st.builds(
        lambda t: Opaque(kind="thinking", payload={"thinking": t, "signature": "sig"}),
        texts(max_size=20),
    )
    return st.one_of(image, thinking)


_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789_"


def parts(*, tool_parts: bool = False, large: bool = False) -> st.SearchStrategy[Part]:
    """A single part: :class:`Text` (text from :func:`texts`) or :class:`Opaque`
    (images, thinking blocks); with ``tool_parts=True`` also a :class:`ToolCall`
    or :class:`ToolResult` with an arbitrary id (nothing pairs them; use
    :func:`conversations` for well-formed tool traffic)."""
    text = st.builds(Text, text=texts(large=large))
    options: list[st.SearchStrategy[Part]] = [text, text, _opaque()]
    if tool_parts:
        ids = st.text(alphabet=_ID_ALPHABET, min_size=1, max_size=8)
        options.append(st.builds(ToolCall, id=ids, name=st.sampled_from(_TOOLS), arguments=texts()))
        options.append(st.builds(ToolResult, call_id=ids, content=texts(), is_error=st.booleans()))
    return st.one_of(options)


def messages(
    *,
    roles: Sequence[Role] = ROLES,
    tool_parts: bool = False,
    max_parts: int = 3,
    large: bool = False,
) -> st.SearchStrategy[Message]:
    """A single message with a role from ``roles`` and up to ``max_parts``
    parts (see :func:`parts`), sometimes an ``id`` and a ``name``."""
    if not roles or any(r not in ROLES for r in roles):
        msg = f"roles={tuple(roles)!r} must be a non-empty selection of {ROLES!r}"
        raise InvalidArgument(msg)
    if max_parts < 0:
        msg = f"max_parts={max_parts!r} must be at least 0"
        raise InvalidArgument(msg)
    return st.builds(
        Message,
        role=st.sampled_from(tuple(roles)),
        parts=st.lists(parts(tool_parts=tool_parts, large=large), max_size=max_parts).map(tuple),
        id=st.none() | st.text(alphabet=_ID_ALPHABET, min_size=1, max_size=6),
        name=st.none() | st.sampled_from(("alice", "bob")),
    )


def budgets(
    *, max_messages: int = 40, max_tokens: int = 4000, unlimited: bool = True
) -> st.SearchStrategy[Budget]:
    """A message budget (1..``max_messages``), a token budget
    (1..``max_tokens``), or, with ``unlimited``, :attr:`Budget.UNLIMITED`."""
    if max_messages < 1 or max_tokens < 1:
        msg = f"max_messages={max_messages!r} and max_tokens={max_tokens!r} must be at least 1"
        raise InvalidArgument(msg)
    options = [
        st.builds(Budget.messages, st.integers(1, max_messages)),
        st.builds(Budget.tokens, st.integers(1, max_tokens)),
    ]
    if unlimited:
        options.append(st.just(Budget.UNLIMITED))
    return st.one_of(options)


# --- conversations -----------------------------------------------------------


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
            body.insert(self.draw(st.integers(0, 1)), self.draw(_opaque()))
        return tuple(body)

    def add(self, role: Role, parts: tuple[Part, ...], *, name: str | None = None) -> None:
        ident = f"m{len(self.out)}" if self.draw(st.booleans()) else None
        m = Message(role=role, parts=parts, id=ident, name=name)
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
        tools = (FILE_TOOL,) * 3 + _TOOLS[1:] if self.k.file_reads else _TOOLS[1:]
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
                inner.insert(1, self.draw(_opaque()))
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
            lead = (self.draw(_opaque()),)
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
      :data:`FILE_PATHS`, so that paths repeat (plus malformed arguments);
    - ``unanswered_calls``: sometimes a call never gets its result;
    - ``orphan_results`` (off): results whose call is not in the conversation;
    - ``system_messages``: observations (system messages after the first);
      ``context_warning``: sometimes a system message that starts with
      ``warning_marker``;
    - ``empty_parts``: sometimes a message with no parts, or an empty text;
    - ``large_texts`` (off): long prose too, for budgets and clamping;
    - ``repeats``: sometimes the very same message object appears twice (a
      caller reusing a canned reminder or "continue"); never one with tool parts.

    Call ids are unique within a conversation and every result comes after
    its call. ``text`` replaces the text generator (:func:`texts`).
    """
    _validate_size(min_size, max_size)
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
        warning_marker=warning_marker,
    )
    return _conversations(min_size=min_size, max_size=max_size, knobs=knobs)


# --- checks ------------------------------------------------------------------


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


def assert_invariants(before: Conversation, after: Conversation) -> None:
    """Fail with a readable message when ``after`` breaks the invariants of
    :mod:`memrules._core.invariants` relative to ``before`` (see
    :func:`memrules._core.invariants.check_invariants`)."""
    problems = check_invariants(before, after)
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        msg = f"invariants broken:\n{listed}\nbefore:\n{render(before)}\nafter:\n{render(after)}"
        raise AssertionError(msg)


def _output(result: object, what: str) -> tuple[Conversation, str]:
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

    Checks that it returns a tuple of messages (or an :class:`Outcome`),
    that the output stands after :func:`memrules._core.invariants.enforce` and keeps
    the invariants (:func:`assert_invariants`), that the interpreter, running
    it once under ``context.budget``, arrives at the same messages,
    and that a second run gives an equal result (determinism). With
    ``strict`` (the default) it also fails when the raw output breaks an
    invariant the interpreter would have to discard it for, when the
    interpreter records an error, and when a no-op returns a new tuple
    instead of ``conversation`` itself (``new is old`` means nothing happened).

    Returns what :func:`~memrules._core.invariants.enforce` made of the output.
    Exceptions the strategy raises propagate.
    """
    name = getattr(strategy, "__name__", None) or repr(strategy)
    output, note = _output(strategy(conversation, context), name)
    enforced = enforce(conversation, output)
    if strict and enforced.violation is not None:
        msg = (
            f"{name}'s output breaks an invariant and would be discarded: "
            f"{enforced.violation}\nbefore:\n{render(conversation)}\noutput:\n{render(output)}"
        )
        raise AssertionError(msg)
    assert_invariants(conversation, enforced.messages)
    if strict and not enforced.changed and output is not conversation:
        msg = (
            f"{name} changed nothing but returned a new tuple; return the input tuple itself "
            f"so that `new is old` tells a no-op\nbefore:\n{render(conversation)}"
        )
        raise AssertionError(msg)
    again, again_note = _output(strategy(conversation, context), name)
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


def register_profiles() -> None:
    """Register the hypothesis profiles memrules' own suite runs under.

    ``ci``: reproducible (derandomized, no example database), 100 examples,
    no deadline, and the blob to reproduce a failure printed. ``dev``: 1000
    random examples per test. Load one with
    ``hypothesis.settings.load_profile(name)``.
    """
    quiet = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile(
        "ci",
        derandomize=True,
        database=None,
        max_examples=100,
        deadline=None,
        print_blob=True,
        suppress_health_check=quiet,
    )
    settings.register_profile(
        "dev",
        max_examples=1000,
        deadline=None,
        print_blob=True,
        suppress_health_check=quiet,
    )


# --- the working graph ----------------------------------------------------------

NODE_IDS = ("vault", "Lisbon", "key", "friday", "owner", "file:a.py", "tool:read_file", "x y")
"""The few node ids :func:`graphs` draws from, so that graphs overlap
(one has a space, which rendering must quote)."""

RELATIONSHIP_IDS = tuple(f"r{i}" for i in range(10))
"""The relationship ids :func:`graphs` draws from."""

_LABELS = ("Entity", "Value", "File", "Tool")
_WEIGHTS = (0.5, 1.0, 2.0, 3.0)  # few values, so ties happen and ids break them
_TYPES = ("is_in", "read", "rotates_on")


def graph_nodes(*, ids: Sequence[str] = NODE_IDS) -> st.SearchStrategy[GraphNode]:
    """Nodes with ids from ``ids``, a few labels, small JSON properties and
    weights that often tie."""
    return st.builds(
        GraphNode,
        id=st.sampled_from(tuple(ids)),
        labels=st.lists(st.sampled_from(_LABELS), max_size=2),
        properties=st.dictionaries(
            st.sampled_from(("name", "n", "tags")),
            st.one_of(st.integers(0, 2), st.sampled_from(("a", "b")), st.just([1, {"z": 2}])),
            max_size=2,
        ),
        weight=st.sampled_from(_WEIGHTS),
    )


@st.composite
def graph_relationships(
    draw: st.DrawFn, node_ids: Sequence[str], *, ids: Sequence[str] = RELATIONSHIP_IDS
) -> GraphRelationship:
    """A relationship between two of ``node_ids`` (which must not be empty)."""
    return GraphRelationship(
        id=draw(st.sampled_from(tuple(ids))),
        source=draw(st.sampled_from(tuple(node_ids))),
        target=draw(st.sampled_from(tuple(node_ids))),
        type=draw(st.sampled_from(_TYPES)),
        weight=draw(st.sampled_from(_WEIGHTS)),
        properties=draw(
            st.dictionaries(st.sampled_from(("since", "n")), st.integers(0, 2), max_size=1)
        ),
    )


@st.composite
def graph_parts(
    draw: st.DrawFn, *, max_nodes: int = 6, max_relationships: int = 8
) -> tuple[tuple[GraphNode, ...], tuple[GraphRelationship, ...]]:
    """Nodes, and relationships between them, as :meth:`MemoryGraph.of`
    takes them (ids may repeat: a later entry replaces an earlier one)."""
    nodes = draw(st.lists(graph_nodes(), max_size=max_nodes))
    if not nodes:
        return (), ()
    relationships = draw(
        st.lists(graph_relationships([n.id for n in nodes]), max_size=max_relationships)
    )
    return tuple(nodes), tuple(relationships)


def graphs(
    *, max_nodes: int = 6, max_relationships: int = 8, limits: GraphLimits | None = None
) -> st.SearchStrategy[MemoryGraph]:
    """Working graphs of up to ``max_nodes`` nodes and ``max_relationships``
    relationships (fewer when ids repeat), under ``limits`` (the defaults
    when None), drawn from small id pools so that two graphs overlap."""
    _validate_size(0, max_nodes)
    _validate_size(0, max_relationships)
    return graph_parts(max_nodes=max_nodes, max_relationships=max_relationships).map(
        lambda parts: MemoryGraph.of(*parts, limits=limits or GraphLimits())
    )


report_public_module(__name__, __all__, globals())
del report_public_module
