"""The benchmark: memrules against a plain tiktoken loop and LangChain.

``main(argv)`` runs five measurements on seeded agent histories (see
:mod:`memrules._bench.histories`) and prints them as tables, then the issue's
targets, met or missed:

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
is short. Nothing here is a pass/fail test: it prints figures.
"""

from __future__ import annotations

import argparse
import bisect
import functools
import gc
import json
import platform
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import attrs
import tiktoken

from memrules._bench._langchain import CONFIGS, LangChain, TrimConfig, load_langchain
from memrules._bench.histories import History, agent_history, request_points
from memrules._invariants import pairing_problems
from memrules._messages import Conversation, Message
from memrules._pipeline import Pipeline, load_pipeline
from memrules._tokens import TiktokenCounter, load_encoding

__all__ = ["Settings", "main", "run"]

ENCODER = "o200k_base"

# The targets.
COLD_RATIO_MAX = 1.3
NO_COMPACTION_MS_MAX = 5.0
LOOP_VS_LC_MIN = 300.0
LOOP_VS_FLOOR_MAX = 5.0
BUDGET_USE_MIN = 0.85
MEMORY_RATIO_MAX = 2.0


@attrs.frozen(kw_only=True)
class Settings:
    """What to run. :meth:`quick` is a tiny configuration for tests."""

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
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        best = min(best, elapsed)
        if elapsed > long:
            break
    return best


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    ms = seconds * 1000
    if ms >= 10_000:
        return f"{seconds:,.1f} s"
    if ms >= 100:
        return f"{ms:,.0f} ms"
    if ms >= 1:
        return f"{ms:.2f} ms"
    return f"{ms * 1000:.0f} µs"


def _ratio(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}×" if x >= 100 else f"{x:.2f}×"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:.1f}%"


def _table(out: TextIO, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(
        h.ljust(w) if i == 0 else h.rjust(w)
        for i, (h, w) in enumerate(zip(header, widths, strict=True))
    )
    out.write(line + "\n" + "-" * len(line) + "\n")
    for row in rows:
        out.write(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
            + "\n"
        )
    out.write("\n")
    out.flush()


def _section(out: TextIO, title: str) -> None:
    out.write(f"== {title}\n")
    out.flush()


@attrs.define
class _Context:
    settings: Settings
    encoding: tiktoken.Encoding
    langchain: LangChain | None
    lc_status: str
    out: TextIO
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


def _exact_total(history: History, encoding: tiktoken.Encoding) -> list[int]:
    encode = encoding.encode_ordinary
    return [len(encode(f"{m.role} {m.countable_text}")) for m in history.messages]


# --------------------------------------------------------------------------- 0. data


def _describe(ctx: _Context) -> None:
    _section(ctx.out, f"Histories (seed {ctx.settings.seed}, {ENCODER})")
    rows = []
    data = []
    for size in ctx.settings.sizes:
        h = ctx.history(size)
        counts = _exact_total(h, ctx.encoding)
        msgs = h.messages
        calls = sum(len(m.call_ids) for m in msgs)
        parallel = sum(1 for m in msgs if len(m.call_ids) > 1)
        reads = sum(1 for m in msgs for p in m.parts if getattr(p, "name", None) == "read_file")
        cjk = sum(1 for m in msgs if _has_cjk(m.countable_text))
        item = {
            "messages": size,
            "tokens": sum(counts),
            "text_bytes": h.text_bytes,
            "tool_calls": calls,
            "parallel_call_messages": parallel,
            "file_reads": reads,
            "cjk_messages": cjk,
            "largest_message_tokens": max(counts),
        }
        data.append(item)
        rows.append(
            [
                f"{size:,}",
                f"{sum(counts):,}",
                f"{sum(counts) / size:,.0f}",
                f"{h.text_bytes / 1e6:.1f} MB",
                f"{calls:,}",
                f"{parallel:,}",
                f"{reads:,}",
                f"{cjk:,}",
            ]
        )
    _table(
        ctx.out,
        ["messages", "tokens", "tok/msg", "text", "tool calls", "parallel", "file reads", "CJK"],
        rows,
    )
    ctx.figures["histories"] = data


def _has_cjk(text: str) -> bool:
    return any("\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff" for c in text)


# --------------------------------------------------------------------------- 1. counting


def _counting(ctx: _Context) -> None:
    _section(ctx.out, "1. Counting a whole history (cold)")
    encode = ctx.encoding.encode_ordinary
    rows = []
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
        ratio = t_cold / t_floor
        data.append(
            {
                "messages": size,
                "tokens": tokens,
                "floor_s": t_floor,
                "memrules_cold_s": t_cold,
                "ratio": ratio,
                "floor_tokens_per_s": tokens / t_floor,
            }
        )
        rows.append(
            [
                f"{size:,}",
                f"{tokens:,}",
                _ms(t_floor),
                f"{tokens / t_floor / 1e6:.1f} M/s",
                _ms(t_cold),
                _ratio(ratio),
            ]
        )
    _table(
        ctx.out,
        ["messages", "tokens", "tiktoken floor", "floor rate", "memrules cold", "ratio"],
        rows,
    )
    ctx.figures["counting"] = data


# --------------------------------------------------------------------------- 2. per call


def _per_call(ctx: _Context) -> None:
    _section(ctx.out, "2. One request (trim to a token budget)")
    s = ctx.settings
    rows = []
    data = []
    lc_cols = [c.label for c in CONFIGS]
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
        row = [
            f"{size:,}",
            f"{budget:,}",
            f"{len(result.messages):,}",
            _ms(t_cold),
            _ms(t_warm),
        ]
        for config in CONFIGS:
            if ctx.langchain is None:
                row.append(ctx.lc_status)
                item[config.key + "_s"] = None
                continue
            trim = functools.partial(
                ctx.langchain.trim, ctx.lc(h), budget, ctx.langchain.counter(config), config
            )
            t = _timed(trim, s.repeats, long=0.2)
            item[config.key + "_s"] = t
            row.append(_ms(t))
        data.append(item)
        rows.append(row)

    # A request that needs no compaction, on the biggest history, warm.
    biggest = ctx.history(max(s.sizes))
    del result
    total = sum(_exact_total(biggest, ctx.encoding))
    pipeline = _pipeline(total + 1_000, ctx.encoding)
    pipeline.apply(biggest.messages)
    t_none = _timed(lambda: pipeline.apply(biggest.messages), max(20, s.repeats))
    listed = list(biggest.messages)
    t_none_list = _timed(lambda: pipeline.apply(listed), max(20, s.repeats))
    no_row = [f"{len(biggest):,} *", f"{total + 1_000:,}", f"{len(biggest):,}", "", _ms(t_none)]
    no_row += [""] * len(CONFIGS)
    rows.append(no_row)
    _table(
        ctx.out,
        ["messages", "budget", "kept", "memrules cold", "memrules warm", *lc_cols],
        rows,
    )
    ctx.out.write(
        f"* no compaction needed (budget above the total): {_ms(t_none)} on a tuple, "
        f"{_ms(t_none_list)} on a list (copied to a tuple)\n\n"
    )
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
    start = time.perf_counter()
    for m in history:
        log.append(m)
        pipeline.apply(log)
    return time.perf_counter() - start


def _loop_floor(history: Conversation, budget: int, encoding: tiktoken.Encoding) -> float:
    """Count each message once as it arrives; keep the system prompt and the
    newest messages that fit, found by bisecting cumulative counts."""
    encode = encoding.encode_ordinary
    log: list[Message] = []
    cumulative = [0]
    gc.collect()
    start = time.perf_counter()
    for m in history:
        log.append(m)
        cumulative.append(cumulative[-1] + len(encode(f"{m.role} {m.countable_text}")))
        first = cumulative[1]
        cut = max(1, bisect.bisect_left(cumulative, cumulative[-1] + first - budget))
        window = [log[0], *log[cut:]]
        del window
    return time.perf_counter() - start


def _sample_turns(turns: int, sample: int | None) -> list[int]:
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
        start = time.perf_counter()
        lc.trim(window, budget, counter, config)
        elapsed += time.perf_counter() - start
    if len(turns) == total:
        return elapsed, False
    return elapsed / len(turns) * total, True


def _loop(ctx: _Context) -> None:
    s = ctx.settings
    h = ctx.history(s.loop_turns)
    _section(
        ctx.out,
        f"3. Growing loop: {s.loop_turns:,} turns, one message a turn, trim every turn, "
        f"budget {s.loop_budget:,} tokens",
    )
    msgs = h.messages
    t_mem = min(_loop_memrules(msgs, s.loop_budget, ctx.encoding) for _ in range(s.repeats))
    t_floor = min(_loop_floor(msgs, s.loop_budget, ctx.encoding) for _ in range(s.repeats))
    turns = s.loop_turns
    rows = [
        ["count-once floor", _ms(t_floor), _ms(t_floor / turns), "1.00×", "", ""],
        ["memrules", _ms(t_mem), _ms(t_mem / turns), _ratio(t_mem / t_floor), "1.00×", ""],
    ]
    data: dict[str, Any] = {
        "turns": turns,
        "budget": s.loop_budget,
        "floor_s": t_floor,
        "memrules_s": t_mem,
        "memrules_vs_floor": t_mem / t_floor,
    }
    for config in CONFIGS:
        if ctx.langchain is None:
            rows.append([config.label, ctx.lc_status, "", "", "", ""])
            data[config.key] = None
            continue
        sample = s.lc_turns if config.counter == "exact" else None
        chosen = _sample_turns(turns, sample)
        lc_msgs = ctx.lc(h)
        t, extrapolated = _loop_langchain(
            ctx.langchain, lc_msgs, s.loop_budget, config, chosen, turns
        )
        note = f"extrapolated from {len(chosen)} of {turns} turns" if extrapolated else ""
        rows.append(
            [
                config.label,
                _ms(t),
                _ms(t / turns),
                _ratio(t / t_floor),
                _ratio(t / t_mem),
                note,
            ]
        )
        data[config.key] = {
            "total_s": t,
            "extrapolated": extrapolated,
            "turns_timed": len(chosen),
            "memrules_speedup": t / t_mem,
        }
    _table(
        ctx.out,
        ["", "total", "per turn", "vs floor", "vs memrules", "note"],
        rows,
    )
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


def _quality(ctx: _Context) -> None:
    s = ctx.settings
    _section(
        ctx.out,
        f"4. Quality: {s.quality_histories} histories of {s.quality_size:,} messages "
        f"(seeds {s.seed + 1}…{s.seed + s.quality_histories}), {s.quality_cuts} request points "
        "each over the budget",
    )
    names = ["memrules", *(c.key for c in CONFIGS)]
    labels = {"memrules": "memrules trim_to_budget", **{c.key: c.label for c in CONFIGS}}
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
    rows = []
    data = []
    for budget in s.quality_budgets:
        for name in names:
            if name != "memrules" and ctx.langchain is None:
                rows.append([f"{budget:,}", labels[name], ctx.lc_status, "", "", "", "", ""])
                continue
            summary = tallies[budget, name].summary()
            data.append({"budget": budget, "config": name, **summary})
            n = summary["windows"]
            rows.append(
                [
                    f"{budget:,}",
                    labels[name],
                    _pct(summary["budget_use_median"]),
                    _pct(summary["budget_use_min"]),
                    _pct(summary["budget_use_max"]),
                    f"{summary['broken_pairs']:,}",
                    f"{summary['windows_with_broken_pairs']}/{n}",
                    f"{summary['system_only_windows']}/{n}",
                ]
            )
    _table(
        ctx.out,
        [
            "budget",
            "configuration",
            "use median",
            "use min",
            "use max",
            "broken pairs",
            "windows broken",
            "system only",
        ],
        rows,
    )
    ctx.out.write(
        "use = tokens kept ÷ budget, counted exactly (o200k_base) for everyone; "
        "broken pair = a result whose call is gone, or a call whose result is gone.\n\n"
    )
    ctx.figures["quality"] = data


# --------------------------------------------------------------------------- 5. memory


def _memory(ctx: _Context) -> None:
    size = max(ctx.settings.sizes)
    h = ctx.history(size)
    budget = min(ctx.settings.call_budget, sum(_exact_total(h, ctx.encoding)) // 2)
    _section(ctx.out, f"5. Peak memory of one apply, {size:,} messages, budget {budget:,}")
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
    rows = [
        [
            "cold (fresh counter)",
            f"{peaks[0] / 1e6:.2f} MB",
            f"{text / 1e6:.2f} MB",
            _ratio(peaks[0] / text),
        ],
        ["warm", f"{peaks[1] / 1e6:.2f} MB", f"{text / 1e6:.2f} MB", _ratio(peaks[1] / text)],
    ]
    _table(ctx.out, ["apply", "peak", "history text", "ratio"], rows)
    ctx.figures["memory"] = {
        "messages": size,
        "text_bytes": text,
        "peak_cold_bytes": peaks[0],
        "peak_warm_bytes": peaks[1],
        "ratio_cold": peaks[0] / text,
        "ratio_warm": peaks[1] / text,
    }


# --------------------------------------------------------------------------- targets


def _targets(ctx: _Context) -> None:
    f = ctx.figures
    s = ctx.settings
    rows: list[list[str]] = []
    verdicts: dict[str, bool | None] = {}

    def add(key: str, what: str, figure: str, target: str, ok: bool | None) -> None:
        verdicts[key] = ok
        rows.append([what, figure, target, "—" if ok is None else "met" if ok else "MISSED"])

    for item in f.get("counting", []):
        add(
            f"cold_counting_{item['messages']}",
            f"cold counting, {item['messages']:,} msgs",
            _ratio(item["ratio"]) + " floor",
            f"≤ {COLD_RATIO_MAX}×",
            item["ratio"] <= COLD_RATIO_MAX,
        )
    none = f.get("no_compaction")
    if none:
        ms = none["memrules_warm_s"] * 1000
        add(
            "no_compaction",
            f"no-compaction request, {none['messages']:,} msgs",
            f"{ms:.2f} ms",
            f"< {NO_COMPACTION_MS_MAX:g} ms",
            ms < NO_COMPACTION_MS_MAX,
        )
    loop = f.get("loop")
    if loop:
        exact = [loop[k] for k in ("lc_exact", "lc_exact_human") if loop.get(k)]
        if exact:
            speedup = min(e["memrules_speedup"] for e in exact)
            extra = " (extrapolated)" if any(e["extrapolated"] for e in exact) else ""
            add(
                "loop_vs_langchain",
                f"loop: memrules speed-up over LC exact (lower of two){extra}",
                _ratio(speedup),
                f"≥ {LOOP_VS_LC_MIN:g}×",
                speedup >= LOOP_VS_LC_MIN,
            )
        else:
            add("loop_vs_langchain", "loop: memrules vs LC exact", ctx.lc_status, "≥ 300×", None)
        add(
            "loop_vs_floor",
            "loop: memrules vs count-once floor",
            _ratio(loop["memrules_vs_floor"]),
            f"≤ {LOOP_VS_FLOOR_MAX:g}×",
            loop["memrules_vs_floor"] <= LOOP_VS_FLOOR_MAX,
        )
    for item in f.get("quality", []):
        if item["config"] != "memrules":
            continue
        b = item["budget"]
        add(
            f"broken_pairs_{b}",
            f"memrules broken tool pairs, budget {b:,}",
            str(item["broken_pairs"]),
            "0",
            item["broken_pairs"] == 0,
        )
        add(
            f"budget_use_{b}",
            f"memrules median budget use, budget {b:,}",
            _pct(item["budget_use_median"]),
            f"≥ {BUDGET_USE_MIN:.0%}",
            item["budget_use_median"] is not None and item["budget_use_median"] >= BUDGET_USE_MIN,
        )
    mem = f.get("memory")
    if mem:
        add(
            "memory",
            f"peak memory, {mem['messages']:,} msgs (cold apply)",
            _ratio(mem["ratio_cold"]) + " text",
            f"≤ {MEMORY_RATIO_MAX:g}×",
            mem["ratio_cold"] <= MEMORY_RATIO_MAX,
        )
    title = "Targets (issue 4)"
    if s.quick:
        title += " — quick run: tiny sizes, verdicts are not meaningful"
    _section(ctx.out, title)
    _table(ctx.out, ["target", "figure", "goal", "verdict"], rows)
    f["targets"] = verdicts


# --------------------------------------------------------------------------- entry points


def run(settings: Settings, out: TextIO | None = None) -> dict[str, Any]:
    """Run the benchmark, print its tables to ``out`` (stdout), and return
    every figure as JSON-ready data."""
    out = sys.stdout if out is None else out
    encoding = load_encoding(ENCODER)
    langchain = load_langchain(encoding) if settings.langchain else None
    status = "skipped" if not settings.langchain else "not installed"
    ctx = _Context(
        settings=settings, encoding=encoding, langchain=langchain, lc_status=status, out=out
    )
    started = time.perf_counter()
    lc_line = f"langchain-core {langchain.version}" if langchain else f"LangChain {status}"
    out.write(
        f"memrules bench — Python {platform.python_version()}, tiktoken "
        f"{getattr(tiktoken, '__version__', '?')}, {lc_line}, {platform.machine()}\n\n"
    )
    _describe(ctx)
    _counting(ctx)
    _per_call(ctx)
    _loop(ctx)
    _quality(ctx)
    _memory(ctx)
    _targets(ctx)
    elapsed = time.perf_counter() - started
    out.write(f"benchmark took {elapsed:,.0f} s\n")
    ctx.figures["settings"] = attrs.asdict(settings)
    ctx.figures["langchain"] = langchain.version if langchain else status
    ctx.figures["elapsed_s"] = elapsed
    return ctx.figures


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memrules bench",
        description="Speed, budget use and memory of memrules against a plain tiktoken loop "
        "and LangChain's trim_messages, on seeded agent histories.",
    )
    p.add_argument("--quick", action="store_true", help="a tiny configuration (seconds)")
    p.add_argument("--sizes", type=int, nargs="+", metavar="N", help="history sizes in messages")
    p.add_argument("--seed", type=int, default=0, help="the histories' seed (default 0)")
    p.add_argument("--turns", type=int, metavar="N", help="growing-loop turns (default 1000)")
    p.add_argument(
        "--lc-turns",
        type=int,
        metavar="N",
        help="time LangChain's exact counter on N evenly spread turns of the loop and "
        "extrapolate (default 300; N >= --turns times every turn, about 8 minutes more)",
    )
    p.add_argument("--json", type=Path, metavar="FILE", help="write every figure as JSON")
    p.add_argument(
        "--skip-langchain", action="store_true", help="leave LangChain out even if installed"
    )
    return p


def _positive(parser: argparse.ArgumentParser, name: str, value: int | None) -> None:
    if value is not None and value < 2:
        parser.error(f"{name}={value!r} must be at least 2")


def main(argv: list[str] | None = None) -> int:
    """``memrules bench``: run the benchmark and print the tables."""
    parser = _parser()
    args = parser.parse_args(argv)
    for size in args.sizes or ():
        _positive(parser, "--sizes", size)
    _positive(parser, "--turns", args.turns)
    _positive(parser, "--lc-turns", args.lc_turns)
    changes: dict[str, Any] = {"seed": args.seed, "langchain": not args.skip_langchain}
    if args.sizes:
        changes["sizes"] = tuple(sorted(set(args.sizes)))
    if args.turns:
        changes["loop_turns"] = args.turns
    if args.lc_turns:
        changes["lc_turns"] = args.lc_turns
    settings = Settings.quick_settings(**changes) if args.quick else Settings(**changes)
    figures = run(settings)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n", encoding="utf-8")
    return 0
