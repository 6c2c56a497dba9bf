"""Old images out: ``strip_old_images`` replaces images past the newest few
with a short text stub that says what was there.

An agent that takes a screenshot a step resends every old one on every
request: forty screenshots are tens of thousands of tokens the model no
longer looks at. The stub keeps the history readable (which tool made the
image, its file name, its size) at a few tokens each.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs

from memrules._core.conversation import turns
from memrules._core.messages import Conversation, Message, Opaque, Part, Text, ToolCall, ToolResult
from memrules._counting.imagesize import base64_image_size, data_url_image_size
from memrules._engine.contract import Outcome, Strategy, StrategyContext, StrategyResult
from memrules.strategies._util import check_positive
from memrules.strategies.registry import describe, register

__all__ = ["STUB_PREFIX", "image_stub", "is_image", "strip_old_images"]

STUB_PREFIX = "[memrules: image removed to save context"

_IMAGE_TYPES = frozenset(("image", "image_url", "input_image"))


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _type(part: Opaque) -> str:
    kind = _get(part.payload, "type")
    return kind if isinstance(kind, str) else part.kind.rpartition(":")[2]


def is_image(part: Part) -> bool:
    """Whether ``part`` is an image (an OpenAI ``image_url`` or
    ``input_image`` part, an Anthropic ``image`` block), by any provider."""
    return type(part) is Opaque and _type(part) in _IMAGE_TYPES


def _source(part: Opaque) -> tuple[str | None, str | None]:
    """The image's URL (not a data URL) and its base64 data, if any."""
    payload = part.payload
    kind = _type(part)
    if kind == "image":
        source = _get(payload, "source")
        url, data = _get(source, "url"), _get(source, "data")
        return (url if isinstance(url, str) else None, data if isinstance(data, str) else None)
    image = _get(payload, "image_url")  # chat: an object with a url; Responses: the url
    url = image if isinstance(image, str) else _get(image, "url")
    if kind == "image_url" and url is None:
        url = _get(payload, "url")
    if not isinstance(url, str):
        return None, None
    if url.startswith("data:"):
        return None, url
    return url, None


def image_stub(part: Opaque, tool: str | None = None, path: str | None = None) -> str:
    """The text that stands in for the image ``part``: which ``tool`` made
    it, its file name (``path``, else the last segment of its URL) and its
    size (read from its bytes) when known.

    >>> image_stub(Opaque(kind="openai:image_url", payload={
    ...     "type": "image_url", "image_url": {"url": "https://x/shots/a.png"}}), "screenshot")
    '[memrules: image removed to save context: from screenshot, a.png]'
    """
    url, data = _source(part)
    details: list[str] = []
    if tool:
        details.append(f"from {tool}")
    name = path
    if name is None and url:
        name = urlsplit(url).path.rpartition("/")[2] or None
    if name:
        details.append(name)
    if data is not None:
        size = data_url_image_size(data) if data.startswith("data:") else base64_image_size(data)
        if size is not None:
            details.append(f"{size.width}x{size.height} {size.format.upper()}")
        details.append(f"{len(data) * 3 // 4:,} bytes")
    return STUB_PREFIX + (": " + ", ".join(details) if details else "") + "]"


_PATH_KEYS = ("path", "file", "filename", "file_path")


def _call_path(call: ToolCall) -> str | None:
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        return None
    if not isinstance(arguments, dict):
        return None
    for key in _PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value.rpartition("/")[2]
    return None


def _images(conversation: Conversation) -> list[tuple[int, int, int | None]]:
    """Every image as (message index, part index, content index or None)."""
    found: list[tuple[int, int, int | None]] = []
    for i, m in enumerate(conversation):
        for j, part in enumerate(m.parts):
            if type(part) is Opaque:
                if is_image(part):
                    found.append((i, j, None))
            elif type(part) is ToolResult and not isinstance(part.content, str):
                found.extend((i, j, k) for k, p in enumerate(part.content) if is_image(p))
    return found


@attrs.frozen(slots=True, repr=False)
class _StripOldImages:
    keep_images: int | None
    keep_turns: int | None

    def _kept(
        self, conversation: Conversation, images: list[tuple[int, int, int | None]]
    ) -> set[int]:
        """Positions in ``images`` that stay."""
        if self.keep_turns is not None:
            recent = turns(conversation)[-self.keep_turns :] if self.keep_turns else ()
            first = recent[0].start if recent else len(conversation)
            return {k for k, (i, _, _) in enumerate(images) if i >= first}
        keep = self.keep_images or 0
        return set(range(max(0, len(images) - keep), len(images)))

    def __call__(self, conversation: Conversation, context: StrategyContext) -> StrategyResult:
        images = _images(conversation)
        if not images:
            return conversation
        kept = self._kept(conversation, images)
        survivors = context.measure.track(conversation).survivors()
        targets: dict[int, dict[tuple[int, int | None], None]] = {}
        for k, (i, j, c) in enumerate(images):
            if k in kept or i in survivors:
                continue
            targets.setdefault(i, {})[(j, c)] = None
        if not targets:
            return conversation
        calls = {
            p.id: p for m in conversation if m.call_ids for p in m.parts if isinstance(p, ToolCall)
        }
        count = context.counter.count
        out = list(conversation)
        n = saved = 0
        for i, where in targets.items():
            stubbed = _stubbed(conversation[i], where, calls)
            gain = count(conversation[i]) - count(stubbed)
            if gain < 0:  # the stubs cost more than the images (tiny ones, or a text-only count)
                continue
            out[i] = stubbed
            n += len(where)
            saved += gain
        if not n:
            return conversation
        stripped = tuple(out)
        return Outcome(
            messages=stripped, note=f"replaced {n} old images by stubs, reclaimed {saved} tokens"
        )

    def __repr__(self) -> str:
        return describe("strip_old_images", self)


def _stubbed(
    message: Message, where: Mapping[tuple[int, int | None], None], calls: Mapping[str, ToolCall]
) -> Message:
    parts = list(message.parts)
    for j, part in enumerate(message.parts):
        if type(part) is Opaque and (j, None) in where:
            parts[j] = Text(text=image_stub(part))
        elif type(part) is ToolResult and not isinstance(part.content, str):
            call = calls.get(part.call_id)
            tool = call.name if call is not None else None
            path = _call_path(call) if call is not None else None
            content = tuple(
                Text(text=image_stub(p, tool, path)) if (j, k) in where and type(p) is Opaque else p
                for k, p in enumerate(part.content)
            )
            if any(a is not b for a, b in zip(content, part.content, strict=True)):
                parts[j] = attrs.evolve(part, content=content)
    return message.evolve(parts=tuple(parts))


@register("strip_old_images")
def strip_old_images(*, keep_images: int | None = None, keep_turns: int | None = None) -> Strategy:
    """Replace every image but the newest ``keep_images`` (3 when neither is
    set), or every image older than the newest ``keep_turns`` turns, with
    a short text stub naming the tool whose result held it, its file name
    and its size. The report's note says how many went and the tokens
    reclaimed (by the pipeline's counter: under the ``openai`` and
    ``anthropic`` count rules, what the provider bills for them). A message
    whose stubs would cost more than its images (images of a few pixels, or
    a counter that prices no image, as the ``seed`` rule's) is left as it is.

    Keeps: survivors untouched (the latest user message keeps its images,
    as the newest screenshot of an agent loop must), order, every message
    and tool id (only parts are rewritten), the same tuple when no image
    goes.
    """
    if keep_images is not None and keep_turns is not None:
        msg = (
            f"keep_images={keep_images!r} and keep_turns={keep_turns!r} are both set; "
            "keep one (the newest images, or the images of the newest turns)"
        )
        raise ValueError(msg)
    if keep_turns is not None:
        check_positive("keep_turns", keep_turns, minimum=0)
        return _StripOldImages(None, keep_turns)
    keep = 3 if keep_images is None else keep_images
    check_positive("keep_images", keep, minimum=0)
    return _StripOldImages(keep, None)
