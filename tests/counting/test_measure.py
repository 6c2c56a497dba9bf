"""The remembered, extended answers of memrules._counting.measure equal the answers
worked out from scratch, whatever a conversation went through between two
requests: grown, rebuilt from equal messages, rotated (its front dropped),
edited, shortened, sent back as the last window, or passed as a list.

The references here are the from-scratch functions (tool_links,
held_indices, input_problems, the counter itself), a fresh pipeline for
every request, the general matching of enforce, and the window's cut as it
was computed before the measure remembered anything (written out below).
"""

from __future__ import annotations

import bisect
import itertools
import operator
import threading
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from memrules._config.load import MemoryConfig
from memrules._core.budget import Budget
from memrules._core.conversation import (
    first_system_index,
    held_indices,
    is_turn_start,
    last_user_index,
    tool_links,
)
from memrules._core.indices import Indices
from memrules._core.invariants import Enforced, enforce
from memrules._core.messages import (
    Conversation,
    Message,
    Opaque,
    Text,
    ToolCall,
    ToolResult,
    message,
)
from memrules._core.repair import input_problems
from memrules._core.survivors import SurvivorRule
from memrules._counting.framing import OPENAI, framed
from memrules._counting.lines import Line as _Line
from memrules._counting.measure import Measure
from memrules._counting.tokens import TiktokenCounter
from memrules._engine.contract import StrategyContext
from memrules._runtime.pipeline import Pipeline
from memrules.strategies import drop_observations, sliding_window, trim_to_budget
from memrules.strategies.window import trim
from tests.support.strategies import COUNTER, agent_histories

# --- how a conversation changes between two requests --------------------------

OPS = ("grow", "grow", "grow", "rebuild", "deep", "rotate", "edit", "prefix", "window")


def rebuilt(conversation: Conversation, *, deep: bool) -> Conversation:
    """Equal messages, none of them the same object (``deep``: nor their parts)."""
    if not deep:
        return tuple(m.evolve() for m in conversation)
    return tuple(m.evolve(parts=tuple(attrs.evolve(p) for p in m.parts)) for m in conversation)


def next_conversation(
    data: st.DataObject, prev: Conversation, extra: Conversation, window: Conversation
) -> tuple[Conversation, Conversation]:
    """The conversation of the next request, and what is left of ``extra``."""
    op = data.draw(st.sampled_from(OPS), label="op")
    take = data.draw(st.integers(0, min(4, len(extra))), label="take")
    new, extra = extra[:take], extra[take:]
    if op == "grow":
        return (*prev, *new), extra
    if op in ("rebuild", "deep"):
        return (*rebuilt(prev, deep=op == "deep"), *new), extra
    if op == "rotate" and prev:
        k = data.draw(st.integers(1, len(prev)), label="drop")
        keep = prev[:1] if prev[0].role == "system" else ()
        return (*keep, *prev[k:], *new), extra
    if op == "edit" and prev:
        i = data.draw(st.integers(0, len(prev) - 1), label="at")
        edited = message("user", f"edited {i}")
        return (*prev[:i], edited, *prev[i + 1 :]), extra
    if op == "prefix" and prev:
        return prev[: data.draw(st.integers(0, len(prev)), label="keep")], extra
    if op == "window":
        return (*window, *new), extra
    return (*prev, *new), extra


def requests(data: st.DataObject, steps: int = 6) -> list[Conversation]:
    """A run of conversations, one per request, each made from the last."""
    base = data.draw(agent_histories(max_size=16), label="base")
    extra = data.draw(agent_histories(max_size=20), label="extra")
    start = data.draw(st.integers(0, len(base)), label="start")
    conversation, rest = base[:start], base[start:] + extra
    out = [conversation]
    for _ in range(steps):
        window = conversation[len(conversation) // 2 :]
        conversation, rest = next_conversation(data, conversation, rest, window)
        out.append(conversation)
    return out


# --- the measure's answers, from scratch ---------------------------------------


def scratch(conversation: Conversation) -> dict[str, Any]:
    links = tool_links(conversation)
    return {
        "sizes": tuple(map(COUNTER.count, conversation)),
        "total": sum(map(COUNTER.count, conversation)),
        "pairs": sorted(links.pairs),
        "unique_calls": links.unique_calls,
        "problems": input_problems(conversation),
        "held": tuple(sorted(held_indices(conversation, links))),
        "first_system": first_system_index(conversation),
        "last_user": last_user_index(conversation),
    }


def remembered(measure: Measure, conversation: Conversation) -> dict[str, Any]:
    track = measure.track(conversation)
    links = measure.links(conversation)
    return {
        "sizes": measure.sizes(conversation),
        "total": measure.total(conversation),
        "pairs": sorted(links.pairs),
        "unique_calls": links.unique_calls,
        "problems": measure.problems(conversation),
        "held": track.held(),
        "first_system": track.first_system,
        "last_user": track.last_user,
    }


@given(st.data())
def test_remembered_answers_equal_answers_from_scratch(data: st.DataObject) -> None:
    measure = Measure(COUNTER)
    for conversation in requests(data):
        as_list = data.draw(st.booleans(), label="as a list")
        asked = measure.conversation(list(conversation) if as_list else conversation)
        assert asked == conversation
        assert remembered(measure, asked) == scratch(conversation)


@given(st.data())
def test_questions_asked_in_any_order_give_the_same_answers(data: st.DataObject) -> None:
    """Each answer is right whichever was asked first (the facets of a line
    grow on demand, and a track's answers are kept once worked out)."""
    measure = Measure(COUNTER)
    keys = list(scratch(()))
    for conversation in requests(data, steps=4):
        order = data.draw(st.permutations(keys), label="order")
        expected = scratch(conversation)
        for key in order:
            assert remembered(measure, conversation)[key] == expected[key]


def test_an_appended_conversation_counts_only_the_new_message() -> None:
    counted: list[int] = []

    @attrs.frozen
    class Spy:
        name: str = "spy"

        def count(self, m: Message) -> int:
            return COUNTER.count(m)

        def counts(self, messages: Any) -> tuple[int, ...]:
            counted.append(len(messages))
            return COUNTER.counts(messages)

        def count_text(self, text: str) -> int:
            return COUNTER.count_text(text)

    measure = Measure(Spy())
    history = [message("user", f"turn {i}") for i in range(50)]
    measure.total(measure.conversation(history))
    for i in range(3):
        history.append(message("assistant", f"reply {i}"))
        measure.total(measure.conversation(history))  # a new tuple each time
    copies = rebuilt((*history, message("user", "more")), deep=True)
    measure.total(measure.conversation(copies))  # equal values, new objects
    assert counted == [50, 1, 1, 1, 1]


def test_a_list_edited_in_place_before_its_last_message_is_counted_afresh() -> None:
    """The caller's list holds the same last message and grows, but an
    earlier one was replaced in it, or it was cut and rebuilt: the measure
    never takes it for the conversation it continued."""
    measure = Measure(COUNTER)
    history = [message("user", f"turn {i} " * (i % 7 + 1)) for i in range(40)]
    assert remembered(measure, measure.conversation(history)) == scratch(tuple(history))
    history[3] = message("assistant", "an answer put in its place, much longer " * 9)
    history.append(message("user", "next"))
    asked = measure.conversation(history)
    assert asked == tuple(history)
    assert remembered(measure, asked) == scratch(asked)
    shorter = [*history[:10], history[-1]]  # shorter, ending as the last one did
    assert remembered(measure, measure.conversation(shorter)) == scratch(tuple(shorter))
    rewritten = [message("system", "rules"), *history[1:]]  # not a continuation
    rewritten.append(message("user", "and more"))
    assert remembered(measure, measure.conversation(rewritten)) == scratch(tuple(rewritten))


# --- pipelines: a memo changes nothing but the cost ----------------------------


def pipeline(budget: int, *, rule: str = "seed", task: bool = True) -> Pipeline:
    strategies = (drop_observations(max_drop=1), sliding_window(keep_messages=30))
    config = MemoryConfig(
        max_tokens=budget,
        count_rule=rule,
        strategies=(*strategies, trim_to_budget()),
        user_first=budget % 2 == 0,
        survivors=SurvivorRule(task=task),
    )
    return Pipeline.from_config(config, counter=COUNTER)


@given(st.data(), st.integers(40, 2_000))
def test_a_remembering_pipeline_answers_as_a_fresh_one(data: st.DataObject, budget: int) -> None:
    remembering = pipeline(budget)
    memo = remembering.measure()
    for conversation in requests(data):
        got = remembering.apply(conversation, memo=memo)
        expected = pipeline(budget).apply(conversation)
        assert got.messages == expected.messages
        for j, i in enumerate(got.report.origin):
            assert i is None or got.messages[j] is conversation[i]
        assert got.report.to_dict() == expected.report.to_dict()
        assert got.report == expected.report


# --- the window and the invariant check ----------------------------------------


def reference_trim(
    conversation: Conversation,
    counter: Any,
    *,
    max_messages: int | None,
    max_tokens: int | None,
) -> Conversation:
    """The window's cut as it was made before anything was remembered: a
    list of every droppable message, prefix sums over it, and the cut
    snapped forward over pairs sorted by their lower index."""
    n = len(conversation)
    sizes = [counter.count(m) for m in conversation]
    if max_tokens is not None:
        max_tokens -= getattr(counter, "per_request", 0)
    if (max_messages is None or n <= max_messages) and (
        max_tokens is None or sum(sizes) <= max_tokens
    ):
        return conversation
    links = tool_links(conversation)
    pinned = held_indices(conversation, links)
    pairs = sorted((min(a, b), max(a, b)) for a, b in links.pairs)
    pairs = [(a, b) for a, b in pairs if a not in pinned]
    order = [i for i in range(n) if i not in pinned]
    cut = 0
    if max_messages is not None:
        cut = max(cut, n - max_messages)
    if max_tokens is not None:
        fixed = sum(sizes[i] for i in pinned)
        prefix = list(itertools.accumulate((sizes[i] for i in order), initial=0))
        cut = max(cut, bisect.bisect_left(prefix, fixed + prefix[-1] - max_tokens))
    cut = min(cut, len(order))
    if pairs and 0 < cut < len(order):
        lows = [a for a, _ in pairs]
        reach = list(itertools.accumulate((b for _, b in pairs), max))
        while cut < len(order):
            p = bisect.bisect_left(lows, order[cut])
            if p == 0 or reach[p - 1] < order[cut]:
                break
            cut = bisect.bisect_right(order, reach[p - 1])
    if cut == 0:
        return conversation
    if cut == len(order):
        return tuple(conversation[i] for i in sorted(pinned))
    first_kept = order[cut]
    kept = [conversation[i] for i in sorted(pinned) if i < first_kept]
    return (*kept, *conversation[first_kept:])


@given(
    st.data(),
    st.one_of(st.none(), st.integers(0, 30)),
    st.one_of(st.none(), st.integers(1, 3_000)),
    st.booleans(),
)
def test_the_window_cuts_where_it_did_before(
    data: st.DataObject, max_messages: int | None, max_tokens: int | None, framing: bool
) -> None:
    counter = framed(COUNTER, OPENAI) if framing else COUNTER
    measure = Measure(counter)
    context = StrategyContext(counter=counter, measure=measure)
    for conversation in requests(data, steps=4):
        got = trim(conversation, context, max_messages=max_messages, max_tokens=max_tokens)
        expected = reference_trim(
            conversation, counter, max_messages=max_messages, max_tokens=max_tokens
        )
        assert got == expected
        assert all(map(operator.is_, got, expected))


def fields(e: Enforced) -> tuple[Any, ...]:
    return (
        e.messages,
        tuple(e.removed),
        e.replaced,
        e.inserted,
        e.origin,
        e.closed_calls,
        e.violation,
    )


@given(st.data(), st.integers(0, 30), st.booleans())
def test_a_window_is_held_to_the_invariants_as_any_output_is(
    data: st.DataObject, keep: int, user_first: bool
) -> None:
    """enforce reads a window directly (the held messages, then a suffix);
    what it finds is what the general matching finds. With a message object
    repeated in the input, the two may attribute it to different places;
    both readings must then be valid."""
    measure = Measure(COUNTER)
    context = StrategyContext(counter=COUNTER, measure=measure)
    for before in requests(data, steps=4):
        held = measure.track(before).held()
        cut = data.draw(st.integers(0, len(before)), label="cut")
        outputs = [
            trim(before, context, max_messages=keep),
            (*(before[i] for i in held if i < cut), *before[cut:]),
            (*(before[i] for i in held[1:] if i < cut), *before[cut:]),
            before[cut:],
        ]
        for after in outputs:
            fast = enforce(before, after, measure=measure, user_first=user_first)
            general = enforce(before, after, user_first=user_first)
            if len({id(m) for m in before}) == len(before):
                assert fields(fast) == fields(general)
            else:
                assert fast.violation == general.violation
                assert fast.messages == general.messages
            for j, i in enumerate(fast.origin):
                assert i is None or before[i] is fast.messages[j]


@st.composite
def late_answers(draw: st.DrawFn) -> Conversation:
    """A system prompt, then user and assistant text, tool calls (one or a
    parallel pair) and their results, each result coming any number of
    messages after its call: long-range pairs that a window must not split."""
    out: list[Message] = [message("system", "sys")]
    open_calls: list[str] = []
    for k in range(draw(st.integers(1, 40))):
        what = draw(st.sampled_from(("user", "assistant", "call", "pair", "result", "result")))
        if what in ("user", "assistant"):
            out.append(message(what, f"{what} {k} " * draw(st.integers(0, 5))))
        elif what in ("call", "pair"):
            ids = [f"c{k}"] if what == "call" else [f"c{k}a", f"c{k}b"]
            calls = [ToolCall(id=c, name="f", arguments="{}") for c in ids]
            out.append(Message(role="assistant", parts=tuple(calls)))
            open_calls.extend(ids)
        elif open_calls:
            c = open_calls.pop(draw(st.integers(0, len(open_calls) - 1)))
            text = "r " * draw(st.integers(0, 9))
            out.append(Message(role="tool", parts=(ToolResult(call_id=c, content=text),)))
    return tuple(out)


@given(late_answers(), st.data())
def test_the_window_cuts_where_it_did_before_with_late_answers(
    conversation: Conversation, data: st.DataObject
) -> None:
    measure = Measure(COUNTER)
    context = StrategyContext(counter=COUNTER, measure=measure)
    sums = measure.track(conversation).sums
    for _ in range(5):
        # budgets that land exactly on a prefix sum, and between two
        k = data.draw(st.integers(0, len(conversation)), label="k")
        max_tokens = sums[-1] - sums[k] + data.draw(st.integers(-1, 1), label="off")
        keep = data.draw(st.one_of(st.none(), st.integers(0, len(conversation))), label="keep")
        got = trim(conversation, context, max_messages=keep, max_tokens=max(1, max_tokens))
        expected = reference_trim(
            conversation, COUNTER, max_messages=keep, max_tokens=max(1, max_tokens)
        )
        assert got == expected
        after = enforce(conversation, got, measure=measure)
        assert fields(after) == fields(enforce(conversation, got))


# --- budgets hold under the provider's framing ---------------------------------


@given(agent_histories(max_size=30, long_texts=True), st.integers(30, 1_500))
def test_trimmed_windows_fit_the_budget_under_openai_framing(
    conversation: Conversation, budget: int
) -> None:
    from benchmarks.harness.reference import openai_request_tokens
    from memrules._adapters import to_openai
    from memrules._core.errors import MessageFormatError

    result = pipeline(budget, rule="openai").apply(conversation)
    try:
        sent = to_openai(result.messages)
    except MessageFormatError:
        return
    sent_tokens = openai_request_tokens(sent, COUNTER.count_text)
    measure = Measure(framed(COUNTER, OPENAI))
    held = measure.track(conversation).held()
    least = least_kept(conversation, held, user_first=budget % 2 == 0)
    if least is not None and measure.total(tuple(conversation[i] for i in least)) < budget:
        assert sent_tokens < budget
    assert sent_tokens <= result.report.tokens_after


def least_kept(
    conversation: Conversation, held: tuple[int, ...], *, user_first: bool
) -> tuple[int, ...] | None:
    """The cheapest set of messages any output must keep: the held ones
    and, under ``user_first`` when the input leads with a user message and
    the first held non-system message is not one, the cheapest user message
    before it that opens a turn (one of tool results alone would lose them
    with their dropped calls and leave nothing to lead). None when no such
    user message exists."""
    first_input = next((m for m in conversation if m.role != "system"), None)
    first = next((h for h in held if conversation[h].role != "system"), None)
    if (
        not user_first
        or first_input is None
        or first_input.role != "user"
        or first is None
        or conversation[first].role == "user"
    ):
        return held
    counter = framed(COUNTER, OPENAI)
    starts = [i for i in range(first) if is_turn_start(conversation[i])]
    if not starts:
        return None
    lead = min(starts, key=lambda i: counter.count(conversation[i]))
    return tuple(sorted({*held, lead}))


def test_a_window_under_user_first_leaves_room_for_the_user_message_held_to_lead_it() -> None:
    """The latest user message carries only a tool result, so its call is
    held and leads the window; user_first then holds an older user message
    before it, which the window must count toward the budget."""
    from benchmarks.harness.reference import openai_request_tokens
    from memrules._adapters import to_openai

    read = '{"limit": 100, "path": "src/app.py"}'

    def calls(*ids: str, text: bool = True) -> Message:
        parts = tuple(ToolCall(id=c, name="read_file", arguments=read) for c in ids)
        return Message(role="assistant", parts=(*((Text(text=""),) if text else ()), *parts))

    def result(role: str, call_id: str, content: Any = "") -> Message:
        name = "read_file" if role == "tool" else None
        return Message(
            role=role,
            parts=(ToolResult(call_id=call_id, content=content, is_error=True),),
            name=name,
        )

    empty = (Text(text=""), Text(text=""))
    conversation: Conversation = (
        Message(role="user"),
        Message(role="user"),
        Message(
            role="assistant",
            parts=(
                Text(text=""),
                ToolCall(id="call_0", name="read_file", arguments=read),
                ToolCall(id="call_1", name="read_file", arguments=read),
                ToolCall(id="call_2", name="search", arguments='{"query": ""}'),
            ),
        ),
        Message(
            role="user",
            parts=(
                ToolResult(call_id="call_1", content=empty, is_error=True),
                ToolResult(call_id="call_2", content=empty, is_error=True),
                Text(text=""),
            ),
        ),
        *(Message(role="user") for _ in range(4)),
        Message(
            role="assistant",
            parts=(
                ToolCall(id="call_3", name="run_tests", arguments="{}"),
                *calls("call_4", "call_5", text=False).parts,
            ),
        ),
        Message(role="user", parts=(Text(text=""), Text(text="0"))),
        result("tool", "call_4", empty),
        result("tool", "call_5"),
        message("system", "observation: "),
        message("system", "memrules context warning: 50% of the context window is used"),
        calls("call_6"),
        result("user", "call_6"),
        calls("call_7"),
        result("tool", "call_7", empty),
        Message(role="assistant"),
    )
    budget = 50
    measure = Measure(framed(COUNTER, OPENAI))
    held = measure.track(conversation).held()
    assert measure.total(tuple(conversation[i] for i in held)) < budget
    result_ = pipeline(budget, rule="openai").apply(conversation)
    assert result_.messages[0] is conversation[9]  # the user message held to lead
    sent = openai_request_tokens(to_openai(result_.messages), COUNTER.count_text)
    assert sent < budget
    assert sent <= result_.report.tokens_after


# --- compact index sets --------------------------------------------------------


@given(st.sets(st.integers(0, 60)), st.integers(0, 70))
def test_indices_read_as_their_tuple(values: set[int], size: int) -> None:
    ordered = tuple(sorted(values))
    runs = Indices.of(ordered)
    assert runs == ordered
    assert ordered == runs
    assert list(runs) == list(ordered)
    assert len(runs) == len(ordered)
    assert bool(runs) == bool(ordered)
    assert all(runs[k] == ordered[k] for k in range(-len(ordered), len(ordered)))
    assert runs[1:4] == ordered[1:4]
    assert all((i in runs) == (i in values) for i in range(-1, 62))
    assert hash(runs) == hash(ordered)
    kept = [i for i in ordered if i < size]
    assert Indices.gaps(kept, size) == tuple(i for i in range(size) if i not in values)


def test_removed_reads_as_a_tuple_in_reports() -> None:
    history = tuple(message("user" if i % 2 else "assistant", f"m{i}") for i in range(9))
    no_task = Measure(COUNTER, SurvivorRule(task=False))  # the window may drop the first user
    context = StrategyContext(counter=COUNTER, budget=Budget.messages(3), measure=no_task)
    enforced = enforce(history, trim(history, context, max_messages=3), measure=context.measure)
    assert enforced.removed == (0, 1, 2, 3, 4, 5)
    assert repr(enforced.removed) == "Indices(0..5)"


def test_counts_publish_their_sums_before_their_sizes() -> None:
    """Readers check ``len(sizes)`` without the lock and then read ``sums``
    (``Track.total``): the sums a size needs must be there first, or another
    thread reads past their end (found as an IndexError under 16 threads)."""
    messages = [message("user", f"message {i}") for i in range(12)]
    line = _Line(messages)

    class Watched(list[int]):
        def extend(self, items: Any) -> None:
            items = list(items)
            assert len(line.sums) >= len(self) + len(items) + 1, "sizes grew before their sums"
            super().extend(items)

    line.sizes = Watched()
    counter = TiktokenCounter.for_name("cl100k_base")
    lock = threading.Lock()
    line.count_to(5, counter, lock)
    line.count_to(12, counter, lock)
    assert line.sums == list(itertools.accumulate(counter.counts(messages), initial=0))


def test_a_window_under_user_first_leads_with_a_user_message_that_fits() -> None:
    """The held messages fit the budget, but the latest turn start before
    them (the interpreter's choice of lead under user_first) does not fit
    with them; an older turn start does, and leads the window instead."""
    from benchmarks.harness.reference import openai_request_tokens
    from memrules._adapters import to_openai

    read = '{"limit": 100, "path": "src/app.py"}'

    def call(call_id: str, name: str = "read_file", arguments: str = read) -> ToolCall:
        return ToolCall(id=call_id, name=name, arguments=arguments)

    def result(call_id: str, content: Any = "", *, error: bool = True) -> ToolResult:
        return ToolResult(call_id=call_id, content=content, is_error=error)

    def warning(percent: int, id_: str) -> Message:
        text = f"memrules context warning: {percent}% of the context window is used"
        return Message(role="system", parts=(Text(text=text),), id=id_)

    empty = (Text(text=""), Text(text=""))
    words = (
        "to the error returns is of the pass reads the tuple the line message pipeline "
        "report and or the tokens the be a"
    )
    first_read = (
        "p\nnb\nebhanoeod\nlfcapdhpikflgbgkcmmkecabe l\nibh dcn\nlcheglgc\n"
        "kfkchkjibila npglfnhcbokdib\nklifbhgco\nacglpnbhmdkdc gmd\npadg ohmfpalloaocahlmnog\n"
        "b dp dhicogohemboepfakcoa kejmcjcdol\nngpelpnffidhdlo fc"
    )
    second_read = (
        "lll\nodigadalmnl  gagpkapddd p\nmoelbeanhk\nmnefjdgggclhnkgjlehdmgdeb hmaoojmhd "
        "fkoglihhkkaj ihphjmmdiohdka aopcd kfnpfjjjblfiipngckjleheopcjmdknhmgdagidneebbfgmh h\n"
        "jcnipbf\nm\na\necpa"
    )
    blocks = (
        Text(
            text="context stop strategy returns agent pass file returns full stop newest "
            "✨🇫🇷👩\u200d💻 好 🙂😀"
        ),
        Opaque(kind="thinking", payload={"thinking": "", "signature": "sig"}),
        Text(text="😀👍🏽🤖"),
    )
    search = call("call_2", "search", '{"query": ""}')
    conversation: Conversation = (
        message("system", "You are a helpful agent. "),
        warning(97, "m1"),
        Message(role="user", parts=empty),  # the older turn start that fits
        Message(
            role="assistant", parts=(Text(text=""), call("call_0"), call("call_1"), search), id="m3"
        ),
        Message(role="assistant", parts=(Text(text=""),)),
        Message(role="tool", parts=(result("call_0", empty),), id="m5", name="read_file"),
        warning(60, "m6"),
        Message(role="tool", parts=(result("call_1"),), name="read_file"),
        Message(role="user", parts=(result("call_2"),)),
        Message(
            role="assistant",
            parts=(call("call_3", "run_tests", "{}"), call("call_4"), call("call_5")),
            id="m9",
        ),
        # the latest turn start before the held messages: too big to lead them
        # (a harness's message, so that it is not the question, which stays)
        Message(
            role="user",
            parts=(result("call_4", empty), Text(text=words), Text(text="")),
            metadata={"harness": True},
        ),
        Message(
            role="assistant",
            parts=(
                # a part no rule prices: the tokens of its JSON, 13 (an image: 1445)
                Opaque(kind="audio", payload={"type": "input_audio", "input_audio": {}}),
                call("call_6", arguments='{"path": 7}'),
                call("call_7", "run_tests", "{}"),
            ),
            id="m11",
        ),
        Message(role="user", parts=(result("orphan_0", error=False),)),
        Message(
            role="assistant",
            parts=(
                call("call_8"),
                call("call_9", arguments='{"path": "src/app.py"}'),
                call("call_10", arguments="not json {"),
            ),
        ),
        Message(
            role="user",
            parts=(
                result("call_6", first_read),
                result("call_7", "Q"),
                result("call_8", second_read, error=False),
            ),
        ),
        Message(
            role="assistant",
            parts=(
                Text(text="keep at agent for is"),
                call("call_11", "run_tests", "{}"),
                call("call_12", arguments='{"path": 7}'),
            ),
            id="m15",
        ),
        Message(role="tool", parts=(result("orphan_1", "pipeline", error=False),)),
        Message(
            role="tool", parts=(result("call_9", blocks, error=False),), id="m17", name="read_file"
        ),
        warning(67, "m18"),
        Message(
            role="assistant",
            parts=(
                call("fc_13", arguments='{"path": "docs/guide.md"}'),
                call("call_14", arguments='{"path": "README.md"}'),
            ),
            id="m19",
        ),
    )
    budget = 388  # even: user_first
    # The case predates the task rule: it is about the lead a window finds
    # when the first user message is not kept.
    measure = Measure(framed(COUNTER, OPENAI), SurvivorRule(task=False))
    held = measure.track(conversation).held()
    assert held == (0, 11, 13, 14, 17)
    assert measure.total(tuple(conversation[i] for i in held)) < budget
    result_ = pipeline(budget, rule="openai", task=False).apply(conversation)
    assert result_.report.origin == (0, 2, 11, 13, 14, 17)
    sent = openai_request_tokens(to_openai(result_.messages), COUNTER.count_text)
    assert sent < budget
    assert sent <= result_.report.tokens_after
