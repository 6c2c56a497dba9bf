"""What a store keeps of a message: lossless JSON, the indexed text, ids."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memrules import from_anthropic, from_openai, to_openai
from memrules._core.errors import ConfigError, StoreError
from memrules._core.messages import Conversation, Message, Text, ToolCall, ToolResult, message
from memrules._core.seam_records import (
    build_records,
    check_storable,
    content_hash,
    decode_message,
    encode_message,
    index_text,
)
from memrules.memory.autostore import memory_id
from memrules.seams import Scope
from memrules.seams._fusion import reciprocal_rank_fusion
from memrules.seams._lexical import document_vector, query_vector, tokens
from memrules.testing import conversations
from tests.strategies.test_units import agent_loop
from tests.support.adapter_json import openai_messages


@given(conversation=conversations(max_size=12))
def test_every_message_reads_back_equal(conversation: Conversation) -> None:
    for m in conversation:
        text = encode_message(m)
        assert decode_message(text) == m
        assert text.isascii()
        assert json.loads(text)["role"] == m.role


@given(raw=openai_messages())
def test_provider_fields_keep_their_order(raw: list[dict[str, object]]) -> None:
    """Read back, a message writes the same bytes to the provider (whose
    prompt cache matches bytes)."""
    conversation = from_openai(raw)
    again = tuple(decode_message(encode_message(m)) for m in conversation)
    assert json.dumps(to_openai(again)) == json.dumps(to_openai(conversation))


def test_anthropic_blocks_survive() -> None:
    (m,) = from_anthropic(
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "s"},
                    {"type": "tool_use", "id": "t", "name": "f", "input": {"b": 1, "a": 2}},
                ],
            }
        ]
    )
    assert decode_message(encode_message(m)) == m


def test_a_message_json_cannot_carry_is_refused() -> None:
    odd = message("user", "hi", metadata={"tags": frozenset({"a"})})
    with pytest.raises(StoreError, match=r"cannot be stored as JSON|does not read back"):
        encode_message(odd)
    with pytest.raises(StoreError, match=r"messages\[1\]"):
        build_records((message("user", "ok"), odd), scope=Scope())


def test_equal_messages_hash_alike_whatever_their_key_order() -> None:
    a = message("user", "x", metadata={"m": {"a": 1, "b": 2}})
    b = message("user", "x", metadata={"m": {"b": 2, "a": 1}})
    assert a == b
    assert content_hash(a) == content_hash(b)
    assert content_hash(a) != content_hash(message("user", "y"))


def test_the_indexed_text_names_the_speaker_and_the_call() -> None:
    call = ToolCall(id="c1", name="read_file", arguments='{"path": "src/a.py"}')
    assert index_text(message("user", "hello", name="ana")) == "ana: hello"
    assert index_text(message("assistant", "Reading.", call)) == (
        'assistant: Reading.\nread_file({"path": "src/a.py"})'
    )
    result = message("tool", ToolResult(call_id="c1", content="x = 1"))
    assert index_text(result, {"c1": call}) == 'tool: read_file({"path": "src/a.py"}) -> x = 1'
    assert index_text(result) == "tool: x = 1"


def test_records_carry_scope_turn_exchange_and_stable_ids() -> None:
    history = agent_loop(3)
    scope = Scope(conversation_id="c", user="u", tenant="t")
    records = build_records(history, scope=scope)
    assert [r.message for r in records] == list(history)
    assert len({r.id for r in records}) == len(records)
    assert records[0].turn == ""  # the system prompt is in no turn
    assert len({r.turn for r in records[1:]}) == 1  # one instruction, one turn
    assert records[1].exchange == ""
    assert records[2].exchange == records[3].exchange != records[4].exchange
    # The same history again, or a part of it, gives the same ids.
    again = build_records(history, range(2, 6), scope=scope)
    assert [r.id for r in again] == [r.id for r in records[2:6]]
    # Another scope, other ids.
    other = build_records(history, scope=Scope(conversation_id="c", user="v", tenant="t"))
    assert not {r.id for r in other} & {r.id for r in records}


def test_equal_messages_are_distinct_records() -> None:
    history = (
        message("user", "continue"),
        message("assistant", "ok"),
        message("assistant", "ok"),
        message("user", "continue"),
        message("assistant", "ok"),
    )
    records = build_records(history, scope=Scope())
    assert len({r.id for r in records}) == 5
    assert records[0].turn != records[3].turn


def test_scope_ids_are_checked() -> None:
    with pytest.raises(ConfigError, match="user=''"):
        Scope(user="")
    with pytest.raises(ConfigError, match="conversation_id=3"):
        Scope(conversation_id=3)  # type: ignore[arg-type]


def test_lexical_vectors() -> None:
    assert tokens("Read src/billing/invoice_7.py — 東京!") == [
        "read", "src", "billing", "invoice_7", "py", "東", "京",
    ]  # fmt: skip
    indices, values = document_vector("x x y")
    assert len(indices) == 2
    assert indices == sorted(indices)
    assert max(values) == values[indices.index(query_vector("x")[0][0])]
    assert query_vector("y x y") == (sorted(query_vector("x y")[0]), [1.0, 1.0])


@given(
    rankings=st.lists(
        st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8), min_size=1, max_size=3
    )
)
def test_fusion_is_deterministic_and_rewards_agreement(rankings: list[list[str]]) -> None:
    fused = reciprocal_rank_fusion(rankings)
    assert fused == reciprocal_rank_fusion([list(r) for r in rankings])
    assert {i for i, _ in fused} == {i for r in rankings for i in r}
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    first = {r[0] for r in rankings if r}
    if len(first) == 1 and all(rankings):
        assert fused[0][0] in first  # first everywhere: first fused


def test_a_text_only_message_is_found_by_its_text() -> None:
    m = Message(role="user", parts=(Text(text="a"), Text(text="b")))
    assert index_text(m) == "user: a\nb"


# --- record ids: one per key, and the same as before for keys they never confused ------

_PIECES = st.text(alphabet=st.sampled_from("ab\x1f"), min_size=1, max_size=4)
_KEYS = st.tuples(st.none() | _PIECES, st.none() | _PIECES, st.none() | _PIECES, _PIECES)


def _record_id(tenant: str | None, user: str | None, conversation: str | None, text: str) -> str:
    scope = Scope(conversation_id=conversation, user=user, tenant=tenant)
    (record,) = build_records((message("user", text),), scope=scope)
    return record.id


@example(keys=[("a\x1fb", "c", None, "same"), ("a", "b\x1fc", None, "same")])
@example(keys=[("a", "b\x1fc", "d", "x"), ("a", "b", "c\x1fd", "x"), ("a\x1fb", "c", "d", "x")])
@given(keys=st.lists(_KEYS, unique=True, min_size=2, max_size=8))
def test_distinct_tenant_user_conversation_and_text_never_share_a_record_id(
    keys: list[tuple[str | None, str | None, str | None, str]],
) -> None:
    ids = [_record_id(*key) for key in keys]
    assert len(set(ids)) == len(ids), keys


@example(keys=[("a\x1fb", "c", "same"), ("a", "b\x1fc", "same")])
@given(keys=st.lists(st.tuples(_PIECES, _PIECES, _PIECES), unique=True, min_size=2, max_size=8))
def test_distinct_tenant_user_and_text_never_share_a_memory_id(
    keys: list[tuple[str, str, str]],
) -> None:
    ids = [memory_id(f"Q: {text}", user=user, tenant=tenant) for tenant, user, text in keys]
    assert len(set(ids)) == len(ids), keys


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_ids_of_keys_without_the_separator_stay_as_stored_before() -> None:
    """A store written before keeps deduplicating: the records and memories
    of ordinary ids keep the ids they were stored under."""
    said = message("user", "hello")
    digest = content_hash(said)
    turn = _sha(f"turn\x1f{digest}")[:32]
    assert _record_id("t", "u", "c", "hello") == _sha(f"t\x1fu\x1fc\x1f{turn}\x1f{digest}")[:32]
    assert _record_id(None, None, None, "hello") == _sha(f"\x1f\x1f\x1f{turn}\x1f{digest}")[:32]
    text = "Q: Where?\nA: Porto."
    assert (
        memory_id(text, user="ana", tenant="acme")
        == (_sha(f"memrules-memory\x1facme\x1fana\x1f{_sha(' '.join(text.split()))}")[:32])
    )


def test_a_scope_id_no_store_can_keep_is_refused_naming_its_field() -> None:
    for field in ("conversation_id", "user", "tenant"):
        scope = Scope(**{field: "ana\ud800"})  # a scope, for a pipeline that stores nothing
        with pytest.raises(ConfigError, match=rf"{field}=.*lone surrogate") as caught:
            check_storable(scope)
        assert caught.value.problems[0].yaml_path == field
    # Control characters are text a store keeps (and finds again).
    check_storable(Scope(user="a\x00\x1f\x7f\n", tenant="\t"))
