"""Image dimensions from the first bytes of a file, without decoding it.

Token counting needs an image's width and height (providers bill images by
size), and an image in a request is a base64 string that may be megabytes
long. `image_size` reads PNG, JPEG (baseline, progressive, lossless
and arithmetic-coded frames, behind any number of EXIF, ICC or other
application segments), GIF and WebP (``VP8``, ``VP8L`` and ``VP8X``) headers;
`base64_image_size` does the same on base64 text, decoding only the
4-character groups that hold the bytes it reads (a JPEG's segments are
skipped by their lengths, so a 60 KB EXIF block before the frame header costs
nothing). A 10 MB data URL costs a few microseconds, not a full decode.

Every answer is an `ImageSize` or None: None means "unknown size"
(an unknown format, a truncated or malformed header, a zero dimension), never
an exception, so counting can fall back to its stated estimate.

>>> import base64, zlib
>>> png = b"\\x89PNG\\r\\n\\x1a\\n" + (13).to_bytes(4, "big") + b"IHDR"
>>> png += (640).to_bytes(4, "big") + (480).to_bytes(4, "big") + bytes(5)
>>> image_size(png)
ImageSize(width=640, height=480, format='png')
>>> base64_image_size(base64.b64encode(png).decode())
ImageSize(width=640, height=480, format='png')
"""

from __future__ import annotations

import base64
import binascii
from typing import Protocol

import attrs

__all__ = ["ImageSize", "base64_image_size", "data_url_image_size", "image_size"]

_JPEG_SCAN_LIMIT = 1 << 24
"""How far into a JPEG the frame header is looked for (16 MiB): further
than any real file's metadata, and a bound on a malformed file's walk."""
_JPEG_MAX_STEPS = 1 << 16
"""How many markers and fill bytes the walk reads at most (a real file has a
few dozen segments before its frame header)."""


@attrs.frozen(kw_only=True, slots=True)
class ImageSize:
    """An image's stored width and height in pixels, and its format
    (``"png"``, ``"jpeg"``, ``"gif"`` or ``"webp"``). The size is the one in
    the header, before any EXIF rotation (which swaps the sides and leaves
    every provider's bill the same)."""

    width: int
    height: int
    format: str


class _Source(Protocol):
    def read(self, offset: int, n: int) -> bytes:
        """Up to ``n`` bytes at ``offset`` (fewer at the end)."""


@attrs.frozen(slots=True)
class _Bytes:
    data: bytes

    def read(self, offset: int, n: int) -> bytes:
        return self.data[offset : offset + n]


class _Base64:
    """Bytes of base64 text, decoded a few groups at a time. Text that is not
    strict base64 where it is read is decoded once, leniently, as a whole:
    so is text wrapped in lines (MIME and PEM wrap at 76 and 64 characters,
    so a line break shows in the first 100), whose groups do not sit at
    offsets that are multiples of four."""

    __slots__ = ("_start", "_text", "_whole")

    def __init__(self, text: str, start: int = 0) -> None:
        self._text = text  # the base64 begins at ``start`` (a data URL's payload)
        self._start = start
        self._whole: bytes | None = None
        first_line = text[start : start + 100]
        if "\n" in first_line or "\r" in first_line or " " in first_line:
            self._lenient(0, 0)

    def read(self, offset: int, n: int) -> bytes:
        if self._whole is not None:
            return self._whole[offset : offset + n]
        first = offset // 3
        last = -(-(offset + n) // 3)
        base = self._start
        chunk = self._text[base + first * 4 : base + last * 4]
        try:
            decoded = binascii.a2b_base64(chunk, strict_mode=True)
        except (binascii.Error, ValueError):
            return self._lenient(offset, n)  # not strict base64 here, or unpadded at its end
        start = offset - first * 3
        return decoded[start : start + n]

    def _lenient(self, offset: int, n: int) -> bytes:
        try:
            text = self._text[self._start :]
            self._whole = base64.b64decode(text + "==", validate=False)
        except (binascii.Error, ValueError):
            self._whole = b""
        return self._whole[offset : offset + n]


def image_size(data: bytes) -> ImageSize | None:
    """The size in an image file's header, or None when the bytes are not a
    PNG, JPEG, GIF or WebP file whose header says a positive size."""
    return _size(_Bytes(bytes(data)))


def base64_image_size(text: str) -> ImageSize | None:
    """`image_size` of base64 ``text``, decoding only the header bytes."""
    return _size(_Base64(text))


def data_url_image_size(url: str) -> ImageSize | None:
    """`image_size` of a base64 ``data:`` URL, or None for any other URL."""
    if not url.startswith("data:"):
        return None
    marker = url.find(";base64,", 5, 512)
    if marker < 0:
        return None
    return _size(_Base64(url, marker + len(";base64,")))


def _size(source: _Source) -> ImageSize | None:
    head = source.read(0, 32)
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        found = _png(head)
    elif head.startswith(b"\xff\xd8"):
        found = _jpeg(source)
    elif head[:6] in (b"GIF87a", b"GIF89a"):
        found = _gif(head)
    elif head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        found = _webp(head)
    else:
        return None
    if found is None:
        return None
    width, height, kind = found
    if width <= 0 or height <= 0:
        return None
    return ImageSize(width=width, height=height, format=kind)


def _png(head: bytes) -> tuple[int, int, str] | None:
    # 8-byte signature, then the IHDR chunk: length, type, width, height.
    if len(head) < 24 or head[12:16] != b"IHDR":
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big"), "png"


def _gif(head: bytes) -> tuple[int, int, str] | None:
    # The logical screen descriptor after the 6-byte signature.
    if len(head) < 10:
        return None
    return int.from_bytes(head[6:8], "little"), int.from_bytes(head[8:10], "little"), "gif"


def _webp(head: bytes) -> tuple[int, int, str] | None:
    kind = head[12:16]
    if kind == b"VP8 " and len(head) >= 30:
        if head[23:26] != b"\x9d\x01\x2a":  # the key frame's start code
            return None
        width = int.from_bytes(head[26:28], "little") & 0x3FFF
        height = int.from_bytes(head[28:30], "little") & 0x3FFF
        return width, height, "webp"
    if kind == b"VP8L" and len(head) >= 25:
        if head[20] != 0x2F:  # the lossless signature byte
            return None
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1, "webp"
    if kind == b"VP8X" and len(head) >= 30:
        width = int.from_bytes(head[24:27], "little") + 1
        height = int.from_bytes(head[27:30], "little") + 1
        return width, height, "webp"
    return None


# Start-of-frame markers: every SOFn but DHT (C4), JPG (C8) and DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# Markers with no length field after them.
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD9)})


def _jpeg(source: _Source) -> tuple[int, int, str] | None:
    offset = 2
    for _ in range(_JPEG_MAX_STEPS):
        if offset >= _JPEG_SCAN_LIMIT:
            return None
        head = source.read(offset, 9)
        if len(head) < 2 or head[0] != 0xFF:
            return None
        marker = head[1]
        if marker == 0xFF:  # a fill byte before the marker
            offset += 1
            continue
        if marker in _STANDALONE:
            offset += 2
            continue
        if marker in (0xD9, 0xDA):  # end of image or start of scan: no frame header
            return None
        if len(head) < 4:
            return None
        length = int.from_bytes(head[2:4], "big")
        if length < 2:
            return None
        if marker in _SOF:
            if len(head) < 9:
                return None
            height = int.from_bytes(head[5:7], "big")
            width = int.from_bytes(head[7:9], "big")
            return width, height, "jpeg"
        offset += 2 + length
    return None
