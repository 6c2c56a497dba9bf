"""The benchmark's measurements: memrules against the least an exact
trimmer must do, and against LangChain, on seeded agent histories
(:mod:`benchmarks.harness.histories`).

Each measurement stores its figures, JSON-ready, under its key of
:attr:`Context.figures`; :mod:`benchmarks.harness.render` turns them into
tables and :mod:`benchmarks.harness.targets` judges them. Nothing here prints.

It is built not to flatter memrules:

- Every comparison runs **rounds that alternate** the two sides (floor
  first in even rounds, memrules first in odd ones) in the same process, and
  reports the **median and the range of the per-round ratios**, never the
  best run of one side against the best of the other. The machine's load
  average is recorded before and after each section.
- The **floor does the same counting** as memrules: with the default
  ``count_rule: openai`` it counts OpenAI's framing on the request's JSON
  (:mod:`benchmarks.harness.reference`), encoding each new message once and
  keeping short recurring strings (roles) counted, as memrules does.
- Beside the long-lived list a caller appends to, it measures the paths
  callers really take: converting the whole list with ``from_openai``
  every turn, rebuilt ``Message`` objects, and ``on_openai_request`` on a
  freshly parsed body; and it checks windows against OpenAI's framing
  counted on the JSON, not against memrules' own count.

Sections:

1. **Counting** a whole history cold, unframed (``count_rule: seed``) and by OpenAI's rule.
2. **One request**: ``Pipeline.apply`` cold and warm, a request that needs
   no compaction, LangChain's ``trim_messages``; rebuilt objects; the hook.
3. **Growing loops** of 1,000, 3,000 and 10,000 turns, trimmed to 100k
   tokens every turn: the floor and memrules on a list, and with
   ``from_openai`` every turn; LangChain's exact loop at the first length.
4. **Quality**: windows over the budget under OpenAI's framing, budget use,
   broken tool pairs, for memrules (default rule and unframed) and
   LangChain.
5. **Memory**: tracemalloc's peak during ``apply`` on the biggest history.
"""

from __future__ import annotations

import bisect
import functools
import gc
import json
import os
import platform
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import tiktoken

from benchmarks.harness._langchain import CONFIGS, LangChain, TrimConfig, load_langchain
from benchmarks.harness.histories import History, agent_history, request_points
from benchmarks.harness.reference import PRIMING, openai_message_tokens
from memrules._adapters import from_openai, to_openai
from memrules._adapters.conversion_cache import ConversionCache
from memrules._config.load import MemoryConfig
from memrules._core.invariants import pairing_problems
from memrules._core.messages import Conversation, Message
from memrules._counting.framing import OPENAI, FramedCounter
from memrules._counting.tokens import TiktokenCounter, load_encoding
from memrules._plugin.plugin import MemoryPlugin
from memrules._runtime.pipeline import Pipeline, load_pipeline
from memrules.strategies import trim_to_budget

__all__ = ["ENCODER", "SECTIONS", "Context", "Settings", "alternate", "sample_turns", "start"]

ENCODER = "o200k_base"
_SHORT = 12  # strings this short recur (roles, "function"); both sides keep their counts


@attrs.frozen(kw_only=True)
class Settings:
    """What to run. :meth:`quick_settings` is a tiny configuration for tests."""

    sizes: tuple[int, ...] = (100, 1_000, 10_000)
    seed: int = 0
    call_budget: int = 100_000
    loop_turns: tuple[int, ...] = (1_000, 3_000, 10_000)
    loop_budget: int = 100_000
    loop_rounds: int = 3
    rounds: int = 5  # alternating rounds of the shorter comparisons
    lc_turns: int | None = 300  # None: every turn
    quality_budgets: tuple[int, ...] = (16_000, 32_000, 100_000)
    quality_histories: int = 12
    quality_cuts: int = 10
    quality_size: int = 800
    repeats: int = 3
    langchain: bool = True
    quick: bool = False

    @classmethod
    def quick_settings(cls, **changes: Any) -> Settings:
        base = cls(
            sizes=(40, 120),
            call_budget=20_000,
            loop_turns=(40, 60),
            loop_budget=8_000,
            loop_rounds=2,
            rounds=2,
            quality_budgets=(6_000, 12_000),
            quality_histories=2,
            quality_cuts=3,
            quality_size=120,
            lc_turns=None,
            repeats=1,
            quick=True,
        )
        return attrs.evolve(base, **changes)


@attrs.define
class Context:
    """One run: its settings, the encoding, LangChain if loaded, and the
    figures gathered so far."""

    settings: Settings
    encoding: tiktoken.Encoding
    langchain: LangChain | None
    figures: dict[str, Any] = attrs.field(factory=dict)
    histories: dict[int, History] = attrs.field(factory=dict)
    lc_messages: dict[tuple[int, int], list[Any]] = attrs.field(factory=dict)

    def history(self, size: int, seed: int | None = None) -> History:
        seed = self.settings.seed if seed is None else seed
        if seed != self.settings.seed:
            return agent_history(size, seed=seed)
        if size not in self.histories:
            self.histories[size] = agent_history(size, seed=seed)
        return self.histories[size]

    def lc(self, history: History) -> list[Any]:
        assert self.langchain is not None
        key = (history.seed, len(history))
        if key not in self.lc_messages:
            self.lc_messages[key] = self.langchain.convert(history.openai)
        return self.lc_messages[key]

    def load(self, section: str, when: str) -> None:
        """Record the machine's load average (1, 5, 15 minutes)."""
        try:
            load = list(os.getloadavg())
        except OSError:  # not on this platform
            return
        self.figures.setdefault("load", []).append({"section": section, "when": when, "load": load})


def start(settings: Settings) -> Context:
    """A run's context: the encoding loaded, LangChain imported if asked for
    and installed, and the environment recorded in the figures."""
    encoding = load_encoding(ENCODER)
    langchain = load_langchain(encoding) if settings.langchain else None
    status = "skipped" if not settings.langchain else "not installed"
    ctx = Context(settings=settings, encoding=encoding, langchain=langchain)
    ctx.figures["settings"] = attrs.asdict(settings)
    ctx.figures["langchain"] = langchain.version if langchain else status
    ctx.figures["environment"] = {
        "python": platform.python_version(),
        "tiktoken": getattr(tiktoken, "__version__", "?"),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "langchain_core": langchain.version if langchain else None,
        "langchain_status": "installed" if langchain else status,
    }
    return ctx


# --------------------------------------------------------------------------- helpers


def _pipeline(budget: int, encoding: tiktoken.Encoding, *, rule: str = "openai") -> Pipeline:
    """``max_tokens: budget`` and ``trim_to_budget`` under ``rule``, with a
    fresh counter."""
    yaml = (
        f"encoder_name: {ENCODER}\ncount_rule: {rule}\nmax_tokens: {budget}\n"
        "strategies:\n  - type: trim_to_budget\n"
    )
    return load_pipeline(yaml, counter=TiktokenCounter(encoding))


def _timed(fn: Callable[[], object], repeats: int, *, long: float = 0.5) -> float:
    """Seconds of the fastest of ``repeats`` runs (one run when it takes
    longer than ``long`` seconds): for one side's cost, never a ratio."""
    best = float("inf")
    gc.collect()
    for _ in range(max(1, repeats)):
        begin = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - begin
        best = min(best, elapsed)
        if elapsed > long:
            break
    return best


def _clock(fn: Callable[[], object]) -> float:
    gc.collect()
    begin = time.perf_counter()
    fn()
    return time.perf_counter() - begin


def alternate(
    floor: Callable[[], float], memrules: Callable[[], float], rounds: int
) -> dict[str, Any]:
    """Run ``floor`` and ``memrules`` (each returns its seconds) in ``rounds``
    rounds, floor first in even rounds and memrules first in odd ones; the
    medians, and the median and range of the per-round ratios."""
    floors: list[float] = []
    mems: list[float] = []
    for r in range(max(1, rounds)):
        if r % 2 == 0:
            floors.append(floor())
            mems.append(memrules())
        else:
            mems.append(memrules())
            floors.append(floor())
    ratios = [m / f for m, f in zip(mems, floors, strict=True)]
    return {
        "rounds": len(ratios),
        "floor_s": statistics.median(floors),
        "memrules_s": statistics.median(mems),
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "floor_all_s": floors,
        "memrules_all_s": mems,
    }


def _short_counter(encoding: tiktoken.Encoding) -> Callable[[str], int]:
    """``len(encode(text))``, with short strings' counts kept (as
    :class:`~memrules._counting.framing.FramedCounter` keeps them)."""
    encode = encoding.encode_ordinary
    known: dict[str, int] = {}

    def count(text: str) -> int:
        if len(text) > _SHORT:
            return len(encode(text))
        found = known.get(text)
        if found is None:
            found = known[text] = len(encode(text))
        return found

    return count


def _seed_counts(history: History, encoding: tiktoken.Encoding) -> list[int]:
    encode = encoding.encode_ordinary
    return [len(encode(f"{m.role} {m.countable_text}")) for m in history.messages]


def _openai_counts(history: History, encoding: tiktoken.Encoding) -> list[int]:
    count = _short_counter(encoding)
    return [openai_message_tokens(raw, count) for raw in history.openai]


def _has_cjk(text: str) -> bool:
    return any("\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff" for c in text)


# --------------------------------------------------------------------------- 0. data


def histories(ctx: Context) -> None:
    data = []
    for size in ctx.settings.sizes:
        h = ctx.history(size)
        counts = _seed_counts(h, ctx.encoding)
        framed = _openai_counts(h, ctx.encoding)
        msgs = h.messages
        data.append(
            {
                "messages": size,
                "tokens": sum(counts),
                "tokens_openai": sum(framed) + PRIMING,
                "text_bytes": h.text_bytes,
                "tool_calls": sum(len(m.call_ids) for m in msgs),
                "parallel_call_messages": sum(1 for m in msgs if len(m.call_ids) > 1),
                "file_reads": sum(
                    1 for m in msgs for p in m.parts if getattr(p, "name", None) == "read_file"
                ),
                "cjk_messages": sum(1 for m in msgs if _has_cjk(m.countable_text)),
                "largest_message_tokens": max(counts),
            }
        )
    ctx.figures["histories"] = data


# --------------------------------------------------------------------------- 1. counting


def counting(ctx: Context) -> None:
    encode = ctx.encoding.encode_ordinary
    data = []
    for size in ctx.settings.sizes:
        h = ctx.history(size)
        pairs = [(m.role, m.countable_text) for m in h.messages]
        raws = h.openai

        def seed_floor(pairs: Sequence[tuple[str, str]] = pairs) -> float:
            return _clock(lambda: sum([len(encode(f"{role} {text}")) for role, text in pairs]))

        def seed_cold(messages: Conversation = h.messages) -> float:
            return _clock(lambda: sum(TiktokenCounter(ctx.encoding).counts(messages)))

        def openai_floor(raws: Sequence[Mapping[str, Any]] = raws) -> float:
            def run() -> int:
                count = _short_counter(ctx.encoding)
                return sum([openai_message_tokens(raw, count) for raw in raws])

            return _clock(run)

        def openai_cold(messages: Conversation = h.messages) -> float:
            def run() -> int:
                counter = FramedCounter(TiktokenCounter(ctx.encoding), OPENAI)
                return sum(counter.counts(messages))

            return _clock(run)

        seed_tokens = sum(TiktokenCounter(ctx.encoding).counts(h.messages))
        assert seed_tokens == sum(len(encode(f"{r} {t}")) for r, t in pairs)
        framed = FramedCounter(TiktokenCounter(ctx.encoding), OPENAI).counts(h.messages)
        assert list(framed) == _openai_counts(h, ctx.encoding)
        for rule, floor, cold, tokens in (
            ("seed", seed_floor, seed_cold, seed_tokens),
            ("openai", openai_floor, openai_cold, sum(framed)),
        ):
            found = alternate(floor, cold, ctx.settings.rounds)
            data.append(
                {
                    "messages": size,
                    "rule": rule,
                    "tokens": tokens,
                    "floor_tokens_per_s": tokens / found["floor_s"],
                    **found,
                }
            )
    ctx.figures["counting"] = data


# --------------------------------------------------------------------------- 2. per call


def per_call(ctx: Context) -> None:
    s = ctx.settings
    data = []
    if ctx.langchain is not None:  # first calls pay for imports and pydantic set-up
        sample = ctx.lc(ctx.history(min(s.sizes)))
        for config in CONFIGS:
            ctx.langchain.trim(sample, 1_000, ctx.langchain.counter(config), config)
    for size in s.sizes:
        h = ctx.history(size)
        total = sum(_openai_counts(h, ctx.encoding)) + PRIMING
        budget = min(s.call_budget, total // 2)
        msgs = h.messages

        def cold(budget: int = budget, msgs: Conversation = msgs) -> object:
            return _pipeline(budget, ctx.encoding).apply(msgs)

        t_cold = _timed(cold, s.repeats)
        pipeline = _pipeline(budget, ctx.encoding)
        result = pipeline.apply(msgs)
        t_warm = _timed(functools.partial(pipeline.apply, msgs), max(5, s.repeats))
        item: dict[str, Any] = {
            "messages": size,
            "tokens": total,
            "budget": budget,
            "kept_messages": len(result.messages),
            "kept_tokens": pipeline.count(result.messages),
            "memrules_cold_s": t_cold,
            "memrules_warm_s": t_warm,
        }
        del result
        for config in CONFIGS:
            if ctx.langchain is None:
                item[config.key + "_s"] = None
                continue
            trim = functools.partial(
                ctx.langchain.trim, ctx.lc(h), budget, ctx.langchain.counter(config), config
            )
            item[config.key + "_s"] = _timed(trim, s.repeats, long=0.2)
        data.append(item)

    # A request that needs no compaction, on the biggest history, warm.
    biggest = ctx.history(max(s.sizes))
    total = sum(_openai_counts(biggest, ctx.encoding)) + PRIMING
    pipeline = _pipeline(total + 1_000, ctx.encoding)
    pipeline.apply(biggest.messages)
    t_none = _timed(lambda: pipeline.apply(biggest.messages), max(20, s.repeats))
    listed = list(biggest.messages)
    t_none_list = _timed(lambda: pipeline.apply(listed), max(20, s.repeats))
    ctx.figures["per_call"] = data
    ctx.figures["no_compaction"] = {
        "messages": len(biggest),
        "tokens": total,
        "budget": total + 1_000,
        "memrules_warm_s": t_none,
        "memrules_warm_list_s": t_none_list,
    }


def _rebuilt(messages: Conversation) -> Conversation:
    """New ``Message`` objects over the same parts."""
    return tuple(m.evolve() for m in messages)


def _rebuilt_deep(messages: Conversation) -> Conversation:
    """New ``Message`` and part objects over the same strings."""
    return tuple(m.evolve(parts=tuple(attrs.evolve(p) for p in m.parts)) for m in messages)


def fresh(ctx: Context) -> None:
    """One request of the biggest history whose messages are new objects
    every time (the previous request's were new too), after a warm-up: the
    time to build them (the caller's) and the time ``apply`` takes beyond
    that, in alternating rounds with a request on the very same tuple."""
    s = ctx.settings
    h = ctx.history(max(s.sizes))
    body = json.dumps(list(h.openai))
    variants: list[tuple[str, str, Callable[[], Conversation]]] = [
        ("same tuple", "the caller keeps the tuple", lambda: h.messages),
        ("new messages", "Message.evolve() of each: new objects, same parts", _bound(_rebuilt, h)),
        (
            "new messages and parts",
            "new Message and part objects over the same strings",
            _bound(_rebuilt_deep, h),
        ),
        (
            "converted from JSON",
            "from_openai(json.loads(body)), no memo: every string new too",
            lambda: from_openai(json.loads(body)),
        ),
    ]
    pipeline = _pipeline(s.call_budget, ctx.encoding)
    pipeline.apply(h.messages)
    out = []
    for name, what, make in variants:
        builds: list[float] = []
        applies: list[float] = []
        pipeline.apply(make())  # the previous request: objects of this kind
        for _ in range(max(1, s.rounds)):
            gc.collect()
            begin = time.perf_counter()
            messages = make()
            built = time.perf_counter()
            pipeline.apply(messages)
            applies.append(time.perf_counter() - built)
            builds.append(built - begin)
        out.append(
            {
                "name": name,
                "what": what,
                "build_s": statistics.median(builds),
                "apply_s": statistics.median(applies),
                "apply_min_s": min(applies),
                "apply_max_s": max(applies),
                "rounds": len(applies),
            }
        )
    ctx.figures["fresh"] = {"messages": len(h), "budget": s.call_budget, "variants": out}


def _bound(fn: Callable[[Conversation], Conversation], h: History) -> Callable[[], Conversation]:
    return lambda: fn(h.messages)


def hook(ctx: Context) -> None:
    """``MemoryPlugin.on_openai_request`` on a freshly parsed body of the
    biggest history (one conversation, warmed by a first request), against
    ``json.loads`` of the same body, in alternating rounds."""
    s = ctx.settings
    h = ctx.history(max(s.sizes))
    text = json.dumps({"model": "gpt-4o", "messages": list(h.openai)})
    config = MemoryConfig(
        encoder_name=ENCODER, max_tokens=s.call_budget, strategies=[trim_to_budget()]
    )
    plugin = MemoryPlugin(config, counter=TiktokenCounter(ctx.encoding))
    first = plugin.on_openai_request(json.loads(text), conversation_id="bench")
    assert first["messages"] == to_openai(from_openai(first["messages"]))

    def parse() -> float:
        return _clock(lambda: json.loads(text))

    def request() -> float:
        body = json.loads(text)
        return _clock(lambda: plugin.on_openai_request(body, conversation_id="bench"))

    found = alternate(parse, request, s.rounds)
    ctx.figures["hook"] = {
        "messages": len(h),
        "body_bytes": len(text.encode()),
        "budget": s.call_budget,
        "kept_messages": len(first["messages"]),
        **found,
    }


# --------------------------------------------------------------------------- 3. loops


def _floor_loop(history: History, budget: int, encoding: tiktoken.Encoding) -> float:
    """Count each message once as it arrives (OpenAI's framing on its JSON),
    keep running sums; keep the system prompt and the newest messages that
    fit, found by bisecting the sums; slice the window."""
    count = _short_counter(encoding)
    log: list[Any] = []
    cumulative = [0]
    gc.collect()
    begin = time.perf_counter()
    for raw in history.openai:
        log.append(raw)
        cumulative.append(cumulative[-1] + openai_message_tokens(raw, count))
        first = cumulative[1]
        cut = max(1, bisect.bisect_left(cumulative, cumulative[-1] + first + PRIMING - budget))
        window = [log[0], *log[cut:]]
        del window
    return time.perf_counter() - begin


def _list_loop(history: History, budget: int, encoding: tiktoken.Encoding) -> float:
    """``pipeline.apply(log)`` every turn on the list the caller appends to."""
    pipeline = _pipeline(budget, encoding)
    log: list[Message] = []
    gc.collect()
    begin = time.perf_counter()
    for m in history.messages:
        log.append(m)
        pipeline.apply(log)
    return time.perf_counter() - begin


def _from_openai_loop(history: History, budget: int, encoding: tiktoken.Encoding) -> float:
    """The caller keeps OpenAI dicts and converts the whole list every turn:
    ``pipeline.apply(from_openai(log, memo=...))``, the conversation's
    :class:`~memrules._adapters.conversion_cache.ConversionCache` its own."""
    pipeline = _pipeline(budget, encoding)
    memo = ConversionCache()
    log: list[Any] = []
    gc.collect()
    begin = time.perf_counter()
    for raw in history.openai:
        log.append(raw)
        pipeline.apply(from_openai(log, memo=memo))
    return time.perf_counter() - begin


LOOPS: Mapping[str, Callable[[History, int, tiktoken.Encoding], float]] = {
    "list": _list_loop,
    "from_openai": _from_openai_loop,
}
"""The memrules side of each loop, by path."""


def sample_turns(turns: int, sample: int | None) -> list[int]:
    """Turn numbers (1-based) to time: all, or ``sample`` evenly spread ones
    (the midpoints of equal strata, so mean × turns estimates the total)."""
    if sample is None or sample >= turns:
        return list(range(1, turns + 1))
    return sorted({min(turns, int((k + 0.5) * turns / sample) + 1) for k in range(sample)})


def _loop_langchain(
    lc: LangChain,
    messages: list[Any],
    budget: int,
    config: TrimConfig,
    turns: list[int],
    total: int,
) -> tuple[float, bool]:
    """Total seconds for the loop, and whether it is extrapolated."""
    counter = lc.counter(config)
    elapsed = 0.0
    gc.collect()
    for t in turns:
        window = messages[:t]
        begin = time.perf_counter()
        lc.trim(window, budget, counter, config)
        elapsed += time.perf_counter() - begin
    if len(turns) == total:
        return elapsed, False
    return elapsed / len(turns) * total, True


def loops(ctx: Context) -> None:
    s = ctx.settings
    data = []
    for turns in s.loop_turns:
        h = ctx.history(turns)
        for path, run in LOOPS.items():
            found = alternate(
                functools.partial(_floor_loop, h, s.loop_budget, ctx.encoding),
                functools.partial(run, h, s.loop_budget, ctx.encoding),
                s.loop_rounds,
            )
            data.append({"turns": turns, "path": path, "budget": s.loop_budget, **found})
    ctx.figures["loops"] = data

    turns = min(s.loop_turns)
    h = ctx.history(turns)
    mem = next(d for d in data if d["turns"] == turns and d["path"] == "list")
    lc_data: dict[str, Any] = {"turns": turns, "budget": s.loop_budget}
    for config in CONFIGS:
        if ctx.langchain is None:
            lc_data[config.key] = None
            continue
        sample = s.lc_turns if config.counter == "exact" else None
        chosen = sample_turns(turns, sample)
        t, extrapolated = _loop_langchain(
            ctx.langchain, ctx.lc(h), s.loop_budget, config, chosen, turns
        )
        lc_data[config.key] = {
            "total_s": t,
            "extrapolated": extrapolated,
            "turns_timed": len(chosen),
            "memrules_speedup": t / mem["memrules_s"],
            "vs_floor": t / mem["floor_s"],
        }
    ctx.figures["loop_langchain"] = lc_data


# --------------------------------------------------------------------------- 4. quality


@attrs.define
class _Tally:
    uses: list[float] = attrs.field(factory=list)
    over: int = 0
    worst: float = 0.0
    broken: int = 0
    windows_broken: int = 0
    system_only: int = 0

    def add(self, kept: int, budget: int, problems: int, system_only: bool) -> None:
        self.uses.append(kept / budget)
        if kept > budget:
            self.over += 1
            self.worst = max(self.worst, kept / budget - 1)
        self.broken += problems
        self.windows_broken += problems > 0
        self.system_only += system_only

    def summary(self) -> dict[str, Any]:
        n = len(self.uses)
        return {
            "windows": n,
            "over_budget": self.over,
            "worst_over": self.worst,
            "budget_use_median": statistics.median(self.uses) if n else None,
            "budget_use_min": min(self.uses) if n else None,
            "budget_use_max": max(self.uses) if n else None,
            "broken_pairs": self.broken,
            "windows_with_broken_pairs": self.windows_broken,
            "system_only_windows": self.system_only,
        }


QUALITY_CONFIGS = ("memrules", "memrules_seed")
"""memrules' windows with the default rule, and unframed (``count_rule: seed``)."""


def quality(ctx: Context) -> None:
    """Windows at many request points: each counted by OpenAI's framing on
    the JSON that would be sent (the history's own dicts, by index), for
    everyone alike."""
    s = ctx.settings
    names = [*QUALITY_CONFIGS, *(c.key for c in CONFIGS)]
    tallies = {(b, n): _Tally() for b in s.quality_budgets for n in names}
    pick = random.Random(s.seed)
    for k in range(s.quality_histories):
        h = ctx.history(s.quality_size, seed=s.seed + 1 + k)
        counts = _openai_counts(h, ctx.encoding)
        cumulative = [0]
        for c in counts:
            cumulative.append(cumulative[-1] + c)
        points = request_points(h)
        lc_msgs = ctx.lc(h) if ctx.langchain is not None else []
        index_of = {id(m): i for i, m in enumerate(lc_msgs)}
        lc_counters = (
            {c.key: ctx.langchain.counter(c, memo=True) for c in CONFIGS}
            if ctx.langchain is not None
            else {}
        )
        for budget in s.quality_budgets:
            pipelines = {
                "memrules": _pipeline(budget, ctx.encoding),
                "memrules_seed": _pipeline(budget, ctx.encoding, rule="seed"),
            }
            over = [n for n in points if cumulative[n] + PRIMING > budget]
            cuts = sorted(pick.sample(over, min(s.quality_cuts, len(over))))
            for n in cuts:
                before = h.messages[:n]
                for name, pipeline in pipelines.items():
                    result = pipeline.apply(before)
                    kept = [i for i in result.report.origin if i is not None]
                    assert len(kept) == len(result.messages)  # a window: nothing new
                    tallies[budget, name].add(
                        sum(counts[i] for i in kept) + PRIMING,
                        budget,
                        len(pairing_problems(before, result.messages)),
                        len(kept) == 1 and before[kept[0]].role == "system",
                    )
                if ctx.langchain is None:
                    continue
                for config in CONFIGS:
                    out = ctx.langchain.trim(lc_msgs[:n], budget, lc_counters[config.key], config)
                    idx = [index_of[id(m)] for m in out]
                    mapped = tuple(h.messages[i] for i in idx)
                    tallies[budget, config.key].add(
                        sum(counts[i] for i in idx) + PRIMING,
                        budget,
                        len(pairing_problems(before, mapped)),
                        len(mapped) == 1 and mapped[0].role == "system",
                    )
    ctx.figures["quality"] = [
        {"budget": budget, "config": name, **tallies[budget, name].summary()}
        for budget in s.quality_budgets
        for name in names
        if name in QUALITY_CONFIGS or ctx.langchain is not None
    ]


# --------------------------------------------------------------------------- 5. memory


def memory(ctx: Context) -> None:
    size = max(ctx.settings.sizes)
    h = ctx.history(size)
    total = sum(_openai_counts(h, ctx.encoding)) + PRIMING
    budget = min(ctx.settings.call_budget, total // 2)
    pipeline = _pipeline(budget, ctx.encoding)
    peaks = []
    for _label in ("cold", "warm"):
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            result = pipeline.apply(h.messages)
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
        del result
        peaks.append(peak)
    text = h.text_bytes
    ctx.figures["memory"] = {
        "messages": size,
        "budget": budget,
        "text_bytes": text,
        "peak_cold_bytes": peaks[0],
        "peak_warm_bytes": peaks[1],
        "ratio_cold": peaks[0] / text,
        "ratio_warm": peaks[1] / text,
    }


SECTIONS: tuple[tuple[str, Callable[[Context], None]], ...] = (
    ("histories", histories),
    ("counting", counting),
    ("per_call", per_call),
    ("fresh", fresh),
    ("hook", hook),
    ("loops", loops),
    ("quality", quality),
    ("memory", memory),
)
"""The measurements in the order they run, by the section that renders them."""
