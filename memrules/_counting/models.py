"""Which tokenizer a model counts with: a dated table of model families.

A budget is kept in the tokens the provider bills, so counting must use the
model's tokenizer. OpenAI publishes its encodings, and memrules ships the
two its chat models use (``o200k_base``, ``cl100k_base``, offline); Claude's
and Gemini's tokenizers are not published, so their rows are a stated
estimate: an OpenAI encoding's count times a margin, named in
``report.estimates`` (an exact Claude count asks Anthropic's endpoint:
``encoder_name: "anthropic:<model>"``).

- gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3, o4, gpt-oss: ``o200k_base``
  under ``openai``, exact (OpenAI's encoding for these models);
- gpt-4, gpt-3.5: ``cl100k_base`` under ``openai``, exact;
- gemini: ``o200k_base`` under ``openai``, times 1.35. Measured: Gemini 3
  Pro billed at most 1.30x (median 1.16x) memrules' ``o200k_base`` count on
  the 2,562 requests of the benchmark's 60 trajectories;
- claude, 3 to 4.6: ``o200k_base`` under ``anthropic``, times 1.4. Not
  measurable offline; published comparisons put Claude 3.5 Sonnet at up to
  1.30x gpt-4o's tokens (Python code);
- claude, 4.7 on: ``o200k_base`` under ``anthropic``, times 2.0. Not
  measurable offline; Anthropic states Opus 4.7's tokenizer uses up to
  1.35x Opus 4.6's tokens, and independent counts found up to 1.47x
  (1.30 x 1.47 = 1.91).

Names are matched after a provider's prefix (``openai/``, ``google/``,
``anthropic/``, ``models/``, ``anthropic.``, a region such as ``us.``) and a
fine-tune's ``ft:``, case aside. A model the table does not know gets no row:
the config's counter counts for it.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence
from datetime import date

import attrs

from memrules._core.bounded import BoundedTable
from memrules._core.messages import Message
from memrules._counting.tokens import (
    DEFAULT_CACHE_SIZE,
    BoundedCache,
    TokenCounter,
    published_sha256,
)

__all__ = [
    "DEFAULT_ENCODERS",
    "FAMILIES",
    "MODEL_TABLE",
    "TABLE_DATE",
    "LargerCounter",
    "ModelCounting",
    "ScaledCounter",
    "base_counter",
    "count_rule_for",
    "model_counting",
]

TABLE_DATE = date(2026, 12, 3)
"""When `MODEL_TABLE` was last checked against the providers' models."""


@attrs.frozen(kw_only=True, slots=True)
class ModelCounting:
    """How one model family is counted: with ``encoder`` (a bundled
    encoding) under ``count_rule``, times ``margin`` (1.0: exact), and why."""

    family: str
    encoder: str
    count_rule: str
    margin: float = 1.0
    source: str = ""

    @property
    def exact(self) -> bool:
        return self.margin == 1.0

    @property
    def note(self) -> str:
        """The line ``report.estimates`` gives a message counted by this row
        when it is an estimate."""
        return (
            f"{self.family}: {self.encoder} x {self.margin:g}, a stated estimate "
            f"(table of {TABLE_DATE.isoformat()}; {self.source})"
        )


_O200K = "o200k_base"
_CL100K = "cl100k_base"
_OPENAI_SOURCE = "OpenAI's encoding for the model"
_GEMINI = ModelCounting(
    family="gemini",
    encoder=_O200K,
    count_rule="openai",
    margin=1.35,
    source="Gemini 3 Pro billed at most 1.30x this count on 2,562 benchmark requests",
)
_CLAUDE = ModelCounting(
    family="claude",
    encoder=_O200K,
    count_rule="anthropic",
    margin=1.4,
    source="not measured offline; published: Claude 3.5 Sonnet up to 1.30x gpt-4o's tokens",
)
_CLAUDE_NEW = ModelCounting(
    family="claude (4.7 on)",
    encoder=_O200K,
    count_rule="anthropic",
    margin=2.0,
    source="not measured offline; published: Opus 4.7 up to 1.47x Opus 4.6's tokens",
)

MODEL_TABLE: tuple[tuple[re.Pattern[str], ModelCounting], ...] = (
    (
        re.compile(r"(chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o1|o3|o4)(\b|-|$)"),
        ModelCounting(family="gpt-4o", encoder=_O200K, count_rule="openai", source=_OPENAI_SOURCE),
    ),
    (
        re.compile(r"(gpt-4|gpt-3\.5|gpt-35)(\b|-|$)"),
        ModelCounting(family="gpt-4", encoder=_CL100K, count_rule="openai", source=_OPENAI_SOURCE),
    ),
    (re.compile(r"gemini"), _GEMINI),
    (re.compile(r"claude"), _CLAUDE),
)
"""Each family's pattern (matched at the start of the normalised name) and
its counting, first match wins; Claude's version decides between its rows
(see `model_counting`)."""

FAMILIES = "gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3, o4, gpt-4, gpt-3.5, gemini, claude"
"""The families of `MODEL_TABLE`, as errors list them."""

_PREFIX = re.compile(
    r"^(?:ft:)?(?:(?:openai|google|anthropic|models|vertex_ai|azure|bedrock)/)*"
    r"(?:(?:us|eu|apac|global)\.)?(?:anthropic\.)?"
)
_CLAUDE_VERSION = re.compile(r"claude-(?:[a-z]+-)?(\d+)(?:[-.](\d{1,2}))?(?!\d)")


def _claude_row(name: str) -> ModelCounting:
    found = _CLAUDE_VERSION.match(name)
    if found is None:
        return _CLAUDE
    major, minor = int(found.group(1)), int(found.group(2) or 0)
    if name.startswith("claude-") and major < 10 and (major, minor) >= (4, 7):
        return _CLAUDE_NEW
    return _CLAUDE


def model_counting(model: str | None) -> ModelCounting | None:
    """The table's row for ``model``, or None for a model it does not know.

    >>> model_counting("gpt-4o-2024-08-06").encoder
    'o200k_base'
    >>> model_counting("openai/gpt-4-turbo").encoder
    'cl100k_base'
    >>> model_counting("claude-sonnet-4-5").margin, model_counting("claude-opus-4-7").margin
    (1.4, 2.0)
    >>> model_counting("llama-3") is None
    True
    """
    if not isinstance(model, str) or not model:
        return None
    name = _PREFIX.sub("", model.strip().lower(), count=1)
    for pattern, row in MODEL_TABLE:
        if pattern.match(name):
            return _claude_row(name) if row is _CLAUDE else row
    return None


class ScaledCounter:
    """A `TokenCounter` that counts ``margin`` times what
    ``base`` counts, rounded up, text and messages alike: the stated
    estimate of a model whose tokenizer is not public. Its caches are safe
    to share between threads."""

    __slots__ = ("_cache", "base", "margin", "note")

    def __init__(self, base: TokenCounter, margin: float, *, note: str = "") -> None:
        if not (isinstance(margin, int | float) and margin >= 1.0):
            msg = f"margin={margin!r} must be a number of at least 1"
            raise ValueError(msg)
        self.base = base
        self.margin = float(margin)
        self.note = note
        self._cache = BoundedCache(self._compute, DEFAULT_CACHE_SIZE)

    @property
    def name(self) -> str:
        return f"{self.base.name}x{self.margin:g}"

    def _compute(self, message: Message) -> int:
        return math.ceil(self.base.count(message) * self.margin)

    def count(self, message: Message) -> int:
        return self._cache.get(message)

    def counts(self, messages: Sequence[Message]) -> tuple[int, ...]:
        return self._cache.many(messages)

    def count_text(self, text: str) -> int:
        return math.ceil(self.base.count_text(text) * self.margin) if text else 0

    def __repr__(self) -> str:
        return f"ScaledCounter({self.base!r}, margin={self.margin:g})"


class LargerCounter:
    """A `TokenCounter` that counts the larger of two
    counters' counts, text and messages alike: the default when neither the
    config nor the request names the model (``cl100k_base`` and
    ``o200k_base``: neither encoding counts more than the other on every
    text, so the larger keeps a budget under both OpenAI families)."""

    __slots__ = ("_cache", "_lock", "_texts", "first", "second")

    def __init__(self, first: TokenCounter, second: TokenCounter) -> None:
        self.first = first
        self.second = second
        self._cache = BoundedCache(self._compute, DEFAULT_CACHE_SIZE)
        # Texts counted by both encodings, so that a text counted again (a
        # strategy's stub, a part measured on each request) is encoded twice
        # once, not on every request. Texts up to `_TEXT_MAX` characters.
        self._texts: BoundedTable[str, int] = BoundedTable(DEFAULT_CACHE_SIZE)
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"max({self.first.name},{self.second.name})"

    @property
    def vocabulary_sha256(self) -> str | None:
        """The published sha256 of each vocabulary, ``+`` between (what a
        trace records of the encoder), or None when either has none."""
        hashes = [published_sha256(c.name) for c in (self.first, self.second)]
        return None if None in hashes else "+".join(str(h) for h in hashes)

    def _compute(self, message: Message) -> int:
        return max(self.first.count(message), self.second.count(message))

    def count(self, message: Message) -> int:
        return self._cache.get(message)

    def counts(self, messages: Sequence[Message]) -> tuple[int, ...]:
        return self._cache.many(messages)

    def count_text(self, text: str) -> int:
        if len(text) > _TEXT_MAX:
            return max(self.first.count_text(text), self.second.count_text(text))
        found = self._texts.get(text)
        if found is None:
            found = max(self.first.count_text(text), self.second.count_text(text))
            with self._lock:
                self._texts.add(text, found)
        return found

    def __repr__(self) -> str:
        return f"LargerCounter({self.first!r}, {self.second!r})"


_TEXT_MAX = 1 << 16
"""The longest text whose count `LargerCounter` keeps (characters)."""

DEFAULT_ENCODERS = (_CL100K, _O200K)
"""What counts when neither the config nor the request names a model the
table knows: the larger of these encodings' counts."""


def base_counter(encoder_name: str | None, model: str | None) -> TokenCounter:
    """The counter a config's ``encoder_name`` and ``model`` (or a request's
    model) choose: the encoder named, else the table's row for the model
    (scaled by its margin when it is an estimate), else the larger of the
    `DEFAULT_ENCODERS`' counts."""
    from memrules._counting.named import counter_for, counter_named

    if encoder_name is not None:
        return counter_named(encoder_name)
    row = model_counting(model)
    if row is None:
        return LargerCounter(*(counter_for(name) for name in DEFAULT_ENCODERS))
    counter = counter_for(row.encoder)
    return counter if row.exact else ScaledCounter(counter, row.margin, note=row.note)


def count_rule_for(count_rule: str | None, encoder_name: str | None, model: str | None) -> str:
    """The count rule's name: ``count_rule`` when given, else the table's
    row's for the model when the model chooses the encoder, else ``openai``."""
    if count_rule is not None:
        return count_rule
    row = model_counting(model) if encoder_name is None else None
    return "openai" if row is None else row.count_rule
