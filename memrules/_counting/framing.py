"""Count rules: how a message's tokens are framed over a counter's text count.

A `TokenCounter` counts text. What a provider bills
for a message is more than its text: the chat format wraps every message in
role markers, names and tool-call fields, and primes the reply. A budget
checked against bare text is overrun by that framing on every message (a
window trimmed to 100,000 text tokens of a tool-heavy agent is several
thousand tokens over under OpenAI's own count). A `CountRule` adds the
framing, on top of any counter's ``count_text``, so a counter that only knows
how to tokenize text (tiktoken, the script-aware estimate, a Hugging Face
tokenizer) counts messages the way the provider does.

The rules, chosen by the config's ``count_rule``:

``openai`` (the default)
    OpenAI's documented chat framing ("How to count tokens with tiktoken"):
    3 tokens per message, the role, each text, 1 more for a ``name`` and its
    text, every other string field the message carries (``refusal``, vendor
    fields), and 3 per request for the reply's priming. Tool traffic, which that
    guide leaves out, is counted as OpenAI writes it: each tool call's id,
    type (``function``), name and arguments, and a tool message's
    ``tool_call_id``; a tool result carried inside another message (read from
    Anthropic) as the tool message OpenAI would need for it, and the user
    message that carries a tool result's images after it (a user message of
    tool results alone is sent as its tool messages, and counts only those). Every field is
    counted on its own, as the guide does, so the count is the guide's
    figure for the message OpenAI receives, and a window trimmed to a budget
    under this rule is within that budget under OpenAI's framing.
``anthropic``
    Anthropic publishes no framing rule (its ``count_tokens`` endpoint is the
    exact count), so this is a deliberate over-estimate of the block
    structure: 3 tokens per message, each text block's text, 3 more per
    ``tool_use`` block with its id, name and input, 3 more per
    ``tool_result`` block with its ``tool_use_id`` and content, and 3 per
    request for the assistant turn's opening.
``seed``
    No framing: the counter's own message count, which for
    the built-in counters is the tokens of ``"<role> <text>"`` (the text
    joining Text parts, call arguments and result content). ``memrules
    demo`` runs with it (the name is kept for configs that use it).

Images, documents, thinking and reasoning count on top of the framing, as
the provider bills them (`memrules._counting.content`): an image by its
size under the provider's published rule (OpenAI's tiles or patches for the
rule's model family under ``openai``, Anthropic's pixels / 750 under
``anthropic``), a PDF by a stated estimate per page, thinking by its text,
encrypted reasoning by the provider's reported usage or a stated estimate.
Each rule counts the parts its provider's writer sends: under ``openai``,
OpenAI's own parts, parts of no provider and other providers' images (which
``to_openai`` converts); Anthropic's thinking blocks, which ``to_openai``
drops, count nothing there. The config's ``counting:`` section sets the
model family and the estimates (`count_rule_named`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType

import attrs

from memrules._core.errors import EncodingError
from memrules._core.messages import (
    Message,
    Opaque,
    Text,
    ToolCall,
    ToolResult,
    as_messages,
    check_messages,
)
from memrules._counting.content import (
    DEFAULT_COUNTING,
    ContentCounting,
    content_costs,
    image_rule_for,
    message_content_tokens,
    opaque_parts,
)
from memrules._counting.images import ANTHROPIC_RULE, GPT_4O, ImageRule
from memrules._counting.named import counter_for
from memrules._counting.tokens import (
    CHUNK_CHARS,
    DEFAULT_CACHE_SIZE,
    FORCED_CUT_SLACK,
    BoundedCache,
    SharedCounters,
    TokenCounter,
    forced_cuts,
)

__all__ = [
    "ANTHROPIC",
    "COUNT_RULES",
    "DEFAULT_COUNT_RULE",
    "OPENAI",
    "SEED",
    "ContentFrame",
    "CountRule",
    "FramedCounter",
    "count_rule_named",
    "count_tokens",
    "framed",
    "per_request_tokens",
]

TextCount = Callable[[str], int]
"""A counter's ``count_text``."""


@attrs.frozen(kw_only=True, slots=True)
class CountRule:
    """How messages are framed: ``frame(message, count_text)`` is a message's
    count, ``per_request`` the tokens a request pays once (the reply's
    priming). A rule with no ``frame`` is the counter's own message count."""

    name: str
    per_request: int = 0
    frame: Callable[[Message, TextCount], int] | None = attrs.field(default=None, repr=False)


# --- openai ----------------------------------------------------------------------

_OPENAI_PER_MESSAGE = 3
_OPENAI_PER_NAME = 1
_OPENAI_PRIMING = 3


def _openai_role(message: Message) -> str:
    written = message.metadata.get("openai_role")
    return written if isinstance(written, str) else message.role


def _openai_frame(message: Message, count: TextCount) -> int:
    if _only_results(message):  # sent as its tool messages, nothing of its own
        results: list[ToolResult] = list(message.parts)  # type: ignore[arg-type]
        per_result = _OPENAI_PER_MESSAGE + count("tool")
        return sum(per_result + count(r.call_id) + _content(r, count) for r in results)
    total = _OPENAI_PER_MESSAGE + count(_openai_role(message))
    if message.name is not None:
        total += _OPENAI_PER_NAME + count(message.name)
    kept = message.metadata.get("openai")  # fields memrules does not map
    if kept:
        total += sum(count(v) for v in kept.values() if isinstance(v, str))
    tool_message = message.role == "tool"
    for part in message.parts:
        kind = type(part)
        if kind is Text:
            total += count(part.text)  # type: ignore[union-attr]
        elif kind is ToolCall:
            call: ToolCall = part  # type: ignore[assignment]
            written_type = call.extra.get("openai_type", "function")
            total += count(call.id) + count(str(written_type))
            total += count(call.name) + count(call.arguments)
        elif kind is ToolResult:
            result: ToolResult = part  # type: ignore[assignment]
            if not tool_message:  # written as a tool message of its own
                total += _OPENAI_PER_MESSAGE + count("tool")
            elif _moves_parts(result):  # written after it, as a user message
                total += _OPENAI_PER_MESSAGE + count("user")
            total += count(result.call_id) + _content(result, count)
    return total


def _only_results(message: Message) -> bool:
    """Whether ``to_openai`` writes ``message`` as its tool messages alone: a
    user message whose parts are all tool results, none of which moves
    parts into a user message after them (then that user message is
    written, with the message's role, name and kept fields)."""
    parts = message.parts
    return (
        message.role == "user"
        and bool(parts)
        and all(isinstance(p, ToolResult) and not _moves_parts(p) for p in parts)
    )


def _moves_parts(result: ToolResult) -> bool:
    """Whether ``to_openai`` moves parts of ``result`` (images and other
    blocks an OpenAI tool message cannot hold) into a user message of
    their own."""
    content = result.content
    return not isinstance(content, str) and any(
        type(p) is Opaque and not p.kind.startswith("openai:") for p in content
    )


def _content(result: ToolResult, count: TextCount) -> int:
    """The text of a tool result (its opaque parts are priced apart)."""
    content = result.content
    if isinstance(content, str):
        return count(content)
    return sum(count(p.text) for p in content if type(p) is Text)


# --- anthropic -------------------------------------------------------------------

_ANTHROPIC_PER_MESSAGE = 3
_ANTHROPIC_PER_TOOL_BLOCK = 3
_ANTHROPIC_PRIMING = 3


def _anthropic_frame(message: Message, count: TextCount) -> int:
    total = _ANTHROPIC_PER_MESSAGE
    for part in message.parts:
        kind = type(part)
        if kind is Text:
            total += count(part.text)  # type: ignore[union-attr]
        elif kind is ToolCall:
            call: ToolCall = part  # type: ignore[assignment]
            total += _ANTHROPIC_PER_TOOL_BLOCK + count(call.id) + count(call.name)
            total += count(call.arguments)
        elif kind is ToolResult:
            result: ToolResult = part  # type: ignore[assignment]
            total += _ANTHROPIC_PER_TOOL_BLOCK + count(result.call_id) + _content(result, count)
    return total


# --- what is not text ---------------------------------------------------------

_IMAGE_KINDS = frozenset(("image", "image_url", "input_image"))


_SOURCES = {
    "openai": frozenset(("", "openai", "responses", "responses_item")),
    "anthropic": frozenset(("", "anthropic")),
}
"""The parts each provider's writers send as they are, by the adapter that
read them (the part kind's prefix before its first ``:``): OpenAI's chat
and Responses parts alike under ``openai``, whichever of its two APIs the
request goes to."""


def _sent_by(provider: str) -> Callable[[Opaque], bool]:
    """Whether ``provider``'s writer sends an opaque part: its own parts,
    parts of no provider (a kind with no adapter's prefix), and other
    providers' images (converted)."""
    own = _SOURCES[provider]

    def sent(part: Opaque) -> bool:
        source, colon, kind = part.kind.partition(":")
        if not colon:
            return True  # a part of no provider
        return source in own or source not in _ADAPTERS or kind in _IMAGE_KINDS

    return sent


_ADAPTERS = frozenset(("openai", "anthropic", "responses", "responses_item", "autogen"))
"""The prefixes the adapters give the kinds of the parts they read."""


def _kept_reasoning(message: Message, count: TextCount, counting: ContentCounting) -> int:
    """An OpenAI-format message's ``reasoning_details`` (kept as it came:
    the chat format of OpenRouter and other OpenAI-compatible servers):
    their ``text`` and ``summary`` by the counter, encrypted ``data`` one
    token per ``encrypted_chars_per_token`` characters."""
    kept = message.metadata.get("openai")
    details = kept.get("reasoning_details") if kept else None
    if not isinstance(details, tuple):
        return 0
    total = 0
    per = counting.encrypted_chars_per_token
    for item in details:
        if not isinstance(item, Mapping):
            continue
        for key in ("text", "summary"):
            value = item.get(key)
            if isinstance(value, str):
                total += count(value)
        data = item.get("data")
        if isinstance(data, str):
            total += -(-len(data) // per)
    return total


_SENT = {"openai": _sent_by("openai"), "anthropic": _sent_by("anthropic")}
_FRAMES = {"openai": _openai_frame, "anthropic": _anthropic_frame}


@attrs.frozen(kw_only=True, slots=True)
class ContentFrame:
    """A provider's framing of a message (``style``: ``openai`` or
    ``anthropic``) plus what its opaque parts cost under ``images`` and
    ``counting`` (see the module docs). A value: two frames of the same
    settings are equal, so a counter is never framed twice by them."""

    style: str = attrs.field(validator=attrs.validators.in_(tuple(_FRAMES)))
    images: ImageRule
    counting: ContentCounting = DEFAULT_COUNTING

    def __call__(self, message: Message, count: TextCount) -> int:
        framing = _FRAMES[self.style](message, count)
        if self.style == "openai":
            framing += _kept_reasoning(message, count, self.counting)
        return framing + message_content_tokens(
            message, self.images, self.counting, count, sent=_SENT[self.style]
        )

    def estimates(self, message: Message, count: TextCount) -> tuple[str, ...]:
        """``"parts[i]: ..."`` for each part of ``message`` whose figure is
        an estimate, saying which: an opaque part priced by a stated rule,
        a text counted with forced cuts (see
        `chunk_text`)."""
        found = _long_text_estimates(message)
        if not opaque_parts(message):
            return found
        costs = content_costs(message, self.images, self.counting, count, sent=_SENT[self.style])
        return found + tuple(f"{where}: {cost.note}" for where, cost in costs if not cost.measured)


def _part_texts(part: object) -> tuple[str, ...]:
    kind = type(part)
    if kind is Text:
        return (part.text,)  # type: ignore[attr-defined]
    if kind is ToolCall:
        return (part.arguments,)  # type: ignore[attr-defined]
    if kind is ToolResult:
        content = part.content  # type: ignore[attr-defined]
        if isinstance(content, str):
            return (content,)
        return tuple(p.text for p in content if type(p) is Text)
    return ()


def _long_text_estimates(message: Message) -> tuple[str, ...]:
    """``"parts[i]: ..."`` for each text of ``message`` long enough to be
    counted in chunks and holding a run with nowhere exact to cut it."""
    found = []
    for i, part in enumerate(message.parts):
        for text in _part_texts(part):
            if len(text) <= 2 * CHUNK_CHARS:
                continue
            cuts = forced_cuts(text)
            if cuts:
                found.append(
                    f"parts[{i}]: {len(text):,} characters with runs of no space, counted in "
                    f"chunks: {cuts} cuts inside a run, {FORCED_CUT_SLACK} tokens added per cut "
                    "(estimate)"
                )
    return tuple(found)


OPENAI = CountRule(
    name="openai", per_request=_OPENAI_PRIMING, frame=ContentFrame(style="openai", images=GPT_4O)
)
ANTHROPIC = CountRule(
    name="anthropic",
    per_request=_ANTHROPIC_PRIMING,
    frame=ContentFrame(style="anthropic", images=ANTHROPIC_RULE),
)
SEED = CountRule(name="seed")

COUNT_RULES: Mapping[str, CountRule] = MappingProxyType(
    {rule.name: rule for rule in (OPENAI, ANTHROPIC, SEED)}
)
"""The rules by their ``count_rule`` name."""

DEFAULT_COUNT_RULE = OPENAI.name


class FramedCounter:
    """A `TokenCounter` that counts each message by
    a `CountRule` over ``base.count_text``, and text as ``base`` does.

    Counts are cached per message value (``cache_size`` entries, oldest out
    first) in a cache this counter owns; like the built-in counters' caches
    it is safe to share between threads (lock-free hits, locked inserts).
    The role words' counts are worked out once, on first use.
    """

    __slots__ = ("_cache", "_estimates", "_known", "_lock", "base", "rule")

    def __init__(
        self, base: TokenCounter, rule: CountRule, *, cache_size: int = DEFAULT_CACHE_SIZE
    ) -> None:
        if rule.frame is None:
            msg = f"count rule {rule.name!r} frames nothing; use the counter itself"
            raise ValueError(msg)
        self.base = base
        self.rule = rule
        self._cache = BoundedCache(self._compute, cache_size)
        self._estimates = BoundedCache(self._find_estimates, cache_size)
        self._known: dict[str, int] = {}  # short, recurring strings: role words, types
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def per_request(self) -> int:
        """Tokens every request pays once, whatever its messages."""
        return self.rule.per_request

    def _count_known(self, text: str) -> int:
        found = self._known.get(text)
        if found is None:
            found = self.base.count_text(text)
            if len(text) <= _KNOWN_MAX_CHARS and len(self._known) < _KNOWN_MAX:
                with self._lock:
                    self._known[text] = found
        return found

    def _compute(self, message: Message) -> int:
        frame = self.rule.frame
        assert frame is not None  # checked in __init__
        return frame(message, self._text_count)

    def _text_count(self, text: str) -> int:
        if len(text) <= _KNOWN_MAX_CHARS:
            return self._count_known(text)
        return self.base.count_text(text)

    def count(self, message: Message) -> int:
        return self._cache.get(message)

    def counts(self, messages: Sequence[Message]) -> tuple[int, ...]:
        return self._cache.many(messages)

    def count_text(self, text: str) -> int:
        return self.base.count_text(text)

    def estimates(self, message: Message) -> tuple[str, ...]:
        """What of ``message``'s count is a stated estimate rather than
        measured (an image of unknown size, PDF pages, encrypted
        reasoning), one ``"parts[i]: ..."`` line each. Worked out once per
        message value, as its count is."""
        return self._estimates.get(message)

    def estimates_many(self, messages: Sequence[Message]) -> tuple[tuple[str, ...], ...]:
        """`estimates` of each of ``messages``: one C-level pass of
        look-ups for those asked about before."""
        return self._estimates.many(messages)

    def _find_estimates(self, message: Message) -> tuple[str, ...]:
        frame = self.rule.frame
        if isinstance(frame, ContentFrame):
            return frame.estimates(message, self._text_count)
        return ()

    @property
    def cached(self) -> int:
        """How many message counts the cache holds."""
        return len(self._cache)

    def __repr__(self) -> str:
        return f"FramedCounter({self.base!r}, count_rule={self.rule.name!r})"


# Strings this short recur (role words, "function", empty texts) and are
# cheap to keep; longer ones (ids, text) are counted each time.
_KNOWN_MAX_CHARS = 12
_KNOWN_MAX = 4096


def framed(counter: TokenCounter, rule: CountRule) -> TokenCounter:
    """``counter`` counting messages by ``rule``: ``counter`` itself for a
    rule that frames nothing (``seed``), else a `FramedCounter`.
    A counter that is already framed is framed again over its base, never
    twice. A counter whose ``frames_itself`` is true (one that asks the
    provider, such as ``anthropic:<model>``) already counts messages as the
    provider does, and is returned as it is under every rule."""
    base = counter.base if isinstance(counter, FramedCounter) else counter
    if rule.frame is None or getattr(base, "frames_itself", False) is True:
        return base
    if isinstance(counter, FramedCounter) and counter.rule == rule:
        return counter
    return FramedCounter(base, rule)


def per_request_tokens(counter: TokenCounter) -> int:
    """The tokens a request pays once under ``counter`` (its ``per_request``,
    0 for a counter that has none)."""
    found = getattr(counter, "per_request", 0)
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def count_rule_named(
    name: str, *, counting: ContentCounting = DEFAULT_COUNTING, model: str | None = None
) -> CountRule:
    """The rule a ``count_rule`` name selects, pricing images, documents and
    reasoning by ``counting`` (the config's ``counting:`` section) and, under
    ``openai``, by the image rule of ``counting.image_model`` or else of
    ``model`` (the config's ``encoder_name``) when that is a model family of
    OpenAI's image guide (gpt-4o's otherwise)."""
    rule = COUNT_RULES.get(name)
    if rule is None:
        known = ", ".join(COUNT_RULES)
        msg = f"count_rule={name!r} is not one of {known}"
        raise EncodingError(msg)
    frame = rule.frame
    if not isinstance(frame, ContentFrame):
        return rule
    images = image_rule_for(name, counting, model)
    if images == frame.images and counting == frame.counting:
        return rule
    return attrs.evolve(rule, frame=attrs.evolve(frame, images=images, counting=counting))


def _shared_framed(key: tuple[str, str]) -> TokenCounter:
    return framed(counter_for(key[0]), count_rule_named(key[1]))


_SHARED: SharedCounters[tuple[str, str]] = SharedCounters(_shared_framed)


def count_tokens(
    messages: Iterable[Message],
    encoder_name: str = "cl100k_base",
    *,
    count_rule: str = DEFAULT_COUNT_RULE,
) -> int:
    """Total tokens of ``messages`` as one request, under ``encoder_name`` and
    ``count_rule`` (OpenAI's framing by default; ``"seed"`` for the
    ``"<role> <text>"``). Safe to call from many threads at once; the
    counters, and their caches, are shared across the process."""
    conversation = as_messages(messages)
    check_messages(conversation)
    counter = _SHARED.get((encoder_name, count_rule))
    return sum(counter.counts(conversation)) + per_request_tokens(counter)
