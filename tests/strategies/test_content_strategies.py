"""``strip_old_images`` and ``clear_thinking``, and thinking and reasoning
kept byte for byte through the adapters and the pipeline.

The references here read the provider JSON (or the parts) directly, not
memrules' helpers: which images are the newest, which assistant messages
belong to the tool-use loop in progress."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrules import from_anthropic, from_openai, load_pipeline, to_anthropic, to_openai
from memrules._adapters.anthropic import to_anthropic_request
from memrules._core.messages import Conversation, Message, Opaque, Text, ToolResult
from memrules._counting.framing import ANTHROPIC, OPENAI, framed
from memrules._engine.contract import Outcome, StrategyContext
from memrules.strategies import clear_thinking, strip_old_images
from memrules.strategies.images import STUB_PREFIX
from memrules.strategies.thinking import THINKING_CLEARED
from tests.support.strategies import COUNTER, check_strategy, conversations, survivors

PIL = pytest.importorskip("PIL.Image")

FRAMED = framed(COUNTER, OPENAI)
CTX = StrategyContext(counter=FRAMED)


def png(width: int, height: int) -> str:
    buffer = io.BytesIO()
    PIL.new("RGB", (width, height), (30, 60, 90)).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# --- strip_old_images ---------------------------------------------------------------


def _is_image(part: object) -> bool:
    if not isinstance(part, Opaque):
        return False
    payload = part.payload
    kind = payload.get("type") if hasattr(payload, "get") else None
    return (kind or part.kind.rpartition(":")[2]) in ("image", "image_url", "input_image")


def image_places(conversation: Conversation) -> list[tuple[int, int, int | None]]:
    """Every image, in order: (message, part, content index or None)."""
    found = []
    for i, m in enumerate(conversation):
        for j, p in enumerate(m.parts):
            if _is_image(p):
                found.append((i, j, None))
            elif isinstance(p, ToolResult) and not isinstance(p.content, str):
                found.extend((i, j, k) for k, q in enumerate(p.content) if _is_image(q))
    return found


def at(conversation: Conversation, place: tuple[int, int, int | None]) -> Any:
    i, j, k = place
    part = conversation[i].parts[j]
    return part if k is None else part.content[k]  # type: ignore[union-attr]


def protected(conversation: Conversation) -> set[int]:
    """The survivors (tests/support/strategies.py's oracle)."""
    return survivors(conversation)


@given(conversations(max_size=16), st.integers(0, 4))
def test_strip_old_images_keeps_the_newest_and_stubs_the_rest(
    conversation: Conversation, keep: int
) -> None:
    strategy = strip_old_images(keep_images=keep)
    enforced = check_strategy(strategy, conversation, CTX)
    after = enforced.messages
    assert len(after) == len(conversation)
    places = image_places(conversation)
    newest = set(places[max(0, len(places) - keep) :]) if keep else set()
    keep_messages = protected(conversation)
    for place in places:
        if place in newest or place[0] in keep_messages:
            assert at(after, place) is at(conversation, place)
        else:
            stub = at(after, place)
            assert isinstance(stub, Text)
            assert stub.text.startswith(STUB_PREFIX)
    for i in keep_messages:
        assert after[i] is conversation[i]
    for a, b in zip(conversation, after, strict=True):
        assert (a.role, a.id, a.call_ids, a.result_ids) == (b.role, b.id, b.call_ids, b.result_ids)
    assert sum(FRAMED.counts(after)) <= sum(FRAMED.counts(conversation))


@given(conversations(max_size=16), st.integers(0, 3))
def test_strip_old_images_by_turns(conversation: Conversation, keep_turns: int) -> None:
    enforced = check_strategy(strip_old_images(keep_turns=keep_turns), conversation, CTX)
    after = enforced.messages
    starts = [
        i
        for i, m in enumerate(conversation)
        if m.role == "user" and not (m.parts and all(isinstance(p, ToolResult) for p in m.parts))
    ]
    recent = starts[-keep_turns:] if keep_turns else []
    first = recent[0] if recent else len(conversation)
    for place in image_places(conversation):
        kept = place[0] >= first or place[0] in protected(conversation)
        assert (at(after, place) is at(conversation, place)) == kept


def screenshot_loop(shots: int) -> list[dict[str, Any]]:
    """An Anthropic agent loop that takes a screenshot a step."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the layout bug."}]
    for k in range(shots):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": f"toolu_{k}",
                        "name": "screenshot",
                        "input": {"path": f"shots/step{k}.png"},
                    },
                ],
            }
        )
        source = {"type": "base64", "media_type": "image/png", "data": png(640 + 64 * k, 400)}
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{k}",
                        "content": [{"type": "image", "source": source}],
                    }
                ],
            }
        )
    return messages


def test_the_stub_says_what_was_there_and_the_report_the_tokens() -> None:
    conversation = from_anthropic(screenshot_loop(5))
    pipeline = load_pipeline(
        "count_rule: anthropic\nmax_tokens: 100000\nstrategies:\n"
        "  - type: strip_old_images\n    keep_images: 2\n"
    )
    result = pipeline.compress(conversation)
    blocks = to_anthropic(result.messages)
    stubs = [
        b["content"][0]["text"]
        for m in blocks
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result" and b["content"][0]["type"] == "text"
    ]
    assert len(stubs) == 3
    assert stubs[0].startswith(STUB_PREFIX + ": from screenshot, step0.png, 640x400 PNG, ")
    assert stubs[1].startswith(STUB_PREFIX + ": from screenshot, step1.png, 704x400 PNG, ")
    (action,) = result.report.actions
    saved = result.report.tokens_before - result.report.tokens_after
    assert saved > 3 * 300  # each 64x400-ish screenshot is several hundred tokens
    assert action.note == f"replaced 3 old images by stubs, reclaimed {saved} tokens"
    assert repr(pipeline.config.strategies[0].strategy) == "strip_old_images(keep_images=2)"


def test_the_latest_user_message_keeps_its_images() -> None:
    conversation = from_anthropic(screenshot_loop(3))
    out = strip_old_images(keep_images=0)(conversation, CTX)
    assert isinstance(out, Outcome)
    assert out.messages[-1] is conversation[-1]
    assert len(image_places(out.messages)) == 1


def test_strip_old_images_settings() -> None:
    from memrules import ConfigError

    with pytest.raises(ConfigError, match="both set"):
        load_pipeline(
            "strategies:\n  - type: strip_old_images\n    keep_images: 1\n    keep_turns: 1\n"
        )
    with pytest.raises(ConfigError, match="keep_images=-1 must be at least 0"):
        strip_old_images(keep_images=-1)


# --- thinking kept byte for byte ----------------------------------------------------

_b64 = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    min_size=8,
    max_size=80,
)
_words = st.text(alphabet="abc xyz\n😀é漢", min_size=0, max_size=60)


@st.composite
def thinking_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Anthropic histories with thinking and redacted thinking in assistant
    turns, tool loops (finished or in progress), and plain turns."""
    messages: list[dict[str, Any]] = []
    call = 0
    for _ in range(draw(st.integers(1, 5))):
        messages.append({"role": "user", "content": draw(_words) or "go"})
        for _ in range(draw(st.integers(0, 3))):  # tool rounds
            thinking = {"type": "thinking", "thinking": draw(_words), "signature": draw(_b64)}
            blocks: list[dict[str, Any]] = [thinking]
            if draw(st.booleans()):
                blocks.append({"type": "redacted_thinking", "data": draw(_b64)})
            blocks.append(
                {"type": "tool_use", "id": f"toolu_{call}", "name": "run", "input": {"n": call}}
            )
            messages.append({"role": "assistant", "content": blocks})
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"toolu_{call}",
                            "content": draw(_words),
                        }
                    ],
                }
            )
            call += 1
        if draw(st.booleans()):  # the turn ends with an answer (else: a loop in progress)
            answer: list[dict[str, Any]] = [{"type": "text", "text": draw(_words) or "done"}]
            if draw(st.booleans()):
                answer.insert(
                    0, {"type": "thinking", "thinking": draw(_words), "signature": draw(_b64)}
                )
            messages.append({"role": "assistant", "content": answer})
    return messages


@given(thinking_histories())
def test_thinking_round_trips_byte_for_byte(history: list[dict[str, Any]]) -> None:
    conversation = from_anthropic(history)
    assert dumps(to_anthropic(conversation)) == dumps(history)
    request = {"system": "Be careful.", "messages": history}
    assert dumps(to_anthropic_request(from_anthropic(request))) == dumps(request)


def _thinking_blocks(history: list[dict[str, Any]]) -> list[str]:
    return [
        dumps(b)
        for m in history
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] in ("thinking", "redacted_thinking")
    ]


def _loop_start(history: list[dict[str, Any]]) -> int:
    """Index of the latest user message that is not only tool results."""
    for i in range(len(history) - 1, -1, -1):
        m = history[i]
        content = m["content"]
        if m["role"] == "user" and (
            isinstance(content, str) or not all(b["type"] == "tool_result" for b in content)
        ):
            return i
    return 0


def rejected(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> str | None:
    """Why Anthropic would reject ``after``, sent with thinking enabled as
    the continuation of ``before``: an assistant message of the loop in
    progress whose thinking changed, or an empty message."""
    start = _loop_start(before)
    for j, m in enumerate(after):
        if m["role"] == "assistant" and m["content"] in ([], ""):
            return f"messages[{j}] is empty"
    # same number of messages, same order: the strategy rewrites in place
    for i in range(start, len(before)):
        if before[i]["role"] == "assistant" and dumps(before[i]) != dumps(after[i]):
            return f"messages[{i}] of the tool-use loop in progress changed"
    return None


@settings(max_examples=150)
@given(thinking_histories(), st.integers(0, 3))
def test_clear_thinking_never_breaks_the_loop_in_progress(
    history: list[dict[str, Any]], keep: int
) -> None:
    conversation = from_anthropic(history)
    ctx = StrategyContext(counter=framed(COUNTER, ANTHROPIC))
    enforced = check_strategy(clear_thinking(keep_turns=keep), conversation, ctx)
    after = to_anthropic(enforced.messages)
    assert rejected(history, after) is None
    # what stays is byte for byte what came
    assert set(_thinking_blocks(after)) <= set(_thinking_blocks(history))
    holding = [
        i
        for i, m in enumerate(history)
        if m["role"] == "assistant"
        and any(b["type"] in ("thinking", "redacted_thinking") for b in m["content"])
    ]
    start = _loop_start(history)
    newest = set(holding[max(0, len(holding) - keep) :]) if keep else set()
    for i in holding:
        blocks = _blocks(after[i]["content"])
        if i >= start or i in newest:
            assert dumps(after[i]) == dumps(history[i])
        else:
            rest = [
                b
                for b in history[i]["content"]
                if b["type"] not in ("thinking", "redacted_thinking")
            ]
            assert blocks == (rest or [{"type": "text", "text": THINKING_CLEARED}])


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A message's content as blocks (a string is one text block)."""
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def test_clear_thinking_by_hand() -> None:
    history = [
        {"role": "user", "content": "first"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "old plan " * 50, "signature": "c2ln"},
                {"type": "text", "text": "answer one"},
            ],
        },
        {"role": "user", "content": "second"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "new plan", "signature": "c2lnMg=="},
                {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
        },
    ]
    pipeline = load_pipeline(
        "count_rule: anthropic\nmax_tokens: 100000\n"
        "strategies:\n  - type: clear_thinking\n    keep_turns: 0\n"
    )
    result = pipeline.compress(from_anthropic(history))
    out = to_anthropic_request(result.messages)["messages"]
    assert out[1] == {"role": "assistant", "content": "answer one"}
    assert out[3] == history[3]  # the loop in progress keeps its thinking
    saved = result.report.tokens_before - result.report.tokens_after
    assert saved == COUNTER.count_text("old plan " * 50)
    assert (
        result.report.actions[0].note
        == f"cleared the thinking of 1 assistant turns, {saved} tokens"
    )


@given(thinking_histories())
def test_other_strategies_keep_thinking_byte_for_byte(history: list[dict[str, Any]]) -> None:
    pipeline = load_pipeline(
        "count_rule: anthropic\nmax_tokens: 200\nstrategies:\n"
        "  - type: clear_tool_results\n    keep_pairs: 1\n"
        "  - type: strip_old_images\n"
        "  - type: sliding_window\n    keep_messages: 6\n"
    )
    result = pipeline.apply(from_anthropic(history))
    assert set(_thinking_blocks(to_anthropic(result.messages))) <= set(_thinking_blocks(history))


# --- OpenAI reasoning in the chat format -------------------------------------------


@given(st.lists(st.tuples(_words, _b64, st.booleans()), min_size=1, max_size=4))
def test_openai_reasoning_round_trips_byte_for_byte(turns: list[tuple[str, str, bool]]) -> None:
    raw: list[dict[str, Any]] = []
    for k, (text, secret, summary) in enumerate(turns):
        raw.append({"role": "user", "content": text or "go"})
        details: list[dict[str, Any]] = [
            {
                "type": "reasoning.encrypted",
                "data": secret,
                "id": f"rs_{k}",
                "format": "openai-responses-v1",
                "index": 0,
            }
        ]
        if summary:
            details.insert(0, {"type": "reasoning.summary", "summary": text, "index": 0})
        raw.append(
            {
                "role": "assistant",
                "content": text,
                "reasoning_content": text,
                "reasoning_details": details,
            }
        )
    conversation = from_openai(raw)
    assert dumps(to_openai(conversation)) == dumps(raw)
    counted = sum(framed(COUNTER, OPENAI).counts(conversation))
    assert counted >= sum(-(-len(secret) // 4) for _, secret, _ in turns)


def test_messages_without_thinking_are_left_alone() -> None:
    conversation: Conversation = (Message(role="user", parts=(Text(text="hi"),)),)
    assert clear_thinking()(conversation, CTX) is conversation
    assert strip_old_images()(conversation, CTX) is conversation
