"""Hypothesis strategies for provider message JSON.

Valid OpenAI chat-completions messages and Anthropic Messages API messages,
as parsed JSON (plain dicts and lists), with the awkward corners the adapters
must carry through untouched: null, empty and absent content, unknown keys at
the message and part level, legacy ``function_call``, ``developer``,
``cache_control``, thinking blocks, block types nobody knows yet.

    openai_messages()          list of OpenAI message dicts
    anthropic_messages()       list of Anthropic message dicts
    anthropic_requests()       {"system": ..., "messages": [...]} dicts
    json_values()              any JSON value (no NaN or infinities)
    shuffled(strategy)         its values with every object's keys in a drawn order
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "anthropic_block",
    "anthropic_message",
    "anthropic_messages",
    "anthropic_requests",
    "anthropic_system",
    "json_values",
    "openai_content_part",
    "openai_message",
    "openai_messages",
    "openai_tool_call",
    "reordered",
    "shuffled",
]

Strategy = st.SearchStrategy[Any]

_text = st.text(max_size=12)
_short = st.text(min_size=1, max_size=8)
_ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=10)
_b64 = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", max_size=16
)


def json_values(max_leaves: int = 6) -> Strategy:
    """Any JSON value: null, booleans, numbers, text, arrays, objects."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**63), max_value=2**63)
        | st.floats(allow_nan=False, allow_infinity=False)
        | _text
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
        max_leaves=max_leaves,
    )


def _unknown_keys(known: Iterable[str]) -> Strategy:
    """Keys a provider might add that memrules does not know."""
    taken = frozenset(known)
    names = st.sampled_from(["x_trace", "metadata", "annotations", "vendor", "id"]) | _short
    return st.dictionaries(names.filter(lambda k: k not in taken), json_values(3), max_size=2)


def _obj(
    required: Mapping[str, Strategy],
    optional: Mapping[str, Strategy] | None = None,
    *,
    unknown: bool = True,
) -> Strategy:
    """An object with ``required`` keys, some of ``optional``, and sometimes
    keys nobody knows."""
    optional = dict(optional or {})
    base = st.fixed_dictionaries(dict(required), optional=optional)
    if not unknown:
        return base
    extra: Strategy = st.one_of(st.just({}), _unknown_keys([*required, *optional, "type"]))
    return st.tuples(base, extra).map(lambda pair: {**pair[1], **pair[0]})


def _unknown_type(known: Iterable[str]) -> Strategy:
    taken = frozenset(known)
    return _obj({"type": _short.filter(lambda t: t not in taken)}, {"data": json_values(3)})


# --------------------------------------------------------------------------- OpenAI

_OPENAI_PART_TYPES = ("text", "image_url", "input_audio", "file", "refusal")


def openai_content_part(*, text_only: bool = False) -> Strategy:
    """One element of an OpenAI ``content`` list."""
    text = _obj({"type": st.just("text"), "text": _text})
    if text_only:
        return text
    url = st.sampled_from(["https://example.com/cat.png", "data:image/png;base64,iVBORw0KGgo="])
    image = _obj(
        {
            "type": st.just("image_url"),
            "image_url": st.fixed_dictionaries(
                {"url": url}, optional={"detail": st.sampled_from(["low", "high", "auto"])}
            ),
        }
    )
    audio = _obj(
        {
            "type": st.just("input_audio"),
            "input_audio": st.fixed_dictionaries(
                {"data": _b64, "format": st.sampled_from(["wav", "mp3"])}
            ),
        }
    )
    file = _obj(
        {
            "type": st.just("file"),
            "file": st.fixed_dictionaries(
                {}, optional={"file_id": _ids, "file_data": _b64, "filename": _short}
            ),
        }
    )
    refusal = _obj({"type": st.just("refusal"), "refusal": _text})
    return st.one_of(text, text, image, audio, file, refusal, _unknown_type(_OPENAI_PART_TYPES))


def _openai_content(*, text_only: bool = False) -> Strategy:
    return st.one_of(
        _text,
        st.just(""),
        st.none(),
        st.lists(openai_content_part(text_only=text_only), max_size=3),
    )


def openai_tool_call() -> Strategy:
    """One entry of an assistant's ``tool_calls``: a function call, or now and
    then a custom-tool call."""
    arguments = _text | json_values(4).map(_dumps)
    function = _obj(
        {
            "id": _ids,
            "type": st.just("function"),
            "function": _obj({"name": _short, "arguments": arguments}),
        }
    )
    custom = _obj(
        {"id": _ids, "type": st.just("custom"), "custom": _obj({"name": _short, "input": _text})}
    )
    return st.one_of(function, function, function, custom)


def openai_message() -> Strategy:
    """One OpenAI chat-completions message of any role."""
    content = _openai_content()
    name = _short | st.none()

    def with_content(
        required: dict[str, Strategy], optional: dict[str, Strategy], content: Strategy
    ) -> Strategy:
        # Mostly with content; now and then without the key at all.
        usual = _obj({**required, "content": content}, optional)
        odd = _obj(required, optional)
        return st.one_of(usual, usual, usual, odd)

    plain = [
        with_content({"role": st.just(role)}, {"name": name}, content)
        for role in ("system", "developer", "user")
    ]
    assistant = with_content(
        {"role": st.just("assistant")},
        {
            "name": name,
            "tool_calls": st.none() | st.lists(openai_tool_call(), max_size=3),
            "function_call": st.none() | _obj({"name": _short, "arguments": _text}),
            "refusal": st.none() | _text,
            "audio": st.fixed_dictionaries({"id": _ids}),
        },
        content,
    )
    tool = with_content(
        {"role": st.just("tool"), "tool_call_id": _ids},
        {"name": name},
        _openai_content(text_only=True),
    )
    function = with_content({"role": st.just("function"), "name": _short}, {}, _text | st.none())
    return st.one_of(*plain, plain[2], assistant, assistant, tool, function)


def openai_messages(max_size: int = 8) -> Strategy:
    """A list of OpenAI messages. Valid one by one; not a well-formed
    dialogue (tool results need not follow their calls)."""
    return st.lists(openai_message(), max_size=max_size)


# --------------------------------------------------------------------------- Anthropic

_ANTHROPIC_BLOCK_TYPES = (
    "text",
    "image",
    "document",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
)
_cache_control = st.fixed_dictionaries(
    {"type": st.just("ephemeral")}, optional={"ttl": st.sampled_from(["5m", "1h"])}
)


def _text_block() -> Strategy:
    citation = st.fixed_dictionaries(
        {
            "type": st.just("char_location"),
            "cited_text": _text,
            "start_char_index": st.integers(0, 99),
        }
    )
    return _obj(
        {"type": st.just("text"), "text": _text},
        {"cache_control": _cache_control, "citations": st.none() | st.lists(citation, max_size=2)},
    )


def _image_block() -> Strategy:
    source = st.one_of(
        st.fixed_dictionaries(
            {
                "type": st.just("base64"),
                "media_type": st.sampled_from(["image/png", "image/jpeg"]),
                "data": _b64,
            }
        ),
        st.fixed_dictionaries(
            {"type": st.just("url"), "url": st.just("https://example.com/cat.png")}
        ),
    )
    return _obj({"type": st.just("image"), "source": source}, {"cache_control": _cache_control})


def anthropic_block(role: str = "user") -> Strategy:
    """One content block as a ``role`` message would hold it."""
    document = _obj(
        {
            "type": st.just("document"),
            "source": st.fixed_dictionaries(
                {"type": st.just("text"), "media_type": st.just("text/plain"), "data": _text}
            ),
        },
        {"title": _text, "citations": st.fixed_dictionaries({"enabled": st.booleans()})},
    )
    unknown = _unknown_type(_ANTHROPIC_BLOCK_TYPES)
    if role == "assistant":
        tool_use = _obj(
            {
                "type": st.just("tool_use"),
                "id": _ids,
                "name": _short,
                "input": st.dictionaries(_text, json_values(4), max_size=3),
            },
            {"cache_control": _cache_control},
        )
        thinking = _obj({"type": st.just("thinking"), "thinking": _text, "signature": _b64})
        redacted = _obj({"type": st.just("redacted_thinking"), "data": _b64})
        return st.one_of(_text_block(), tool_use, tool_use, thinking, redacted, unknown)
    inner = st.one_of(_text_block(), _image_block())
    tool_result = _obj(
        {"type": st.just("tool_result"), "tool_use_id": _ids},
        {
            "content": st.one_of(_text, st.none(), st.lists(inner, max_size=3)),
            "is_error": st.booleans(),
            "cache_control": _cache_control,
        },
    )
    return st.one_of(_text_block(), _image_block(), document, tool_result, tool_result, unknown)


def anthropic_message(*, system_role: bool = False) -> Strategy:
    """One Anthropic message; with ``system_role``, now and then a
    ``{"role": "system"}`` entry (memrules' lossless form for system messages
    that ``to_anthropic`` writes)."""
    roles = ["user", "assistant"] + (["system"] if system_role else [])

    def for_role(role: str) -> Strategy:
        blocks = anthropic_block("user" if role == "system" else role)
        content = st.one_of(
            _text,
            st.just(""),
            st.lists(blocks, max_size=4),
            st.lists(blocks, min_size=1, max_size=4),
            st.lists(_text_block(), max_size=1),
        )
        message = st.fixed_dictionaries({"role": st.just(role), "content": content})
        odd = _obj({"role": st.just(role)}, {"content": st.none() | content})
        return st.one_of(message, message, message, message, message, odd)

    return st.one_of(*(for_role(r) for r in roles))


def anthropic_messages(max_size: int = 8, *, system_role: bool = False) -> Strategy:
    """A list of Anthropic messages, valid one by one (not a well-formed
    dialogue: tool results need not answer a call)."""
    return st.lists(anthropic_message(system_role=system_role), max_size=max_size)


def anthropic_system() -> Strategy:
    """A ``system`` parameter: a string or a list of text blocks."""
    return _text | st.lists(_text_block(), max_size=3)


def anthropic_requests(max_size: int = 6) -> Strategy:
    """``{"messages": [...]}``, usually with a ``system`` parameter."""
    return st.fixed_dictionaries(
        {"messages": anthropic_messages(max_size)}, optional={"system": anthropic_system()}
    )


def _dumps(value: Any) -> str:
    return json.dumps(value)


def reordered(value: Any, rng: random.Random) -> Any:
    """``value`` with the keys of every object, at every depth, in an order
    drawn from ``rng``."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: reordered(value[key], rng) for key in keys}
    if isinstance(value, list):
        return [reordered(item, rng) for item in value]
    return value


def shuffled(strategy: Strategy) -> Strategy:
    """Values of ``strategy`` with every object's keys in a drawn order:
    providers and clients write keys in any order, and output must keep it."""
    return st.tuples(strategy, st.randoms(use_true_random=False)).map(lambda pair: reordered(*pair))
