"""What every adapter shares: reading untrusted JSON, keeping what memrules
does not interpret, writing it back byte for byte, and images.

An adapter is a module with a reader and a writer built from these pieces; a
third format is one new module. The pieces:

Reading
    `array`, `mapping`, `required_str`,
    `optional_str`, `checked_str` and `typed` read untrusted
    JSON. Every check raises `MessageFormatError` with
    the message index and the field path (``content[2].type``), so malformed
    input never surfaces as a ``KeyError`` or ``TypeError`` from deep inside a
    loop. Strings are checked for lone surrogates and verbatim values for
    ``NaN`` and infinities (see `verbatim`): both are refused at input,
    because no UTF-8 writer can write the one and no JSON parser reads the
    other, and output must be written whole.
Keeping
    `unmapped` keeps the keys a reader does not map, as a
    `FrozenDict` in input order; `key_order`
    records the order of an object's keys when a writer would write them in
    another. The provider's name is the key they are kept under in
    ``metadata``/``extra`` (``"openai"``, ``"openai_keys"``).
Writing
    `finish` adds the kept keys back and puts every key in input order;
    `content_value` chooses between a string and a list of blocks;
    `write_text` and `write_opaque` write the parts both formats
    have.
Images
    `Image` is an image as any provider can send it. Each adapter
    registers an `ImageCodec` that reads its own image parts into an
    ``Image`` and writes one back, so a writer turns another provider's
    image into its own without knowing that provider's format.

Key order: writers build each object with memrules' keys in a fixed order
(the object's *rank*: ``role`` before ``content``), then the kept unknown keys
in input order. When the input had its keys in that order, nothing is
recorded and the output matches it; otherwise the reader records the input's
order (``"<provider>_keys"``) and the writer follows it. Either way, output
bytes follow input bytes, never the hash seed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, NoReturn

import attrs

from memrules._core.errors import MessageFormatError
from memrules._core.frozen import (
    FrozenDict,
    ValueProblem,
    freeze_json,
    has_surrogate,
    surrogate_problem,
    thaw,
)
from memrules._core.messages import ContentPart, Opaque, Part, Text

__all__ = [
    "MISSING",
    "Image",
    "ImageCodec",
    "array",
    "checked_str",
    "content_value",
    "fail",
    "finish",
    "is_array",
    "key_order",
    "list_form",
    "mapping",
    "optional_str",
    "rank",
    "read_text_or_opaque",
    "register_images",
    "required_str",
    "split_kind",
    "type_name",
    "typed",
    "unmapped",
    "verbatim",
    "write_opaque",
    "write_text",
]


class _Missing:
    """The value of a key that is absent, as distinct from one that is null."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


# --------------------------------------------------------------------------- reading


def type_name(value: object) -> str:
    """A JSON-minded name for the type of ``value``, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, str):
        return "str"
    if isinstance(value, Sequence):
        return "list"
    return type(value).__name__


def fail(message: str, index: int | None, field: str) -> NoReturn:
    raise MessageFormatError(message, index=index, field=field)


def is_array(value: object) -> bool:
    """True for a JSON array: a list, tuple or other sequence that is not text."""
    return isinstance(value, list) or (
        isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))
    )


def array(value: object, index: int | None, field: str, what: str) -> Sequence[Any]:
    if not is_array(value):
        fail(f"expected a list of {what}, got {type_name(value)}", index, field)
    return value  # type: ignore[return-value]


def mapping(value: object, index: int | None, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        fail(f"expected an object, got {type_name(value)}", index, field)
    return value


def _key(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def checked_str(value: str, index: int | None, field: str) -> str:
    """``value``, a string read from input, unless it holds a lone surrogate."""
    if has_surrogate(value):
        fail(surrogate_problem(value), index, field)
    return value


def required_str(raw: Mapping[str, Any], key: str, index: int | None, field: str) -> str:
    """``raw[key]``, which must be present and a string."""
    value = raw.get(key, MISSING)
    if value is MISSING:
        fail("missing", index, _key(field, key))
    if not isinstance(value, str):
        fail(f"expected a string, got {type_name(value)}", index, _key(field, key))
    if has_surrogate(value):
        fail(surrogate_problem(value), index, _key(field, key))
    return value


def optional_str(raw: Mapping[str, Any], key: str, index: int | None, field: str) -> Any:
    """``raw[key]`` if it is a string, None or MISSING; anything else is an error."""
    value = raw.get(key, MISSING)
    if value is MISSING or value is None:
        return value
    if not isinstance(value, str):
        fail(f"expected a string, got {type_name(value)}", index, _key(field, key))
    if has_surrogate(value):
        fail(surrogate_problem(value), index, _key(field, key))
    return value


def typed(item: object, index: int | None, where: str) -> tuple[Mapping[str, Any], str]:
    """A content part or block and its ``type``, which must be a string."""
    item = mapping(item, index, where)
    kind = item.get("type", MISSING)
    if kind is MISSING:
        fail("missing", index, f"{where}.type")
    if not isinstance(kind, str):
        fail(f"expected a string, got {type_name(kind)}", index, f"{where}.type")
    return item, kind


def verbatim(value: object, index: int | None, field: str) -> Any:
    """``value``, kept as it came, frozen in its key order.

    Refuses what cannot be written back as JSON: ``NaN`` and infinities,
    strings or keys with lone surrogates, non-string keys, values that are not
    JSON; the error names the place inside (``content[1].image_url.detail``).
    """
    try:
        return freeze_json(value)
    except ValueProblem as problem:
        fail(problem.problem, index, problem.where(field))


def unmapped(
    raw: Mapping[str, Any], known: Collection[str], index: int | None, field: str
) -> FrozenDict[str, Any] | None:
    """The entries of ``raw`` whose keys are not in ``known``, or None if there
    are none. These are kept verbatim so that the round trip is lossless."""
    if len(raw) <= len(known) and all(k in known for k in raw):
        return None
    rest = {k: v for k, v in raw.items() if k not in known}
    if not rest:
        return None
    frozen: FrozenDict[str, Any] = verbatim(rest, index, field)
    return frozen


def split_kind(kind: str) -> tuple[str, str]:
    """``"anthropic:image"`` -> ``("anthropic", "image")``; ``"image"`` -> ``("", "image")``."""
    provider, sep, rest = kind.partition(":")
    if not sep:
        return "", kind
    return provider, rest


# --------------------------------------------------------------------------- key order

_UNRANKED = 1 << 30  # keys memrules does not write itself come after its own


def rank(*keys: str) -> Mapping[str, int]:
    """The order in which a writer writes its own keys of an object."""
    return {key: i for i, key in enumerate(keys)}


_TEXT_RANK = rank("type", "text")


def key_order(raw: Mapping[str, Any], ranks: Mapping[str, int]) -> tuple[str, ...] | None:
    """None when a writer would write ``raw``'s keys in the order they came
    (its own keys by ``ranks``, then the others); otherwise the keys in input
    order, to record and write them back that way."""
    last = -1
    for key in raw:
        position = ranks.get(key, _UNRANKED)
        if position < last:
            return tuple(raw)
        last = position
    return None


def finish(
    out: dict[str, Any],
    fields: Mapping[str, Any] | None,
    order: Sequence[str] | None,
    ranks: Mapping[str, int],
) -> dict[str, Any]:
    """``out`` with the kept verbatim ``fields`` added (what memrules wrote
    wins) and its keys in the recorded ``order``, or else in rank order.

    ``out`` must hold memrules' own keys in rank order; then an object read
    with no recorded order comes out as it came, and ``out`` itself is
    returned when there is nothing to add or move.
    """
    if fields:
        for key, value in fields.items():
            if key not in out:
                out[key] = thaw(value)
        if order is None and key_order(out, ranks) is not None:
            order = ()
    if order is None:
        return out
    ordered = {key: out[key] for key in order if key in out}
    if len(ordered) < len(out):
        rest = sorted((k for k in out if k not in ordered), key=lambda k: ranks.get(k, _UNRANKED))
        for key in rest:
            ordered[key] = out[key]
    return ordered


# ------------------------------------------------------------------- parts both formats have


def read_text_or_opaque(
    item: Mapping[str, Any], kind: str, provider: str, index: int | None, where: str
) -> ContentPart:
    """A ``text`` part as `Text` (unknown keys and their order kept in
    ``extra[provider]`` and ``extra[provider + "_keys"]``), anything else as an
    `Opaque` of kind ``"<provider>:<type>"`` holding the whole part."""
    if kind == "text":
        text = required_str(item, "text", index, where)
        rest = unmapped(item, _TEXT_RANK, index, where)
        order = key_order(item, _TEXT_RANK)
        if rest is None and order is None:
            return Text(text=text)
        extra: dict[str, Any] = {}
        if rest is not None:
            extra[provider] = rest
        if order is not None:
            extra[f"{provider}_keys"] = order
        return Text(text=text, extra=extra)
    return Opaque(kind=f"{provider}:{kind}", payload=verbatim(item, index, where))


def _is_plain_text(part: Part, provider: str) -> bool:
    """True for a Text part with no kept fields: one that a string can say."""
    return isinstance(part, Text) and provider not in part.extra


def list_form(parts: Sequence[Part], provider: str) -> str | None:
    """``"list"`` when content read from a list would be written back as a
    string by default (no parts, or one plain text part), else None."""
    if not parts or (len(parts) == 1 and _is_plain_text(parts[0], provider)):
        return "list"
    return None


def _is_plain_block(block: Mapping[str, Any]) -> bool:
    return len(block) == 2 and block.get("type") == "text" and isinstance(block.get("text"), str)


def content_value(blocks: list[dict[str, Any]], form: str | None, empty: Any) -> Any:
    """How written ``blocks`` go out as ``content``: one plain text block as a
    string, anything else as the list, unless ``form`` says how the input had
    it (``"list"``, ``"string"``, ``"null"``, or ``"absent"``: MISSING, leave
    the key out). No blocks and no form is ``empty``."""
    if not blocks:
        if form is None:
            return empty
        if form == "absent":
            return MISSING
        if form == "null":
            return None
        return [] if form == "list" else ""
    if len(blocks) == 1 and form != "list" and _is_plain_block(blocks[0]):
        return blocks[0]["text"]
    return blocks


def write_text(part: Text, provider: str) -> dict[str, Any]:
    """A text part or block, with the fields kept for ``provider``."""
    out: dict[str, Any] = {"type": "text", "text": part.text}
    extra = part.extra
    if not extra:
        return out
    return finish(out, extra.get(provider), extra.get(f"{provider}_keys"), _TEXT_RANK)


def write_opaque(part: Opaque, provider: str) -> dict[str, Any] | None:
    """An opaque part as ``provider`` writes it: its own parts and parts of no
    provider (a kind without a colon) as their payload, when that is an
    object; another provider's image converted; None for anything else."""
    source, kind = split_kind(part.kind)
    payload = part.payload
    if source == provider or not source:
        return thaw(payload) if isinstance(payload, Mapping) else None
    codec = _IMAGE_CODECS.get(source)
    if codec is None or kind != codec.kind or not isinstance(payload, Mapping):
        return None
    image = codec.read(payload)
    if image is None:
        return None
    return _IMAGE_CODECS[provider].write(image)


# --------------------------------------------------------------------------- images


@attrs.frozen(kw_only=True, slots=True)
class Image:
    """An image as any provider can send it: at ``url``, or inline as base64
    ``data`` of ``media_type`` (when ``url`` is None)."""

    url: str | None = None
    media_type: str = ""
    data: str = ""

    @classmethod
    def from_url(cls, url: str) -> Image:
        """An image at ``url``; a base64 ``data:`` URL becomes inline data."""
        head, sep, data = url.partition(";base64,")
        if sep and head.startswith("data:"):
            return cls(media_type=head[len("data:") :], data=data)
        return cls(url=url)

    def as_url(self) -> str:
        """The image as a URL: its own, or a base64 ``data:`` URL."""
        if self.url is not None:
            return self.url
        return f"data:{self.media_type};base64,{self.data}"


@attrs.frozen(kw_only=True, slots=True)
class ImageCodec:
    """How one provider's image parts read into an `Image` and back.

    ``kind`` is the part type its images have (``"image_url"``); ``read``
    returns None for a part it cannot convert (a file reference).
    """

    provider: str
    kind: str
    read: Callable[[Mapping[str, Any]], Image | None]
    write: Callable[[Image], dict[str, Any]]


_IMAGE_CODECS: dict[str, ImageCodec] = {}


def register_images(codec: ImageCodec) -> ImageCodec:
    """Make ``codec`` the image codec of its provider. Each adapter module
    registers its own when it is imported (``memrules._adapters`` imports
    them all), so every writer can convert every registered provider's
    images."""
    _IMAGE_CODECS[codec.provider] = codec
    return codec
