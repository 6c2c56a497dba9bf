"""Unit tests of :func:`memrules._core.invariants.enforce` and
:func:`~memrules._core.invariants.check_invariants` on hand-built cases."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memrules._core.invariants import check_invariants, enforce, pairing_problems
from memrules._core.messages import Message, Opaque, Text, ToolCall, ToolResult, message
from memrules._core.survivors import SurvivorRule
from memrules.testing import assert_invariants
from tests.support.strategies import agent_histories, held, survivors

SYS = message("system", "You are terse.")
U1 = message("user", "first question")
A1 = message("assistant", "first answer")
U2 = message("user", "second question")
A2 = message("assistant", "second answer")
U3 = message("user", "latest question")

NO_TASK = SurvivorRule(task=False)
"""The survivors without the task: these cases drop the first user message."""


def call(*ids: str, text: str | None = None) -> Message:
    parts = (Text(text=text),) if text else ()
    return Message(
        role="assistant", parts=parts + tuple(ToolCall(id=i, name="search") for i in ids)
    )


def result(call_id: str, role: str = "tool") -> Message:
    return Message(role=role, parts=(ToolResult(call_id=call_id, content=f"out {call_id}"),))  # type: ignore[arg-type]


# --- order and survivors -----------------------------------------------------------


def test_no_op_keeps_the_input_tuple() -> None:
    before = (SYS, U1, A1, U2)
    assert enforce(before, before).messages is before
    same_values = tuple(before)  # a new tuple of the same objects
    enforced = enforce(before, same_values)
    assert enforced.messages is before
    assert not enforced.changed
    assert enforced.origin == (0, 1, 2, 3)


def test_dropping_messages_is_reported_by_index() -> None:
    before = (SYS, U1, A1, U2, A2, U3)
    enforced = enforce(before, (SYS, U2, A2, U3), survivors=NO_TASK)
    assert enforced.violation is None
    assert enforced.removed == (1, 2)
    assert enforced.origin == (0, 3, 4, 5)
    assert enforced.messages == (SYS, U2, A2, U3)


@pytest.mark.parametrize(
    "after",
    [(SYS, A1, U1, U3), (SYS, U1, U1, U3), (SYS, U3, A1)],
    ids=["swap", "repeat", "move-back"],
)
def test_reordering_is_rejected(after: tuple[Message, ...]) -> None:
    before = (SYS, U1, A1, U3)
    enforced = enforce(before, after)
    assert enforced.messages is before
    assert enforced.violation is not None
    assert "order must be kept" in enforced.violation
    assert not enforced.changed


@pytest.mark.parametrize(
    ("after", "what"),
    [
        ((U1, A1, U3), "first system message"),
        ((SYS, U1, A1), "most recent user message"),
        ((SYS, U1, A1, message("user", "latest question")), "most recent user message"),
        ((message("system", "You are terse."), U1, A1, U3), "first system message"),
        ((message("system", "injected"), SYS, U1, A1, U3), "before the first system message"),
    ],
    ids=["drop-system", "drop-latest-user", "rebuilt-user", "rebuilt-system", "insert-before"],
)
def test_survivors_must_stay_unaltered(after: tuple[Message, ...], what: str) -> None:
    """Survivors are kept by identity: an equal copy is an alteration, since
    the interpreter cannot tell a copy from an edit."""
    before = (SYS, U1, A1, U3)
    enforced = enforce(before, after)
    assert enforced.messages is before
    assert enforced.violation is not None
    assert what in enforced.violation


def test_a_system_message_that_is_not_first_may_be_preceded() -> None:
    before = (U1, SYS, A1, U3)
    note = message("user", "[summary] earlier")
    enforced = enforce(before, (note, SYS, A1, U3), survivors=NO_TASK)
    assert enforced.violation is None
    assert enforced.replaced == ((0, 0),)


def test_replacements_and_insertions_are_named() -> None:
    before = (SYS, U1, A1, U2, A2, U3)
    summary = message("user", "[summary] of two turns")
    enforced = enforce(before, (SYS, summary, U3), survivors=NO_TASK)
    assert enforced.replaced == ((1, 1),)
    assert enforced.removed == (2, 3, 4)
    assert enforced.origin == (0, None, 5)
    stub = message("assistant", "[stub]")
    enforced = enforce(before, (SYS, U1, A1, U2, A2, stub, U3), survivors=NO_TASK)
    assert enforced.inserted == (5,)
    assert enforced.removed == ()


def test_a_reused_message_object_does_not_confuse_matching() -> None:
    """Callers reuse canned messages; a window over such a history stands."""
    reminder = message("system", "reminder: be brief")
    before = (SYS, U1, reminder, A1, U2, reminder, A2, U3)
    enforced = enforce(before, (SYS, reminder, A1, U2, reminder, A2, U3), survivors=NO_TASK)
    assert enforced.violation is None
    assert enforced.removed == (1,)
    enforced = enforce(before, (SYS, U2, reminder, A2, U3), survivors=NO_TASK)
    assert enforced.violation is None
    assert enforced.removed == (1, 2, 3)
    # the latest user message is itself a reused object
    again = message("user", "continue")
    before = (SYS, again, A1, again)
    enforced = enforce(before, (SYS, again), survivors=NO_TASK)
    assert enforced.violation is None
    assert enforced.origin == (0, 3)
    assert enforced.removed == (1, 2)


# --- tool pairing -----------------------------------------------------------------


def test_dropping_a_call_drops_its_result() -> None:
    before = (SYS, U1, call("c1"), result("c1"), A1, U3)
    enforced = enforce(before, (SYS, U1, *before[3:]))  # the call is gone
    assert enforced.violation is None
    assert enforced.messages == (SYS, U1, A1, U3)
    assert enforced.removed == (2, 3)
    assert enforced.closed_calls == ()


def test_dropping_a_result_drops_its_call_and_the_emptied_message() -> None:
    assistant = call("c1")
    before = (SYS, U1, assistant, result("c1"), A1, U3)
    enforced = enforce(before, (SYS, U1, assistant, A1, U3))
    assert enforced.violation is None
    assert enforced.messages == (SYS, U1, A1, U3)
    assert enforced.closed_calls == ("c1",)
    assert 2 in enforced.removed


def test_closure_keeps_the_rest_of_a_message() -> None:
    assistant = call("c1", text="let me look")
    before = (SYS, U1, assistant, result("c1"), U3)
    enforced = enforce(before, (SYS, U1, assistant, U3))
    assert enforced.violation is None
    (kept,) = [m for m in enforced.messages if m.role == "assistant"]
    assert kept.parts == (Text(text="let me look"),)
    assert enforced.origin[2] is None  # a mended message is new
    assert (2, 2) in enforced.replaced
    assert_invariants(before, enforced.messages)


def test_parallel_calls_are_one_unit() -> None:
    """Losing one result of a parallel call drops every call of the message,
    and so the other results too."""
    assistant = call("a", "b")
    ra, rb = result("a"), result("b")
    before = (SYS, U1, assistant, ra, rb, A1, U3)
    enforced = enforce(before, (SYS, U1, assistant, rb, A1, U3))
    assert enforced.violation is None
    assert enforced.messages == (SYS, U1, A1, U3)
    assert enforced.closed_calls == ("a", "b")
    assert_invariants(before, enforced.messages)


def test_closure_cascades_through_shared_messages() -> None:
    """A result message shared by two units loses only the dead unit's part."""
    first, second = call("a", "b"), call("c")
    shared = Message(
        role="tool",
        parts=(ToolResult(call_id="b", content="B"), ToolResult(call_id="c", content="C")),
    )
    before = (SYS, U1, first, second, result("a"), shared, U3)
    enforced = enforce(before, (SYS, U1, first, second, shared, U3))
    assert enforced.violation is None
    assert enforced.closed_calls == ("a", "b")
    assert enforced.messages[2] is second
    assert enforced.messages[3].parts == (ToolResult(call_id="c", content="C"),)
    assert_invariants(before, enforced.messages)


def test_anthropic_results_leave_the_latest_user_message_with_its_text() -> None:
    """Results ride inside the latest user message: when their call goes, the
    blocks go and the message survives without them."""
    assistant = call("t1")
    latest = Message(
        role="user", parts=(ToolResult(call_id="t1", content="42"), Text(text="and now?"))
    )
    before = (SYS, U1, assistant, latest)
    enforced = enforce(before, (SYS, U1, latest))
    assert enforced.violation is None
    assert enforced.messages[-1].parts == (Text(text="and now?"),)
    assert enforced.origin == (0, 1, None)
    assert (3, 2) in enforced.replaced
    assert check_invariants(before, enforced.messages) == []


def test_the_latest_user_message_cannot_be_emptied_by_closure() -> None:
    assistant = call("t1")
    latest = Message(role="user", parts=(ToolResult(call_id="t1", content="42"),))
    before = (SYS, U1, assistant, latest)
    enforced = enforce(before, (SYS, U1, latest))
    assert enforced.messages is before
    assert enforced.violation is not None
    assert "most recent user message" in enforced.violation


def test_closure_may_not_alter_the_first_system_message() -> None:
    odd_system = Message(role="system", parts=(Text(text="sys"), ToolCall(id="s1", name="x")))
    before = (odd_system, U1, result("s1"), U3)
    enforced = enforce(before, (odd_system, U1, U3))
    assert enforced.messages is before
    assert enforced.violation is not None
    assert "first system message" in enforced.violation


def test_orphans_and_unanswered_calls_in_the_input_are_left_alone() -> None:
    orphan = result("gone")  # its call was never in the conversation
    pending = call("p1", text="running")  # never answered
    before = (SYS, U1, A1, orphan, U2, pending, U3)
    enforced = enforce(before, (SYS, orphan, U2, pending, U3), survivors=NO_TASK)
    assert enforced.violation is None
    assert enforced.messages == (SYS, orphan, U2, pending, U3)
    assert enforced.closed_calls == ()
    assert enforced.removed == (1, 2)


def test_new_messages_are_held_to_pairing_too() -> None:
    """A strategy-made message that carries a result whose call is gone is mended."""
    assistant = call("c1")
    before = (SYS, U1, assistant, result("c1"), U3)
    made = Message(role="user", parts=(Text(text="summary"), ToolResult(call_id="c1")))
    enforced = enforce(before, (SYS, made, U3), survivors=NO_TASK)
    assert enforced.violation is None
    assert enforced.messages[1].parts == (Text(text="summary"),)


# --- check_invariants -------------------------------------------------------------


def test_check_invariants_finds_each_kind_of_problem() -> None:
    assistant = call("c1")
    before = (SYS, U1, assistant, result("c1"), A1, U3)
    assert check_invariants(before, before) == []
    assert check_invariants(before, (U1, assistant, result("c1"), A1, U3), NO_TASK) == [
        "the first system message is gone or altered"
    ]
    assert "the first system message is no longer first" in check_invariants(
        before, (U1, SYS, assistant, result("c1"), A1, U3)
    )
    assert check_invariants(before, (SYS, U1, A1), NO_TASK) == [
        "the most recent user message is gone or altered"
    ]
    assert check_invariants(before, (SYS, result("c1"), U3), NO_TASK) == [
        "tool result 'c1' outlives its call"
    ]
    assert check_invariants(before, (SYS, assistant, U3), NO_TASK) == [
        "tool call 'c1' outlives its result"
    ]
    assert check_invariants(before, (SYS, Message(role="assistant"), U3), NO_TASK) == [
        "output[1] is an empty assistant message"
    ]
    assert check_invariants(before, (SYS, A1, U1, U3), NO_TASK) == [
        "kept messages are out of order"
    ]


def test_check_invariants_tells_a_new_message_from_a_moved_one() -> None:
    """An output message equal to a later input message may be a new one
    (a mended copy); order is only broken when no reading keeps it."""
    blank = message("user", "")
    mended = Message(role="user", parts=(ToolResult(call_id="c1"), Text(text="")))
    before = (SYS, call("c1"), mended, A1, blank)
    after = (SYS, blank, A1, blank)  # output[1] is `mended` without its result
    assert check_invariants(before, after) == []
    assert check_invariants((SYS, U1, A1, U3), (SYS, A1, U1, U3)) == [
        "kept messages are out of order"
    ]


def test_pairing_problems_ignore_what_the_input_never_paired() -> None:
    before = (SYS, result("orphan"), call("pending"), U3)
    assert pairing_problems(before, before) == []
    assert pairing_problems(before, (SYS, U3)) == []


def test_assert_invariants_explains_the_failure() -> None:
    with pytest.raises(AssertionError, match="most recent user message") as info:
        assert_invariants((SYS, U1, U3), (SYS, U1))
    assert "before:" in str(info.value)
    assert "latest question" in str(info.value)


def test_opaque_parts_are_not_tool_parts() -> None:
    image = Message(role="user", parts=(Opaque(kind="image", payload={"url": "x"}),))
    before = (SYS, image, A1, U3)
    enforced = enforce(before, (SYS, A1, U3))
    assert enforced.removed == (1,)
    assert enforced.closed_calls == ()


# --- properties ---------------------------------------------------------------------


@given(data=st.data())
def test_any_deletion_that_spares_the_survivors_exchanges_stands(data: st.DataObject) -> None:
    """Deleting any messages but the survivors and their tool exchanges is
    mended by closure, never refused, and the diff accounts for everything.
    (Sparing only the calls the latest user message answers is not enough:
    a parallel sibling's result elsewhere takes the whole call message.)"""
    conversation = data.draw(agent_histories(), label="conversation")
    spare = held(conversation)
    droppable = [i for i in range(len(conversation)) if i not in spare]
    gone = (
        set(data.draw(st.lists(st.sampled_from(droppable), unique=True), label="gone"))
        if droppable
        else set()
    )
    after = tuple(m for i, m in enumerate(conversation) if i not in gone)
    enforced = enforce(conversation, after)
    assert enforced.violation is None
    assert_invariants(conversation, enforced.messages)
    # the same object may occur twice, and then either occurrence may be the one gone
    reported = [*enforced.removed, *(i for i, _ in enforced.replaced)]
    assert Counter(id(conversation[i]) for i in gone) <= Counter(
        id(conversation[i]) for i in reported
    )
    kept = [i for i in enforced.origin if i is not None]
    assert sorted([*kept, *enforced.removed, *(i for i, _ in enforced.replaced)]) == list(
        range(len(conversation))
    )
    assert enforce(conversation, after) == enforced


@given(data=st.data())
def test_swapping_two_kept_messages_is_refused(data: st.DataObject) -> None:
    conversation = data.draw(agent_histories(), label="conversation")
    distinct = len({id(m) for m in conversation}) == len(conversation)
    assume(distinct and len(conversation) >= 2)
    i = data.draw(st.integers(0, len(conversation) - 2), label="i")
    j = data.draw(st.integers(i + 1, len(conversation) - 1), label="j")
    after = list(conversation)
    after[i], after[j] = after[j], after[i]
    enforced = enforce(conversation, tuple(after))
    assert enforced.messages is conversation
    assert enforced.violation is not None
    assert (
        i in survivors(conversation)
        or j in survivors(conversation)
        or ("order must be kept" in enforced.violation)
    )


def test_check_invariants_ignores_a_mended_copy_equal_to_a_dropped_message() -> None:
    """Closure turned ``answered`` into ``user: ''``, which equals the dropped
    first message: that is a new message, not the first one moved."""
    blank = message("user", "")
    answered = Message(role="user", parts=(ToolResult(call_id="c3"), Text(text="")))
    before = (blank, A1, call("c3"), answered, A2, U3)
    mended = Message(role="user", parts=(Text(text=""),))
    assert mended == blank
    assert check_invariants(before, (A1, mended, A2, U3)) == []
    assert check_invariants(before, (A2, A1, U3)) == ["kept messages are out of order"]


def test_a_parallel_sibling_ties_the_latest_user_message_to_an_older_result() -> None:
    """The latest user message answers call ``b``; ``a`` was made in the same
    message and answered earlier. Deleting ``a``'s result kills the unit, and
    with it ``b``'s result: refused, since it would empty the latest message."""
    parallel = call("a", "b")
    latest = Message(role="user", parts=(ToolResult(call_id="b", content="B"),))
    before = (SYS, U1, parallel, result("a"), latest)
    enforced = enforce(before, (SYS, U1, parallel, latest))
    assert enforced.messages is before
    assert enforced.violation is not None
    assert "most recent user message" in enforced.violation
