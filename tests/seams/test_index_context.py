"""What a record is indexed by under an IndexContext: its neighbours, its day
and its relative dates, while the stored message stays lossless."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules import IndexContext, MemoryConfig, Pipeline
from memrules._core.errors import ConfigError
from memrules._core.messages import Conversation, Message, Text, message
from memrules._core.seam_records import (
    build_records,
    contextual_text,
    decode_message,
    index_text,
    message_time,
)
from memrules.seams import Embedder, Scope, Seams, qdrant_store
from memrules.testing import conversations
from tests.support.seams import needs_local
from tests.support.strategies import COUNTER

SCOPE = Scope(conversation_id="c1", user="u1")
SESSION = datetime(2023, 5, 8, 13, 56)


def said(*pairs: tuple[str, str]) -> Conversation:
    return tuple(
        Message(role="user" if i % 2 == 0 else "assistant", parts=(Text(text=t),), name=n)
        for i, (n, t) in enumerate(pairs)
    )


DIALOGUE = said(
    ("Melanie", "Did you end up going to the support group?"),
    ("Caroline", "Yes, I went yesterday and it was so powerful."),
    ("Melanie", "That's great! I painted a sunrise last Friday."),
)


def test_a_reply_is_indexed_with_the_message_before_it_and_its_dates() -> None:
    context = IndexContext(time=SESSION)
    text = contextual_text(DIALOGUE, 1, context)
    assert text == (
        "Caroline: Yes, I went yesterday and it was so powerful.\n"
        "(8 May 2023; yesterday: 7 May 2023)\n"
        "(before) Melanie: Did you end up going to the support group?"
    )
    assert contextual_text(DIALOGUE, 0, IndexContext()) == index_text(DIALOGUE[0])
    both = contextual_text(DIALOGUE, 1, IndexContext(after=1, neighbour_chars=20, dates=False))
    assert both == (
        "Caroline: Yes, I went yesterday and it was so powerful.\n"
        "(before) Melanie: Did you en…\n"
        "(after) Melanie: That's gre…"
    )


def test_a_message_of_its_own_time_is_indexed_with_that_day() -> None:
    stamped = message("user", "I'm off to Paris tomorrow.")
    stamped = Message(role="user", parts=stamped.parts, metadata={"time": "2024-01-31T09:00"})
    text = contextual_text((stamped,), 0, IndexContext(time=SESSION))
    assert text.endswith("(31 January 2024; tomorrow: 1 February 2024)")
    epoch = Message(role="user", parts=(), metadata={"time": 0})
    assert message_time(epoch) == datetime(1970, 1, 1, tzinfo=UTC)
    for odd in ("not a date", True, None, [2024]):
        assert message_time(Message(role="user", parts=(), metadata={"time": odd})) is None
    assert message_time(
        Message(role="user", parts=(), metadata={"time": "2024-02-03"})
    ) == datetime(2024, 2, 3)


def test_system_messages_are_not_neighbours() -> None:
    conversation = (message("system", "be brief"), *DIALOGUE[:2])
    assert contextual_text(conversation, 1, IndexContext()) == index_text(conversation[1])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("before", -1),
        ("before", 9),
        ("after", True),
        ("neighbour_chars", 0),
        ("time", "2023-05-08"),
        ("dates", 1),
    ],
)
def test_a_bad_context_is_refused_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=field):
        IndexContext(**{field: value})  # type: ignore[arg-type]


@given(
    conversation=conversations(max_size=10),
    before=st.integers(0, 3),
    after=st.integers(0, 3),
    when=st.none() | st.datetimes(min_value=datetime(1900, 1, 1)),
)
def test_context_changes_only_the_indexed_text(
    conversation: Conversation, before: int, after: int, when: datetime | None
) -> None:
    plain = build_records(conversation, scope=SCOPE)
    context = IndexContext(before=before, after=after, time=when)
    rich = build_records(conversation, scope=SCOPE, context=context)
    assert [r.id for r in rich] == [r.id for r in plain]
    assert [r.payload for r in rich] == [r.payload for r in plain]
    for record, original, m in zip(rich, plain, conversation, strict=True):
        assert decode_message(record.payload) == m
        assert record.text.startswith(original.text)


@needs_local
def test_remember_finds_a_reply_by_the_question_it_answers(
    tmp_path: Path, local_embedder: Embedder
) -> None:
    """The answer ("Yes, I went yesterday") holds no word of the question;
    the message before it does, and its day is in the text found."""
    chatter = said(
        *[("Caroline", f"My cousin likes board game number {i}.") for i in range(6)],
    )
    pipeline = Pipeline.from_config(
        MemoryConfig(),
        seams=Seams(store=qdrant_store(path=str(tmp_path / "q"), embedder=local_embedder)),
        counter=COUNTER,
    )
    pipeline.remember(chatter, conversation_id="c1", user="u1")
    pipeline.remember(DIALOGUE, conversation_id="c1", user="u1", session_time=SESSION)
    (hit,) = pipeline.recall("support group", k=1, conversation_id="c1", user="u1", mode="lexical")
    assert hit.message in DIALOGUE[:2]
    hits = pipeline.recall(
        "Did Caroline go to the support group?", k=2, conversation_id="c1", user="u1"
    )
    assert DIALOGUE[1] in {h.message for h in hits}
    found = next(h for h in hits if h.message == DIALOGUE[1])
    assert "yesterday: 7 May 2023" in found.text
    assert found.message == DIALOGUE[1]  # lossless: the message as it was said
    with pytest.raises(ConfigError, match="session_time"):
        pipeline.remember(DIALOGUE, conversation_id="c1", session_time="yesterday")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="context"):
        pipeline.remember(DIALOGUE, conversation_id="c1", context={"before": 1})  # type: ignore[arg-type]
