"""Image sizes read from headers, and the providers' image and document rules.

Every image here is a real file written by Pillow; sizes read from it are
checked against what Pillow itself reports when it opens the file. The
rules are checked against the worked examples in the providers' guides.
"""

from __future__ import annotations

import base64
import io
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrules._core.messages import Opaque
from memrules._counting.images import (
    ANTHROPIC_RULE,
    DEFAULT_ESTIMATES,
    GPT_4O,
    OPENAI_RULES,
    AreaRule,
    ImageEstimates,
    PatchRule,
    TileRule,
    area_tokens,
    image_tokens,
    largest_image_tokens,
    opaque_cost,
    openai_rule,
    patch_count,
    patch_tokens,
    pdf_pages,
    tile_tokens,
)
from memrules._counting.imagesize import (
    ImageSize,
    base64_image_size,
    data_url_image_size,
    image_size,
)

Image = pytest.importorskip("PIL.Image")

# (Pillow format, save options, the format memrules names)
FORMATS = [
    ("PNG", {}, "png"),
    ("JPEG", {}, "jpeg"),
    ("JPEG", {"progressive": True}, "jpeg"),
    ("GIF", {}, "gif"),
    ("WEBP", {"quality": 50}, "webp"),
    ("WEBP", {"lossless": True}, "webp"),
]
SIZES = [(1, 1), (3, 2), (511, 512), (512, 512), (513, 512), (2049, 64), (4000, 30), (7, 3000)]


def encode(fmt: str, width: int, height: int, mode: str = "RGB", **options: object) -> bytes:
    out = io.BytesIO()
    Image.new(mode, (width, height), 90).save(out, fmt, **options)
    return out.getvalue()


def pillow_size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# ---------------------------------------------------------------- sizes from headers


@pytest.mark.parametrize(("fmt", "options", "name"), FORMATS)
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_size_of_each_format_equals_pillows(
    fmt: str, options: dict[str, object], name: str, width: int, height: int
) -> None:
    data = encode(fmt, width, height, **options)
    expected = ImageSize(width=width, height=height, format=name)
    assert pillow_size(data) == (width, height)
    assert image_size(data) == expected
    assert base64_image_size(b64(data)) == expected
    assert data_url_image_size(f"data:image/{name};base64,{b64(data)}") == expected


def test_webp_extended_header() -> None:
    """Lossy WebP with alpha is written as VP8X (an extended header)."""
    data = encode("WEBP", 300, 200, mode="RGBA")
    assert data[12:16] == b"VP8X"
    assert image_size(data) == ImageSize(width=300, height=200, format="webp")


def test_jpeg_behind_a_large_exif_block() -> None:
    """A 60 KB EXIF segment and an ICC profile before the frame header."""
    exif = Image.Exif()
    exif[0x010E] = "x" * 60_000  # ImageDescription
    out = io.BytesIO()
    Image.new("RGB", (640, 480), 3).save(
        out, "JPEG", exif=exif.tobytes(), icc_profile=b"\0" * 5000, progressive=True
    )
    data = out.getvalue()
    if data[2:4] == b"\xff\xe0":  # drop Pillow's JFIF segment, as cameras write no JFIF
        data = data[:2] + data[4 + int.from_bytes(data[4:6], "big") :]
    assert data[2:4] == b"\xff\xe1"  # APP1 (EXIF) comes first
    assert pillow_size(data) == (640, 480)
    assert image_size(data) == ImageSize(width=640, height=480, format="jpeg")
    assert base64_image_size(b64(data)) == ImageSize(width=640, height=480, format="jpeg")


class _Watched(str):
    """A str that records the furthest character sliced out of it."""

    furthest = 0

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        if isinstance(key, slice):
            _Watched.furthest = max(_Watched.furthest, key.stop or len(self))
        return str.__getitem__(self, key)


def test_a_10mb_data_url_is_read_only_at_its_header() -> None:
    png = encode("PNG", 1920, 1080)
    url = _Watched(f"data:image/png;base64,{b64(png + bytes(10_000_000))}")
    _Watched.furthest = 0
    assert data_url_image_size(url) == ImageSize(width=1920, height=1080, format="png")
    assert _Watched.furthest < 200
    exif = Image.Exif()
    exif[0x010E] = "x" * 60_000
    out = io.BytesIO()
    Image.new("RGB", (64, 48)).save(out, "JPEG", exif=exif.tobytes())
    jpeg = _Watched(b64(out.getvalue() + bytes(10_000_000)))
    _Watched.furthest = 0
    assert base64_image_size(jpeg) == ImageSize(width=64, height=48, format="jpeg")
    assert _Watched.furthest < 100_000  # the EXIF block is skipped, not decoded


def test_base64_with_line_breaks() -> None:
    data = encode("JPEG", 33, 44)
    wrapped = base64.encodebytes(data).decode("ascii")  # 76-character lines
    assert base64_image_size(wrapped) == ImageSize(width=33, height=44, format="jpeg")


@pytest.mark.parametrize(("fmt", "options", "name"), FORMATS)
def test_every_truncation_is_unknown_or_right(
    fmt: str, options: dict[str, object], name: str
) -> None:
    data = encode(fmt, 123, 45, **options)
    right = ImageSize(width=123, height=45, format=name)
    for cut in range(min(len(data), 700)):
        assert image_size(data[:cut]) in (None, right)
        assert base64_image_size(b64(data[:cut])) in (None, right)
    assert image_size(data[:5]) is None


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"hello",
        b"\x89PNG\r\n\x1a\n" + bytes(16),  # zero width and height
        b"\xff\xd8\xff\xda\x00\x02",  # a scan before any frame header
        b"\xff\xd8\xff\xe0\x00\x00",  # a segment length below 2
        b"\xff\xd8" + b"\xff" * 200_000,  # fill bytes only
        b"RIFF\0\0\0\0WEBPVP8 " + bytes(20),  # no key-frame start code
        b"GIF89a\x00\x00\x05\x00",
    ],
)
def test_garbage_is_unknown(data: bytes) -> None:
    assert image_size(data) is None
    assert base64_image_size(b64(data)) is None


@pytest.mark.parametrize("text", ["", "!!!!", "not base64 at all", "iVBORw0K", "/9j/" + "@" * 50])
def test_bad_base64_is_unknown(text: str) -> None:
    assert base64_image_size(text) is None
    assert data_url_image_size("data:image/png;base64," + text) is None


def test_urls_that_are_not_base64_data_urls() -> None:
    assert data_url_image_size("https://example.com/a.png") is None
    assert data_url_image_size("data:image/svg+xml,<svg/>") is None


@settings(max_examples=40, deadline=None)
@given(
    fmt=st.sampled_from(FORMATS),
    width=st.integers(1, 2600),
    height=st.integers(1, 2600),
)
def test_sizes_read_equal_pillows(
    fmt: tuple[str, dict[str, object], str], width: int, height: int
) -> None:
    name, options, kind = fmt
    data = encode(name, width, height, mode="L" if name != "WEBP" else "RGB", **options)
    size = image_size(data)
    assert size is not None
    assert (size.width, size.height) == pillow_size(data)
    assert size.format == kind
    assert base64_image_size(b64(data)) == size


@settings(max_examples=200)
@given(st.binary(max_size=300), st.sampled_from([b"", b"\xff\xd8", b"\x89PNG\r\n\x1a\n", b"RIFF"]))
def test_random_bytes_never_raise(tail: bytes, head: bytes) -> None:
    size = image_size(head + tail)
    assert size is None or (size.width > 0 and size.height > 0)
    assert base64_image_size(b64(head + tail)) == size


@settings(max_examples=200)
@given(st.text(max_size=200))
def test_random_text_never_raises(text: str) -> None:
    size = base64_image_size(text)
    assert size is None or (size.width > 0 and size.height > 0)


# ------------------------------------------------------------------ OpenAI's tile rule


def test_openai_tile_examples() -> None:
    """The guide's examples for gpt-4o."""
    assert tile_tokens(1024, 1024, "high", GPT_4O) == 765  # 4 tiles
    assert tile_tokens(2048, 4096, "high", GPT_4O) == 1105  # 768x1536: 6 tiles
    assert tile_tokens(4096, 8192, "low", GPT_4O) == 85


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    [
        (1, 1, 85 + 170),
        (512, 512, 85 + 170),  # one tile
        (513, 512, 85 + 2 * 170),
        (513, 513, 85 + 4 * 170),
        (768, 768, 85 + 4 * 170),
        (1920, 1080, 85 + 6 * 170),  # 1365x768
        (2049, 100, 85 + 4 * 170),  # fit: 2048x99
        (100, 5000, 85 + 4 * 170),  # fit: 40x2048
    ],
)
def test_openai_tile_sizes(width: int, height: int, tokens: int) -> None:
    assert tile_tokens(width, height, "high", GPT_4O) == tokens
    assert tile_tokens(width, height, "auto", GPT_4O) == tokens
    assert tile_tokens(width, height, None, GPT_4O) == tokens


def test_openai_families_base_and_tile() -> None:
    four_tiles = {
        "gpt-5": 70 + 4 * 140,
        "gpt-4.1": 765,
        "gpt-4.5": 765,
        "gpt-4o-mini": 2833 + 4 * 5667,
        "o1": 75 + 4 * 150,
        "o3": 75 + 4 * 150,
        "computer-use-preview": 65 + 4 * 129,
    }
    for family, tokens in four_tiles.items():
        rule = OPENAI_RULES[family]
        assert image_tokens(1024, 1024, "high", rule) == tokens, family
    assert tile_tokens(1024, 1024, "low", OPENAI_RULES["gpt-4o-mini"]) == 2833


# ----------------------------------------------------------------- OpenAI's patch rule


def test_openai_patch_examples() -> None:
    """The guide's examples: 1024x1024 is 1024 patches, 1800x2400 is 1452."""
    mini = OPENAI_RULES["gpt-4.1-mini"]
    assert isinstance(mini, PatchRule)
    assert patch_count(1024, 1024, mini) == 1024
    assert patch_count(1800, 2400, mini) == 1452
    assert patch_tokens(1024, 1024, mini) == math.ceil(1024 * 1.62)
    assert patch_tokens(1800, 2400, OPENAI_RULES["gpt-4.1-nano"]) == math.ceil(1452 * 2.46)
    assert patch_tokens(1800, 2400, OPENAI_RULES["o4-mini"]) == math.ceil(1452 * 1.72)
    # detail does not change it
    assert image_tokens(1024, 1024, "low", mini) == image_tokens(1024, 1024, "high", mini)


@settings(max_examples=300)
@given(st.integers(1, 20_000), st.integers(1, 20_000))
def test_patches_never_exceed_the_budget(width: int, height: int) -> None:
    rule = OPENAI_RULES["gpt-5-mini"]
    assert isinstance(rule, PatchRule)
    count = patch_count(width, height, rule)
    assert 1 <= count <= 1536
    if math.ceil(width / 32) * math.ceil(height / 32) <= 1536:
        assert count == math.ceil(width / 32) * math.ceil(height / 32)


# -------------------------------------------------------------------- Anthropic's rule


def test_anthropic_examples() -> None:
    """The guide's table: 200x200 ~54, 1000x1000 ~1334, 1092x1092 ~1590."""
    assert area_tokens(200, 200, ANTHROPIC_RULE) == 54
    assert area_tokens(1000, 1000, ANTHROPIC_RULE) == 1334
    assert area_tokens(1092, 1092, ANTHROPIC_RULE) == 1590


@pytest.mark.parametrize("size", [(1092, 1092), (951, 1268), (896, 1344), (819, 1456), (784, 1568)])
def test_anthropic_largest_unresized_sizes_are_about_1600(size: tuple[int, int]) -> None:
    """The guide's sizes sent without resizing use "approximately 1,600 tokens"."""
    width, height = size
    assert area_tokens(width, height, ANTHROPIC_RULE) == math.ceil(width * height / 750)
    assert 1550 <= area_tokens(width, height, ANTHROPIC_RULE) <= 1640


def test_anthropic_resize() -> None:
    # long edge: 3136x400 is scaled to 1568x200
    assert area_tokens(3136, 400, ANTHROPIC_RULE) == math.ceil(1568 * 200 / 750)
    # area: 4000x4000 is scaled to at most 1,229,312 pixels
    assert area_tokens(4000, 4000, ANTHROPIC_RULE) <= 1640
    assert area_tokens(4000, 4000, ANTHROPIC_RULE) >= 1630
    strict = AreaRule(max_pixels=1_150_000)
    assert area_tokens(4000, 4000, strict) <= math.ceil(1_150_000 / 750)


@settings(max_examples=300)
@given(
    st.integers(1, 20_000),
    st.integers(1, 20_000),
    st.sampled_from([GPT_4O, ANTHROPIC_RULE, *OPENAI_RULES.values()]),
    st.sampled_from(["low", "high", "auto", None]),
)
def test_no_image_costs_more_than_the_largest(
    width: int, height: int, rule: TileRule | PatchRule | AreaRule, detail: str | None
) -> None:
    tokens = image_tokens(width, height, detail, rule)
    assert 0 < tokens <= largest_image_tokens(rule, detail)
    assert image_tokens(height, width, detail, rule) == tokens or isinstance(rule, AreaRule)


def test_largest_images() -> None:
    assert largest_image_tokens(GPT_4O) == 85 + 8 * 170  # 768x2048
    assert largest_image_tokens(GPT_4O, "low") == 85
    assert largest_image_tokens(ANTHROPIC_RULE) == math.ceil(784 * 1568 / 750)
    assert largest_image_tokens(OPENAI_RULES["gpt-4.1-nano"]) == math.ceil(1536 * 2.46)


def test_openai_rule_by_model_name() -> None:
    assert openai_rule("gpt-4o") is OPENAI_RULES["gpt-4o"]
    assert openai_rule("gpt-4o-2024-08-06") is OPENAI_RULES["gpt-4o"]
    assert openai_rule("gpt-4o-mini-2024-07-18") is OPENAI_RULES["gpt-4o-mini"]
    assert openai_rule("gpt-4.1-nano-2025-04-14") is OPENAI_RULES["gpt-4.1-nano"]
    assert openai_rule("gpt-5-mini") is OPENAI_RULES["gpt-5-mini"]
    assert openai_rule("gpt-5-chat-latest") is OPENAI_RULES["gpt-5-chat-latest"]
    assert openai_rule("o4-mini-deep-research") is OPENAI_RULES["o4-mini"]
    assert openai_rule("gpt-5.9-future") is GPT_4O  # not in the guide: the default
    assert openai_rule("unknown", default=ANTHROPIC_RULE) is ANTHROPIC_RULE


def test_rules_refuse_bad_settings() -> None:
    with pytest.raises(ValueError, match="base"):
        TileRule(family="x", base=0, per_tile=1)
    with pytest.raises(ValueError, match="unknown_size"):
        ImageEstimates(unknown_size=(0, 10))
    with pytest.raises(TypeError):
        ImageEstimates(default_pdf_pages=2.5)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ Opaque parts


def openai_image(url: str, detail: str | None = None) -> Opaque:
    image: dict[str, str] = {"url": url}
    if detail is not None:
        image["detail"] = detail
    return Opaque(kind="openai:image_url", payload={"type": "image_url", "image_url": image})


def anthropic_image(source: dict[str, str]) -> Opaque:
    return Opaque(kind="anthropic:image", payload={"type": "image", "source": source})


def test_openai_data_url_image_is_measured() -> None:
    data = encode("PNG", 1024, 1024)
    cost = opaque_cost(openai_image(f"data:image/png;base64,{b64(data)}", "high"), GPT_4O)
    assert cost is not None
    assert (cost.tokens, cost.measured, cost.what) == (765, True, "image")
    assert cost.size == ImageSize(width=1024, height=1024, format="png")
    assert "1024x1024" in cost.note
    assert "read from its bytes" in cost.note
    low = opaque_cost(openai_image(f"data:image/png;base64,{b64(data)}", "low"), GPT_4O)
    assert low is not None
    assert low.tokens == 85


def test_url_image_is_estimated() -> None:
    cost = opaque_cost(openai_image("https://example.com/a.png"), GPT_4O)
    assert cost is not None
    assert (cost.tokens, cost.measured) == (1445, False)
    assert "size unknown" in cost.note
    assert "estimated" in cost.note
    stated = ImageEstimates(unknown_size=(1024, 1024))
    cost = opaque_cost(openai_image("https://example.com/a.png"), GPT_4O, stated)
    assert cost is not None
    assert cost.tokens == 765
    assert "1024x1024" in cost.note


def test_anthropic_base64_image_under_each_rule() -> None:
    data = encode("JPEG", 1092, 1092)
    part = anthropic_image({"type": "base64", "media_type": "image/jpeg", "data": b64(data)})
    cost = opaque_cost(part, ANTHROPIC_RULE)
    assert cost is not None
    assert (cost.tokens, cost.measured) == (1590, True)
    # the same image sent to OpenAI (the writers convert it) is billed by tiles
    cost = opaque_cost(part, GPT_4O)
    assert cost is not None
    assert cost.tokens == 765


def test_broken_image_is_estimated_not_raised() -> None:
    part = anthropic_image({"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo"})
    cost = opaque_cost(part, ANTHROPIC_RULE)
    assert cost is not None
    assert (cost.tokens, cost.measured) == (largest_image_tokens(ANTHROPIC_RULE), False)
    for payload in (
        None,
        "x",
        {"type": "image"},
        {"type": "image", "source": "x"},
        {"type": "image_url", "image_url": 3},
        {"type": "document"},
    ):
        assert opaque_cost(Opaque(kind="anthropic:image", payload=payload), GPT_4O) is not None


def test_responses_input_image() -> None:
    data = encode("WEBP", 2048, 4096)
    part = Opaque(
        kind="openai:input_image",
        payload={"type": "input_image", "image_url": f"data:image/webp;base64,{b64(data)}"},
    )
    cost = opaque_cost(part, GPT_4O)
    assert cost is not None
    assert (cost.tokens, cost.measured) == (1105, True)


def test_other_opaque_parts_are_not_priced() -> None:
    thinking = Opaque(
        kind="anthropic:thinking", payload={"type": "thinking", "thinking": "hm", "signature": "s"}
    )
    assert opaque_cost(thinking, ANTHROPIC_RULE) is None


def make_pdf(pages: int) -> bytes:
    """A small, valid PDF with ``pages`` blank pages (its own objects)."""
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        *(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>" for _ in range(pages)),
    ]
    out = b"%PDF-1.4\n"
    for number, body in enumerate(objects, 1):
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    return out + b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"


def test_pdf_pages() -> None:
    assert pdf_pages(make_pdf(1)) == 1
    assert pdf_pages(make_pdf(7)) == 7
    compressed = b"%PDF-1.7\n1 0 obj << /Type /Pages /Kids [] /Count 12 >> endobj"
    assert pdf_pages(compressed) == 12
    assert pdf_pages(b"%PDF-1.7\n(object streams only)") is None
    assert pdf_pages(b"not a pdf") is None


def test_anthropic_pdf_document() -> None:
    part = Opaque(
        kind="anthropic:document",
        payload={
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": b64(make_pdf(3))},
        },
    )
    cost = opaque_cost(part, ANTHROPIC_RULE)
    assert cost is not None
    per_page = 3000 + largest_image_tokens(ANTHROPIC_RULE)
    assert (cost.tokens, cost.pages, cost.what, cost.measured) == (
        3 * per_page,
        3,
        "document",
        True,
    )
    assert "3 pages" in cost.note
    url = Opaque(
        kind="anthropic:document",
        payload={"type": "document", "source": {"type": "url", "url": "https://x/a.pdf"}},
    )
    cost = opaque_cost(url, ANTHROPIC_RULE, ImageEstimates(pdf_page_image=False))
    assert cost is not None
    assert (cost.tokens, cost.pages, cost.measured) == (10 * 3000, 10, False)


def test_text_documents() -> None:
    part = Opaque(
        kind="anthropic:document",
        payload={
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "a" * 400},
        },
    )
    cost = opaque_cost(part, ANTHROPIC_RULE)
    assert cost is not None
    assert (cost.tokens, cost.measured) == (100, False)
    cost = opaque_cost(part, ANTHROPIC_RULE, count_text=lambda text: 7)
    assert cost is not None
    assert (cost.tokens, cost.measured) == (7, True)


def test_openai_file_part() -> None:
    data_url = f"data:application/pdf;base64,{b64(make_pdf(2))}"
    part = Opaque(
        kind="openai:file",
        payload={"type": "file", "file": {"filename": "a.pdf", "file_data": data_url}},
    )
    cost = opaque_cost(part, GPT_4O)
    assert cost is not None
    assert (cost.pages, cost.tokens) == (2, 2 * (3000 + 1445))
    by_id = Opaque(kind="openai:file", payload={"type": "file", "file": {"file_id": "file-1"}})
    cost = opaque_cost(by_id, GPT_4O, DEFAULT_ESTIMATES)
    assert cost is not None
    assert (cost.pages, cost.measured) == (10, False)
