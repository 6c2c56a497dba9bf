"""Images, documents, thinking and reasoning counted as the provider bills
them, through every count rule, the config's ``counting:`` section and the
report. The figures are checked against the independent oracle in
``benchmarks/harness/reference.py`` (Pillow decodes the images there)."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.harness.reference import (
    UNKNOWN_IMAGE_TOKENS,
    anthropic_image_tokens,
    openai_image_tokens,
    openai_request_tokens,
)
from memrules import (
    ConfigError,
    from_anthropic,
    from_openai,
    load_pipeline,
    to_anthropic,
    to_openai,
)
from memrules._core.messages import Message, Opaque, Text
from memrules._counting.content import counting_from_config
from memrules._counting.framing import ANTHROPIC, OPENAI, count_rule_named, framed
from memrules._counting.named import counter_for
from memrules._counting.tokens import EstimatingCounter, estimate_tokens

PIL = pytest.importorskip("PIL.Image")

COUNTER = counter_for("cl100k_base")
ENCODE = COUNTER.count_text


def png(width: int, height: int) -> str:
    """A real PNG of that size, as base64."""
    buffer = io.BytesIO()
    PIL.new("RGB", (width, height), (width % 256, height % 256, 90)).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def openai_image(width: int, height: int, detail: str | None = None) -> dict[str, Any]:
    image: dict[str, Any] = {"url": f"data:image/png;base64,{png(width, height)}"}
    if detail is not None:
        image["detail"] = detail
    return {"type": "image_url", "image_url": image}


def total(messages: tuple[Message, ...], rule: Any = OPENAI, counter: Any = COUNTER) -> int:
    framed_counter = framed(counter, rule)
    return sum(framed_counter.counts(messages)) + framed_counter.per_request  # type: ignore[attr-defined]


SIZES = ((1280, 800), (1920, 1080), (512, 512), (300, 2000), (2560, 1440), (64, 64))


@pytest.mark.parametrize(("width", "height"), SIZES)
@pytest.mark.parametrize("detail", [None, "high", "low", "auto"])
def test_openai_images_count_as_the_guide_bills_them(
    width: int, height: int, detail: str | None
) -> None:
    raw = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is on screen?"},
                openai_image(width, height, detail),
            ],
        }
    ]
    counted = total(from_openai(raw))
    assert counted == openai_request_tokens(raw, ENCODE)
    text_only = 3 + ENCODE("user") + ENCODE("what is on screen?") + 3
    assert counted - text_only == openai_image_tokens(width, height, detail)
    assert counted - text_only > 0  # it used to be 0


def test_the_guides_own_examples() -> None:
    assert openai_image_tokens(1024, 1024) == 765
    assert openai_image_tokens(2048, 4096) == 1105
    raw = [{"role": "user", "content": [openai_image(1024, 1024)]}]
    assert total(from_openai(raw)) == 3 + ENCODE("user") + 765 + 3


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 3000), st.sampled_from([None, "low", "high"]))
def test_any_size_agrees_with_the_oracle(width: int, height: int, detail: str | None) -> None:
    raw = [{"role": "user", "content": [openai_image(width, height, detail)]}]
    assert total(from_openai(raw)) == openai_request_tokens(raw, ENCODE)


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_anthropic_images_count_pixels_over_750(width: int, height: int) -> None:
    source = {"type": "base64", "media_type": "image/png", "data": png(width, height)}
    conversation = from_anthropic(
        [{"role": "user", "content": [{"type": "image", "source": source}]}]
    )
    assert total(conversation, ANTHROPIC) == 3 + anthropic_image_tokens(width, height) + 3


def test_an_image_sent_to_the_other_provider_is_billed_by_its_rule() -> None:
    raw = [{"role": "user", "content": [openai_image(1920, 1080)]}]
    conversation = from_openai(raw)
    assert total(conversation, ANTHROPIC) == 3 + anthropic_image_tokens(1920, 1080) + 3


def test_the_estimating_counter_counts_images_under_a_rule() -> None:
    raw = [{"role": "user", "content": [{"type": "text", "text": "see"}, openai_image(800, 600)]}]
    conversation = from_openai(raw)
    estimated = total(conversation, OPENAI, EstimatingCounter())
    assert (
        estimated
        == 3 + estimate_tokens("user") + estimate_tokens("see") + openai_image_tokens(800, 600) + 3
    )


def test_a_tool_results_image_counts_too() -> None:
    source = {"type": "base64", "media_type": "image/png", "data": png(1280, 800)}
    conversation = from_anthropic(
        [
            {"role": "user", "content": "take a screenshot"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "screenshot", "input": {}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "image", "source": source}],
                    }
                ],
            },
        ]
    )
    assert total(conversation) == openai_request_tokens(to_openai(conversation), ENCODE)
    without = total(conversation[:2])
    assert total(conversation) - without > openai_image_tokens(1280, 800)


def test_a_url_image_is_estimated_and_the_report_says_so() -> None:
    pipeline = load_pipeline("max_tokens: 100000\nstrategies: []\n")
    url = {"type": "image_url", "image_url": {"url": "https://example.com/screen.png"}}
    conversation = from_openai([{"role": "user", "content": [{"type": "text", "text": "hi"}, url]}])
    result = pipeline.apply(conversation)
    assert (
        result.report.tokens_before == 3 + ENCODE("user") + ENCODE("hi") + UNKNOWN_IMAGE_TOKENS + 3
    )
    (line,) = result.report.estimates
    assert line.startswith("messages[0].parts[1]: image at a URL, size unknown: estimated")
    assert result.report.to_dict()["estimates"] == [line]
    plain = pipeline.apply(from_openai([{"role": "user", "content": "hi"}]))
    assert plain.report.estimates == ()
    assert "estimates" not in plain.report.to_dict()  # reports without estimates read as before


def test_the_unknown_size_estimate_is_configurable() -> None:
    pipeline = load_pipeline(
        "max_tokens: 100000\nstrategies: []\ncounting:\n  unknown_image_size: [512, 512]\n"
    )
    url = {"type": "image_url", "image_url": {"url": "https://example.com/screen.png"}}
    conversation = from_openai([{"role": "user", "content": [url]}])
    assert pipeline.count(conversation) == 3 + ENCODE("user") + 85 + 170 + 3
    assert "estimated as 512x512" in pipeline.apply(conversation).report.estimates[0]


def test_a_pdf_costs_a_stated_estimate_per_page() -> None:
    pdf = b"%PDF-1.4\n" + b"".join(b"%d 0 obj << /Type /Page >> endobj\n" % k for k in range(3))
    block = {
        "type": "document",
        "source": {
            "type": "base64",
            "media_type": "application/pdf",
            "data": base64.b64encode(pdf).decode(),
        },
    }
    conversation = from_anthropic([{"role": "user", "content": [block]}])
    largest = -(-(784 * 1568) // 750)
    assert total(conversation, ANTHROPIC) == 3 + 3 * (3000 + largest) + 3
    pipeline = load_pipeline(
        "count_rule: anthropic\nmax_tokens: 100000\nstrategies: []\n"
        "counting:\n  pdf_page_tokens: 1500\n  pdf_page_image: false\n"
    )
    assert pipeline.count(conversation) == 3 + 3 * 1500 + 3


def test_the_image_model_picks_the_family_rule() -> None:
    raw = [{"role": "user", "content": [openai_image(1024, 1024)]}]
    conversation = from_openai(raw)
    mini = load_pipeline(
        "max_tokens: 100000\nstrategies: []\ncounting:\n  image_model: gpt-4.1-mini\n"
    )
    # gpt-4.1-mini: 32-pixel patches, 1024 of them, x 1.62
    assert mini.count(conversation) == 3 + ENCODE("user") + 1659 + 3
    by_encoder = load_pipeline("encoder_name: gpt-4o-mini\nmax_tokens: 100000\nstrategies: []\n")
    assert (
        by_encoder.count(conversation)
        == 3 + by_encoder.counter.count_text("user") + 2833 + 4 * 5667 + 3
    )
    assert count_rule_named("openai") is OPENAI


@pytest.mark.parametrize(
    ("yaml", "where", "line", "text"),
    [
        ("counting:\n  image_model: gpt-9\n", "counting.image_model", 2, "no model family"),
        (
            "counting:\n  unknown_image_size: [0, 3]\n",
            "counting.unknown_image_size",
            2,
            "[width, height]",
        ),
        ("counting:\n  pdf_page_tokens: -1\n", "counting.pdf_page_tokens", 2, "at least 1"),
        ("counting:\n  pdf_page_image: maybe\n", "counting.pdf_page_image", 2, "true or false"),
        (
            "counting:\n  encrypted_chars_per_token: 0\n",
            "counting.encrypted_chars_per_token",
            2,
            "at least 1",
        ),
        (
            "counting:\n  image_modle: gpt-4o\n",
            "counting.image_modle",
            2,
            "did you mean 'image_model'",
        ),
        ("counting: 3\n", "counting", 1, "mapping"),
    ],
)
def test_bad_counting_settings_are_config_errors(
    yaml: str, where: str, line: int, text: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_pipeline(yaml)
    (problem,) = caught.value.problems
    assert problem.yaml_path == where
    assert problem.line == line
    assert text in problem.message


def test_counting_from_python_gathers_every_problem() -> None:
    with pytest.raises(ConfigError) as caught:
        counting_from_config(image_model="nope", default_pdf_pages=0)
    assert {p.yaml_path for p in caught.value.problems} == {
        "counting.image_model",
        "counting.default_pdf_pages",
    }


# --- thinking and reasoning ------------------------------------------------------------


def test_thinking_counts_its_text_and_redacted_thinking_an_estimate() -> None:
    thinking = "Let me look at the failing test first, then the fixture."
    conversation = from_anthropic(
        [
            {"role": "user", "content": "fix it"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": thinking, "signature": "EqQBCgIYAhIM" * 8},
                    {"type": "redacted_thinking", "data": "x" * 400},
                    {"type": "text", "text": "Done."},
                ],
            },
        ]
    )
    assistant = conversation[1]
    counter = framed(COUNTER, ANTHROPIC)
    assert counter.count(assistant) == 3 + ENCODE(thinking) + 100 + ENCODE("Done.")
    assert counter.estimates(assistant) == (  # type: ignore[attr-defined]
        "parts[1]: redacted thinking: characters / 4 (estimate)",
    )
    reported = assistant.evolve(metadata=assistant.metadata.set("reasoning_tokens", 37))
    assert counter.count(reported) == 3 + ENCODE(thinking) + 37 + ENCODE("Done.")
    assert counter.estimates(reported) == ()  # type: ignore[attr-defined]
    assert to_anthropic((reported,)) == to_anthropic((assistant,))  # usage is not sent
    # OpenAI's writer drops Anthropic's thinking: the openai rule does not count it
    assert framed(COUNTER, OPENAI).count(assistant) == 3 + ENCODE("assistant") + ENCODE("Done.")


def test_a_reasoning_item_counts_its_summary_and_its_encrypted_content() -> None:
    item = Opaque(
        kind="openai:reasoning",
        payload={
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Checked the config."}],
            "encrypted_content": "gAAAA" * 80,
        },
    )
    m = Message(role="assistant", parts=(item, Text(text="ok")))
    counter = framed(COUNTER, OPENAI)
    assert (
        counter.count(m)
        == 3 + ENCODE("assistant") + ENCODE("ok") + ENCODE("Checked the config.") + 100
    )
    reported = m.evolve(metadata={"reasoning_tokens": 512})
    assert (
        counter.count(reported)
        == 3 + ENCODE("assistant") + ENCODE("ok") + ENCODE("Checked the config.") + 512
    )


def test_chat_reasoning_details_count_and_agree_with_the_oracle() -> None:
    raw = [
        {"role": "user", "content": "plan it"},
        {
            "role": "assistant",
            "content": "Here is the plan.",
            "reasoning_details": [
                {"type": "reasoning.summary", "summary": "Weighed two designs."},
                {"type": "reasoning.encrypted", "data": "Zm9v" * 50},
            ],
        },
    ]
    conversation = from_openai(raw)
    assert to_openai(conversation) == raw
    assert total(conversation) == openai_request_tokens(raw, ENCODE)
    assert total(conversation) - total(
        from_openai([raw[0], {**raw[1], "reasoning_details": []}])
    ) == (ENCODE("Weighed two designs.") + 50)


def test_a_trace_records_and_rebuilds_the_counting_section() -> None:
    from memrules import load_config
    from memrules._trace.canonical import canonical_config, rebuild_config

    plain = load_config("max_tokens: 1000\n")
    assert plain.counting is None
    assert "counting" not in canonical_config(plain)  # traces of such configs read as before
    config = load_config(
        "max_tokens: 1000\ncounting:\n  image_model: o3\n  unknown_image_size: [800, 600]\n"
    )
    canonical = canonical_config(config)
    assert canonical["counting"]["unknown_image_size"] == [800, 600]
    assert rebuild_config(canonical).counting == config.counting
