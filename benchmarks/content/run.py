"""A screenshot agent loop, counted as the provider bills it, request by
request: what memrules said before images were counted, what the provider's
own rule says, and what the policy sends with images and reasoning counted.

    python benchmarks/content/run.py                 # 40 screenshots, 16k budget
    python benchmarks/content/run.py --shots 60 --budget 24000

The history is a computer-use loop of ``--shots`` steps, built at run time
with Pillow: each step an assistant turn with its reasoning and a
``screenshot`` tool call, the tool's answer, and the screenshot (a real PNG,
of one of six sizes, from a phone's 390x844 to 2560x1440). Two formats:

- OpenAI chat completions (gpt-4o): the reasoning as ``reasoning_details``
  (a summary and encrypted data, as OpenAI-compatible servers send it), the
  screenshot in a user message after the tool's. The provider's rule is
  ``benchmarks.harness.reference.openai_request_tokens``: the guide's
  framing in tiktoken's exact count, images by OpenAI's tile rule over the
  size Pillow decodes, encrypted data one token per 4 characters.
- Anthropic messages: a ``thinking`` block with its signature before each
  ``tool_use``, the screenshot in the ``tool_result``. The provider's rule
  for images is Anthropic's (pixels / 750 after its resize,
  ``reference.anthropic_image_tokens``, sizes from Pillow); Claude's text
  tokenizer is not public, so text and thinking are cl100k tokens under
  Anthropic's block framing (the ``anthropic`` count rule's own figure,
  which is the exact count only through the count-tokens endpoint).

Every request is the history so far. "before" is what memrules counted
when images and thinking were 0 (the framing alone, which is what the
count rules were); "provider" is the provider's rule on the request as
sent; "sent" is the provider's rule on what the policy sends with the
budget, by the count rules that now price images, reasoning and thinking.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from PIL import Image, ImageDraw  # noqa: E402

from benchmarks.harness.reference import (  # noqa: E402
    anthropic_image_tokens,
    image_dimensions,
    openai_request_tokens,
)
from memrules import (  # noqa: E402
    from_anthropic,
    from_openai,
    load_pipeline,
    to_anthropic_request,
    to_openai,
)
from memrules._core.budget import Budget  # noqa: E402
from memrules._core.messages import Conversation  # noqa: E402
from memrules._counting.content import opaque_parts  # noqa: E402
from memrules._counting.framing import _anthropic_frame, _openai_frame  # noqa: E402
from memrules._counting.named import counter_for  # noqa: E402
from memrules.strategies.images import is_image  # noqa: E402

SIZES = ((1280, 800), (1920, 1080), (1440, 900), (2560, 1440), (800, 600), (390, 844))
ENCODER = "o200k_base"
POLICY = """
encoder_name: {encoder}
count_rule: {rule}
max_tokens: {budget}
strategies:
  - type: strip_old_images
    keep_images: 3
  - type: clear_thinking
    keep_turns: 2
  - type: clear_tool_results
    keep_pairs: 6
  - type: trim_to_budget
"""


def screenshot(k: int, size: tuple[int, int]) -> str:
    """A real PNG screenshot: a window with a title bar and some boxes."""
    rng = random.Random(k)
    image = Image.new("RGB", size, (245, 245, 245))
    draw = ImageDraw.Draw(image)
    w, h = size
    draw.rectangle((0, 0, w, 28), fill=(60, 60, 70))
    for _ in range(12):
        x, y = rng.randrange(w), rng.randrange(30, h)
        draw.rectangle(
            (x, y, min(w, x + rng.randrange(40, 300)), min(h, y + 24)),
            fill=(rng.randrange(256), rng.randrange(256), rng.randrange(256)),
        )
    out = io.BytesIO()
    image.save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


def _reasoning(k: int, rng: random.Random) -> tuple[str, str]:
    summary = (
        f"Step {k}: the settings page still overflows on the right; compare the "
        f"sidebar width with the previous screenshot before changing the CSS."
    )
    secret = base64.b64encode(rng.randbytes(900)).decode("ascii")
    return summary, secret


def openai_history(shots: int) -> list[dict[str, Any]]:
    rng = random.Random(0)
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a computer-use agent. Take screenshots to check."},
        {"role": "user", "content": "Fix the layout bug on the settings page."},
    ]
    for k in range(shots):
        size = SIZES[k % len(SIZES)]
        summary, secret = _reasoning(k, rng)
        path = f"shots/step{k:02}.png"
        out.append(
            {
                "role": "assistant",
                "content": f"Taking screenshot {k} of the settings page.",
                "reasoning_details": [
                    {"type": "reasoning.summary", "summary": summary},
                    {"type": "reasoning.encrypted", "data": secret},
                ],
                "tool_calls": [
                    {
                        "id": f"call_{k}",
                        "type": "function",
                        "function": {"name": "screenshot", "arguments": json.dumps({"path": path})},
                    }
                ],
            }
        )
        out.append({"role": "tool", "tool_call_id": f"call_{k}", "content": f"saved {path}"})
        url = f"data:image/png;base64,{screenshot(k, size)}"
        out.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"Screenshot {k} ({size[0]}x{size[1]})."},
                    {"type": "image_url", "image_url": {"url": url}},
                ],
            }
        )
    return out


def anthropic_history(shots: int) -> list[dict[str, Any]]:
    rng = random.Random(0)
    out: list[dict[str, Any]] = [
        {"role": "user", "content": "Fix the layout bug on the settings page."}
    ]
    for k in range(shots):
        size = SIZES[k % len(SIZES)]
        summary, secret = _reasoning(k, rng)
        out.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": summary * 3, "signature": secret[:344]},
                    {
                        "type": "tool_use",
                        "id": f"toolu_{k}",
                        "name": "screenshot",
                        "input": {"path": f"shots/step{k:02}.png"},
                    },
                ],
            }
        )
        source = {"type": "base64", "media_type": "image/png", "data": screenshot(k, size)}
        out.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{k}",
                        "content": [{"type": "image", "source": source}],
                    },
                ],
            }
        )
        if k % 8 == 7:  # the user looks in now and then: a new turn
            out.append({"role": "assistant", "content": f"Checked {k + 1} screens so far."})
            out.append({"role": "user", "content": "Keep going."})
    return out


def anthropic_provider_tokens(request: dict[str, Any], count: Callable[[str], int]) -> int:
    """Anthropic's image rule on the request's images (sizes by Pillow), its
    text and thinking in ``count`` tokens under the block framing: 3 a
    message, 3 a tool block, 3 for the reply."""
    total = 3
    system = request.get("system")
    if isinstance(system, str):
        total += 3 + count(system)

    def blocks(content: Any) -> int:
        if isinstance(content, str):
            return count(content)
        n = 0
        for block in content:
            kind = block["type"]
            if kind == "text":
                n += count(block["text"])
            elif kind == "thinking":
                n += count(block["thinking"])
            elif kind == "tool_use":
                n += (
                    3
                    + count(block["id"])
                    + count(block["name"])
                    + count(json.dumps(block["input"]))
                )
            elif kind == "tool_result":
                n += 3 + count(block["tool_use_id"]) + blocks(block.get("content", ""))
            elif kind == "image":
                size = image_dimensions(base64.b64decode(block["source"]["data"]))
                assert size is not None
                n += anthropic_image_tokens(*size)
        return n

    for message in request["messages"]:
        total += 3 + blocks(message["content"])
    return total


def requests(history: Sequence[Any], starts: Callable[[Any], bool]) -> list[int]:
    """The lengths of the history at each request: after each message that
    hands the turn to the model (a screenshot, a user message)."""
    return [i + 1 for i, m in enumerate(history) if starts(m)]


def image_count(conversation: Conversation) -> int:
    return sum(1 for m in conversation for _, part in opaque_parts(m) if is_image(part))


def old_count(conversation: Conversation, style: str, count: Callable[[str], int]) -> int:
    """memrules' count before images and thinking were counted: the framing
    alone."""
    frame = _openai_frame if style == "openai" else _anthropic_frame
    return sum(frame(m, count) for m in conversation) + 3


def run(style: str, shots: int, budget: int) -> None:
    counter = counter_for(ENCODER)
    count = counter.count_text
    if style == "openai":
        raw = openai_history(shots)
        conversation = from_openai(raw)
        points = requests(raw, lambda m: m["role"] == "user")

        def provider(messages: Conversation) -> int:
            return openai_request_tokens(to_openai(messages), count)

    else:
        raw = anthropic_history(shots)
        conversation = from_anthropic(raw)
        points = requests(raw, lambda m: m["role"] == "user")

        def provider(messages: Conversation) -> int:
            return anthropic_provider_tokens(to_anthropic_request(messages), count)

    pipeline = load_pipeline(POLICY.format(encoder=ENCODER, rule=style, budget=budget))
    memo = pipeline.measure()
    print(f"\n{style}: {shots} screenshots, budget {budget:,} tokens ({ENCODER})")
    print(
        f"{'request':>7} {'images':>6} {'before':>8} {'provider':>9} {'said now':>9} "
        f"{'sent':>7} {'images sent':>11} {'ms':>6}"
    )
    worst_under = 0.0
    over = 0
    old_over_missed = 0
    started = time.perf_counter()
    for n, upto in enumerate(points, start=1):
        history = conversation[:upto]
        before = old_count(history, style, count)
        truth = provider(history)
        said = pipeline.count(history, memo=memo)
        t0 = time.perf_counter()
        result = pipeline.apply(history, budget=Budget.tokens(budget), memo=memo)
        ms = (time.perf_counter() - t0) * 1000
        sent = provider(result.messages)
        shown, kept = image_count(history), image_count(result.messages)
        worst_under = max(worst_under, truth / before)
        over += sent > budget
        old_over_missed += before <= budget < truth
        row = f"{n:>7} {shown:>6} {before:>8,} {truth:>9,} {said:>9,} {sent:>7,} {kept:>11}"
        print(f"{row} {ms:>6.1f}")
    elapsed = time.perf_counter() - started
    print(
        f"{style}: {len(points)} requests; the provider's rule is up to {worst_under:.1f}x what "
        f"memrules said before; {old_over_missed} requests over budget that the old count "
        f"called under; with images counted, {over} sent over budget ({elapsed:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shots", type=int, default=40)
    parser.add_argument("--budget", type=int, default=16_000)
    parser.add_argument("--format", choices=("openai", "anthropic", "both"), default="both")
    args = parser.parse_args()
    for style in ("openai", "anthropic") if args.format == "both" else (args.format,):
        run(style, args.shots, args.budget)


if __name__ == "__main__":
    main()
