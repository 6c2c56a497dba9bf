"""Shared hypothesis generators and reference helpers for the test-suite.

The generators users get are in :mod:`memrules.testing` and re-exported
here; this module adds what only our own tests need: in-memory seams (real
implementations of the protocols, not mocks), contexts, random pipelines
drawn from the registry, and small reference implementations of the
structure the strategies read (survivors, tool-linked messages, turns),
written independently of :mod:`memrules._core.conversation` so the tests do not
grade the library with its own helpers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from memrules._core.budget import Budget
from memrules._core.messages import Conversation, Message, Text, ToolCall, ToolResult
from memrules._counting.named import counter_for
from memrules._counting.tokens import TokenCounter
from memrules._engine.contract import Outcome, StrategyContext, StrategyResult
from memrules._engine.interpreter import NamedStrategy
from memrules.seams import (
    RecallHit,
    Scope,
    StoredMessage,
    StoreWrite,
    Summarizer,
    extractive_summarizer,
    openai_summarizer,
)
from memrules.strategies import BUILTIN_ORDER, STRATEGIES
from memrules.testing import (
    FILE_PATHS,
    FILE_TOOL,
    assert_invariants,
    budgets,
    check_strategy,
    conversations,
    messages,
    parts,
    render,
    texts,
)

__all__ = [
    "ALL_BUILTINS",
    "COUNTER",
    "FILE_PATHS",
    "FILE_TOOL",
    "PARAMS",
    "SUMMARIZERS",
    "ExtractiveSummarizer",
    "MemoryStore",
    "agent_histories",
    "agent_loops",
    "assert_invariants",
    "boundary_budgets",
    "budgets",
    "budgets_for",
    "check_strategy",
    "context",
    "conversations",
    "held",
    "linked",
    "messages",
    "moved_units",
    "named_strategies",
    "parts",
    "render",
    "summarizer_of",
    "survivors",
    "terse_summary",
    "texts",
    "total",
    "turn_ranges",
    "unit_ranges",
    "unwrap",
    "with_observations",
]

COUNTER: TokenCounter = counter_for("cl100k_base")
"""The shared cl100k counter (the default encoder)."""

ALL_BUILTINS = (*BUILTIN_ORDER, "trim_to_budget", "strip_old_images", "clear_thinking")


def agent_histories(
    *, max_size: int = 24, large_texts: bool = False, long_texts: bool = False
) -> st.SearchStrategy[Conversation]:
    """Conversations with every knob on, orphan results included. With
    ``long_texts``, half the texts are a few hundred characters long, so
    that replacing tool results with short stubs pays."""
    text = None
    if long_texts:
        long = st.text(alphabet="abcdefgh ijklmnop\n", min_size=120, max_size=400)
        text = st.one_of(texts(large=large_texts), long)
    return conversations(max_size=max_size, orphan_results=True, large_texts=large_texts, text=text)


@st.composite
def agent_loops(
    draw: st.DrawFn, *, max_rounds: int = 12, large_texts: bool = False
) -> Conversation:
    """An earlier history (or none, or only a system prompt), then one
    instruction and up to ``max_rounds`` tool rounds in the same turn: the
    agent loop, where ``offload`` and ``summarize`` take rounds of the
    latest turn after the question. Each
    round is an assistant message with one or two calls, and their results
    in ``tool`` messages (OpenAI) or one user message (Anthropic's
    ``tool_result`` blocks); the last call may still be waiting."""
    system = (Message(role="system", parts=(Text(text="You are a coding agent."),)),)
    earlier = agent_histories(max_size=8, large_texts=large_texts)
    head = list(draw(st.one_of(st.just(()), st.just(system), earlier), label="head"))
    anthropic = draw(st.booleans(), label="anthropic")
    question = Message(role="user", parts=(Text(text=draw(texts(), label="question") or "go"),))
    out = [*head, question]
    body = st.one_of(
        texts(large=large_texts),
        st.integers(1, 40).map(lambda n: "\n".join(f"line {k}: value = f({k})" for k in range(n))),
    )
    for r in range(draw(st.integers(0, max_rounds), label="rounds")):
        calls = tuple(
            ToolCall(id=f"loop_{r}_{k}", name=FILE_TOOL, arguments=f'{{"path": "src/m{r % 5}.py"}}')
            for k in range(draw(st.integers(1, 2), label="calls"))
        )
        said = draw(st.sampled_from(("", "Reading the file.")), label="said")
        out.append(Message(role="assistant", parts=(*([Text(text=said)] if said else []), *calls)))
        results = [ToolResult(call_id=c.id, content=draw(body, label="result")) for c in calls]
        if anthropic:
            out.append(Message(role="user", parts=tuple(results)))
        else:
            out.extend(Message(role="tool", parts=(p,)) for p in results)
    if draw(st.booleans(), label="pending"):
        pending = ToolCall(id="loop_pending", name="run_tests", arguments="{}")
        out.append(Message(role="assistant", parts=(pending,)))
    return tuple(out)


# --- seams ---------------------------------------------------------------------


@attrs.define
class MemoryStore:
    """An in-memory VectorStore: keeps the messages of each batch of records
    it is given, or, when ``down``, raises having kept nothing. (The real
    stores, Milvus and Qdrant, are tested in ``tests/seams/test_stores.py``.)"""

    down: bool = False
    batches: list[Conversation] = attrs.field(factory=list)

    def add(self, records: Sequence[StoredMessage]) -> StoreWrite:
        if self.down:
            msg = "vector store unreachable"
            raise ConnectionError(msg)
        self.batches.append(tuple(r.message for r in records))
        return StoreWrite(added=tuple(r.id for r in records))

    def search(
        self, query: str, *, k: int, scope: Scope, mode: str | None = None
    ) -> tuple[RecallHit, ...]:
        return ()


@attrs.define
class ExtractiveSummarizer:
    """An in-memory Summarizer: the first words of each message, in order."""

    down: bool = False
    seen: list[Conversation] = attrs.field(factory=list)

    def summarize(self, messages: Conversation) -> str:
        if self.down:
            msg = "summarizer timed out"
            raise TimeoutError(msg)
        self.seen.append(messages)
        lines = (f"{m.role}: {' '.join(m.countable_text.split()[:6])}" for m in messages)
        return "\n".join(lines)


SUMMARIZERS = ("memory", "extractive", "http")
"""The summarizers the property suites run: the in-memory one above, the
shipped extractive one, and an OpenAI-compatible one posting over HTTP to a
loopback server answering :func:`terse_summary`."""


def terse_summary(messages: list[dict[str, Any]]) -> str:
    """A loopback model's summary of the transcript it was sent: the first
    four words of each message line (deterministic, so runs compare)."""
    lines = str(messages[-1]["content"]).splitlines()
    kept = [" ".join(line.split()[:4]) for line in lines if line.startswith("[")]
    return "\n".join(kept) or "nothing to keep"


def summarizer_of(kind: str, url: str) -> Summarizer:
    """A fresh summarizer of ``kind`` (one of :data:`SUMMARIZERS`); ``url``
    is the loopback server's, for ``http``."""
    if kind == "memory":
        return ExtractiveSummarizer()
    if kind == "extractive":
        return extractive_summarizer(max_chars=400)
    assert kind == "http", kind
    return openai_summarizer(base_url=url, model="loopback-model", retries=0, timeout_s=30)


def context(
    *,
    budget: Budget = Budget.UNLIMITED,
    store: MemoryStore | None = None,
    summarizer: Summarizer | None = None,
    offload_turns: int = 10,
    counter: TokenCounter = COUNTER,
) -> StrategyContext:
    from memrules.seams import Seams

    return StrategyContext(
        counter=counter,
        budget=budget,
        seams=Seams(store=store, summarizer=summarizer),
        offload_turns=offload_turns,
    )


def unwrap(result: StrategyResult) -> Conversation:
    return result.messages if isinstance(result, Outcome) else result


def total(conversation: Iterable[Message], counter: TokenCounter = COUNTER) -> int:
    return sum(counter.count(m) for m in conversation)


# --- reference structure ---------------------------------------------------------


def _from_person(m: Message) -> bool:
    """A user message with text of its own, not a harness's, not a summary."""
    if m.role != "user" or m.metadata.get("harness") is True:
        return False
    info = m.metadata.get("memrules")
    if isinstance(info, Mapping) and "summary_of" in info:
        return False
    return any(isinstance(p, Text) and p.text.strip() for p in m.parts)


def survivors(conversation: Conversation) -> set[int]:
    """The first system message, the most recent user message, the task and
    the question (the first and the latest message from the person), and
    the messages whose metadata pins them (an oracle written apart from
    `memrules._core.survivors`)."""
    out: set[int] = set()
    systems = [i for i, m in enumerate(conversation) if m.role == "system"]
    users = [i for i, m in enumerate(conversation) if m.role == "user"]
    persons = [i for i, m in enumerate(conversation) if _from_person(m)]
    if systems:
        out.add(systems[0])
    if users:
        out.add(users[-1])
    if persons:
        out.update((persons[0], persons[-1]))
    out.update(i for i, m in enumerate(conversation) if m.metadata.get("pinned") is True)
    return out


def linked(conversation: Conversation, start: Iterable[int]) -> set[int]:
    """``start`` and every message tied to it by tool ids, transitively."""
    ids_of = [set(m.call_ids) | set(m.result_ids) for m in conversation]
    seen = set(start)
    frontier = list(seen)
    while frontier:
        i = frontier.pop()
        for j, ids in enumerate(ids_of):
            if j not in seen and ids & ids_of[i]:
                seen.add(j)
                frontier.append(j)
    return seen


def held(conversation: Conversation) -> set[int]:
    """What a window can never drop: the survivors and their tool exchanges."""
    return linked(conversation, survivors(conversation))


def turn_ranges(conversation: Conversation) -> list[range]:
    """Turns: from a user message that is not only tool results to the next."""
    starts = [
        i
        for i, m in enumerate(conversation)
        if m.role == "user" and not (m.parts and all(isinstance(p, ToolResult) for p in m.parts))
    ]
    ends = [*starts[1:], len(conversation)]
    return [range(s, e) for s, e in zip(starts, ends[: len(starts)], strict=True)]


def unit_ranges(conversation: Conversation, keep_exchanges: int = 3) -> list[range]:
    """The units a turn strategy may move, oldest first: the turns before
    the latest one, then the latest turn's exchanges (an assistant message up
    to the next one) but the newest ``keep_exchanges`` completed ones that
    call tools and what follows them; stopping at the first unit that holds a survivor or
    part of a survivor's exchange, or a call that has no result."""
    keep = held(conversation)
    turns = turn_ranges(conversation)
    units: list[range] = []
    if not turns:
        return units
    answered = {r for m in conversation for r in m.result_ids}
    for turn in turns[:-1]:
        if not keep.intersection(turn):
            units.append(turn)
            continue
        # A survivor in an earlier turn (the task): its exchanges are units.
        heads = [i for i in turn if conversation[i].role == "assistant"]
        tails = [*heads[1:], turn.stop][: len(heads)]
        for x in (range(a, b) for a, b in zip(heads, tails, strict=True)):
            if keep.intersection(x) or any(
                c not in answered for i in x for c in conversation[i].call_ids
            ):
                return units
            units.append(x)
    last = turns[-1]
    starts = [i for i in last if conversation[i].role == "assistant"]
    ends = [*starts[1:], last.stop][: len(starts)]
    exchanges = [range(a, b) for a, b in zip(starts, ends, strict=True)]
    answered = {r for m in conversation for r in m.result_ids}
    calling = [
        k
        for k, x in enumerate(exchanges)
        if any(conversation[i].call_ids for i in x)
        and all(c in answered for i in x for c in conversation[i].call_ids)
    ]
    if keep_exchanges:
        cut = calling[-keep_exchanges] if len(calling) >= keep_exchanges else 0
        exchanges = exchanges[:cut]
    for x in exchanges:
        if keep.intersection(x) or any(
            c not in answered for i in x for c in conversation[i].call_ids
        ):
            break
        units.append(x)
    return units


def moved_units(
    conversation: Conversation,
    limit: int,
    *,
    keep_exchanges: int = 3,
    budget: Budget = Budget.UNLIMITED,
    replacement: Callable[[tuple[range, ...]], Message] | None = None,
) -> list[range]:
    """The units a turn strategy moves: the longest closed block (one no
    tool exchange leaves) of at most ``target`` oldest units, else the
    shortest longer one, else none; ``target`` is ``limit``, or, under
    ``budget``, the number of units whose removal fits it when larger
    (with ``replacement(block)`` in the block's place, for a summary)."""
    units = unit_ranges(conversation, keep_exchanges)

    def closed(k: int) -> bool:
        block = {i for unit in units[:k] for i in unit}
        return all(linked(conversation, {i}) <= block for i in block)

    target = limit
    if not budget.is_unlimited:
        for k in range(len(units) + 1):
            gone = {i for unit in units[:k] for i in unit}
            rest = [m for i, m in enumerate(conversation) if i not in gone]
            if replacement is not None and k:
                rest.append(replacement(tuple(units[:k])))
            if not budget.is_over(messages=len(rest), tokens=total(rest)) or k == len(units):
                target = max(limit, k)
                break
    runs = [k for k in range(1, len(units) + 1) if closed(k)]
    fits = [k for k in runs if k <= target]
    count = max(fits) if fits else min((k for k in runs if k > target), default=0)
    return units[:count]


# --- budgets and pipelines ---------------------------------------------------------


@st.composite
def budgets_for(draw: st.DrawFn, conversation: Conversation, *, unlimited: bool = True) -> Budget:
    """A budget near ``conversation``'s size, so that it bites sometimes."""
    kinds = ["messages", "tokens"] + (["unlimited"] if unlimited else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "messages":
        return Budget.messages(draw(st.integers(1, len(conversation) + 2)))
    if kind == "tokens":
        return Budget.tokens(draw(st.integers(1, total(conversation) + 20)))
    return Budget.UNLIMITED


@st.composite
def boundary_budgets(draw: st.DrawFn, conversation: Conversation) -> Budget:
    """A budget right at the edge of what some window cut keeps: the size
    of the conversation without its oldest ``t`` droppable messages (a cut
    that splits no tool exchange), give or take one, so that off-by-one
    errors at the limit show."""
    keep = held(conversation)
    order = [i for i in range(len(conversation)) if i not in keep]
    exchanges = [linked(conversation, {i}) for i in order]
    safe = [
        t
        for t in range(len(order) + 1)
        if all(x <= set(order[:t]) or not (x & set(order[:t])) for x in exchanges)
    ]
    t = draw(st.sampled_from(safe))
    gone = set(order[:t])
    kept = [m for i, m in enumerate(conversation) if i not in gone]
    delta = draw(st.sampled_from((-1, 0, 1)))
    if draw(st.booleans()):
        return Budget.messages(max(1, len(kept) + delta))
    return Budget.tokens(max(1, total(kept) + delta))


@st.composite
def with_observations(
    draw: st.DrawFn, base: st.SearchStrategy[Conversation], *, most: int = 6
) -> Conversation:
    """``base`` conversations with up to ``most`` extra observations (system
    messages) inserted after the first message."""
    conversation = list(draw(base))
    for n in range(draw(st.integers(0, most))):
        at = draw(st.integers(min(1, len(conversation)), len(conversation)))
        conversation.insert(at, Message(role="system", parts=(Text(text=f"observation {n}"),)))
    return tuple(conversation)


_TOOL_NAMES = (FILE_TOOL, "search", "run_tests", "write_file")

PARAMS: Mapping[str, st.SearchStrategy[dict[str, Any]]] = {
    "offload": st.fixed_dictionaries(
        {}, optional={"turns": st.integers(1, 4), "keep_exchanges": st.integers(0, 3)}
    ),
    "summarize": st.fixed_dictionaries(
        {}, optional={"turns": st.integers(1, 4), "keep_exchanges": st.integers(0, 3)}
    ),
    "deduplicate_file_reads": st.fixed_dictionaries(
        {},
        optional={
            "tool_name": st.sampled_from((FILE_TOOL, "write_file")),
            "path_key": st.sampled_from(("path", "query")),
        },
    ),
    "clear_tool_results": st.fixed_dictionaries(
        {},
        optional={
            "keep_pairs": st.integers(0, 4),
            "clear_at_least": st.integers(0, 120),
            "exclude_tools": st.lists(st.sampled_from(_TOOL_NAMES), max_size=2).map(tuple),
            "clear_tool_inputs": st.booleans(),
            "preview_chars": st.sampled_from((0, 40, 200)),
            "recent_turns": st.integers(0, 3),
            "keep_first": st.integers(0, 3),
            "error_tail_chars": st.sampled_from((0, 300, 2000)),
        },
    ),
    "clamp_oversized_messages": st.fixed_dictionaries(
        {},
        optional={
            "max_part_tokens": st.integers(32, 300),
            "recent_turns": st.integers(0, 3),
            "keep_first": st.integers(0, 3),
            "error_tail_chars": st.sampled_from((0, 300, 2000)),
        },
    ),
    "sliding_window": st.one_of(
        st.fixed_dictionaries({}, optional={"keep_messages": st.integers(0, 24)}),
        st.fixed_dictionaries({"keep_tokens": st.integers(1, 3000)}),
        st.fixed_dictionaries(
            {"keep_messages": st.integers(0, 24), "keep_tokens": st.integers(1, 3000)}
        ),
    ),
    "drop_observations": st.fixed_dictionaries({}, optional={"max_drop": st.integers(1, 4)}),
    "drop_turns": st.just({}),
    "trim_to_budget": st.just({}),
    "strip_old_images": st.one_of(
        st.fixed_dictionaries({}, optional={"keep_images": st.integers(0, 4)}),
        st.fixed_dictionaries({"keep_turns": st.integers(0, 3)}),
    ),
    "clear_thinking": st.fixed_dictionaries({}, optional={"keep_turns": st.integers(0, 3)}),
}
"""Valid parameters for every registered strategy type."""


@st.composite
def _named(draw: st.DrawFn, name: str) -> NamedStrategy:
    params = draw(PARAMS[name])
    return NamedStrategy(name=name, strategy=STRATEGIES[name](**params))


def named_strategies(
    names: Iterable[str] = ALL_BUILTINS, *, min_size: int = 1, max_size: int = 8
) -> st.SearchStrategy[tuple[NamedStrategy, ...]]:
    """Random pipelines: built-ins drawn from ``names`` with random valid parameters."""
    pool = tuple(names)
    return st.lists(
        st.sampled_from(pool).flatmap(_named), min_size=min_size, max_size=max_size
    ).map(tuple)
