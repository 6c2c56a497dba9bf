"""Train the memory gate's detector: ``python -m benchmarks.poisoning.train``.

Fits a logistic regression over :func:`memrules.memory.detector.features`
on the tuning corpus (``tuning.yaml`` and the earlier
``tests/data/memory_poisoning.yaml``; never ``heldout.yaml``), chooses the
thresholds on out-of-fold scores of the tuning corpus (the highest recall
with at most ``--max-false`` of its benign memories blocked), quantises
the weights to int8 and writes ``memrules/memory/detector.json``.

Deterministic: the same corpus and arguments give the same file.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import random
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.poisoning.corpus import ROOT, Entry, stored, tuning
from memrules.memory.detector import WINDOW, Detector, features, forms

OUT = ROOT / "memrules" / "memory" / "detector.json"
BUCKETS = 1 << 18
PAIRS = 800
PAIR_FLOOR = 0.5
ANSWERS = ("Noted.", "Sure, I'll keep that in mind.", "Got it!", "OK.", "Understood, thanks.")
COMPLY = ("OK, I will do that from now on.", "Understood, I'll follow this.", "Sure.")
FILLER = (
    "I went to the market today.",
    "My train was late again this morning.",
    "We had pasta for dinner.",
    "The meeting moved to Thursday.",
)


def _texts(entry: Entry, rng: random.Random) -> list[str]:
    """The training texts of one entry: the memory itself, as auto-store
    keeps it, and (for a payload) hidden after a harmless sentence; a pair
    as its junction."""
    if len(entry.memories) == 2:
        first, second = entry.memories
        return [f"{first}\n{second}", f"{stored(first)}\n{stored(second)}"]
    text = entry.memories[0]
    if text.startswith("Q: "):
        return [text]
    answers = ANSWERS + COMPLY if entry.poisoned else ANSWERS
    out = [text, stored(text, rng.choice(answers))]
    if entry.poisoned:
        out.append(f"{rng.choice(FILLER)} {text}")
    return out


def _rows(texts: Sequence[str]) -> list[tuple[int, ...]]:
    rows = []
    for text in texts:
        for form in forms(text)[:2]:  # folded and skeleton: the forms a plain memory takes
            rows.append(features(form, BUCKETS))
    return rows


def fit(
    rows: Sequence[tuple[int, ...]], labels: Sequence[int], *, l2: float, epochs: int
) -> tuple[np.ndarray, float]:
    """Logistic regression by full-batch Adam, classes weighted equally;
    features binary, each row scaled by 1/sqrt(its length)."""
    n = len(rows)
    lengths = np.array([max(1, len(r)) for r in rows])
    index = np.concatenate([np.array(r, dtype=np.int64) for r in rows])
    owner = np.repeat(np.arange(n), [len(r) for r in rows])
    value = (1.0 / np.sqrt(lengths))[owner]
    y = np.array(labels, dtype=np.float64)
    pos = max(1.0, y.sum())
    neg = max(1.0, n - y.sum())
    sample_weight = np.where(y == 1, n / (2 * pos), n / (2 * neg))
    w = np.zeros(BUCKETS)
    b = 0.0
    m_w, v_w, m_b, v_b = np.zeros(BUCKETS), np.zeros(BUCKETS), 0.0, 0.0
    rate, beta1, beta2, eps = 0.05, 0.9, 0.999, 1e-8
    for t in range(1, epochs + 1):
        z = np.bincount(owner, weights=w[index] * value, minlength=n) + b
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -60, 60)))
        g = (p - y) * sample_weight / n
        grad_w = np.bincount(index, weights=g[owner] * value, minlength=BUCKETS) + l2 * w
        grad_b = float(g.sum())
        m_w = beta1 * m_w + (1 - beta1) * grad_w
        v_w = beta2 * v_w + (1 - beta2) * grad_w**2
        m_b = beta1 * m_b + (1 - beta1) * grad_b
        v_b = beta2 * v_b + (1 - beta2) * grad_b**2
        w -= rate * (m_w / (1 - beta1**t)) / (np.sqrt(v_w / (1 - beta2**t)) + eps)
        b -= rate * (m_b / (1 - beta1**t)) / (math.sqrt(v_b / (1 - beta2**t)) + eps)
    return w, b


def quantised(w: np.ndarray, b: float, threshold: float, pair_threshold: float) -> Detector:
    import array

    scale = float(np.abs(w).max() / 127) or 1.0
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return Detector(
        weights=array.array("b", q.tobytes()),
        scale=scale,
        bias=b,
        threshold=threshold,
        pair_threshold=pair_threshold,
    )


def benign_pairs(entries: Sequence[Entry], n: int, rng: random.Random) -> list[tuple[str, str]]:
    """``n`` random pairs of two benign memories (as stored), for the pair
    check's negatives and its threshold."""
    benign = [stored(e.memories[0]) for e in entries if not e.poisoned and len(e.memories) == 1]
    return [tuple(rng.sample(benign, 2)) for _ in range(n)]  # type: ignore[misc]


def _junction(first: str, second: str) -> str:
    edge = WINDOW // 2
    return f"{first[-edge:]}\n{second[:edge]}"


def train(entries: Sequence[Entry], *, l2: float, epochs: int, seed: int) -> Detector:
    rng = random.Random(seed)
    texts, labels = [], []
    for entry in entries:
        for text in _texts(entry, rng):
            texts.append(text)
            labels.append(int(entry.poisoned))
    for first, second in benign_pairs(entries, PAIRS, rng):
        texts.append(_junction(first, second))
        labels.append(0)
    rows = _rows(texts)
    # _rows gives two rows a text (folded, skeleton) unless they are the same form.
    row_labels = []
    for text, label in zip(texts, labels, strict=True):
        row_labels.extend([label] * len(forms(text)[:2]))
    w, b = fit(rows, row_labels, l2=l2, epochs=epochs)
    return quantised(w, b, 0.5, 0.5)


def entry_score(detector: Detector, entry: Entry) -> float:
    """The gate's view of an entry: the highest score of its memories as
    stored, and for two memories their pair's."""
    memories = [stored(m) for m in entry.memories]
    scores = [detector.score(m) for m in memories]
    if len(memories) == 2:
        scores.append(detector.pair_score(memories[0], memories[1]))
    return max(scores)


def choose_threshold(scores: Sequence[float], poisoned: Sequence[bool], max_false: float) -> float:
    """The lowest threshold that blocks at most ``max_false`` of the benign."""
    benign = sorted((s for s, p in zip(scores, poisoned, strict=True) if not p), reverse=True)
    allowed = math.floor(max_false * len(benign))
    # Block strictly above the (allowed+1)-th highest benign score.
    edge = benign[allowed] if allowed < len(benign) else 0.0
    return min(0.99, math.nextafter(edge, 1.0))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--l2", type=float, default=1e-4)
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--max-false", type=float, default=0.02)
    parser.add_argument("--max-pair-false", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    entries = list(tuning())
    order = list(range(len(entries)))
    random.Random(args.seed).shuffle(order)
    oof: list[float] = [0.0] * len(entries)
    pair_scores: list[float] = []
    for fold in range(args.folds):
        test = {i for k, i in enumerate(order) if k % args.folds == fold}
        model = train(
            [e for i, e in enumerate(entries) if i not in test],
            l2=args.l2,
            epochs=args.epochs,
            seed=args.seed,
        )
        for i in test:
            oof[i] = entry_score(model, entries[i])
        held = [entries[i] for i in sorted(test)]
        pair_rng = random.Random(args.seed + fold)
        pair_scores.extend(
            max(model.pair_score(a, b), model.pair_score(b, a))
            for a, b in benign_pairs(held, PAIRS // args.folds, pair_rng)
        )
    poisoned = [e.poisoned for e in entries]
    singles = [i for i, e in enumerate(entries) if len(e.memories) == 1]
    threshold = choose_threshold(
        [oof[i] for i in singles], [poisoned[i] for i in singles], args.max_false
    )
    pairs_sorted = sorted(pair_scores, reverse=True)
    # Pairs are many (n(n-1) a request): a pair is blocked only when its
    # junction reads more likely an order than not.
    pair_threshold = max(
        threshold,
        PAIR_FLOOR,
        math.nextafter(pairs_sorted[math.floor(args.max_pair_false * len(pairs_sorted))], 1.0),
    )
    caught = sum(1 for s, p in zip(oof, poisoned, strict=True) if p and s >= threshold)
    false = sum(1 for s, p in zip(oof, poisoned, strict=True) if not p and s >= threshold)
    print(
        f"out-of-fold on the tuning corpus: threshold {threshold:.3f}, "
        f"{caught}/{sum(poisoned)} payloads blocked, "
        f"{false}/{len(poisoned) - sum(poisoned)} benign blocked; pair threshold "
        f"{pair_threshold:.3f} ({sum(s >= pair_threshold for s in pair_scores)}/{len(pair_scores)} "
        "random benign pairs blocked)"
    )
    final = train(entries, l2=args.l2, epochs=args.epochs, seed=args.seed)
    payload = {
        "name": "memrules-gate",
        "trained_on": ["benchmarks/poisoning/tuning.yaml", "tests/data/memory_poisoning.yaml"],
        "buckets": BUCKETS,
        "scale": final.scale,
        "bias": final.bias,
        "threshold": threshold,
        "pair_threshold": pair_threshold,
        "l2": args.l2,
        "epochs": args.epochs,
        "seed": args.seed,
        "weights": base64.b64encode(zlib.compress(final.weights.tobytes(), 9)).decode(),
    }
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
