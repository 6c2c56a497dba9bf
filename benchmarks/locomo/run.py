"""Does recall find the turn that holds the answer, on real multi-session
dialogue? LoCoMo (or LongMemEval) through memrules' public API, against a
BM25 baseline written here.

``python benchmarks/locomo/run.py PATH`` (needs ``pip install -e
'.[local-embed,milvus,qdrant]'``; PATH is LoCoMo's ``data/locomo10.json``
or a part of it, see this folder's README):

1. reads the file and normalises its evidence ids (printing how many were
   split, repaired or dropped);
2. for each store backend, remembers every turn of each conversation
   (``Pipeline.remember``, scope: conversation and user = the sample id)
   and recalls for each question within its conversation, in each search
   mode (``Pipeline.recall(mode=...)``); the remember throughput and the
   per-query recall latency are timed;
3. ranks the same turns by Okapi BM25 (below: stdlib, stated tokenizer);
4. with ``--route``, the memory route's path on the same data: each pair of
   consecutive turns goes through ``MemoryPlugin.on_response`` (auto-store,
   ``Q: …\\nA: …``), each question through ``MemoryPlugin.handle``, and the
   memories the gate injected are what is scored;
5. prints any@1/5/10 (a question is found at k when any of its evidence
   turns is among the first k turns recalled from its conversation), over
   LoCoMo's categories 1–4 (``--categories``) and per category, skipping
   questions with no valid evidence turn, with a paired bootstrap interval
   (seeded) of each system's difference from BM25.

``--json FILE`` writes every figure and every question's rank.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.locomo.load import (  # noqa: E402
    Question,
    Sample,
    Turn,
    load,
    parse_locomo_date,
)
from memrules.seams._lexical import STOP_WORDS as LEXICAL_STOP_WORDS  # noqa: E402

KS = (1, 5, 10)
MODES = ("hybrid", "dense", "lexical")
BACKENDS = ("milvus", "qdrant")
TENANT = "locomo"

# --- BM25 --------------------------------------------------------------------------------

# NLTK's classic English stop-word list (127 words), the same standard list
# the library's lexical search leaves out: one copy, in memrules.seams._lexical.
STOP_WORDS = LEXICAL_STOP_WORDS
_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """The BM25 tokenizer: lower-cased ``\\w+`` runs (Unicode letters,
    digits, underscore), NLTK's English stop words removed."""
    return [t for t in _WORD.findall(text.lower()) if t not in STOP_WORDS]


class BM25:
    """Okapi BM25 over one conversation's turns: k1 = 1.5, b = 0.75, and
    Lucene's non-negative IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""

    def __init__(
        self,
        documents: Sequence[str],
        k1: float = 1.5,
        b: float = 0.75,
        tokenizer: Callable[[str], list[str]] = tokenize,
    ) -> None:
        self.k1, self.b, self.tokenizer = k1, b, tokenizer
        self.docs = [collections.Counter(tokenizer(d)) for d in documents]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = (sum(self.lengths) / len(self.docs)) if self.docs else 0.0
        df: collections.Counter[str] = collections.Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def rank(self, query: str, k: int) -> list[int]:
        """The indices of the ``k`` best documents with a positive score,
        best first (ties: the earlier document first)."""
        terms = [t for t in self.tokenizer(query) if t in self.idf]
        scores: list[tuple[float, int]] = []
        for i, doc in enumerate(self.docs):
            score = 0.0
            norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / (self.avg or 1.0))
            for t in terms:
                f = doc.get(t, 0)
                if f:
                    score += self.idf[t] * f * (self.k1 + 1) / (f + norm)
            if score > 0:
                scores.append((-score, i))
        scores.sort()
        return [i for _, i in scores[:k]]


def indexed_text(turn: Turn) -> str:
    """What BM25 indexes for a turn: ``<speaker>: <text>``, as memrules
    indexes a message with a name."""
    return f"{turn.speaker}: {turn.text}"


# --- scoring -----------------------------------------------------------------------------


def first_rank(ranked: Iterable[Iterable[str]], evidence: Iterable[str]) -> int | None:
    """The 1-based rank of the first hit holding an evidence turn (a hit
    may hold several turns: a memory of two), or None."""
    wanted = set(evidence)
    for rank, ids in enumerate(ranked, 1):
        if wanted.intersection(ids):
            return rank
    return None


def any_at(ranks: Sequence[int | None], k: int) -> float:
    """The share of questions found within the first ``k``."""
    if not ranks:
        return float("nan")
    return sum(r is not None and r <= k for r in ranks) / len(ranks)


def paired_bootstrap(
    ours: Sequence[int | None],
    base: Sequence[int | None],
    k: int,
    *,
    rounds: int,
    seed: int,
) -> tuple[float, float, float]:
    """The difference ``any@k(ours) − any@k(base)`` on the same questions,
    and its 95% percentile interval over ``rounds`` resamplings of the
    questions (with replacement, one seeded generator)."""
    diffs = [
        int(a is not None and a <= k) - int(b is not None and b <= k)
        for a, b in zip(ours, base, strict=True)
    ]
    n = len(diffs)
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    rng = random.Random(seed)
    # The same seed draws the same resampled questions for every system.
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(rounds))
    lo = means[int(0.025 * (rounds - 1))]
    hi = means[math.ceil(0.975 * (rounds - 1))]
    return sum(diffs) / n, lo, hi


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0–1) by nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


# --- the questions -----------------------------------------------------------------------


def counted(
    samples: Sequence[Sample], categories: Sequence[str] | None
) -> list[tuple[Sample, Question]]:
    """The questions scored: in ``categories`` (all when None) and with at
    least one valid evidence turn."""
    wanted = None if categories is None else {str(c) for c in categories}
    return [
        (s, q)
        for s in samples
        for q in s.questions
        if q.evidence and (wanted is None or str(q.category) in wanted)
    ]


def bm25_ranks(
    samples: Sequence[Sample],
    questions: Sequence[tuple[Sample, Question]],
    texts: Callable[[Sample], list[str]] | None = None,
    tokenizer: Callable[[str], list[str]] = tokenize,
) -> dict[str, Any]:
    """BM25's ranks of each question's evidence, over each turn's
    :func:`indexed_text` (or what ``texts`` makes of a sample's turns)."""
    indexes = {
        s.id: BM25(
            texts(s) if texts is not None else [indexed_text(t) for t in s.turns],
            tokenizer=tokenizer,
        )
        for s in samples
    }
    ranks: list[int | None] = []
    latencies: list[float] = []
    for sample, q in questions:
        start = time.perf_counter()
        found = indexes[sample.id].rank(q.question, max(KS))
        latencies.append(time.perf_counter() - start)
        ranks.append(first_rank(([sample.turns[i].id] for i in found), q.evidence))
    return {"ranks": ranks, "latency_s": latencies}


# --- memrules, through remember / recall -------------------------------------------------


def progress(message: str) -> None:
    """A line on stderr, so a long run shows where it is."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def as_messages(sample: Sample, turns: Sequence[Turn] | None = None) -> tuple[Any, ...]:
    """A sample's turns (or ``turns`` of it) as memrules messages: the first
    speaker's as the user's, the other's as the assistant's, each with its
    speaker as the message name and its turn id as the message id."""
    from memrules import Message, Text

    first = sample.speakers[0] if sample.speakers else None
    return tuple(
        Message(
            role="user" if t.speaker in (first, "user") else "assistant",
            parts=(Text(text=t.text),),
            id=t.id,
            name=t.speaker,
        )
        for t in (sample.turns if turns is None else turns)
    )


def sessions(sample: Sample) -> list[tuple[Any, list[Turn]]]:
    """A sample's sessions in order: each session's time (None when its
    date does not read) and its turns."""
    by_session: dict[int, list[Turn]] = collections.defaultdict(list)
    for t in sample.turns:
        by_session[t.session].append(t)
    return [(parse_locomo_date(turns[0].date), turns) for _, turns in sorted(by_session.items())]


def context_named(name: str) -> Any:
    """The :class:`memrules.IndexContext` ``--context`` names: ``default``
    (remember's default: the turn before, the session's day, relative dates
    resolved), ``none`` (each turn's own text), or ``before=N,after=M``."""
    from memrules import IndexContext
    from memrules._core.seam_records import DEFAULT_CONTEXT

    if name == "default":
        return DEFAULT_CONTEXT
    if name == "none":
        return None
    fields = dict(part.split("=", 1) for part in name.split(","))
    return IndexContext(**{k.strip(): int(v) for k, v in fields.items()})


def remember_all(pipeline: Any, samples: Sequence[Sample], context: Any) -> None:
    """Remember each sample one session per call, with the session's time
    (its relative dates resolved against it)."""
    for sample in samples:
        for when, turns in sessions(sample):
            pipeline.remember(
                as_messages(sample, turns),
                conversation_id=sample.id,
                user=sample.id,
                session_time=when if context is not None else None,
                context=context,
            )


def contextual_texts(sample: Sample, context: Any) -> list[str]:
    """What memrules indexes for each turn of ``sample`` under ``context``
    (the same text BM25 then ranks, to measure the context alone)."""
    import attrs

    from memrules._core.seam_records import contextual_text, index_text

    out: list[str] = []
    for when, turns in sessions(sample):
        messages = as_messages(sample, turns)
        if context is None:
            out += [index_text(m) for m in messages]
            continue
        ctx = attrs.evolve(context, time=when)
        out += [contextual_text(messages, i, ctx) for i in range(len(messages))]
    return out


def store_yaml(backend: str, where: Path, search: str = "hybrid") -> str:
    """A pipeline config whose ``store:`` section names ``backend`` in
    ``where`` (the default embedder: local)."""
    if backend == "milvus":
        place = f"uri: {json.dumps(str(where / 'locomo.db'))}"
    elif backend == "qdrant":
        place = f"path: {json.dumps(str(where / 'qdrant'))}"
    else:
        msg = f"backend={backend!r}: expected milvus or qdrant"
        raise ValueError(msg)
    return f"store:\n  backend: {backend}\n  {place}\n  collection: locomo\n  search: {search}\n"


def store_ranks(
    backend: str,
    modes: Sequence[str],
    samples: Sequence[Sample],
    questions: Sequence[tuple[Sample, Question]],
    where: Path,
    context: Any = None,
    depth: int = 10,
) -> dict[str, Any]:
    """Remember every sample (under ``context``), then recall every
    question in each mode, ``depth`` turns deep (the fusion table reads the
    dense and lexical rankings that deep)."""
    from memrules import load_pipeline

    config = where / "pipeline.yaml"
    config.write_text(store_yaml(backend, where), encoding="utf-8")
    pipeline = load_pipeline(config)
    # A first recall (in a scope that holds nothing) loads the model and
    # opens the store, so the remember throughput is the steady state.
    start = time.perf_counter()
    pipeline.recall("warm up", k=1, conversation_id="warm-up", user="warm-up")
    warm_s = time.perf_counter() - start
    turns = sum(len(s.turns) for s in samples)
    start = time.perf_counter()
    remember_all(pipeline, samples, context)
    remember_s = time.perf_counter() - start
    progress(f"{backend}: remembered {turns} turns in {remember_s:.1f} s")
    out: dict[str, Any] = {
        "remember": {
            "warm_up_s": warm_s,
            "turns": turns,
            "seconds": remember_s,
            "turns_per_s": (turns / remember_s) if remember_s > 0 else float("nan"),
        },
        "modes": {},
    }
    if questions:  # the first query of each mode warms its path, untimed
        sample, q = questions[0]
        for mode in modes:
            pipeline.recall(
                q.question, k=max(KS), conversation_id=sample.id, user=sample.id, mode=mode
            )
    for mode in modes:
        ranks: list[int | None] = []
        latencies: list[float] = []
        ranked: list[list[str]] = []
        for sample, q in questions:
            start = time.perf_counter()
            hits = pipeline.recall(
                q.question,
                k=max(KS) if mode == "hybrid" else depth,
                conversation_id=sample.id,
                user=sample.id,
                mode=mode,
            )
            latencies.append(time.perf_counter() - start)
            ranks.append(first_rank(([h.message.id or ""] for h in hits[: max(KS)]), q.evidence))
            ranked.append([h.message.id or "" for h in hits])
        out["modes"][mode] = {"ranks": ranks, "latency_s": latencies, "ranked": ranked}
        progress(f"{backend}: {mode}: {len(ranks)} questions recalled")
    close = getattr(getattr(pipeline, "seams", None), "store", None)
    if close is not None and hasattr(close, "close"):
        close.close()
    return out


# --- memrules, through a route with memory -----------------------------------------------


def route_yaml(backend: str, where: Path, search: str, limit: int) -> str:
    """A config of one route with retrieval memory and auto-store, on
    ``backend`` in ``where``, searching in ``search`` mode."""
    place = (
        f"uri: {json.dumps(str(where / 'memories.db'))}"
        if backend == "milvus"
        else f"path: {json.dumps(str(where / 'memories'))}"
    )
    return (
        "stores:\n"
        "  memory:\n"
        f"    backend: {backend}\n"
        f"    {place}\n"
        "    collection: locomo_memories\n"
        f"    search: {search}\n"
        "routes:\n"
        "  chat:\n"
        "    memory:\n"
        "      enabled: true\n"
        "      auto_store: true\n"
        f"      retrieval_limit: {limit}\n"
    )


def _epoch(turn: Turn | None) -> float | None:
    when = parse_locomo_date(turn.date if turn else None)
    return None if when is None else when.timestamp()


def route_ranks(
    backend: str,
    search: str,
    samples: Sequence[Sample],
    questions: Sequence[tuple[Sample, Question]],
    where: Path,
) -> dict[str, Any]:
    """Auto-store every pair of consecutive turns of a session (the first
    as the request, the second as the reply, each ``<speaker>: <text>``)
    with the session's time, then ask each question as a new request of
    that user, a day after the last session; score the memories the gate
    injected, in order."""
    from memrules import MemoryPlugin, Message, Request, Text, load_config

    config = load_config(route_yaml(backend, where, search, max(KS)))
    plugin = MemoryPlugin.from_config(config, route="chat")
    memory_turns: dict[str, tuple[str, ...]] = {}
    outcomes: collections.Counter[str] = collections.Counter()
    unstored = 0
    start = time.perf_counter()
    pairs = 0
    for sample in samples:
        by_session: dict[int, list[Turn]] = collections.defaultdict(list)
        for t in sample.turns:
            by_session[t.session].append(t)
        for session, turns in sorted(by_session.items()):
            for i in range(0, len(turns), 2):
                said, reply = turns[i], (turns[i + 1] if i + 1 < len(turns) else None)
                request = Request(
                    messages=(Message(role="user", parts=(Text(text=indexed_text(said)),)),),
                    user=sample.id,
                    tenant=TENANT,
                    conversation_id=f"{sample.id}/{session}",
                )
                answer = indexed_text(reply) if reply is not None else ""
                outcome = plugin.on_response(request, answer, now=_epoch(said))
                pairs += 1
                outcomes[outcome.status] += 1
                ids = (said.id,) if reply is None else (said.id, reply.id)
                if outcome.id is not None and outcome.status in ("stored", "duplicate"):
                    memory_turns[outcome.id] = memory_turns.get(outcome.id, ()) + ids
                else:
                    unstored += len(ids)
    store_s = time.perf_counter() - start
    progress(f"route ({backend}): {pairs} turn pairs through on_response in {store_s:.1f} s")
    last = {s.id: _epoch(s.turns[-1] if s.turns else None) for s in samples}
    ranks: list[int | None] = []
    latencies: list[float] = []
    statuses: collections.Counter[str] = collections.Counter()
    for n, (sample, q) in enumerate(questions):
        request = Request(
            messages=(Message(role="user", parts=(Text(text=q.question),)),),
            user=sample.id,
            tenant=TENANT,
            conversation_id=f"{sample.id}/question-{n}",
        )
        stamp = last[sample.id]
        now = None if stamp is None else stamp + timedelta(days=1).total_seconds()
        start = time.perf_counter()
        result = plugin.handle(request, now=now)
        latencies.append(time.perf_counter() - start)
        report = result.memory
        statuses[report.retrieval.status if report is not None else "none"] += 1
        injected = report.gate.memories if report is not None else ()
        ranks.append(first_rank((memory_turns.get(m.id, ()) for m in injected), q.evidence))
    config.close()
    return {
        "ranks": ranks,
        "latency_s": latencies,
        "store": {
            "pairs": pairs,
            "seconds": store_s,
            "turns_per_s": (sum(len(s.turns) for s in samples) / store_s) if store_s else 0.0,
            "outcomes": dict(outcomes),
            "turns_in_no_memory": unstored,
        },
        "retrieval_status": dict(statuses),
    }


# --- fusion alternatives ---------------------------------------------------------------

FUSION_KS = (5, 10, 20, 60)
FUSION_WEIGHTS = (1.0, 1.5, 2.0, 3.0)


def fusion_table(
    dense: Sequence[Sequence[str]],
    lexical: Sequence[Sequence[str]],
    questions: Sequence[tuple[Sample, Question]],
) -> list[dict[str, Any]]:
    """any@5/10 of every weighted reciprocal rank fusion of the dense and
    lexical rankings (as deep as recalled) in ``FUSION_KS`` x
    ``FUSION_WEIGHTS`` (the lexical ranking's weight; dense weighs 1), with
    the lowest category's any@5."""
    from memrules.seams._fusion import reciprocal_rank_fusion

    rows: list[dict[str, Any]] = []
    for k in FUSION_KS:
        for weight in FUSION_WEIGHTS:
            ranks = []
            for d, lx, (_, q) in zip(dense, lexical, questions, strict=True):
                fused = reciprocal_rank_fusion([d, lx], k=k, weights=(1.0, weight))
                ranks.append(first_rank(([i] for i, _ in fused[: max(KS)]), q.evidence))
            by_category: dict[str, list[int | None]] = collections.defaultdict(list)
            for r, (_, q) in zip(ranks, questions, strict=True):
                by_category[str(q.category)].append(r)
            rows.append(
                {
                    "k": k,
                    "lexical_weight": weight,
                    "@5": any_at(ranks, 5),
                    "@10": any_at(ranks, 10),
                    "categories@5": {c: any_at(v, 5) for c, v in sorted(by_category.items())},
                }
            )
    return rows


# --- the report --------------------------------------------------------------------------


def summarise(
    ranks: Sequence[int | None],
    base: Sequence[int | None],
    questions: Sequence[tuple[Sample, Question]],
    *,
    rounds: int,
    seed: int,
) -> dict[str, Any]:
    by_category: dict[str, list[int | None]] = collections.defaultdict(list)
    for r, (_, q) in zip(ranks, questions, strict=True):
        by_category[str(q.category)].append(r)
    return {
        "questions": len(ranks),
        "any": {f"@{k}": any_at(ranks, k) for k in KS},
        "vs_bm25": {
            f"@{k}": dict(
                zip(
                    ("diff", "lo", "hi"),
                    paired_bootstrap(ranks, base, k, rounds=rounds, seed=seed),
                    strict=True,
                )
            )
            for k in KS
        },
        "categories": {
            c: {"questions": len(v)} | {f"@{k}": any_at(v, k) for k in KS}
            for c, v in sorted(by_category.items())
        },
    }


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.1f}"


def _delta(d: dict[str, float]) -> str:
    if math.isnan(d["diff"]):
        return "n/a"
    return f"{100 * d['diff']:+.1f} [{100 * d['lo']:+.1f}, {100 * d['hi']:+.1f}]"


def render(results: dict[str, Any], out: Callable[[str], None] = print) -> None:
    systems = results["systems"]
    out("")
    out(
        "| system | any@1 | any@5 | any@10 | Δ@5 vs BM25 [95%] | Δ@10 vs BM25 [95%] "
        "| recall p50 / p95 ms | remember turns/s |"
    )
    out("|---|---|---|---|---|---|---|---|")
    for name, s in systems.items():
        a = s["summary"]["any"]
        v = s["summary"]["vs_bm25"]
        lat = s.get("latency_ms", {})
        rem = s.get("remember_turns_per_s")
        out(
            f"| {name} | {_pct(a['@1'])} | {_pct(a['@5'])} | {_pct(a['@10'])} | "
            f"{'—' if name == 'bm25' else _delta(v['@5'])} | "
            f"{'—' if name == 'bm25' else _delta(v['@10'])} | "
            f"{lat.get('p50', float('nan')):.1f} / {lat.get('p95', float('nan')):.1f} | "
            f"{'—' if rem is None else f'{rem:.0f}'} |"
        )
    for backend, rows in results.get("fusion", {}).items():
        out("")
        out(
            f"hybrid fusion alternatives ({backend}): weighted RRF of the dense and lexical "
            "rankings; any@5 / any@10 (lowest category's any@5)"
        )
        out("| RRF k | " + " | ".join(f"lexical x{w:g}" for w in FUSION_WEIGHTS) + " |")
        out("|---|" + "---|" * len(FUSION_WEIGHTS))
        for k in FUSION_KS:
            cells = []
            for row in rows:
                if row["k"] == k:
                    low = min(row["categories@5"].values())
                    cells.append(f"{_pct(row['@5'])} / {_pct(row['@10'])} ({_pct(low)})")
            out(f"| {k} | " + " | ".join(cells) + " |")
    cats = sorted({c for s in systems.values() for c in s["summary"]["categories"]})
    out("")
    first = next(iter(systems.values()))["summary"]["categories"]
    sizes = ", ".join(f"{c} ({first.get(c, {}).get('questions', 0)})" for c in cats)
    out(f"any@1 / @5 / @10 by category (questions): {sizes}")
    out("| system | " + " | ".join(f"category {c}" for c in cats) + " |")
    out("|---|" + "---|" * len(cats))
    for name, s in systems.items():
        cells = []
        for c in cats:
            got = s["summary"]["categories"].get(c)
            cells.append("—" if got is None else " / ".join(_pct(got[f"@{k}"]) for k in KS))
        out(f"| {name} | " + " | ".join(cells) + " |")


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> dict[str, Any]:
    samples, normalisation = load(args.path, args.format)
    if args.samples:
        samples = tuple(s for s in samples if s.id in set(args.samples))
    categories = None if args.categories == ["all"] else args.categories
    questions = counted(samples, categories)
    asked = sum(
        1
        for s in samples
        for q in s.questions
        if categories is None or str(q.category) in {str(c) for c in categories}
    )
    out(
        f"{args.path}: {len(samples)} samples, {sum(len(s.turns) for s in samples)} turns, "
        f"{sum(len(s.questions) for s in samples)} questions; "
        f"{asked} in categories {','.join(map(str, categories)) if categories else 'all'}, "
        f"{len(questions)} of them with a valid evidence turn (scored)"
    )
    n = normalisation
    out(
        f"evidence: {n.entries} entries, {n.well_formed} well-formed; {n.split} split "
        f"(several ids in one string), {n.repaired} repaired (misspelt id), "
        f"{n.dropped} ids dropped ({n.malformed} not an id, {n.missing} of no turn)"
        + (f"; changed: {', '.join(repr(e) for e in n.examples)}" if n.examples else "")
    )
    base = bm25_ranks(samples, questions)
    systems: dict[str, Any] = {}

    def add(
        name: str,
        ranks: list[int | None],
        latency: list[float],
        rate: float | None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        systems[name] = {
            "summary": summarise(
                ranks, base["ranks"], questions, rounds=args.bootstrap, seed=args.seed
            ),
            "latency_ms": {
                "p50": percentile(latency, 0.5) * 1000,
                "p95": percentile(latency, 0.95) * 1000,
                "mean": (statistics.fmean(latency) * 1000) if latency else float("nan"),
            },
            "remember_turns_per_s": rate,
            "ranks": ranks,
        } | (extra or {})

    add("bm25", base["ranks"], base["latency_s"], None)
    context = context_named(args.context)
    if context is not None and args.format == "locomo":
        from memrules.seams._lexical import terms

        def texts(sample: Sample) -> list[str]:
            return contextual_texts(sample, context)

        with_context = bm25_ranks(samples, questions, texts)
        add("bm25 + context", with_context["ranks"], with_context["latency_s"], None)
        stems = bm25_ranks(samples, questions, texts, terms)
        add("bm25 + context + stems", stems["ranks"], stems["latency_s"], None)
    fusion: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends:
            where = Path(tmp) / backend
            where.mkdir()
            got = store_ranks(backend, args.modes, samples, questions, where, context, args.depth)
            rate = got["remember"]["turns_per_s"]
            if {"dense", "lexical"} <= set(got["modes"]):
                fusion[backend] = fusion_table(
                    got["modes"]["dense"]["ranked"], got["modes"]["lexical"]["ranked"], questions
                )
            for mode, r in got["modes"].items():
                add(
                    f"{mode} ({backend})",
                    r["ranks"],
                    r["latency_s"],
                    rate,
                    {"remember": got["remember"]},
                )
            out(
                f"{backend}: remembered {got['remember']['turns']} turns in "
                f"{got['remember']['seconds']:.1f} s ({rate:.0f} turns/s; model load and "
                f"store start before that, {got['remember']['warm_up_s']:.1f} s)"
            )
        for backend in args.route_backends if args.route else ():
            where = Path(tmp) / f"route-{backend}"
            where.mkdir()
            got = route_ranks(backend, args.route_search, samples, questions, where)
            add(
                f"route {args.route_search} ({backend})",
                got["ranks"],
                got["latency_s"],
                got["store"]["turns_per_s"],
                {"store": got["store"], "retrieval_status": got["retrieval_status"]},
            )
            out(
                f"route ({backend}): auto-store outcomes {got['store']['outcomes']}, "
                f"{got['store']['turns_in_no_memory']} turns in no memory; "
                f"retrieval {got['retrieval_status']}"
            )
    results = {
        "path": str(args.path),
        "format": args.format,
        "normalisation": normalisation.to_dict(),
        "questions": len(questions),
        "bootstrap": {"rounds": args.bootstrap, "seed": args.seed},
        "context": args.context,
        "systems": systems,
        "fusion": fusion,
    }
    render(results, out)
    return results


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("path", type=Path, help="LoCoMo's locomo10.json (or a part of it)")
    p.add_argument("--format", choices=("locomo", "longmemeval"), default="locomo")
    p.add_argument(
        "--backends",
        nargs="*",
        default=list(BACKENDS),
        choices=BACKENDS,
        help="stores to remember in (none: BM25 only)",
    )
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    p.add_argument(
        "--route",
        action="store_true",
        help="also the memory route's path (auto-store, then retrieval)",
    )
    p.add_argument("--route-backends", nargs="+", default=["qdrant"], choices=BACKENDS)
    p.add_argument("--route-search", default="hybrid", choices=MODES)
    p.add_argument(
        "--categories",
        nargs="+",
        default=["1", "2", "3", "4"],
        help="the categories scored (LoCoMo: 1-4 by default); 'all' for every one",
    )
    p.add_argument(
        "--context",
        default="default",
        help="what each turn is indexed with: default (remember's: the turn before, the "
        "session's day, relative dates resolved), none, or before=N,after=M",
    )
    p.add_argument(
        "--depth",
        type=int,
        default=50,
        help="how deep the dense and lexical modes recall (the fusion table reads them)",
    )
    p.add_argument("--samples", nargs="+", help="only these sample ids")
    p.add_argument("--bootstrap", type=int, default=10_000, help="resamplings (default 10,000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, help="write every figure and rank here")
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    if args.format == "longmemeval" and args.categories == ["1", "2", "3", "4"]:
        args.categories = ["all"]
    results = run(args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    sys.stdout.flush()
    return results


if __name__ == "__main__":
    main()
