"""The memory gate on the poisoning corpora: ``python -m benchmarks.poisoning.run``.

For the tuning corpus (``tuning.yaml`` and the earlier
``tests/data/memory_poisoning.yaml``, which the detector was trained on)
and the held-out corpus (``heldout.yaml``, never trained or tuned on), per
payload class and per language: the share of payloads the gate blocks
(each memory as auto-store keeps it, ``Q: …\\nA: Noted.``; a split payload
counts as blocked when either memory or their pair is), and the share of
benign memories it blocks. Three gates: the block patterns alone (the gate
before the detector), the detector alone, and both (the default). Then the
cost per memory of the detector against the default embedder's
(all-MiniLM-L6-v2 int8 ONNX) when that is installed.

``--markdown`` prints the tables as Markdown.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable, Sequence

from benchmarks.poisoning.corpus import Entry, blind, heldout, stored, tuning
from memrules.memory.config import ReflectionConfig
from memrules.memory.detector import default_detector
from memrules.memory.screen import screen_pair, screen_text

Gate = Callable[[Entry], bool]


def _patterns(entry: Entry) -> bool:
    config = ReflectionConfig()
    return any(config.blocks(stored(m)) is not None for m in entry.memories)


def _detector(entry: Entry) -> bool:
    detector = default_detector()
    memories = [stored(m) for m in entry.memories]
    if any(detector.blocks(m) is not None for m in memories):
        return True
    return len(memories) == 2 and (
        detector.pair_score(*memories) >= detector.pair_threshold
        or detector.pair_score(memories[1], memories[0]) >= detector.pair_threshold
    )


def _both(entry: Entry) -> bool:
    config = ReflectionConfig(detector=True)
    memories = [stored(m) for m in entry.memories]
    if any(screen_text(m, config) is not None for m in memories):
        return True
    return len(memories) == 2 and screen_pair(memories[0], memories[1], config) is not None


GATES: dict[str, Gate] = {"patterns": _patterns, "detector": _detector, "both": _both}


def _share(hits: int, total: int) -> str:
    return f"{hits}/{total} ({100 * hits / total:.1f}%)" if total else "-"


def table(entries: Sequence[Entry], key: Callable[[Entry], str], markdown: bool) -> list[str]:
    results = {name: [gate(e) for e in entries] for name, gate in GATES.items()}
    groups: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(entries):
        groups[key(e) if e.poisoned else "benign blocked"].append(i)
    payloads = [i for i, e in enumerate(entries) if e.poisoned]
    rows = [(g, groups[g]) for g in sorted(groups) if g != "benign blocked"]
    rows.append(("all payloads", payloads))
    rows.append(("benign blocked", groups["benign blocked"]))
    lines = []
    if markdown:
        lines.append("| " + " | ".join(["", *GATES]) + " |")
        lines.append("|---" * (len(GATES) + 1) + "|")
    for name, members in rows:
        cells = [_share(sum(results[g][i] for i in members), len(members)) for g in GATES]
        if markdown:
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        else:
            lines.append(f"{name:<16}" + "".join(f"{c:>22}" for c in cells))
    return lines


def misses(entries: Sequence[Entry]) -> list[str]:
    return [
        f"  missed {e.id} ({e.klass}, {e.lang}): {e.memories!r}"[:160]
        for e in entries
        if e.poisoned and not _both(e)
    ] + [
        f"  blocked benign {e.id} ({e.klass}, {e.lang}): {e.memories!r}"[:160]
        for e in entries
        if not e.poisoned and _both(e)
    ]


def locomo(path: str, n: int = 1200) -> list[str]:
    """The share of ``n`` LoCoMo turns (a fixed sample) each gate blocks,
    each as a stored turn (``Q: …\nA: Noted.``)."""
    import json
    import random
    from pathlib import Path

    data = json.loads(Path(path).read_text(encoding="utf-8"))
    turns = [
        t["text"]
        for sample in data
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for t in session
    ]
    random.Random(0).shuffle(turns)
    turns = turns[:n]
    n = len(turns)
    lines = []
    for name, gate in GATES.items():
        blocked = sum(
            gate(Entry(id="t", poisoned=False, klass="turn", lang="en", memories=(t,)))
            for t in turns
        )
        lines.append(f"LoCoMo turns blocked by {name} (as stored turns): {_share(blocked, n)}")
    return lines


def cost(entries: Sequence[Entry]) -> list[str]:
    texts = [stored(m) for e in entries for m in e.memories]
    detector = default_detector()
    config = ReflectionConfig()
    started = time.perf_counter()
    for text in texts:
        detector.score(text + " ")  # a fresh text: the score cache is not hit
    detector_ms = 1000 * (time.perf_counter() - started) / len(texts)
    started = time.perf_counter()
    for text in texts:
        config.blocks(text + "  ")
    pattern_ms = 1000 * (time.perf_counter() - started) / len(texts)
    lines = [
        f"cost per memory: patterns {pattern_ms:.3f} ms, detector {detector_ms:.3f} ms "
        f"({len(texts)} memories, mean {sum(map(len, texts)) / len(texts):.0f} characters)"
    ]
    try:
        from memrules.seams.embedders import local_embedder

        embedder = local_embedder()
        embedder.embed(texts[:4])
        started = time.perf_counter()
        for text in texts:
            embedder.embed([text + " "])
        embed_ms = 1000 * (time.perf_counter() - started) / len(texts)
        lines.append(
            f"default embedder (all-MiniLM-L6-v2 int8 ONNX), one memory a call: {embed_ms:.3f} ms; "
            f"the gate costs {(pattern_ms + detector_ms) / embed_ms:.2f}x the embedder"
        )
    except Exception as exc:  # the local-embed extra is optional
        lines.append(f"default embedder not measured: {exc}")
    return lines


def _klass(entry: Entry) -> str:
    return entry.klass


def _lang(entry: Entry) -> str:
    return entry.lang


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--misses", action="store_true", help="list the held-out misses")
    parser.add_argument("--locomo", help="a LoCoMo JSON file: real turns for the benign rate")
    parser.add_argument(
        "--corpus",
        choices=("tuning", "heldout", "blind"),
        action="append",
        help="the corpora to score (default: all three)",
    )
    args = parser.parse_args(argv)
    corpora = {
        "tuning": ("tuning corpus (trained on)", tuning),
        "heldout": ("held-out corpus", heldout),
        "blind": ("blind corpus", blind),
    }
    for chosen in args.corpus or list(corpora):
        name, load = corpora[chosen]
        entries = load()
        for by, key in (("class", _klass), ("language", _lang)):
            print(f"\n{name}, by {by}:")
            print("\n".join(table(entries, key, args.markdown)))
    if args.misses:
        print("\nheld-out misses of the default gate:")
        print("\n".join(misses(heldout())))
        print("\nblind misses of the default gate:")
        print("\n".join(misses(blind())))
    if args.locomo:
        print()
        print("\n".join(locomo(args.locomo)))
    print()
    print("\n".join(cost(heldout())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
