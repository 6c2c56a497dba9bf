"""What images and documents cost, by each provider's published rule.

Providers bill an image by its size, not by the text of its base64, and a
PDF by its pages. This module holds those rules as plain functions over
``(width, height, detail, rule)`` and one entry point for counting,
`opaque_cost`, which prices an `Opaque`
image or document part under a rule and says how the figure was derived
(dimensions read from the image's bytes, or a stated estimate). It does no
I/O: a URL is never fetched, and base64 is decoded only as far as the header
(`memrules._counting.imagesize`).

The rules, as the providers document them (read 2026-12-01):

OpenAI, tiles (`TileRule`)
    "Images and vision" guide, *Calculating costs*, section "GPT 4o,
    GPT-4.1, GPT-4o-mini, CUA, and o-series (except o4-mini)", in the
    version whose tables list gpt-5 and gpt-5-mini (published after
    August 2025). ``detail: "low"`` costs the base tokens. ``high`` (and
    ``auto`` or no detail, counted as ``high``: the guide lets the model
    choose, and the budget needs the upper figure): scale to fit in
    2048 x 2048, then scale down so the shortest side is 768, count the
    512-pixel tiles that cover it, tokens = base + tiles x per-tile. Base and
    per-tile: gpt-5 and gpt-5-chat-latest 70 / 140; gpt-4o, gpt-4.1,
    gpt-4.5 85 / 170; gpt-4o-mini 2833 / 5667; o1, o1-pro, o3 75 / 150;
    computer-use-preview 65 / 129. The guide's examples: 1024 x 1024 high is
    765 tokens, 2048 x 4096 high is 1105, any low-detail image 85 (gpt-4o).
    Scaled sides are rounded down (what the API was observed to bill at
    tile boundaries).
OpenAI, patches (`PatchRule`)
    Same guide, section "GPT-4.1-mini, GPT-4.1-nano, o4-mini" (its
    multiplier table also lists gpt-5-mini and gpt-5-nano): count the
    32-pixel patches covering the image; over 1536, scale by
    ``r = sqrt(32² x 1536 / (w x h))``, then by ``min(floor(w r / 32) /
    (w r / 32), floor(h r / 32) / (h r / 32))`` so one side is a whole number
    of patches; patches = ``ceil(w' / 32) x ceil(h' / 32)``, at most 1536;
    tokens = patches x the model's multiplier (gpt-5-mini and gpt-4.1-mini
    1.62, gpt-5-nano and gpt-4.1-nano 2.46, o4-mini 1.72), rounded up. The
    guide's examples: 1024 x 1024 is 1024 patches, 1800 x 2400 is 1452. The
    guide gives no low-detail figure for these models; ``detail`` is
    ignored.
Anthropic (`AreaRule`)
    "Vision" guide, *Calculate image costs*: ``tokens = (width px x height
    px) / 750`` for an image that is not resized, rounded up (its table:
    200 x 200 is ~54, 1000 x 1000 ~1334, 1092 x 1092 ~1590). Larger images
    are resized first, keeping the aspect ratio, to a long edge of at most
    1568 px and at most ``max_pixels``. The guide recommends "no more than
    1.15 megapixels", but lists sizes up to 784 x 1568 (1.23 MP) among the
    largest it sends without resizing, so the default cap is 1,229,312
    pixels: the figure for every size in that table is the guide's own, and
    a resized image is never counted under what it is billed.

What is estimated, and stated as such in each `PartCost` note
(`ImageEstimates` holds the figures, all configurable):

- An image whose size is unknown (a URL, a file id, bytes whose header
  cannot be read) costs what the largest image the rule bills costs
  (`largest_image_tokens`: 1445 under gpt-4o's tiles at high detail,
  1640 under Anthropic's rule), unless ``unknown_size`` names a size to
  assume: a budget checked with it is never overrun by such an image.
- A PDF costs ``pdf_page_tokens`` per page (3000: the top of the "1,500 to
  3,000 tokens per page" Anthropic's PDF guide states for the extracted
  text) plus, with ``pdf_page_image``, one largest image per page (both
  providers also send each page as an image). Pages are counted in a
  base64 PDF's bytes (its ``/Type /Page`` objects, else the largest
  ``/Count`` of its page tree); a PDF at a URL, a file id, or one whose
  pages hide in compressed object streams counts ``default_pdf_pages``.
- A text document (Anthropic's ``text`` and ``content`` sources) costs its
  text, by the caller's counter when one is passed, else one token per
  ``chars_per_token`` characters.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

import attrs

from memrules._core.messages import Opaque
from memrules._counting.imagesize import ImageSize, base64_image_size, data_url_image_size

__all__ = [
    "ANTHROPIC_RULE",
    "DEFAULT_ESTIMATES",
    "GPT_4O",
    "OPENAI_RULES",
    "AreaRule",
    "Detail",
    "ImageEstimates",
    "ImageRule",
    "PartCost",
    "PatchRule",
    "TileRule",
    "area_tokens",
    "image_tokens",
    "largest_image_tokens",
    "opaque_cost",
    "openai_rule",
    "patch_count",
    "patch_tokens",
    "pdf_pages",
    "tile_tokens",
]

Detail: TypeAlias = Literal["low", "high", "auto"]
TextCount: TypeAlias = Callable[[str], int]

_positive = attrs.validators.and_(attrs.validators.instance_of(int), attrs.validators.gt(0))


def _ceil(value: float) -> int:
    """``ceil``, forgiving the float error of a product that is whole."""
    return math.ceil(value - 1e-9)


@attrs.frozen(kw_only=True, slots=True)
class TileRule:
    """OpenAI's tile rule for one model family: ``base`` tokens, plus
    ``per_tile`` for each ``tile``-pixel square after fitting the image in a
    ``fit`` square and scaling its shortest side down to ``short_side``."""

    family: str
    base: int = attrs.field(validator=_positive)
    per_tile: int = attrs.field(validator=_positive)
    fit: int = attrs.field(default=2048, validator=_positive)
    short_side: int = attrs.field(default=768, validator=_positive)
    tile: int = attrs.field(default=512, validator=_positive)


@attrs.frozen(kw_only=True, slots=True)
class PatchRule:
    """OpenAI's patch rule for one model family: ``patch``-pixel patches, at
    most ``max_patches``, times the family's ``multiplier``."""

    family: str
    multiplier: float = attrs.field(validator=attrs.validators.gt(0))
    patch: int = attrs.field(default=32, validator=_positive)
    max_patches: int = attrs.field(default=1536, validator=_positive)


@attrs.frozen(kw_only=True, slots=True)
class AreaRule:
    """Anthropic's rule: one token per ``pixels_per_token`` pixels, after
    resizing to a long edge of at most ``long_edge`` and at most
    ``max_pixels`` pixels."""

    family: str = "claude"
    long_edge: int = attrs.field(default=1568, validator=_positive)
    max_pixels: int = attrs.field(default=784 * 1568, validator=_positive)
    pixels_per_token: int = attrs.field(default=750, validator=_positive)


ImageRule: TypeAlias = TileRule | PatchRule | AreaRule
"""How one provider's model family bills an image."""


# ------------------------------------------------------------------------ the rules


def tile_tokens(width: int, height: int, detail: str | None, rule: TileRule) -> int:
    """Tokens of a ``width`` x ``height`` image under OpenAI's tile ``rule``:
    the base for ``detail="low"``, base + tiles x per-tile otherwise.

    >>> tile_tokens(1024, 1024, "high", GPT_4O), tile_tokens(2048, 4096, "auto", GPT_4O)
    (765, 1105)
    """
    if detail == "low":
        return rule.base
    w, h = width, height
    if max(w, h) > rule.fit:  # fit in the square
        if w >= h:
            w, h = rule.fit, max(1, h * rule.fit // w)
        else:
            w, h = max(1, w * rule.fit // h), rule.fit
    if min(w, h) > rule.short_side:  # shortest side down to short_side
        if w <= h:
            w, h = rule.short_side, max(1, h * rule.short_side // w)
        else:
            w, h = max(1, w * rule.short_side // h), rule.short_side
    tiles = -(-w // rule.tile) * -(-h // rule.tile)
    return rule.base + tiles * rule.per_tile


def patch_count(width: int, height: int, rule: PatchRule) -> int:
    """The patches that cover a ``width`` x ``height`` image under OpenAI's
    patch ``rule``, after its downscale, at most ``max_patches``.

    >>> patch_count(1024, 1024, OPENAI_RULES["gpt-4.1-mini"])
    1024
    >>> patch_count(1800, 2400, OPENAI_RULES["gpt-4.1-mini"])
    1452
    """
    size, budget = rule.patch, rule.max_patches
    raw = -(-width // size) * -(-height // size)
    if raw <= budget:
        return raw
    r = math.sqrt(size * size * budget / (width * height))
    across, down = width * r / size, height * r / size
    r *= min(math.floor(across) / across, math.floor(down) / down)
    patches = _ceil(width * r / size) * _ceil(height * r / size)
    return min(patches, budget)


def patch_tokens(width: int, height: int, rule: PatchRule) -> int:
    """Tokens of an image under OpenAI's patch ``rule``: its patches times
    the family's multiplier, rounded up."""
    return _ceil(patch_count(width, height, rule) * rule.multiplier)


def area_tokens(width: int, height: int, rule: AreaRule) -> int:
    """Tokens of a ``width`` x ``height`` image under Anthropic's rule: its
    pixels after the resize, over ``pixels_per_token``, rounded up.

    >>> area_tokens(200, 200, ANTHROPIC_RULE), area_tokens(1092, 1092, ANTHROPIC_RULE)
    (54, 1590)
    """
    scale = min(
        1.0,
        rule.long_edge / max(width, height),
        math.sqrt(rule.max_pixels / (width * height)),
    )
    if scale < 1.0:
        width = max(1, min(rule.long_edge, math.floor(width * scale + 1e-9)))
        height = max(1, min(rule.long_edge, math.floor(height * scale + 1e-9)))
    return -(-(width * height) // rule.pixels_per_token)


def image_tokens(width: int, height: int, detail: str | None, rule: ImageRule) -> int:
    """Tokens of a ``width`` x ``height`` image under any ``rule``."""
    if isinstance(rule, TileRule):
        return tile_tokens(width, height, detail, rule)
    if isinstance(rule, PatchRule):
        return patch_tokens(width, height, rule)
    return area_tokens(width, height, rule)


def largest_image_tokens(rule: ImageRule, detail: str | None = None) -> int:
    """The most any one image costs under ``rule`` (at ``detail``): what an
    image of unknown size is counted as by default."""
    if isinstance(rule, TileRule):
        return tile_tokens(rule.short_side, rule.fit, detail, rule)
    if isinstance(rule, PatchRule):
        return _ceil(rule.max_patches * rule.multiplier)
    pixels = min(rule.max_pixels, rule.long_edge * rule.long_edge)
    return -(-pixels // rule.pixels_per_token)


GPT_4O = TileRule(family="gpt-4o", base=85, per_tile=170)
"""The tile rule of gpt-4o, gpt-4.1 and gpt-4.5: 85 + 170 per tile."""

ANTHROPIC_RULE = AreaRule()
"""Anthropic's rule with its documented limits."""


def _families() -> dict[str, ImageRule]:
    rules: dict[str, ImageRule] = {}
    for names, base, per_tile in (
        (("gpt-5", "gpt-5-chat-latest"), 70, 140),
        (("gpt-4o", "chatgpt-4o-latest", "gpt-4.1", "gpt-4.5"), 85, 170),
        (("gpt-4o-mini",), 2833, 5667),
        (("o1", "o1-pro", "o3"), 75, 150),
        (("computer-use-preview",), 65, 129),
    ):
        for name in names:
            rules[name] = TileRule(family=name, base=base, per_tile=per_tile)
    for name, multiplier in (
        ("gpt-5-mini", 1.62),
        ("gpt-5-nano", 2.46),
        ("gpt-4.1-mini", 1.62),
        ("gpt-4.1-nano", 2.46),
        ("o4-mini", 1.72),
    ):
        rules[name] = PatchRule(family=name, multiplier=multiplier)
    return rules


OPENAI_RULES: Mapping[str, ImageRule] = MappingProxyType(_families())
"""OpenAI's image rules by model family, as its guide lists them."""


def openai_rule(model: str, default: ImageRule = GPT_4O) -> ImageRule:
    """The rule of the family ``model`` belongs to: the longest family name
    that is the model or that it extends with a ``-`` suffix (a dated
    snapshot: ``gpt-4o-mini-2024-07-18`` is ``gpt-4o-mini``); ``default``
    for a model the guide does not list (its ``family`` says which rule was
    used).

    >>> openai_rule("gpt-4.1-mini-2025-04-14").family
    'gpt-4.1-mini'
    """
    best: ImageRule | None = None
    for name, rule in OPENAI_RULES.items():
        if (model == name or model.startswith(name + "-")) and (
            best is None or len(name) > len(best.family)
        ):
            best = rule
    return default if best is None else best


# ----------------------------------------------------------------------- estimates


def _size_pair(_: object, attribute: attrs.Attribute[Any], value: tuple[int, int] | None) -> None:
    if value is None:
        return
    if not (
        isinstance(value, tuple)
        and len(value) == 2
        and all(type(v) is int and v > 0 for v in value)
    ):
        msg = f"{attribute.name}={value!r}: expected None or (width, height), both positive ints"
        raise ValueError(msg)


@attrs.frozen(kw_only=True, slots=True)
class ImageEstimates:
    """The figures used where the bytes cannot say (see the module docs).

    ``unknown_size``: the size assumed for an image of unknown size; None
    (the default) counts the largest image the rule bills.
    ``pdf_page_tokens``: tokens of one PDF page's text (3000).
    ``pdf_page_image``: whether each page also costs one largest image (True).
    ``default_pdf_pages``: pages of a PDF whose pages cannot be counted (10).
    ``chars_per_token``: for a text document when no counter is passed (4).
    """

    unknown_size: tuple[int, int] | None = attrs.field(default=None, validator=_size_pair)
    pdf_page_tokens: int = attrs.field(default=3000, validator=_positive)
    pdf_page_image: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    default_pdf_pages: int = attrs.field(default=10, validator=_positive)
    chars_per_token: int = attrs.field(default=4, validator=_positive)


DEFAULT_ESTIMATES = ImageEstimates()


@attrs.frozen(kw_only=True, slots=True)
class PartCost:
    """What one image or document part costs, and how that was worked out.

    ``what`` is ``"image"`` or ``"document"`` (``"thinking"`` or
    ``"reasoning"`` for what `memrules._counting.content` prices,
    ``"other"`` for a part it does not know);
    ``measured`` is True when the figure comes from the part's own bytes
    (an image's header, a PDF's page objects, a document's text) and False
    when an estimate stood in;
    ``note`` says it in a few words for the report."""

    tokens: int
    what: Literal["image", "document", "thinking", "reasoning", "other"]
    measured: bool
    note: str
    size: ImageSize | None = None
    pages: int | None = None


def _rule_name(rule: ImageRule, detail: str | None) -> str:
    if isinstance(rule, TileRule):
        shown = "low" if detail == "low" else "high" if detail in (None, "auto") else detail
        return f"{rule.family} tiles, detail {shown}"
    if isinstance(rule, PatchRule):
        return f"{rule.family} patches x {rule.multiplier}"
    return f"{rule.family}: pixels / {rule.pixels_per_token}"


def _image_cost(
    size: ImageSize | None,
    detail: str | None,
    rule: ImageRule,
    estimates: ImageEstimates,
    why_unknown: str,
) -> PartCost:
    name = _rule_name(rule, detail)
    if size is not None:
        tokens = image_tokens(size.width, size.height, detail, rule)
        note = f"{size.format} {size.width}x{size.height} read from its bytes ({name})"
        return PartCost(tokens=tokens, what="image", measured=True, note=note, size=size)
    if estimates.unknown_size is not None:
        width, height = estimates.unknown_size
        tokens = image_tokens(width, height, detail, rule)
        note = f"{why_unknown}: estimated as {width}x{height} ({name})"
    else:
        tokens = largest_image_tokens(rule, detail)
        note = f"{why_unknown}: estimated as the largest image the rule bills ({name})"
    return PartCost(tokens=tokens, what="image", measured=False, note=note)


# --------------------------------------------------------------------------- PDFs

_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_COUNT = re.compile(rb"/Type\s*/Pages\b[^>]*?/Count\s+(\d+)|/Count\s+(\d+)[^>]*?/Type\s*/Pages\b")


def pdf_pages(data: bytes) -> int | None:
    """The pages of a PDF file: its ``/Type /Page`` objects, else the
    largest ``/Count`` of a ``/Type /Pages`` node; None when the bytes are
    not a PDF or neither is in plain sight (compressed object streams)."""
    if not data.startswith(b"%PDF"):
        return None
    pages = len(_PAGE.findall(data))
    if pages:
        return pages
    counts = [int(a or b) for a, b in _COUNT.findall(data)]
    return max(counts) if counts and max(counts) > 0 else None


def _decode(text: str) -> bytes:
    """Base64 ``text`` (bare, or a ``data:`` URL's payload), leniently."""
    if text.startswith("data:"):
        marker = text.find(";base64,", 5, 512)
        if marker < 0:
            return b""
        text = text[marker + len(";base64,") :]
    try:
        return base64.b64decode(text + "==", validate=False)
    except (binascii.Error, ValueError):
        return b""


def _pdf_cost(data: str | None, rule: ImageRule, estimates: ImageEstimates, where: str) -> PartCost:
    pages = pdf_pages(_decode(data)) if data else None
    per_page = estimates.pdf_page_tokens
    if estimates.pdf_page_image:
        per_page += largest_image_tokens(rule)
    if pages is not None:
        note = f"PDF, {pages} pages counted in its bytes, x {per_page} tokens a page (estimate)"
        measured = True
    else:
        pages = estimates.default_pdf_pages
        note = f"{where}: {pages} pages assumed, x {per_page} tokens a page (estimate)"
        measured = False
    return PartCost(
        tokens=pages * per_page, what="document", measured=measured, note=note, pages=pages
    )


# ---------------------------------------------------------------------- the parts


def _get(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _text_cost(text: str, count_text: TextCount | None, estimates: ImageEstimates) -> PartCost:
    if count_text is not None:
        return PartCost(
            tokens=count_text(text), what="document", measured=True, note="text document, counted"
        )
    tokens = -(-len(text) // estimates.chars_per_token)
    note = f"text document, {len(text)} characters / {estimates.chars_per_token} (estimate)"
    return PartCost(tokens=tokens, what="document", measured=False, note=note)


def _url_image(url: Any, detail: Any, rule: ImageRule, estimates: ImageEstimates) -> PartCost:
    detail = detail if isinstance(detail, str) else None
    if not isinstance(url, str):
        return _image_cost(None, detail, rule, estimates, "image by file id, size unknown")
    if url.startswith("data:"):
        size = data_url_image_size(url)
        return _image_cost(size, detail, rule, estimates, "data URL with no readable header")
    return _image_cost(None, detail, rule, estimates, "image at a URL, size unknown")


def _anthropic_source(
    source: Any,
    rule: ImageRule,
    estimates: ImageEstimates,
    count_text: TextCount | None,
    document: bool,
) -> PartCost:
    kind = _get(source, "type")
    data = _get(source, "data")
    if document:
        if kind == "text" and isinstance(data, str):
            return _text_cost(data, count_text, estimates)
        if kind == "content":
            return _content_cost(_get(source, "content"), rule, estimates, count_text)
        where = "PDF at a URL" if kind == "url" else "PDF by file id" if kind == "file" else "PDF"
        return _pdf_cost(
            data if kind == "base64" and isinstance(data, str) else None, rule, estimates, where
        )
    if kind == "base64" and isinstance(data, str):
        size = base64_image_size(data)
        return _image_cost(size, None, rule, estimates, "base64 image with no readable header")
    if kind == "url":
        return _image_cost(None, None, rule, estimates, "image at a URL, size unknown")
    return _image_cost(None, None, rule, estimates, "image by file id, size unknown")


def _content_cost(
    blocks: Any, rule: ImageRule, estimates: ImageEstimates, count_text: TextCount | None
) -> PartCost:
    """A document of content blocks: its text blocks' text and its images."""
    texts: list[str] = []
    images: list[PartCost] = []
    for block in blocks if isinstance(blocks, tuple | list) else ():
        if _get(block, "type") == "text" and isinstance(_get(block, "text"), str):
            texts.append(_get(block, "text"))
        elif _get(block, "type") == "image":
            images.append(
                _anthropic_source(_get(block, "source"), rule, estimates, count_text, False)
            )
    text = _text_cost("\n".join(texts), count_text, estimates)
    tokens = text.tokens + sum(i.tokens for i in images)
    measured = text.measured and all(i.measured for i in images)
    note = f"document of {len(texts)} text and {len(images)} image blocks"
    return PartCost(tokens=tokens, what="document", measured=measured, note=note)


def opaque_cost(
    part: Opaque,
    rule: ImageRule,
    estimates: ImageEstimates = DEFAULT_ESTIMATES,
    *,
    count_text: TextCount | None = None,
) -> PartCost | None:
    """What the image or document ``part`` costs under ``rule``, or None
    when it is neither (a thinking block, audio, a provider block memrules
    does not price).

    The part is read by its payload's ``type``, whichever provider wrote it
    (an image read from OpenAI is billed by Anthropic's rule when it goes to
    Anthropic): ``image_url`` (OpenAI chat, ``detail`` honoured),
    ``input_image`` (OpenAI Responses), ``image`` (Anthropic: base64, url or
    file source), ``file`` and ``input_file`` (OpenAI file inputs: PDFs),
    and ``document`` (Anthropic: a base64 or URL PDF, a text or content
    source). Never raises on a malformed payload: what cannot be read is
    estimated, and the note says so.

    >>> cost = opaque_cost(Opaque(kind="openai:image_url", payload={
    ...     "type": "image_url", "image_url": {"url": "https://example.com/a.png"}}), GPT_4O)
    >>> cost.tokens, cost.measured
    (1445, False)
    """
    payload = part.payload
    kind = _get(payload, "type")
    if kind is None:
        kind = part.kind.rpartition(":")[2]
    if kind == "image_url":
        image = _get(payload, "image_url")
        url = image if isinstance(image, str) else _get(image, "url")
        return _url_image(url, _get(image, "detail"), rule, estimates)
    if kind == "input_image":
        return _url_image(_get(payload, "image_url"), _get(payload, "detail"), rule, estimates)
    if kind == "image":
        return _anthropic_source(_get(payload, "source"), rule, estimates, count_text, False)
    if kind == "document":
        return _anthropic_source(_get(payload, "source"), rule, estimates, count_text, True)
    if kind in ("file", "input_file"):
        fields = _get(payload, "file") if kind == "file" else payload
        data = _get(fields, "file_data")
        where = "file by id or URL" if not isinstance(data, str) else "file"
        return _pdf_cost(data if isinstance(data, str) else None, rule, estimates, where)
    return None
