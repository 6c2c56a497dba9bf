"""What the parts that are not text cost: images, documents, thinking, reasoning.

A provider bills an image by its size, a PDF by its pages, a thinking block
by its text, and reasoning it encrypted by tokens nobody outside can count.
Counted as text, all of them would be 0 tokens (they are
`Opaque` parts), and a request of
screenshots would sail over its budget while memrules called it small.
`opaque_tokens` prices one such part under a
`ContentCounting` (the config's ``counting:`` section) and an image
rule (`memrules._counting.images`), and says how the figure was
derived, so that the report can state every estimate that stood in.

What each part costs:

- images (``image_url``, ``input_image``, ``image``) and documents
  (``document``, ``file``, ``input_file``): `opaque_cost`,
  by the provider's published rule over the size read from the image's
  bytes, or a stated estimate for an image whose size cannot be read (a
  URL, a file id) and for PDF pages;
- thinking (Anthropic ``thinking``; a part of no provider whose payload has
  ``thinking`` text): its text, by the counter (the signature is the
  provider's check on the text, not text the model reads);
- encrypted reasoning (Anthropic ``redacted_thinking``'s ``data``, an OpenAI
  ``reasoning`` item's ``encrypted_content``): the tokens the provider
  reported for it when the caller passes them (``reasoning_tokens`` in the
  message's metadata, from the response's usage), else one token per
  ``encrypted_chars_per_token`` characters of the encrypted text (4: the
  text inside is shorter than its encryption in base64, so this never
  counts less than it holds); a reasoning item's readable ``summary`` by
  the counter;
- anything else (audio, a provider's block memrules does not know, such as
  ``{"type": "weird_block", ...}``): the tokens of its JSON (its payload
  written as JSON, or its kind when it carries no payload), by the counter,
  a stated estimate (`unknown_part_cost`). No part counts 0 because
  memrules does not know it: what the provider reads of a block is at most
  what it was sent, and the JSON is what it was sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.frozen import thaw
from memrules._core.messages import Message, Opaque, ToolResult
from memrules._counting.images import (
    ANTHROPIC_RULE,
    DEFAULT_ESTIMATES,
    GPT_4O,
    OPENAI_RULES,
    ImageEstimates,
    ImageRule,
    PartCost,
    opaque_cost,
    openai_rule,
)

__all__ = [
    "DEFAULT_COUNTING",
    "REASONING_TOKENS_KEY",
    "ContentCounting",
    "content_costs",
    "counting_from_config",
    "image_rule_for",
    "message_content_tokens",
    "opaque_parts",
    "opaque_tokens",
    "reported_reasoning_tokens",
    "unknown_part_cost",
]

TextCount = Callable[[str], int]

REASONING_TOKENS_KEY = "reasoning_tokens"
"""The metadata key under which a caller passes the reasoning tokens the
provider reported for an assistant message (its usage's
``reasoning_tokens``); they stand in for the estimate of its encrypted
reasoning."""


def _positive_int(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not int or value < 1:
        msg = f"{attribute.name}={value!r} must be a whole number of at least 1"
        raise ValueError(msg)


def _image_model(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if not isinstance(value, str) or openai_rule(value, default=_NO_RULE) is _NO_RULE:
        known = ", ".join(OPENAI_RULES)
        msg = (
            f"{attribute.name}={value!r} is no model family of OpenAI's image guide; "
            f"known: {known} (or a dated snapshot of one)"
        )
        raise ValueError(msg)


_NO_RULE = attrs.evolve(GPT_4O, family="")


@attrs.frozen(kw_only=True, slots=True)
class ContentCounting:
    """How images, documents and reasoning are counted (the ``counting:``
    section of a config).

    ``image_model``: the OpenAI model family whose image rule the ``openai``
    count rule uses (None: the config's ``encoder_name`` when it names such
    a model, else gpt-4o's tiles). ``estimates``: the figures used where an
    image's bytes cannot say (`ImageEstimates`).
    ``encrypted_chars_per_token``: characters of encrypted reasoning counted
    as one token when the provider's reported usage is not passed (4).
    """

    image_model: str | None = attrs.field(default=None, validator=_image_model)
    estimates: ImageEstimates = DEFAULT_ESTIMATES
    encrypted_chars_per_token: int = attrs.field(default=4, validator=_positive_int)

    @property
    def __memrules_canonical__(self) -> dict[str, Any]:
        """The ``counting:`` section's YAML keys for this value (what a
        trace records, and rebuilds the section from)."""
        estimates = self.estimates
        size = estimates.unknown_size
        return {
            "image_model": self.image_model,
            "unknown_image_size": None if size is None else list(size),
            "pdf_page_tokens": estimates.pdf_page_tokens,
            "pdf_page_image": estimates.pdf_page_image,
            "default_pdf_pages": estimates.default_pdf_pages,
            "encrypted_chars_per_token": self.encrypted_chars_per_token,
        }


DEFAULT_COUNTING = ContentCounting()

_ESTIMATE_FIELDS = ("pdf_page_tokens", "pdf_page_image", "default_pdf_pages")


def counting_from_config(
    *,
    image_model: str | None = None,
    unknown_image_size: tuple[int, int] | list[int] | None = None,
    pdf_page_tokens: int = DEFAULT_ESTIMATES.pdf_page_tokens,
    pdf_page_image: bool = DEFAULT_ESTIMATES.pdf_page_image,
    default_pdf_pages: int = DEFAULT_ESTIMATES.default_pdf_pages,
    encrypted_chars_per_token: int = 4,
) -> ContentCounting:
    """The ``counting:`` section's value from its YAML keys; every value it
    cannot use is one problem of one `ConfigError`, at
    ``counting.<key>``.

    >>> counting_from_config(unknown_image_size=[1024, 768]).estimates.unknown_size
    (1024, 768)
    """
    problems: list[ConfigProblem] = []

    def problem(key: str, message: str) -> None:
        problems.append(ConfigProblem(message=message, yaml_path=f"counting.{key}"))

    size: tuple[int, int] | None = None
    if unknown_image_size is not None:
        pair = tuple(unknown_image_size) if isinstance(unknown_image_size, list | tuple) else ()
        if len(pair) == 2 and all(type(v) is int and v > 0 for v in pair):
            size = (pair[0], pair[1])
        else:
            problem(
                "unknown_image_size",
                f"unknown_image_size={unknown_image_size!r} must be [width, height], "
                "two whole numbers of at least 1, or null",
            )
    if not isinstance(pdf_page_image, bool):
        problem("pdf_page_image", f"pdf_page_image={pdf_page_image!r} must be true or false")
    wholes: tuple[tuple[str, object], ...] = (
        ("pdf_page_tokens", pdf_page_tokens),
        ("default_pdf_pages", default_pdf_pages),
        ("encrypted_chars_per_token", encrypted_chars_per_token),
    )
    for key, value in wholes:
        if type(value) is not int or value < 1:
            problem(key, f"{key}={value!r} must be a whole number of at least 1")
    try:
        _image_model(None, attrs.fields_dict(ContentCounting)["image_model"], image_model)
    except ValueError as exc:
        problem("image_model", str(exc))
    if problems:
        raise ConfigError(problems)
    estimates = ImageEstimates(
        unknown_size=size,
        pdf_page_tokens=pdf_page_tokens,
        pdf_page_image=pdf_page_image,
        default_pdf_pages=default_pdf_pages,
    )
    return ContentCounting(
        image_model=image_model,
        estimates=estimates,
        encrypted_chars_per_token=encrypted_chars_per_token,
    )


def image_rule_for(
    rule_name: str, counting: ContentCounting, model: str | None = None
) -> ImageRule:
    """The image rule a count rule named ``rule_name`` prices images by:
    Anthropic's for ``anthropic``; for the others, OpenAI's rule of
    ``counting.image_model``, else of ``model`` (the config's
    ``encoder_name``) when it names a family of the guide, else gpt-4o's."""
    if rule_name == "anthropic":
        return ANTHROPIC_RULE
    if counting.image_model is not None:
        return openai_rule(counting.image_model)
    return openai_rule(model) if model else GPT_4O


# ------------------------------------------------------------------- the parts


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def reported_reasoning_tokens(message: Message) -> int | None:
    """The reasoning tokens the caller passed for ``message`` (its
    ``reasoning_tokens`` metadata), or None."""
    found = message.metadata.get(REASONING_TOKENS_KEY)
    return found if type(found) is int and found >= 0 else None


def _encrypted(text: object, counting: ContentCounting) -> int:
    if not isinstance(text, str) or not text:
        return 0
    return -(-len(text) // counting.encrypted_chars_per_token)


def _summary_text(summary: object) -> str:
    if isinstance(summary, str):
        return summary
    if not isinstance(summary, tuple | list):
        return ""
    texts = (_get(s, "text") for s in summary)
    return "\n".join(t for t in texts if isinstance(t, str))


def _reasoning_cost(
    payload: Any, kind: str, count_text: TextCount, counting: ContentCounting
) -> PartCost | None:
    """Thinking and reasoning parts, or None for a part that is neither."""
    if kind == "thinking" or (kind == "" and isinstance(_get(payload, "thinking"), str)):
        text = _get(payload, "thinking")
        tokens = count_text(text) if isinstance(text, str) and text else 0
        return PartCost(tokens=tokens, what="thinking", measured=True, note="thinking, counted")
    if kind == "redacted_thinking":
        tokens = _encrypted(_get(payload, "data"), counting)
        note = f"redacted thinking: characters / {counting.encrypted_chars_per_token} (estimate)"
        return PartCost(tokens=tokens, what="thinking", measured=False, note=note)
    if kind == "reasoning":
        summary = _summary_text(_get(payload, "summary"))
        readable = count_text(summary) if summary else 0
        content = _summary_text(_get(payload, "content"))
        readable += count_text(content) if content else 0
        secret = _encrypted(_get(payload, "encrypted_content"), counting)
        note = "reasoning summary, counted"
        if secret:
            note = (
                f"reasoning: encrypted content, characters / "
                f"{counting.encrypted_chars_per_token} (estimate)"
            )
        return PartCost(tokens=readable + secret, what="reasoning", measured=not secret, note=note)
    return None


def _as_json(part: Opaque) -> str:
    """``part`` as the JSON it was sent as: its payload (its kind when it
    has none)."""
    if part.payload is None:
        return part.kind
    try:
        return json.dumps(thaw(part.payload), ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):  # not JSON: what it shows
        return f"{part.kind} {part.payload!s}"


def unknown_part_cost(part: Opaque, count_text: TextCount) -> PartCost:
    """What a part memrules does not price costs: the tokens of its JSON
    (see `_as_json`), a stated estimate.

    >>> from memrules._counting.tokens import estimate_tokens
    >>> cost = unknown_part_cost(Opaque(kind="openai:weird_block",
    ...     payload={"type": "weird_block", "data": "x"}), estimate_tokens)
    >>> cost.tokens > 0, cost.measured, cost.note
    (True, False, "unknown part 'weird_block': the tokens of its JSON (estimate)")
    """
    kind = _get(part.payload, "type")
    if not isinstance(kind, str):
        kind = part.kind.rpartition(":")[2] or "opaque"
    note = f"unknown part {kind[:40]!r}: the tokens of its JSON (estimate)"
    return PartCost(tokens=count_text(_as_json(part)), what="other", measured=False, note=note)


def opaque_tokens(
    part: Opaque,
    rule: ImageRule,
    counting: ContentCounting,
    count_text: TextCount,
) -> PartCost:
    """What ``part`` costs (see the module docs): a part memrules does not
    price costs the tokens of its JSON (`unknown_part_cost`)."""
    payload = part.payload
    kind = _get(payload, "type")
    if not isinstance(kind, str):
        source, _, named = part.kind.rpartition(":")
        kind = named if source or named in ("thinking", "redacted_thinking", "reasoning") else ""
    found = _reasoning_cost(payload, kind, count_text, counting)
    if found is not None:
        return found
    priced = opaque_cost(part, rule, counting.estimates, count_text=count_text)
    return priced if priced is not None else unknown_part_cost(part, count_text)


def opaque_parts(message: Message) -> tuple[tuple[str, Opaque], ...]:
    """Every opaque part of ``message`` with where it is
    (``parts[i]`` or ``parts[i].content[j]``), in order."""
    found: list[tuple[str, Opaque]] = []
    for i, part in enumerate(message.parts):
        if type(part) is Opaque:
            found.append((f"parts[{i}]", part))
        elif type(part) is ToolResult and not isinstance(part.content, str):
            found.extend(
                (f"parts[{i}].content[{j}]", p)
                for j, p in enumerate(part.content)
                if type(p) is Opaque
            )
    return tuple(found)


def _is_encrypted(part: Opaque) -> bool:
    payload = part.payload
    kind = _get(payload, "type") or part.kind.rpartition(":")[2]
    return kind == "redacted_thinking" or (
        kind == "reasoning" and isinstance(_get(payload, "encrypted_content"), str)
    )


def content_costs(
    message: Message,
    rule: ImageRule,
    counting: ContentCounting,
    count_text: TextCount,
    *,
    sent: Callable[[Opaque], bool] | None = None,
) -> tuple[tuple[str, PartCost], ...]:
    """What each opaque part of ``message`` that ``sent`` accepts (all by
    default) costs, with where it is. Encrypted reasoning counts the
    reasoning tokens the caller reported for the message, when given
    (once, on its first encrypted part), instead of its estimate."""
    reported = reported_reasoning_tokens(message)
    costs: list[tuple[str, PartCost]] = []
    for where, part in opaque_parts(message):
        if sent is not None and not sent(part):
            continue
        if reported is not None and _is_encrypted(part):
            summary = _summary_text(_get(part.payload, "summary"))
            tokens = (count_text(summary) if summary else 0) + reported
            note = f"reasoning: {reported} tokens as the provider reported"
            costs.append(
                (where, PartCost(tokens=tokens, what="reasoning", measured=True, note=note))
            )
            reported = 0
            continue
        costs.append((where, opaque_tokens(part, rule, counting, count_text)))
    return tuple(costs)


def message_content_tokens(
    message: Message,
    rule: ImageRule,
    counting: ContentCounting,
    count_text: TextCount,
    *,
    sent: Callable[[Opaque], bool] | None = None,
) -> int:
    """The tokens of ``message``'s opaque parts (`content_costs`)."""
    for part in message.parts:  # the usual message has no opaque part: no tuple built
        if type(part) is Opaque or (type(part) is ToolResult and not isinstance(part.content, str)):
            break
    else:
        return 0
    return sum(c.tokens for _, c in content_costs(message, rule, counting, count_text, sent=sent))
