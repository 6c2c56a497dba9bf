"""The readings of `enforce` that cost what the output holds, not the
input, give what the general reading gives: with a measure, pairing closure
is read from the output's tool ids (`Track.closes_nothing`); with an
origin the caller claims (``claimed``) (a carried request), objects are not matched
again. A wrong claim is not taken."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memrules._core.invariants import _closure, enforce
from memrules._core.messages import Conversation, Message, Text, message
from memrules._counting.measure import Measure
from tests.support.strategies import COUNTER, agent_histories


@st.composite
def outputs(draw: st.DrawFn) -> tuple[Conversation, Conversation, tuple[int | None, ...]]:
    """An input, an output made of it (messages kept, dropped, rewritten
    with the same role and tool ids, new ones put in), and the output's
    true origin."""
    before = draw(agent_histories(max_size=20))
    extra = draw(agent_histories(max_size=6))
    after: list[Message] = []
    origin: list[int | None] = []
    for i, m in enumerate(before):
        if draw(st.booleans()) and extra:
            after.append(extra[draw(st.integers(0, len(extra) - 1))].evolve())
            origin.append(None)
        what = draw(st.sampled_from(("keep", "keep", "drop", "rewrite")))
        if what == "keep":
            after.append(m)
            origin.append(i)
        elif what == "rewrite":
            others = tuple(p for p in m.parts if not isinstance(p, Text))
            after.append(m.evolve(parts=(*others, Text(text=f"rewritten {i}"))))
            origin.append(None)
    return before, tuple(after), tuple(origin)


@given(outputs(), st.booleans())
def test_the_measured_reading_equals_the_general_one(
    made: tuple[Conversation, Conversation, tuple[int | None, ...]], user_first: bool
) -> None:
    before, after, origin = made
    general = enforce(before, after, user_first=user_first)
    measure = Measure(COUNTER)
    assert enforce(before, after, measure=measure, user_first=user_first) == general
    claimed = enforce(
        before, after, measure=Measure(COUNTER), user_first=user_first, claimed=origin
    )
    if len(set(map(id, before))) == len(before):  # else the claim says which one was kept
        assert claimed == general


@given(outputs())
def test_closes_nothing_only_where_closure_drops_nothing(
    made: tuple[Conversation, Conversation, tuple[int | None, ...]],
) -> None:
    before, after, _ = made
    track = Measure(COUNTER).track(before)
    if track.closes_nothing(after):
        assert _closure(before, after) == (frozenset(), frozenset())


@given(outputs(), st.data())
def test_a_wrong_claim_is_not_taken(
    made: tuple[Conversation, Conversation, tuple[int | None, ...]], data: st.DataObject
) -> None:
    before, after, origin = made
    kept = [j for j, i in enumerate(origin) if i is not None]
    if not kept:
        return
    j = data.draw(st.sampled_from(kept))
    shift = data.draw(st.sampled_from((-1, 1)))
    wrong = list(origin)
    wrong[j] = origin[j] + shift  # type: ignore[operator]
    general = enforce(before, after)
    assert enforce(before, after, measure=Measure(COUNTER), claimed=tuple(wrong)) == general
    short = origin[:-1]
    assert enforce(before, after, measure=Measure(COUNTER), claimed=short) == general


def test_a_dropped_call_drops_its_result_where_the_claim_keeps_it() -> None:
    """Closure still runs when the claimed output keeps a result whose call
    it dropped."""
    from memrules._core.messages import ToolCall, ToolResult

    call = message("assistant", ToolCall(id="c1", name="read", arguments="{}"))
    result = Message(role="tool", parts=(ToolResult(call_id="c1", content="text"),))
    before = (message("system", "s"), message("user", "q"), call, result, message("user", "go"))
    after = (before[0], before[1], result, before[4])
    expected = enforce(before, after)
    assert "c1" not in str(expected.messages)
    claimed = enforce(before, after, measure=Measure(COUNTER), claimed=(0, 1, 3, 4))
    assert claimed == expected
