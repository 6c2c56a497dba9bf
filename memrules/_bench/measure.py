"""The benchmark's measurements: memrules against a plain tiktoken loop and
LangChain, on seeded agent histories (:mod:`memrules._bench.histories`).

Each measurement stores its figures, JSON-ready, under its key of
:attr:`Context.figures`; :mod:`memrules._bench.render` turns them into
tables and :mod:`memrules._bench.targets` judges them. Nothing here prints.

1. **Counting.** The tiktoken floor (one plain ``encode_ordinary`` loop over
   the texts memrules counts) and cold counting with a fresh
   :class:`~memrules._tokens.TiktokenCounter`.
2. **Per call.** One ``Pipeline.apply`` with a token budget
   (``trim_to_budget``), cold and warm, and a warm request that needs no
   compaction; LangChain's ``trim_messages`` on the same messages.
3. **Growing loop.** An agent log that grows a message a turn and is trimmed
   every turn: memrules, the count-once floor and ``trim_messages``.
4. **Quality.** Budget use (tokens kept ÷ budget, by the same exact counter
   for everyone) and broken tool pairs over many histories and cut points.
5. **Memory.** tracemalloc's peak during ``apply`` on the biggest history.

Times are wall clock (``perf_counter``), the best of a few runs where a run
is short. LangChain (the ``bench`` extra) is imported only here, by name,
when a run asks for it.
"""

from __future__ import annotations

import bisect
import functools
import gc
import platform
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import tiktoken

from memrules._bench._langchain import CONFIGS, LangChain, TrimConfig, load_langchain
from memrules._bench.histories import History, agent_history, request_points
from memrules._invariants import pairing_problems
from memrules._messages import Conversation, Message
from memrules._pipeline import Pipeline, load_pipeline
from memrules._tokens import TiktokenCounter, load_encoding

__all__ = ["ENCODER", "SECTIONS", "Context", "Settings", "start"]

ENCODER = "o200k_base"


@attrs.frozen(kw_only=True)
class Settings:
    """What to run. :meth:`quick_settings` is a tiny configuration for tests."""

    sizes: tuple[int, ...] = (100, 1_000, 10_000)
    seed: int = 0
    call_budget: int = 100_000
    loop_turns: int = 1_000
    loop_budget: int = 100_000
    lc_turns: int | None = 300  # None: every turn
    quality_budgets: tuple[int, ...] = (32_000, 100_000)
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
            loop_turns=60,
            loop_budget=8_000,
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
        "langchain_core": langchain.version if langchain else None,
        "langchain_status": "installed" if langchain else status,
    }
    return ctx


# --------------------------------------------------------------------------- helpers


def _pipeline(budget: int, encoding: tiktoken.Encoding) -> Pipeline:
    """``max_tokens: budget`` and ``trim_to_budget``, with a fresh counter."""
    yaml = f"encoder_name: {ENCODER}\nmax_tokens: {budget}\nstrategies:\n  - type: trim_to_budget\n"
    return load_pipeline(yaml, counter=TiktokenCounter(encoding))


def _timed(fn: Callable[[], object], repeats: int, *, long: float = 0.5) -> float:
    """Seconds of the fastest of ``repeats`` runs (one run when it takes
    longer than ``long`` seconds)."""
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


def _exact_total(history: History, encoding: tiktoken.Encoding) -> list[int]:
    encode = encoding.encode_ordinary
    return [len(encode(f"{m.role} {m.countable_text}")) for m in history.messages]


def _has_cjk(text: str) -> bool:
    return any("\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff" for c in text)


# --------------------------------------------------------------------------- 0. data


def histories(ctx: Context) -> None:
    data = []
    for size in ctx.settings.sizes:
        h = ctx.history(size)
        counts = _exact_total(h, ctx.encoding)
        msgs = h.messages
        data.append(
            {
                "messages": size,
                "tokens": sum(counts),
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

        def floor(pairs: Sequence[tuple[str, str]] = pairs) -> int:
            return sum([len(encode(f"{role} {text}")) for role, text in pairs])

        def cold(messages: Conversation = h.messages) -> int:
            counter = TiktokenCounter(ctx.encoding)
            return sum(map(counter.count, messages))

        assert floor() == cold()
        t_floor = _timed(floor, ctx.settings.repeats)
        t_cold = _timed(cold, ctx.settings.repeats)
        tokens = floor()
        data.append(
            {
                "messages": size,
                "tokens": tokens,
                "floor_s": t_floor,
                "memrules_cold_s": t_cold,
                "ratio": t_cold / t_floor,
                "floor_tokens_per_s": tokens / t_floor,
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
        total = sum(_exact_total(h, ctx.encoding))
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
    total = sum(_exact_total(biggest, ctx.encoding))
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


# --------------------------------------------------------------------------- 3. growing loop


def _loop_memrules(history: Conversation, budget: int, encoding: tiktoken.Encoding) -> float:
    pipeline = _pipeline(budget, encoding)
    log: list[Message] = []
    gc.collect()
    begin = time.perf_counter()
    for m in history:
        log.append(m)
        pipeline.apply(log)
    return time.perf_counter() - begin


def _loop_floor(history: Conversation, budget: int, encoding: tiktoken.Encoding) -> float:
    """Count each message once as it arrives; keep the system prompt and the
    newest messages that fit, found by bisecting cumulative counts."""
    encode = encoding.encode_ordinary
    log: list[Message] = []
    cumulative = [0]
    gc.collect()
    begin = time.perf_counter()
    for m in history:
        log.append(m)
        cumulative.append(cumulative[-1] + len(encode(f"{m.role} {m.countable_text}")))
        first = cumulative[1]
        cut = max(1, bisect.bisect_left(cumulative, cumulative[-1] + first - budget))
        window = [log[0], *log[cut:]]
        del window
    return time.perf_counter() - begin


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


def loop(ctx: Context) -> None:
    s = ctx.settings
    h = ctx.history(s.loop_turns)
    msgs = h.messages
    t_mem = min(_loop_memrules(msgs, s.loop_budget, ctx.encoding) for _ in range(s.repeats))
    t_floor = min(_loop_floor(msgs, s.loop_budget, ctx.encoding) for _ in range(s.repeats))
    turns = s.loop_turns
    data: dict[str, Any] = {
        "turns": turns,
        "budget": s.loop_budget,
        "floor_s": t_floor,
        "memrules_s": t_mem,
        "memrules_vs_floor": t_mem / t_floor,
    }
    for config in CONFIGS:
        if ctx.langchain is None:
            data[config.key] = None
            continue
        sample = s.lc_turns if config.counter == "exact" else None
        chosen = sample_turns(turns, sample)
        t, extrapolated = _loop_langchain(
            ctx.langchain, ctx.lc(h), s.loop_budget, config, chosen, turns
        )
        data[config.key] = {
            "total_s": t,
            "extrapolated": extrapolated,
            "turns_timed": len(chosen),
            "memrules_speedup": t / t_mem,
        }
    ctx.figures["loop"] = data


# --------------------------------------------------------------------------- 4. quality


@attrs.define
class _Tally:
    uses: list[float] = attrs.field(factory=list)
    broken: int = 0
    windows_broken: int = 0
    system_only: int = 0

    def add(self, kept: int, budget: int, problems: int, system_only: bool) -> None:
        self.uses.append(kept / budget)
        self.broken += problems
        self.windows_broken += problems > 0
        self.system_only += system_only

    def summary(self) -> dict[str, Any]:
        n = len(self.uses)
        return {
            "windows": n,
            "budget_use_median": statistics.median(self.uses) if n else None,
            "budget_use_min": min(self.uses) if n else None,
            "budget_use_max": max(self.uses) if n else None,
            "broken_pairs": self.broken,
            "windows_with_broken_pairs": self.windows_broken,
            "system_only_windows": self.system_only,
        }


def quality(ctx: Context) -> None:
    s = ctx.settings
    names = ["memrules", *(c.key for c in CONFIGS)]
    tallies = {(b, n): _Tally() for b in s.quality_budgets for n in names}
    pick = random.Random(s.seed)
    for k in range(s.quality_histories):
        h = ctx.history(s.quality_size, seed=s.seed + 1 + k)
        counts = _exact_total(h, ctx.encoding)
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
            pipeline = _pipeline(budget, ctx.encoding)
            over = [n for n in points if cumulative[n] > budget]
            cuts = sorted(pick.sample(over, min(s.quality_cuts, len(over))))
            for n in cuts:
                before = h.messages[:n]
                after = pipeline.apply(before).messages
                kept = sum(map(pipeline.counter.count, after))
                tallies[budget, "memrules"].add(
                    kept,
                    budget,
                    len(pairing_problems(before, after)),
                    len(after) == 1 and after[0].role == "system",
                )
                if ctx.langchain is None:
                    continue
                for config in CONFIGS:
                    out = ctx.langchain.trim(lc_msgs[:n], budget, lc_counters[config.key], config)
                    idx = [index_of[id(m)] for m in out]
                    mapped = tuple(h.messages[i] for i in idx)
                    tallies[budget, config.key].add(
                        sum(counts[i] for i in idx),
                        budget,
                        len(pairing_problems(before, mapped)),
                        len(mapped) == 1 and mapped[0].role == "system",
                    )
    ctx.figures["quality"] = [
        {"budget": budget, "config": name, **tallies[budget, name].summary()}
        for budget in s.quality_budgets
        for name in names
        if name == "memrules" or ctx.langchain is not None
    ]


# --------------------------------------------------------------------------- 5. memory


def memory(ctx: Context) -> None:
    size = max(ctx.settings.sizes)
    h = ctx.history(size)
    budget = min(ctx.settings.call_budget, sum(_exact_total(h, ctx.encoding)) // 2)
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
    ("loop", loop),
    ("quality", quality),
    ("memory", memory),
)
"""The measurements in the order they run, by the section that renders them."""
