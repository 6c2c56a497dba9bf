"""Property tests of every built-in strategy.

For each one: its raw output never breaks an invariant (the interpreter
would have to discard it), the invariants hold after enforcement, a no-op
returns the very same tuple, and the strategy does exactly what its row of
the spec promises, checked against a small reference written here.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator

import attrs
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from memrules._core.budget import Budget
from memrules._core.invariants import Enforced, enforce
from memrules._core.messages import (
    Conversation,
    Message,
    Opaque,
    Part,
    Text,
    ToolCall,
    ToolResult,
    message,
    part_text,
)
from memrules._core.report import StopReason
from memrules._engine.contract import DEFAULT_WARNING_MARKER, Outcome, Strategy, StrategyContext
from memrules._engine.interpreter import NamedStrategy, run_once, run_pipeline
from memrules.strategies import (
    STRATEGIES,
    clamp_oversized_messages,
    clear_tool_results,
    deduplicate_file_reads,
    drop_observations,
    drop_turns,
    offload,
    seamed,
    sliding_window,
    summarize,
    trim_to_budget,
)
from memrules.strategies._keep import ERROR_PATTERN
from memrules.strategies.seamed import SUMMARY_PREFIX
from memrules.strategies.tool_results import CLEARED_INPUT
from tests.support.chat_server import ChatServer
from tests.support.strategies import (
    ALL_BUILTINS,
    COUNTER,
    FILE_TOOL,
    PARAMS,
    SUMMARIZERS,
    ExtractiveSummarizer,
    MemoryStore,
    agent_histories,
    agent_loops,
    assert_invariants,
    boundary_budgets,
    budgets_for,
    check_strategy,
    context,
    held,
    linked,
    moved_units,
    render,
    summarizer_of,
    survivors,
    terse_summary,
    texts,
    total,
    turn_ranges,
    unwrap,
    with_observations,
)

CTX = context()


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    """The loopback model the ``http`` summarizer asks."""
    with ChatServer(reply=terse_summary) as running:
        yield running


def run(strategy: Strategy, conversation: Conversation, ctx: StrategyContext = CTX) -> Enforced:
    """Run ``strategy`` and hold its raw output to the contract: no violation,
    the invariants after enforcement, a consistent diff, identity on no-op."""
    output = unwrap(strategy(conversation, ctx))
    enforced = enforce(conversation, output)
    assert enforced.violation is None, (
        f"{strategy!r}: {enforced.violation}\n{render(conversation)}\n→\n{render(output)}"
    )
    assert_invariants(conversation, enforced.messages)
    assert_diff(conversation, enforced)
    if not enforced.changed:
        assert output is conversation, f"{strategy!r} made no change but returned a new tuple"
    return enforced


def assert_diff(before: Conversation, enforced: Enforced) -> None:
    """The diff accounts for every input and output message exactly once."""
    after = enforced.messages
    assert len(enforced.origin) == len(after)
    kept = [i for i in enforced.origin if i is not None]
    assert kept == sorted(set(kept))
    for j, i in enumerate(enforced.origin):
        if i is not None:
            assert after[j] is before[i]
    gone = [*enforced.removed, *(i for i, _ in enforced.replaced)]
    assert sorted([*kept, *gone]) == list(range(len(before)))
    made = sorted([*enforced.inserted, *(j for _, j in enforced.replaced)])
    assert made == [j for j, i in enumerate(enforced.origin) if i is None]


def same(a: Conversation, b: Conversation) -> bool:
    """Position by position the same message objects."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def drop(conversation: Conversation, indices: set[int]) -> Conversation:
    return tuple(m for i, m in enumerate(conversation) if i not in indices)


def assert_took_out(conversation: Conversation, enforced: Enforced, moved: set[int]) -> None:
    """The diff names exactly the ``moved`` messages as gone. When the same
    object occurs twice, either occurrence may be the one named."""
    gone = [*enforced.removed, *(i for i, _ in enforced.replaced)]
    if len({id(m) for m in conversation}) == len(conversation):
        assert sorted(gone) == sorted(moved)
    else:
        assert Counter(id(conversation[i]) for i in gone) == Counter(
            id(conversation[i]) for i in moved
        )


# --- every strategy ------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_BUILTINS)
@given(data=st.data())
def test_builtin_keeps_the_contract(name: str, server: ChatServer, data: st.DataObject) -> None:
    """Raw output never violates, invariants hold, no-ops keep identity, and
    it is deterministic (the public ``check_strategy`` does all of it), with
    each summarizer, on generated histories and agent loops."""
    conversation = data.draw(
        st.one_of(agent_histories(large_texts=True), agent_loops(large_texts=True)),
        label="conversation",
    )
    budget = data.draw(budgets_for(conversation), label="budget")
    strategy = STRATEGIES[name](**data.draw(PARAMS[name], label="params"))
    summarizer = summarizer_of(
        data.draw(st.sampled_from(SUMMARIZERS), label="summarizer"), server.url
    )
    ctx = context(
        budget=budget,
        store=MemoryStore(),
        summarizer=summarizer,
        offload_turns=data.draw(st.integers(1, 4), label="offload_turns"),
    )
    check_strategy(strategy, conversation, ctx)


@pytest.mark.parametrize(
    "strategy",
    [
        deduplicate_file_reads(),
        clear_tool_results(keep_pairs=1),
        clear_tool_results(keep_pairs=0, clear_tool_inputs=True),
        clamp_oversized_messages(max_part_tokens=40),
        sliding_window(keep_messages=5),
        sliding_window(keep_tokens=300),
    ],
    ids=repr,
)
@given(conversation=agent_histories(large_texts=True))
def test_second_application_is_a_no_op(strategy: Strategy, conversation: Conversation) -> None:
    """Idempotent strategies return their own output untouched: the same tuple."""
    once = run(strategy, conversation).messages
    assert unwrap(strategy(once, CTX)) is once


# --- clamp_oversized_messages ------------------------------------------------------

_MARKER = re.compile(r"\n\[memrules: clamped (\d+) of (\d+) tokens(?: of this \w+ result)?\]\n")


def _check_clamped(original: str, clamped: str, limit: int) -> None:
    assert COUNTER.count_text(clamped) <= limit
    found = list(_MARKER.finditer(clamped))
    assert len(found) == 1, f"expected one clamp marker in {clamped!r}"
    (marker,) = found
    head, tail = clamped[: marker.start()], clamped[marker.end() :]
    assert original.startswith(head)
    assert original.endswith(tail)
    assert len(head) + len(tail) < len(original)
    assert int(marker.group(1)) == COUNTER.count_text(original) - COUNTER.count_text(head + tail)
    assert int(marker.group(2)) == COUNTER.count_text(original)


def recent_from(conversation: Conversation, recent: int) -> int:
    """Where the latest ``recent`` units start (``len`` for none): the
    starts of the turns before the latest, then the latest turn's
    exchanges, its first one from the turn's start on."""
    spans = turn_ranges(conversation)
    latest = spans[-1] if spans else range(len(conversation))
    asks = [i for i in latest if conversation[i].role == "assistant"]
    starts = [s.start for s in spans[:-1]] + [latest.start, *asks[1:]] if spans else asks
    if not recent or not starts:
        return len(conversation)
    return starts[-recent] if recent <= len(starts) else starts[0]


def first_non_system(conversation: Conversation, count: int) -> set[int]:
    return set([i for i, m in enumerate(conversation) if m.role != "system"][:count])


@given(
    conversation=st.one_of(agent_histories(large_texts=True), agent_loops(large_texts=True)),
    limit=st.integers(32, 300),
    recent=st.integers(0, 3),
    first=st.integers(0, 3),
)
def test_clamp_fits_every_part(
    conversation: Conversation, limit: int, recent: int, first: int
) -> None:
    strategy = clamp_oversized_messages(
        max_part_tokens=limit, recent_turns=recent, keep_first=first
    )
    out = run(strategy, conversation).messages
    assert len(out) == len(conversation)
    cut = recent_from(conversation, recent)
    keep = survivors(conversation) | first_non_system(conversation, first)
    keep.update(range(cut, len(conversation)))
    for i, (before, after) in enumerate(zip(conversation, out, strict=True)):
        if i in keep:
            assert after is before
            continue
        assert (after.role, after.id, after.name) == (before.role, before.id, before.name)
        assert len(after.parts) == len(before.parts)
        touched = False
        for p, q in zip(before.parts, after.parts, strict=True):
            if isinstance(p, ToolCall | Opaque):
                assert q is p  # call arguments are JSON; opaque parts are carried
                continue
            assert type(q) is type(p)
            if COUNTER.count_text(part_text(p)) <= limit:
                assert q == p, "a part that fits was changed"
                continue
            touched = True
            _check_clamped(part_text(p), part_text(q), limit)
            if isinstance(p, ToolResult):
                assert isinstance(q, ToolResult)
                assert (q.call_id, q.is_error) == (p.call_id, p.is_error)
                if not isinstance(p.content, str):
                    assert isinstance(q.content, tuple)
                    kept = [x for x in q.content if isinstance(x, Opaque)]
                    assert kept == [x for x in p.content if isinstance(x, Opaque)]
        if not touched:
            assert after is before


_BLOCKS = st.lists(
    st.one_of(
        st.builds(Text, text=texts(large=True)),
        st.just(Opaque(kind="image", payload={"url": "https://x/1.png"})),
    ),
    min_size=1,
    max_size=5,
).map(tuple)


@given(blocks=_BLOCKS, limit=st.integers(32, 200))
def test_clamp_structured_result_fits_as_a_whole(
    blocks: tuple[Text | Opaque, ...], limit: int
) -> None:
    """A tool result is one part: its text blocks together must fit, even
    when each of them fits alone; its images stay, in order."""
    result = ToolResult(call_id="c1", content=blocks)
    conversation = (
        Message(role="system", parts=(Text(text="sys"),)),
        Message(role="user", parts=(Text(text="go"),)),
        Message(role="assistant", parts=(ToolCall(id="c1", name="search", arguments="{}"),)),
        Message(role="tool", parts=(result,)),
        Message(role="user", parts=(Text(text="thanks"),)),
    )
    out = run(clamp_oversized_messages(max_part_tokens=limit), conversation).messages
    (clamped,) = out[3].parts
    assert isinstance(clamped, ToolResult)
    assert isinstance(clamped.content, tuple)
    if COUNTER.count_text(part_text(result)) <= limit:
        assert out is conversation
        return
    _check_clamped(part_text(result), part_text(clamped), limit)
    images = [b for b in clamped.content if isinstance(b, Opaque)]
    assert images == [b for b in blocks if isinstance(b, Opaque)]


# --- clear_tool_results -------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Keeps:
    """``clear_tool_results``' settings of what it keeps."""

    preview: int = 200
    recent: int = 1
    first: int = 0
    error_tail: int = 2000

    def params(self) -> dict[str, int]:
        return {
            "preview_chars": self.preview,
            "recent_turns": self.recent,
            "keep_first": self.first,
            "error_tail_chars": self.error_tail,
        }


KEEPS = st.builds(
    Keeps,
    preview=st.sampled_from([0, 40, 200]),
    recent=st.integers(0, 2),
    first=st.integers(0, 3),
    error_tail=st.sampled_from([0, 300, 2000]),
)


def stub_of(part: ToolResult, tool: str, keeps: Keeps, error: bool) -> str:
    text = part_text(part)
    if text.startswith("[memrules: ") and " result cleared to save context (" in text[:400]:
        return text  # cleared already
    head = keeps.preview // 2
    tail = max(keeps.preview - head, keeps.error_tail if error else 0)
    label = f"[memrules: {tool} result cleared to save context ({COUNTER.count_text(text)} tokens)"
    if not head and not tail:
        return label + "]"
    if len(text) <= head + tail:
        return f"{label}; whole:]\n{text}"
    end = text[len(text) - tail :] if tail else ""
    return f"{label}; head and tail:]\n{text[:head]}\n[…]\n{end}"


def expected_clear(
    conversation: Conversation,
    keep_pairs: int,
    exclude: tuple[str, ...],
    inputs: bool,
    keeps: Keeps = Keeps(),
) -> Conversation:
    names = {p.id: p.name for m in conversation for p in m.parts if isinstance(p, ToolCall)}
    every = [p for m in conversation for p in m.parts if isinstance(p, ToolResult)]
    errors = [
        p.call_id for p in every if p.is_error or ERROR_PATTERN.search(part_text(p)) is not None
    ]
    error = errors[-1] if errors and keeps.error_tail else None
    results = [
        (i, p.call_id)
        for i, m in enumerate(conversation)
        for p in m.parts
        if isinstance(p, ToolResult) and names.get(p.call_id) not in exclude
    ]
    older = results[: max(0, len(results) - keep_pairs)]
    keep = survivors(conversation) | first_non_system(conversation, keeps.first)
    keep.update(range(recent_from(conversation, keeps.recent), len(conversation)))
    targets = {cid for i, cid in older if i not in keep}

    def clear(part: Part) -> Part:
        if isinstance(part, ToolResult) and part.call_id in targets:
            tool = names.get(part.call_id, "tool")
            stub = stub_of(part, tool, keeps, part.call_id == error)
            if COUNTER.count_text(part_text(part)) <= COUNTER.count_text(stub):
                return part  # the stub would not save a token
            return ToolResult(
                call_id=part.call_id, content=stub, is_error=part.is_error, extra=part.extra
            )
        if inputs and isinstance(part, ToolCall) and part.id in targets:
            return ToolCall(id=part.id, name=part.name, arguments=CLEARED_INPUT, extra=part.extra)
        return part

    return tuple(
        m if i in keep else m.evolve(parts=tuple(clear(p) for p in m.parts))
        for i, m in enumerate(conversation)
    )


@given(
    conversation=agent_histories(long_texts=True),
    keep_pairs=st.integers(0, 5),
    exclude=st.lists(st.sampled_from([FILE_TOOL, "search", "run_tests"]), max_size=2).map(tuple),
    inputs=st.booleans(),
    keeps=KEEPS,
    data=st.data(),
)
def test_clear_tool_results_clears_exactly_the_older_results(
    conversation: Conversation,
    keep_pairs: int,
    exclude: tuple[str, ...],
    inputs: bool,
    keeps: Keeps,
    data: st.DataObject,
) -> None:
    expected = expected_clear(conversation, keep_pairs, exclude, inputs, keeps)
    saved = total(conversation) - total(expected)
    clear_at_least = data.draw(
        st.one_of(
            st.sampled_from([0, 0, 1, 50, 400]),
            st.sampled_from([-1, 0, 1]).map(lambda d: max(0, saved + d)),  # at the edge
        ),
        label="clear_at_least",
    )
    strategy = clear_tool_results(
        keep_pairs=keep_pairs,
        clear_at_least=clear_at_least,
        exclude_tools=exclude,
        clear_tool_inputs=inputs,
        **keeps.params(),
    )
    out = run(strategy, conversation).messages
    if expected == conversation or saved < clear_at_least:
        assert out is conversation
        return
    assert out == expected
    assert total(conversation) - total(out) >= clear_at_least
    for before, after in zip(conversation, out, strict=True):
        if before == after:
            assert after is before  # untouched messages are the same objects
        assert before.call_ids == after.call_ids
        assert before.result_ids == after.result_ids
    names = {p.id: p.name for m in conversation for p in m.parts if isinstance(p, ToolCall)}
    for before, after in zip(conversation, out, strict=True):
        for p, q in zip(before.parts, after.parts, strict=True):
            if isinstance(p, ToolResult) and names.get(p.call_id) in exclude:
                assert q is p  # excluded tools are never cleared


# --- deduplicate_file_reads ---------------------------------------------------------


def _path(call: ToolCall, key: str) -> str | None:
    try:
        args = json.loads(call.arguments)
    except ValueError:
        return None
    value = args.get(key) if isinstance(args, dict) else None
    return value if isinstance(value, str) else None


@given(
    conversation=agent_histories(long_texts=True),
    tool=st.sampled_from([FILE_TOOL, "write_file"]),
)
def test_deduplicate_file_reads_keeps_only_the_newest_read(
    conversation: Conversation, tool: str
) -> None:
    out = run(deduplicate_file_reads(tool_name=tool), conversation).messages
    answered = {r for m in conversation for r in m.result_ids}
    path_of: dict[str, str] = {}
    newest: dict[str, str] = {}
    for m in conversation:
        for p in m.parts:
            if isinstance(p, ToolCall) and p.name == tool and (path := _path(p, "path")):
                path_of[p.id] = path
                if p.id in answered:
                    newest[path] = p.id
    keep = survivors(conversation)
    assert len(out) == len(conversation)
    for i, (before, after) in enumerate(zip(conversation, out, strict=True)):
        if i in keep:
            assert after is before
            continue
        assert len(after.parts) == len(before.parts)
        for p, q in zip(before.parts, after.parts, strict=True):
            stale = (
                isinstance(p, ToolResult)
                and p.call_id in path_of
                and newest[path_of[p.call_id]] != p.call_id
            )
            if not stale:
                assert q is p
                continue
            assert isinstance(p, ToolResult)
            assert isinstance(q, ToolResult)
            path = path_of[p.call_id]
            stub = (
                f"[memrules: stale read of {path}; the later {tool} call "
                f"{newest[path]} has its current content]"
            )
            if COUNTER.count_text(part_text(p)) <= COUNTER.count_text(stub):
                assert q is p  # a stub would not save a token
                continue
            assert q.content == stub
            assert (q.call_id, q.is_error) == (p.call_id, p.is_error)
        if all(p is q for p, q in zip(before.parts, after.parts, strict=True)):
            assert after is before


def test_deduplicate_keeps_the_last_answered_read() -> None:
    """A newer read still waiting for its result does not make the last
    answered read stale: its content is the newest the model has."""
    read = '{"path": "a.py"}'
    conversation = (
        Message(role="system", parts=(Text(text="sys"),)),
        Message(role="user", parts=(Text(text="look at a.py"),)),
        Message(role="assistant", parts=(ToolCall(id="r1", name=FILE_TOOL, arguments=read),)),
        Message(role="tool", parts=(ToolResult(call_id="r1", content="print('a')\n" * 30),)),
        Message(role="user", parts=(Text(text="again"),)),
        Message(role="assistant", parts=(ToolCall(id="r2", name=FILE_TOOL, arguments=read),)),
    )
    assert unwrap(deduplicate_file_reads()(conversation, CTX)) is conversation


# --- drop_observations ---------------------------------------------------------------


@given(conversation=with_observations(agent_histories()), max_drop=st.integers(1, 4))
def test_drop_observations_drops_the_oldest_observations(
    conversation: Conversation, max_drop: int
) -> None:
    out = run(drop_observations(max_drop=max_drop), conversation).messages
    systems = [i for i, m in enumerate(conversation) if m.role == "system"]
    candidates = [
        i
        for i in systems[1:]
        if not conversation[i].text.startswith(DEFAULT_WARNING_MARKER)
        and conversation[i].metadata.get("pinned") is not True
    ]
    dropped = set(candidates[:max_drop])
    assert same(out, drop(conversation, dropped))
    if not dropped:
        assert out is conversation
    assert len(conversation) - len(out) <= max_drop
    if systems:
        assert (
            out[systems[0] - len({i for i in dropped if i < systems[0]})]
            is conversation[systems[0]]
        )
    warnings = [m for m in conversation if m.text.startswith(DEFAULT_WARNING_MARKER)]
    assert all(any(w is m for m in out) for w in warnings)


# --- windows ---------------------------------------------------------------------------


def window_reference(
    conversation: Conversation, fits: Callable[[Conversation], bool]
) -> Conversation:
    """The longest suffix of the droppable messages that fits without
    splitting a tool exchange; everything droppable when none fits."""
    keep = held(conversation)
    order = [i for i in range(len(conversation)) if i not in keep]
    exchanges = [linked(conversation, {i}) for i in order]
    for t in range(len(order) + 1):
        dropped = set(order[:t])
        safe = all(x <= dropped or not (x & dropped) for x in exchanges)
        if safe and (t == len(order) or fits(drop(conversation, dropped))):
            return drop(conversation, dropped)
    raise AssertionError("unreachable: dropping everything droppable is always safe")


def check_window(
    strategy: Strategy,
    conversation: Conversation,
    fits: Callable[[Conversation], bool],
    ctx: StrategyContext = CTX,
) -> Conversation:
    enforced = run(strategy, conversation, ctx)
    out = enforced.messages
    assert enforced.closed_calls == ()  # a window drops whole exchanges: nothing to mend
    assert same(out, window_reference(conversation, fits)), (
        f"{strategy!r}\n{render(conversation)}\n→\n{render(out)}"
    )
    if fits(conversation):
        assert out is conversation
    return out


@given(conversation=agent_histories(max_size=30), keep=st.integers(0, 30))
def test_sliding_window_keep_messages(conversation: Conversation, keep: int) -> None:
    out = check_window(sliding_window(keep_messages=keep), conversation, lambda c: len(c) <= keep)
    assert len(out) <= keep or len(out) == len(held(conversation))


@given(data=st.data())
def test_sliding_window_keep_tokens(data: st.DataObject) -> None:
    conversation = data.draw(agent_histories(large_texts=True), label="conversation")
    edge = boundary_budgets(conversation).filter(lambda b: b.kind == "tokens")
    keep = data.draw(st.one_of(st.integers(1, 4000), edge.map(lambda b: b.limit)), label="keep")
    out = check_window(sliding_window(keep_tokens=keep), conversation, lambda c: total(c) <= keep)
    if total(conversation[i] for i in held(conversation)) <= keep:
        assert total(out) <= keep


@given(
    conversation=agent_histories(large_texts=True),
    keep_messages=st.integers(0, 20),
    keep_tokens=st.integers(1, 4000),
)
def test_sliding_window_both_limits(
    conversation: Conversation, keep_messages: int, keep_tokens: int
) -> None:
    check_window(
        sliding_window(keep_messages=keep_messages, keep_tokens=keep_tokens),
        conversation,
        lambda c: len(c) <= keep_messages and total(c) <= keep_tokens,
    )


@pytest.mark.parametrize("edge", [False, True], ids=["random-budget", "edge-budget"])
@given(data=st.data())
def test_trim_to_budget(edge: bool, data: st.DataObject) -> None:
    conversation = data.draw(agent_histories(large_texts=True), label="conversation")
    budgets = boundary_budgets(conversation) if edge else budgets_for(conversation)
    budget = data.draw(budgets, label="budget")
    ctx = context(budget=budget)
    out = check_window(
        trim_to_budget(),
        conversation,
        lambda c: not budget.is_over(messages=len(c), tokens=total(c)),
        ctx,
    )
    must = [conversation[i] for i in held(conversation)]
    if not budget.is_over(messages=len(must), tokens=total(must)):
        assert not budget.is_over(messages=len(out), tokens=total(out))
    if budget.is_unlimited:
        assert out is conversation


# --- turns: drop_turns, offload, summarize ---------------------------------------------


def header_only(conversation: Conversation, block: tuple[range, ...]) -> Message:
    """The summary of ``block`` before the summarizer's text is in it: what
    ``summarize`` counts when it chooses a block for a budget."""
    return seamed._summary(conversation, block, "")


def oldest_turns(
    conversation: Conversation,
    limit: int,
    budget: Budget = Budget.UNLIMITED,
    *,
    summarized: bool = False,
) -> tuple[set[int], int]:
    """The indices and count of the units a turn strategy moves; with
    ``summarized``, the block is chosen with its summary's header in its
    place (one message more, and its tokens)."""
    replacement = (lambda block: header_only(conversation, block)) if summarized else None
    units = moved_units(conversation, limit, budget=budget, replacement=replacement)
    return {i for unit in units for i in unit}, len(units)


@given(conversation=agent_histories(), turns=st.integers(1, 4))
def test_drop_turns_drops_the_oldest_turns(conversation: Conversation, turns: int) -> None:
    ctx = context(offload_turns=turns)
    raw = unwrap(drop_turns()(conversation, ctx))
    moved, _ = oldest_turns(conversation, turns)
    assert same(raw, drop(conversation, moved))
    enforced = run(drop_turns(), conversation, ctx)
    assert enforced.closed_calls == ()  # whole exchanges move: closure has nothing to do
    assert_took_out(conversation, enforced, moved)


@given(conversation=agent_histories(), turns=st.integers(1, 4))
def test_offload_moves_the_oldest_turns_into_the_store(
    conversation: Conversation, turns: int
) -> None:
    store = MemoryStore()
    ctx = context(store=store)
    result = offload(turns=turns)(conversation, ctx)
    moved, _ = oldest_turns(conversation, turns)
    raw = unwrap(result)
    assert same(raw, drop(conversation, moved))
    if not moved:
        assert raw is conversation
        assert store.batches == []
        return
    assert len(store.batches) == 1
    assert same(store.batches[0], tuple(conversation[i] for i in sorted(moved)))
    assert isinstance(result, Outcome)
    (call,) = result.seam_calls
    assert (call.seam, call.operation, call.error) == ("store", "add", None)
    assert call.request["messages"] == len(moved)
    assert call.request["scope"] == {"conversation_id": None, "user": None, "tenant": None}
    ids = [r["id"] for r in call.request["records"]]
    assert len(ids) == len(set(ids)) == len(moved)
    assert call.response == {"added": ids, "existing": []}
    assert json.loads(json.dumps(call.to_dict())) == call.to_dict()
    enforced = run(offload(turns=turns), conversation, context(store=MemoryStore()))
    # Nothing leaves the conversation without reaching the store: no closure.
    assert enforced.closed_calls == ()
    assert enforced.replaced == ()
    assert_took_out(conversation, enforced, moved)


_REFUSED = re.compile(
    r"refused a summary of (\d+) (tokens|characters) for (\d+) messages of (\d+) tokens: "
    r"it saves none; "
    r"nothing was replaced"
)


@given(
    conversation=st.one_of(
        agent_histories(long_texts=True, large_texts=True), agent_loops(large_texts=True)
    ),
    turns=st.integers(1, 4),
    keep=st.integers(0, 3),
)
def test_summarize_replaces_the_oldest_turns_with_one_summary(
    conversation: Conversation, turns: int, keep: int
) -> None:
    """One summary in place of the oldest units, where the first of them
    stood: a user message when it replaces whole turns (it then stands
    before the latest user message), an assistant message when it replaces
    tool rounds inside the latest turn; and only when it costs fewer tokens
    than what it replaces, or nothing changes and the note says why."""
    summarizer = ExtractiveSummarizer()
    ctx = context(summarizer=summarizer)
    result = summarize(turns=turns, keep_exchanges=keep)(conversation, ctx)
    raw = unwrap(result)
    units = moved_units(conversation, turns, keep_exchanges=keep)
    moved, count = {i for unit in units for i in unit}, len(units)
    if not moved:
        assert raw is conversation
        assert summarizer.seen == []
        return
    batch = tuple(conversation[i] for i in sorted(moved))
    assert len(summarizer.seen) == 1
    assert same(summarizer.seen[0], batch)
    assert isinstance(result, Outcome)
    (call,) = result.seam_calls
    if raw is conversation:
        refused = _REFUSED.fullmatch(result.note)
        assert refused is not None, result.note
        size, unit, messages, replaced = refused.groups()
        assert (int(messages), int(replaced)) == (len(batch), total(batch))
        # More characters than 16 a token it would save are not counted.
        assert int(size) >= int(replaced) * (16 if unit == "characters" else 1)
        assert (call.response, call.error) == (None, result.note)
        event("summary: refused")
        return
    start = min(moved)
    rest = drop(conversation, moved)
    assert same(raw[:start], rest[:start])
    assert same(raw[start + 1 :], rest[start:])
    summary = raw[start]
    # The user's when it stands for whole turns (its first message opens a
    # turn), else the assistant's: it replaces tool exchanges.
    opens = start in {turn.start for turn in turn_ranges(conversation)}
    assert summary.role == ("user" if opens else "assistant")
    event(f"summary: {summary.role}")
    assert summary.text.startswith(SUMMARY_PREFIX)
    assert f"{count} earlier turns or tool exchanges" in summary.text
    assert f"({len(batch)} messages)" in summary.text
    assert summary.text.endswith(summarizer.summarize(batch))
    assert total([summary]) < total(batch)  # a summary saves tokens
    assert call.error is None
    again = context(summarizer=ExtractiveSummarizer())
    enforced = run(summarize(turns=turns, keep_exchanges=keep), conversation, again)
    # Everything that leaves the conversation is in the summary: no closure.
    assert enforced.closed_calls == ()
    assert enforced.messages[start].text == summary.text
    assert_took_out(conversation, enforced, moved)
    assert start in {*enforced.inserted, *(j for _, j in enforced.replaced)}
    if len({id(m) for m in conversation}) == len(conversation):
        assert enforced.replaced == ((start, start),)


@pytest.mark.parametrize("name", ["offload", "summarize"])
@given(conversation=agent_histories(), turns=st.integers(1, 4))
def test_seam_failure_leaves_the_conversation_and_records_the_call(
    name: str, conversation: Conversation, turns: int
) -> None:
    """All or nothing: a failing seam leaves every message where it was, and
    the report records the error and the failed seam call, in ``compress``
    and under a budget alike."""
    store, summarizer = MemoryStore(down=True), ExtractiveSummarizer(down=True)
    strategy = STRATEGIES[name](turns=turns)
    named = (NamedStrategy(name=name, strategy=strategy),)
    budget = Budget.messages(max(0, len(conversation) - 1))
    for result, moved in (
        (
            run_once(conversation, named, context(store=store, summarizer=summarizer)),
            oldest_turns(conversation, turns)[0],
        ),
        (
            run_pipeline(
                conversation,
                named,
                context(budget=budget, store=store, summarizer=summarizer),
            ),
            oldest_turns(conversation, turns, budget, summarized=name == "summarize")[0],
        ),
    ):
        assert result.messages is conversation
        assert store.batches == []
        assert summarizer.seen == []
        if not moved:
            assert result.report.errors == ()
            continue
        assert len(result.report.errors) == len(result.report.actions) >= 1
        assert result.report.last_error is not None
        assert result.report.last_error.startswith(f"{name}: ")
        assert result.report.stop_reason in (StopReason.SINGLE_PASS, StopReason.NO_PROGRESS)
        for action in result.report.actions:
            assert not action.changed
            (call,) = action.seam_calls
            seam = "store" if name == "offload" else "summarizer"
            assert call.seam == seam
            if name == "offload":
                assert call.request["messages"] == len(moved)
                assert len(call.request["records"]) == len(moved)
            else:
                assert len(call.request["messages"]) == len(moved)
            assert call.error is not None
            assert call.response is None


@pytest.mark.parametrize("name", ["offload", "summarize"])
@given(conversation=agent_histories())
def test_absent_seam_is_a_no_op(name: str, conversation: Conversation) -> None:
    assert unwrap(STRATEGIES[name]()(conversation, CTX)) is conversation


@pytest.mark.parametrize("name", ["drop_turns", "offload", "summarize"])
def test_turns_spare_a_parallel_call_made_before_the_first_turn(name: str) -> None:
    """The latest user message answers one of two parallel calls made before
    any user message; the other call's result sits in an older turn. Moving
    that turn would make closure drop both calls and strip the latest user
    message, so no turn may move."""
    parallel = Message(
        role="assistant",
        parts=(ToolCall(id="a", name="search"), ToolCall(id="b", name="search")),
    )
    conversation = (
        Message(role="system", parts=(Text(text="sys"),)),
        parallel,
        Message(role="user", parts=(Text(text="hello"),)),
        Message(role="tool", parts=(ToolResult(call_id="a", content="A"),)),
        Message(role="user", parts=(Text(text="next"),)),
        Message(role="user", parts=(ToolResult(call_id="b", content="B"),)),
    )
    ctx = context(store=MemoryStore(), summarizer=ExtractiveSummarizer(), offload_turns=5)
    strategy = STRATEGIES[name]()
    assert unwrap(strategy(conversation, ctx)) is conversation
    check_strategy(strategy, conversation, ctx)


def test_offload_moves_an_exchange_that_crosses_a_turn_whole() -> None:
    """Anthropic: the call made in turn 1 is answered by the tool_result
    that opens turn 2. Moving turn 1's exchange alone would leave closure
    to delete that result, stored nowhere; so it and turn 2 move together
    (turn 1's opening message is the task, which stays)."""
    first_turn = (
        Message(role="user", parts=(Text(text="read a.py"),)),
        Message(role="assistant", parts=(ToolCall(id="c1", name=FILE_TOOL, arguments="{}"),)),
    )
    second_turn = (
        Message(role="user", parts=(ToolResult(call_id="c1", content="x = 1"), Text(text="and?"))),
        Message(role="assistant", parts=(Text(text="x is 1"),)),
    )
    latest = Message(role="user", parts=(Text(text="thanks"),))
    system = Message(role="system", parts=(Text(text="sys"),))
    conversation = (system, *first_turn, *second_turn, latest)
    store = MemoryStore()
    enforced = run(offload(turns=1), conversation, context(store=store))
    assert enforced.messages == (system, first_turn[0], latest)
    assert store.batches == [(first_turn[1], *second_turn)]
    assert enforced.closed_calls == ()


def test_a_stub_is_used_only_when_it_saves_tokens() -> None:
    """Shortness is measured in tokens, not characters: the README's quick
    start once grew a history when a 22-token result became a 25-token stub."""
    arguments = '{"path": "src/app.py"}'
    dense = "漢字測試中文" * 5  # 30 characters, 45 tokens: shorter than the stub, costlier
    airy = " " * 300 + "ok"  # 302 characters, a handful of tokens
    conversation = (
        message("user", "read them twice"),
        message("assistant", ToolCall(id="c1", name="read_file", arguments=arguments)),
        message("tool", ToolResult(call_id="c1", content=dense)),
        message("assistant", ToolCall(id="c2", name="read_file", arguments=arguments)),
        message("tool", ToolResult(call_id="c2", content=airy)),
        message("assistant", ToolCall(id="c3", name="read_file", arguments=arguments)),
        message("tool", ToolResult(call_id="c3", content="current")),
        message("user", "thanks"),
    )
    out = unwrap(deduplicate_file_reads()(conversation, context()))
    stub = out[2].parts[0]
    assert isinstance(stub, ToolResult)
    assert stub.content != dense
    assert len(part_text(stub)) > len(dense)  # more characters, fewer tokens
    assert out[4] is conversation[4]  # the stub would cost more tokens than 300 spaces
    assert total(out) < total(conversation)


def test_keep_messages_defaults_to_40_only_without_keep_tokens() -> None:
    """A token window is a token window: setting ``keep_tokens`` alone does
    not also cap the window at 40 messages (the README says so)."""
    history = tuple(message("user" if i % 2 else "assistant", "hi") for i in range(100))
    assert repr(sliding_window()) == "sliding_window(keep_messages=40)"
    assert len(unwrap(sliding_window()(history, context()))) == 40
    by_tokens = sliding_window(keep_tokens=10_000)
    assert repr(by_tokens) == "sliding_window(keep_tokens=10000)"
    assert unwrap(by_tokens(history, context())) is history
