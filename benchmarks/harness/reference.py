"""OpenAI's framing and the providers' image rules, counted on the request's
own JSON: the benchmark's independent check of the ``openai`` count rule.

This is the counting loop of OpenAI's guide "How to count tokens with
tiktoken", applied to chat-completions message objects as they are sent
(never to memrules' messages): 3 tokens per message, every string field
encoded on its own, 1 more for a ``name``, 3 for the reply's priming. The
guide stops short of tool traffic, so a tool call counts its ``id``,
``type``, function ``name`` and ``arguments``, a tool message its
``tool_call_id``, and a list ``content`` the text of its text parts; a part
with no type that holds ``thinking`` text counts that text, and a part of
any other type (audio, a block of no rule) the tokens of its JSON as sent,
memrules' stated estimate for parts it does not know.

Images are billed as OpenAI's "Images and vision" guide states for gpt-4o
(and gpt-4.1, gpt-4.5; other families differ only in the two figures, which
are parameters): ``detail: "low"`` costs 85; otherwise the image is scaled to
fit 2048 x 2048, then its shortest side to 768, and costs 85 plus 170 per
512-pixel tile. The size is read by decoding the image with Pillow (a data
URL's bytes); an image whose size cannot be known (a URL, bytes Pillow cannot
open) costs the most the rule bills, a 768 x 2048 image's 8 tiles: 1445.
A ``file`` part (a PDF) costs 3000 tokens a page plus that largest image per
page, its pages counted in the PDF's page objects, 10 pages when they cannot
be. An assistant message's ``reasoning_details`` (the chat format of
OpenRouter and others) count their text and summary, and encrypted data one
token per 4 characters.

:func:`anthropic_image_tokens` is Anthropic's rule ("Vision" guide): width x
height / 750, rounded up, after a resize to a long edge of at most 1568 px
and at most 784 x 1568 pixels.

It shares no code with :mod:`memrules._counting`, so a window that the rule
keeps within a budget is checked against a count the rule did not make.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "PER_MESSAGE",
    "PER_NAME",
    "PRIMING",
    "UNKNOWN_IMAGE_TOKENS",
    "anthropic_image_tokens",
    "image_dimensions",
    "openai_image_tokens",
    "openai_message_tokens",
    "openai_request_tokens",
]

PER_MESSAGE = 3
PER_NAME = 1
PRIMING = 3

BASE, PER_TILE = 85, 170  # gpt-4o's figures
UNKNOWN_IMAGE_TOKENS = BASE + 2 * 4 * PER_TILE  # 768 x 2048: 2 x 4 tiles
PDF_PAGE_TOKENS = 3000
PDF_DEFAULT_PAGES = 10
ENCRYPTED_CHARS_PER_TOKEN = 4


def image_dimensions(data: bytes) -> tuple[int, int] | None:
    """Width and height of an image file, by Pillow; None when it cannot
    open the bytes."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        return None


def _data_url_bytes(url: str) -> bytes | None:
    head, sep, payload = url.partition(",")
    if not url.startswith("data:") or not sep or not head.endswith(";base64"):
        return None
    try:
        return base64.b64decode(payload + "==")
    except (binascii.Error, ValueError):
        return None


def openai_image_tokens(
    width: int, height: int, detail: str | None = None, base: int = BASE, per_tile: int = PER_TILE
) -> int:
    """A ``width`` x ``height`` image by OpenAI's tile rule."""
    if detail == "low":
        return base
    w, h = width, height  # each scaled side rounded down, as the API bills
    if max(w, h) > 2048:
        long_side = max(w, h)
        w, h = max(1, w * 2048 // long_side), max(1, h * 2048 // long_side)
    if min(w, h) > 768:
        short_side = min(w, h)
        w, h = max(1, w * 768 // short_side), max(1, h * 768 // short_side)
    return base + math.ceil(w / 512) * math.ceil(h / 512) * per_tile


def anthropic_image_tokens(width: int, height: int) -> int:
    """A ``width`` x ``height`` image by Anthropic's rule."""
    scale = min(1.0, 1568 / max(width, height), math.sqrt(784 * 1568 / (width * height)))
    if scale < 1.0:
        width = max(1, math.floor(width * scale + 1e-9))
        height = max(1, math.floor(height * scale + 1e-9))
    return math.ceil(width * height / 750)


def _image_part(part: Mapping[str, Any]) -> int:
    image = part.get("image_url")
    url = (
        image
        if isinstance(image, str)
        else image.get("url")
        if isinstance(image, Mapping)
        else None
    )
    detail = image.get("detail") if isinstance(image, Mapping) else None
    if detail == "low":
        return BASE
    data = _data_url_bytes(url) if isinstance(url, str) else None
    size = image_dimensions(data) if data else None
    if size is None or min(size) < 1:
        return UNKNOWN_IMAGE_TOKENS
    return openai_image_tokens(size[0], size[1], detail if isinstance(detail, str) else None)


def _pdf_pages(data: bytes) -> int | None:
    if not data.startswith(b"%PDF"):
        return None
    pages = len(re.findall(rb"/Type\s*/Page(?![A-Za-z])", data))
    return pages or None


def _file_part(part: Mapping[str, Any]) -> int:
    fields = part.get("file")
    data = fields.get("file_data") if isinstance(fields, Mapping) else None
    raw = None
    if isinstance(data, str):
        raw = _data_url_bytes(data) if data.startswith("data:") else _b64(data)
    pages = (_pdf_pages(raw) if raw else None) or PDF_DEFAULT_PAGES
    return pages * (PDF_PAGE_TOKENS + UNKNOWN_IMAGE_TOKENS)


def _b64(text: str) -> bytes | None:
    try:
        return base64.b64decode(text + "==")
    except (binascii.Error, ValueError):
        return None


def _part_tokens(part: Any, count: Callable[[str], int]) -> int:
    if not isinstance(part, Mapping):
        return 0
    kind = part.get("type")
    if kind == "text":
        return count(part["text"])
    if kind == "image_url":
        return _image_part(part)
    if kind == "file":
        return _file_part(part)
    if kind is None and isinstance(part.get("thinking"), str):  # thinking of no provider
        return count(part["thinking"]) if part["thinking"] else 0
    return count(json.dumps(part, ensure_ascii=False))


def _reasoning_details(details: Any, count: Callable[[str], int]) -> int:
    total = 0
    for item in details if isinstance(details, list) else ():
        if not isinstance(item, Mapping):
            continue
        for key in ("text", "summary"):
            if isinstance(item.get(key), str):
                total += count(item[key])
        if isinstance(item.get("data"), str):
            total += -(-len(item["data"]) // ENCRYPTED_CHARS_PER_TOKEN)
    return total


def openai_message_tokens(message: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """One chat-completions message object, counted as the guide does."""
    total = PER_MESSAGE
    for key, value in message.items():
        if key == "content":
            if isinstance(value, str):
                total += count(value)
            elif isinstance(value, list):
                total += sum(_part_tokens(part, count) for part in value)
        elif key == "tool_calls" and isinstance(value, list):
            for call in value:
                kind = call.get("type", "function")
                body = call.get(kind, {})
                arguments = body.get("arguments", body.get("input", ""))
                total += count(call["id"]) + count(kind) + count(body["name"]) + count(arguments)
        elif key == "reasoning_details":
            total += _reasoning_details(value, count)
        elif isinstance(value, str):
            total += count(value)
            if key == "name":
                total += PER_NAME
    return total


def openai_request_tokens(
    messages: Iterable[Mapping[str, Any]], count: Callable[[str], int]
) -> int:
    """A request's messages, counted as the guide does, with the reply's
    priming."""
    return sum(openai_message_tokens(m, count) for m in messages) + PRIMING
