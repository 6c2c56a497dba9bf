"""The prompt-cache measure: worked examples per provider rule, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules._core.messages import Message, Opaque, Text, ToolResult, message
from memrules._counting.cache import (
    DEFAULT_PRICES,
    AnthropicRule,
    FamilyPrice,
    OpenAIRule,
    PriceTable,
    Sent,
    anthropic_minimum,
    breakpoints,
    measure,
    shared_messages,
)

EPHEMERAL = {"anthropic": {"cache_control": {"type": "ephemeral"}}}
HOUR = {"anthropic": {"cache_control": {"type": "ephemeral", "ttl": "1h"}}}


def marked(role: str, text: str, extra: dict[str, object] = EPHEMERAL) -> Message:
    return Message(role=role, parts=(Text(text=text, extra=extra),))  # type: ignore[arg-type]


def sent(*pairs: tuple[Message, int]) -> Sent:
    return Sent(messages=tuple(m for m, _ in pairs), counts=tuple(c for _, c in pairs))


SYSTEM = message("system", "You are a coding agent.")
U1, U2, U3 = message("user", "one"), message("user", "two"), message("user", "three")


# --------------------------------------------------------------------------- OpenAI


def test_openai_below_the_minimum_serves_nothing_and_writes_nothing() -> None:
    before = sent((SYSTEM, 900), (U1, 50))
    now = sent((SYSTEM, 900), (U1, 50), (U2, 50))
    m = measure(before, now, OpenAIRule())
    assert (m.tokens, m.shared, m.cached, m.written) == (1000, 950, 0, 0)
    assert m.cost == 1000


def test_openai_rounds_the_shared_prefix_down_to_128_token_steps() -> None:
    before = sent((SYSTEM, 1500), (U1, 100))
    now = sent((SYSTEM, 1500), (U1, 100), (U2, 40))
    m = measure(before, now, OpenAIRule(model="gpt-4o"))
    assert m.shared == 1600
    assert m.cached == 1536  # 12 * 128
    assert m.uncached == 104
    assert m.cost == pytest.approx(104 + 1536 * 0.5)


def test_openai_shared_prefix_below_the_minimum_is_not_served() -> None:
    before = sent((SYSTEM, 1000), (U1, 10))
    now = sent((SYSTEM, 1000), (U2, 2000))
    m = measure(before, now, OpenAIRule())
    assert (m.shared, m.cached) == (1000, 0)


def test_openai_expired_lifetime_serves_nothing() -> None:
    before = sent((SYSTEM, 4000), (U1, 100))
    now = sent((SYSTEM, 4000), (U1, 100), (U2, 100))
    assert measure(before, now, OpenAIRule(), elapsed=299).cached == 4096
    assert measure(before, now, OpenAIRule(), elapsed=301).cached == 0
    assert measure(before, now, OpenAIRule(lifetime=86400), elapsed=3600).cached == 4096


def test_openai_write_fee_from_the_gpt_5_6_family() -> None:
    before = sent((SYSTEM, 2048))
    now = sent((SYSTEM, 2048), (U1, 1000))
    old = measure(before, now, OpenAIRule(model="gpt-5"))
    new = measure(before, now, OpenAIRule(model="gpt-5.6"))
    assert old.cost == pytest.approx(2048 * 0.1 + 1000)
    assert new.cost == pytest.approx(2048 * 0.1 + 1000 * 1.25)


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_serves_up_to_the_last_breakpoint_within_the_shared_prefix() -> None:
    first = marked("system", "rules")
    before = sent((first, 3000), (U1, 500))
    later = marked("user", "two")
    now = sent((first, 3000), (U1, 500), (later, 700))
    m = measure(before, now, AnthropicRule())
    # the system breakpoint is shared; the one on the new message is not
    assert (m.shared, m.cached) == (3500, 3000)
    assert m.written == 4200 - 3000
    assert m.cost == pytest.approx(3000 * 0.1 + 1200 * 1.25)


def test_anthropic_breakpoint_beyond_the_shared_prefix_is_not_served() -> None:
    before = sent((SYSTEM, 3000), (U1, 500))
    now = sent((SYSTEM, 3000), (U1, 500), (marked("user", "x"), 100))
    m = measure(before, now, AnthropicRule())
    assert (m.shared, m.cached, m.written) == (3500, 0, 3600)


def test_anthropic_without_breakpoints_caches_nothing_unless_automatic() -> None:
    before = sent((SYSTEM, 3000), (U1, 500))
    now = sent((SYSTEM, 3000), (U1, 500), (U2, 100))
    assert measure(before, now, AnthropicRule()).cached == 0
    assert measure(before, now, AnthropicRule()).written == 0
    # automatic: a breakpoint on the last message, each request
    auto = AnthropicRule(automatic=True)
    m = measure(before, now, auto)  # the previous request's last message is shared
    assert (m.cached, m.written) == (3500, 100)
    again = sent((SYSTEM, 3000), (U1, 500), (U2, 100), (U3, 100))
    m = measure(now, again, auto)
    assert (m.cached, m.written) == (3600, 100)


def test_anthropic_minimum_is_per_model() -> None:
    head = marked("system", "rules")
    before = sent((head, 1500), (U1, 10))
    now = sent((head, 1500), (U1, 10), (U2, 10))
    assert measure(before, now, AnthropicRule(model="claude-sonnet-4-5")).cached == 1500
    assert measure(before, now, AnthropicRule(model="claude-3-haiku-20240307")).cached == 0
    assert measure(before, now, AnthropicRule(model="claude-haiku-4-5")).cached == 0
    assert anthropic_minimum("claude-opus-4-1") == 1024
    assert anthropic_minimum("claude-haiku-3-5") == 2048
    assert anthropic_minimum("claude-opus-4-5-20251101") == 4096


def test_anthropic_expired_lifetime_serves_nothing_and_writes_again() -> None:
    head = marked("system", "rules")
    before = sent((head, 3000), (U1, 10))
    now = sent((head, 3000), (U1, 10), (U2, 10))
    warm = measure(before, now, AnthropicRule(), elapsed=300)
    cold = measure(before, now, AnthropicRule(), elapsed=300.5)
    assert (warm.cached, warm.written) == (3000, 0)
    assert (cold.cached, cold.written) == (0, 3000)
    hour = marked("system", "rules", HOUR)
    before = sent((hour, 3000), (U1, 10))
    now = sent((hour, 3000), (U1, 10), (U2, 10))
    m = measure(before, now, AnthropicRule(), elapsed=3000)
    assert m.cached == 3000
    first = measure(None, now, AnthropicRule())
    assert (first.written, first.written_long) == (3000, 3000)
    assert first.cost == pytest.approx(3000 * 2.0 + 20)


def test_anthropic_counts_only_the_first_four_breakpoints() -> None:
    msgs = [(marked("user", f"m{i}"), 1000) for i in range(6)]
    now = sent(*msgs)
    m = measure(now, now, AnthropicRule())
    assert m.cached == 4000  # the fifth and sixth breakpoints are ignored


def test_breakpoints_are_read_where_the_anthropic_adapter_keeps_them() -> None:
    from memrules._adapters.anthropic import from_anthropic

    conversation = from_anthropic(
        {
            "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "f",
                            "input": {},
                            "cache_control": {"type": "ephemeral", "ttl": "1h"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": [
                                {
                                    "type": "text",
                                    "text": "r",
                                    "cache_control": {"type": "ephemeral"},
                                }
                            ],
                        },
                        {
                            "type": "image",
                            "source": {"type": "url", "url": "http://x/i.png"},
                            "cache_control": {"type": "ephemeral"},
                        },
                    ],
                },
            ],
        }
    )
    assert breakpoints(conversation) == ((0, "5m"), (2, "1h"), (3, "5m"), (3, "5m"))
    parts = conversation[3].parts
    assert isinstance(parts[0], ToolResult)
    assert isinstance(parts[1], Opaque)


# --------------------------------------------------------------------------- values


def test_price_table_is_settable_and_longest_prefix_wins() -> None:
    table = PriceTable(families=(FamilyPrice(prefix="m", cached=0.5),))
    now = sent((SYSTEM, 2048))
    assert measure(now, now, OpenAIRule(model="m1"), prices=table).cost == 1024
    assert DEFAULT_PRICES.for_model("gpt-5.6-mini").write == 1.25
    assert DEFAULT_PRICES.for_model("gpt-5-mini").write == 1.0
    with pytest.raises(KeyError, match="known prefixes"):
        DEFAULT_PRICES.for_model("llama")


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="one count per message"):
        Sent(messages=(SYSTEM,), counts=())
    with pytest.raises(ValueError, match="elapsed"):
        measure(None, sent((SYSTEM, 1)), OpenAIRule(), elapsed=-1)


# --------------------------------------------------------------------------- properties

TEXTS = st.sampled_from(["a", "b", "c", "d"])
ROLES = st.sampled_from(["user", "assistant"])


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role = draw(ROLES)
    text = draw(TEXTS)
    if draw(st.booleans()) and draw(st.booleans()):
        ttl = draw(st.sampled_from([EPHEMERAL, HOUR]))
        return marked(role, text, ttl)
    return message(role, text)  # type: ignore[arg-type]


@st.composite
def requests(draw: st.DrawFn, min_size: int = 0) -> Sent:
    msgs = draw(st.lists(messages(), min_size=min_size, max_size=12))
    counts = draw(st.lists(st.integers(0, 3000), min_size=len(msgs), max_size=len(msgs)))
    return Sent(messages=tuple(msgs), counts=tuple(counts), overhead=draw(st.integers(0, 5)))


RULES = st.one_of(
    st.builds(OpenAIRule, model=st.sampled_from(["gpt-4o", "gpt-5", "gpt-5.6"])),
    st.builds(
        AnthropicRule,
        model=st.sampled_from(["claude-sonnet-4-5", "claude-haiku-4-5", "claude-3-haiku"]),
        automatic=st.booleans(),
    ),
)
ELAPSED = st.floats(0, 5000, allow_nan=False)


@given(requests(), requests(), RULES, ELAPSED)
def test_cached_within_shared_within_tokens(
    previous: Sent, current: Sent, rule: OpenAIRule | AnthropicRule, elapsed: float
) -> None:
    m = measure(previous, current, rule, elapsed=elapsed)
    assert 0 <= m.cached <= m.shared <= m.tokens
    assert m.cached + m.uncached == m.tokens
    assert 0 <= m.written_long <= m.written <= m.uncached
    assert m.cost >= 0


@given(requests(), st.lists(st.tuples(messages(), st.integers(0, 3000)), max_size=5), RULES)
def test_appending_to_an_identical_request_never_lowers_the_cached_count(
    base: Sent, more: list[tuple[Message, int]], rule: OpenAIRule | AnthropicRule
) -> None:
    grown = Sent(
        messages=(*base.messages, *(m for m, _ in more)),
        counts=(*base.counts, *(c for _, c in more)),
        overhead=base.overhead,
    )
    same = measure(base, base, rule, elapsed=10)
    appended = measure(base, grown, rule, elapsed=10)
    assert appended.shared == base.tokens
    assert appended.cached >= same.cached


@given(requests(min_size=1), st.data(), RULES)
def test_an_edit_at_position_i_caps_the_prefix_at_i(
    base: Sent, data: st.DataObject, rule: OpenAIRule | AnthropicRule
) -> None:
    i = data.draw(st.integers(0, len(base.messages) - 1))
    edited_message = message("user", "an edit no draw makes")
    edited = Sent(
        messages=(*base.messages[:i], edited_message, *base.messages[i + 1 :]),
        counts=base.counts,
        overhead=base.overhead,
    )
    assert shared_messages(base, edited) == i
    m = measure(base, edited, rule)
    assert m.shared == base.prefix_tokens(i)
    assert m.cached <= base.prefix_tokens(i)
