"""What reading an image's size costs, against decoding its base64.

    python benchmarks/image_headers.py              # 10 MB of payload
    python benchmarks/image_headers.py --mb 50

Builds real images with Pillow (a 1920x1080 PNG; a JPEG behind a 60 KB EXIF
block), pads each with ``MB`` megabytes so the base64 is that long, and
prints microseconds per call of the header readers and of ``opaque_cost``
on an OpenAI ``image_url`` part holding the data URL, next to one full
``base64.b64decode`` of the same text. The readers decode only the groups
that hold the header, so their time does not grow with ``MB``.
"""

from __future__ import annotations

import argparse
import base64
import io
import timeit

from PIL import Image

from memrules._core.messages import Opaque
from memrules._counting.images import GPT_4O, opaque_cost
from memrules._counting.imagesize import base64_image_size, data_url_image_size


def _encoded(fmt: str, size: tuple[int, int], pad: int, **options: object) -> str:
    out = io.BytesIO()
    Image.new("RGB", size).save(out, fmt, **options)
    return base64.b64encode(out.getvalue() + bytes(pad)).decode("ascii")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    pad = int(args.mb * 1_000_000)
    url = "data:image/png;base64," + _encoded("PNG", (1920, 1080), pad)
    exif = Image.Exif()
    exif[0x010E] = "x" * 60_000
    jpeg = _encoded("JPEG", (64, 48), pad, exif=exif.tobytes())
    part = Opaque(kind="openai:image_url", payload={"type": "image_url", "image_url": {"url": url}})
    n = args.number

    def per_call(call: object, number: int = n) -> float:
        return timeit.timeit(call, number=number) / number  # type: ignore[arg-type]

    rows = [
        ("data_url_image_size, PNG", lambda: data_url_image_size(url), n),
        ("base64_image_size, JPEG behind EXIF", lambda: base64_image_size(jpeg), n),
        ("opaque_cost, image_url part", lambda: opaque_cost(part, GPT_4O), n),
        ("base64.b64decode of the whole text", lambda: base64.b64decode(url[22:]), 5),
    ]
    print(f"payload: {len(url) / 1e6:.1f} M base64 characters")
    for name, call, number in rows:
        print(f"{name:<38} {per_call(call, number) * 1e6:10.1f} us")


if __name__ == "__main__":
    main()
