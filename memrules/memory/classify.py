"""What is not worth remembering or looking up: small talk (greetings and
acknowledgements), refusals, and the model's reasoning.

- A user message that is only small talk (``hi``, ``thanks!``, ``ok``,
  ``你好``, ``ありがとう``, ``감사합니다``: at most four words of it) is
  neither looked up (nothing in memory answers it) nor stored.
- A reply that opens by refusing (``I'm sorry, but I can't…``) and says
  little else is not stored: it would teach later requests nothing but the
  refusal.
- Reasoning blocks (``<think>…</think>``, ``<thinking>``, ``<reasoning>``,
  and a reply that starts inside one and only closes it) are stripped
  before a reply is stored; reasoning the provider sends apart (thinking
  parts, ``reasoning_content``) is never text and never stored.

All pure.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["MAX_REFUSAL_CHARS", "is_refusal", "is_small_talk", "strip_reasoning"]

_SMALL_TALK_GROUPS = (
    # greetings
    "hi hello hey heya hiya howdy yo greetings morning afternoon evening good day gday there all "
    "everyone again",
    # thanks and acknowledgements
    "thanks thank thx ty tysm cheers appreciated appreciate it you so much very lot a please ok "
    "okay k kk okey fine cool great nice awesome perfect sure yes yeah yep yup no nope got "
    "understood noted right alright done",
    # goodbyes
    "bye goodbye see later ciao cya",
    # other languages written with spaces
    "hola gracias merci bonjour salut danke hallo grazie obrigado obrigada oi ola olá",
)
_SMALL_TALK_WORDS = frozenset(word for group in _SMALL_TALK_GROUPS for word in group.split())
_SMALL_TALK_PHRASES = frozenset(
    {
        "你好",
        "您好",
        "嗨",
        "哈喽",
        "谢谢",
        "多谢",
        "谢谢你",
        "好的",
        "好",
        "嗯",
        "收到",
        "再见",
        "こんにちは",
        "こんばんは",
        "おはよう",
        "おはようございます",
        "ありがとう",
        "ありがとうございます",
        "はい",
        "了解",
        "了解です",
        "さようなら",
        "안녕",
        "안녕하세요",
        "감사합니다",
        "고마워",
        "고맙습니다",
        "네",
        "알겠습니다",
        "좋아요",
    }
)
_MAX_SMALL_TALK_WORDS = 4

_REFUSALS = re.compile(
    r"^\s*(?:"
    r"(?:i'?m|i am)\s+(?:so\s+)?sorry,?\s+(?:but\s+)?i\s+(?:can(?:'|no)t|cannot|won'?t|am\s+unable)"
    r"|sorry,?\s+(?:but\s+)?i\s+(?:can(?:'|no)t|cannot|won'?t)"
    r"|i\s+(?:can(?:'|no)t|cannot|won'?t|am\s+(?:not\s+able|unable))\s+"
    r"(?:help|assist|do|provide|comply|answer|share|fulfil)"
    r"|as\s+an\s+ai\b"
    r"|抱歉|对不起|很抱歉|申し訳|すみませんが|죄송"
    r")",
    re.IGNORECASE,
)
MAX_REFUSAL_CHARS = 400
"""A reply that opens with a refusal and is longer than this has more to it
than the refusal, and is stored."""

_REASONING_TAGS = ("think", "thinking", "reasoning", "reflection")
_BLOCK = re.compile(
    r"<(" + "|".join(_REASONING_TAGS) + r")\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL
)
_OPEN = re.compile(r"<(" + "|".join(_REASONING_TAGS) + r")\b[^>]*>", re.IGNORECASE)
_CLOSE = re.compile(r"</(" + "|".join(_REASONING_TAGS) + r")\s*>", re.IGNORECASE)


def _normalized(text: str) -> str:
    """Lowercase letters, digits and spaces, other characters dropped."""
    kept = (
        c if unicodedata.category(c)[0] in "LN" else " "
        for c in unicodedata.normalize("NFKC", text).lower()
    )
    return " ".join("".join(kept).split())


def is_small_talk(text: str) -> bool:
    """Whether ``text`` is only a greeting or an acknowledgement (see the
    module docs); an empty text is too.

    >>> is_small_talk("Hi there!"), is_small_talk("ok, thanks 🙏")
    (True, True)
    >>> is_small_talk("hi, where's my key?")
    False
    """
    normalized = _normalized(text)
    if not normalized or normalized.replace(" ", "") in _SMALL_TALK_PHRASES:
        return True
    words = normalized.split()
    return len(words) <= _MAX_SMALL_TALK_WORDS and all(w in _SMALL_TALK_WORDS for w in words)


def is_refusal(reply: str) -> bool:
    """Whether ``reply`` opens by refusing and is short (at most
    `MAX_REFUSAL_CHARS`)."""
    return len(reply) <= MAX_REFUSAL_CHARS and bool(_REFUSALS.match(reply))


def strip_reasoning(text: str) -> str:
    """``text`` without reasoning blocks (see the module docs).

    >>> strip_reasoning("<think>the user wants a number</think>It is 42.")
    'It is 42.'
    """
    text = _BLOCK.sub("", text)
    closes = list(_CLOSE.finditer(text))
    if closes:  # the reply began inside a block the template opened
        text = text[closes[-1].end() :]
    opened = _OPEN.search(text)
    if opened is not None:  # a block that never closed: the rest is reasoning
        text = text[: opened.start()]
    return text.strip()
