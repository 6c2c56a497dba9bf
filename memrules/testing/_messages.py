"""Generators of texts, parts, messages and budgets, the pieces conversations are made of.

`texts` mixes the scripts a conversation meets (ASCII, prose, CJK,
emoji); `parts` and `messages` build single parts and messages
from them, with nothing pairing tool calls and results (that is
`memrules.testing._conversations`' job); `budgets` draws the three
kinds of budget.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from memrules._core.budget import Budget
from memrules._core.messages import ROLES, Message, Opaque, Part, Role, Text, ToolCall, ToolResult

__all__ = ["FILE_TOOL", "TOOLS", "budgets", "messages", "opaques", "parts", "texts"]

FILE_TOOL = "read_file"
"""The tool name `conversations` gives file reads (``deduplicate_file_reads``'s default)."""


TOOLS = (FILE_TOOL, "search", "run_tests", "write_file")
"""The tool names calls draw from, file reads first."""

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


def opaques() -> st.SearchStrategy[Opaque]:
    image = st.builds(
        lambda n: Opaque(kind="image", payload={"type": "image_url", "url": f"https://x/{n}.png"}),
        st.integers(0, 9),
    )
    thinking = st.builds(
        lambda t: Opaque(kind="thinking", payload={"thinking": t, "signature": "sig"}),
        texts(max_size=20),
    )
    # A block no rule prices (a provider's newer block type): counted by the
    # tokens of its JSON, and named in report.estimates.
    unknown = st.builds(
        lambda source, t: Opaque(
            kind=f"{source}weird_block", payload={"type": "weird_block", "data": t}
        ),
        st.sampled_from(("", "openai:", "anthropic:")),
        texts(max_size=40),
    )
    return st.one_of(image, thinking, unknown)


_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789_"


def parts(*, tool_parts: bool = False, large: bool = False) -> st.SearchStrategy[Part]:
    """A single part: `Text` (text from `texts`) or `Opaque`
    (images, thinking blocks, blocks of no known type); with
    ``tool_parts=True`` also a `ToolCall` or `ToolResult` with
    an arbitrary id (nothing pairs them; use `conversations` for
    well-formed tool traffic)."""
    text = st.builds(Text, text=texts(large=large))
    options: list[st.SearchStrategy[Part]] = [text, text, opaques()]
    if tool_parts:
        ids = st.text(alphabet=_ID_ALPHABET, min_size=1, max_size=8)
        options.append(st.builds(ToolCall, id=ids, name=st.sampled_from(TOOLS), arguments=texts()))
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
    parts (see `parts`), sometimes an ``id`` and a ``name``."""
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
    (1..``max_tokens``), or, with ``unlimited``, `UNLIMITED`."""
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
