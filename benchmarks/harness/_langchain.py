"""LangChain's ``trim_messages``, as the benchmark runs it (optional).

``langchain-core`` is the ``bench`` extra, not a dependency: it is imported
by name at run time, so memrules installs, type-checks and benchmarks
without it (the LangChain columns then say "not installed").

The exact counter counts what memrules counts: ``"<role> <text>"`` where the
text joins the content and each tool call's arguments with newlines (the
generated histories write arguments as ``json.dumps(args,
ensure_ascii=False)``, so the re-dumped arguments are the very same text).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import tiktoken

__all__ = ["CONFIGS", "LangChain", "TrimConfig", "load_langchain"]

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}

Counter = Callable[[list[Any]], int]


@attrs.frozen(slots=True)
class TrimConfig:
    """One way of calling ``trim_messages``: the counter and ``start_on``."""

    key: str
    label: str
    counter: str  # "exact" or "approximate"
    start_on: str | None


CONFIGS = (
    TrimConfig("lc_exact", "LC exact", "exact", None),
    TrimConfig("lc_exact_human", "LC exact start_on=human", "exact", "human"),
    TrimConfig("lc_approx", "LC approx", "approximate", None),
    TrimConfig("lc_approx_human", "LC approx start_on=human", "approximate", "human"),
)


def message_text(message: Any) -> str:
    """The text memrules counts, for a LangChain message."""
    parts: list[str] = []
    content = message.content
    if isinstance(content, str):
        if content:
            parts.append(content)
    else:
        parts.extend(
            b if isinstance(b, str) else str(b.get("text", ""))
            for b in content
            if isinstance(b, str) or b.get("type") == "text"
        )
    for call in getattr(message, "tool_calls", ()):
        parts.append(json.dumps(call["args"], ensure_ascii=False))
    return f"{_ROLES.get(message.type, message.type)} " + "\n".join(parts)


class LangChain:
    """The loaded ``langchain_core.messages.utils`` and the counters to give it."""

    def __init__(self, module: Any, version: str, encoding: tiktoken.Encoding) -> None:
        self.module = module  # langchain_core.messages.utils
        self.version = version
        self.encoding = encoding

    def convert(self, openai: Sequence[dict[str, Any]]) -> list[Any]:
        """OpenAI dicts as LangChain messages (``convert_to_messages``)."""
        messages: list[Any] = self.module.convert_to_messages(list(openai))
        return messages

    def exact_counter(self) -> Counter:
        """Sums tiktoken counts of the messages it is given, encoding each one
        every time (what a user passes to ``trim_messages``)."""
        encode = self.encoding.encode_ordinary

        def count(messages: list[Any]) -> int:
            return sum(len(encode(message_text(m))) for m in messages)

        return count

    def memo_exact_counter(self) -> Counter:
        """The same counts, remembered per message object: the same windows
        as :meth:`exact_counter`, faster (for the quality runs, not timed)."""
        encode = self.encoding.encode_ordinary
        memo: dict[int, tuple[Any, int]] = {}

        def one(m: Any) -> int:
            hit = memo.get(id(m))
            if hit is None or hit[0] is not m:
                hit = (m, len(encode(message_text(m))))
                memo[id(m)] = hit
            return hit[1]

        def count(messages: list[Any]) -> int:
            return sum(one(m) for m in messages)

        return count

    def approximate_counter(self) -> Counter:
        counter: Counter = self.module.count_tokens_approximately
        return counter

    def counter(self, config: TrimConfig, *, memo: bool = False) -> Counter:
        if config.counter == "approximate":
            return self.approximate_counter()
        return self.memo_exact_counter() if memo else self.exact_counter()

    def trim(
        self, messages: list[Any], budget: int, counter: Counter, config: TrimConfig
    ) -> list[Any]:
        """``trim_messages`` as the benchmark runs it: newest first, the system
        prompt kept, whole messages only."""
        kept: list[Any] = self.module.trim_messages(
            messages,
            max_tokens=budget,
            token_counter=counter,
            strategy="last",
            include_system=True,
            allow_partial=False,
            start_on=config.start_on,
        )
        return kept


def load_langchain(encoding: tiktoken.Encoding) -> LangChain | None:
    """LangChain, or None when ``langchain-core`` is not installed."""
    try:
        module = importlib.import_module("langchain_core.messages.utils")
        core = importlib.import_module("langchain_core")
    except ImportError:
        return None
    return LangChain(module, str(getattr(core, "__version__", "?")), encoding)
