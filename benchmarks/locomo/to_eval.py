"""LoCoMo (or LongMemEval) as a ``memrules eval`` dataset: one JSON line per
conversation, in the format of :mod:`memrules._cli.dataset`.

``python benchmarks/locomo/to_eval.py PATH/locomo10.json OUT.jsonl`` then
``memrules eval --config CONFIG OUT.jsonl --max-tokens 4000``: each
question is asked after the whole conversation, and "facts kept", "recall@k"
and "kept or recalled" are scored on LoCoMo's evidence turns.

Each session keeps its date (ISO 8601, so ``offload`` indexes a turn with
its day and its relative dates resolved), each turn its dia_id as the
message id and its speaker as the message name; the first speaker's turns
are the user's, the other's the assistant's, as in ``run.py``. Only the
questions of ``--categories`` (LoCoMo's 1-4 by default) with a valid
evidence turn are written, with the evidence ids normalised as ``run.py``
normalises them (``load.py``). The output holds the dataset's text: keep it
out of the repository (LoCoMo is CC BY-NC).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.locomo.load import Sample, load, parse_locomo_date  # noqa: E402


def eval_lines(
    samples: Sequence[Sample], categories: Sequence[str] | None = ("1", "2", "3", "4")
) -> Iterator[dict[str, Any]]:
    """Each sample as one ``memrules eval`` conversation (see the module docs)."""
    wanted = None if categories is None else {str(c) for c in categories}
    for sample in samples:
        first = sample.speakers[0] if sample.speakers else None
        sessions: list[dict[str, Any]] = []
        for turn in sample.turns:
            if not sessions or sessions[-1]["id"] != f"session_{turn.session}":
                when = parse_locomo_date(turn.date)
                session: dict[str, Any] = {"id": f"session_{turn.session}", "messages": []}
                if when is not None:
                    session["time"] = when.isoformat()
                sessions.append(session)
            sessions[-1]["messages"].append(
                {
                    "id": turn.id,
                    "role": "user" if turn.speaker in (first, "user") else "assistant",
                    "speaker": turn.speaker,
                    "content": turn.text,
                }
            )
        questions = [
            {
                "id": f"{sample.id}-q{n}",
                "question": q.question,
                "answer": q.answer,
                "evidence": list(q.evidence),
                "category": str(q.category),
            }
            for n, q in enumerate(sample.questions, 1)
            if q.evidence and (wanted is None or str(q.category) in wanted)
        ]
        yield {"id": sample.id, "user": sample.id, "sessions": sessions, "questions": questions}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("path", type=Path, help="LoCoMo's locomo10.json (or a part of it)")
    p.add_argument("out", type=Path, help="the JSON Lines dataset to write")
    p.add_argument("--format", choices=("locomo", "longmemeval"), default="locomo")
    p.add_argument(
        "--categories",
        nargs="+",
        default=["1", "2", "3", "4"],
        help="the categories kept (LoCoMo: 1-4 by default); 'all' for every one",
    )
    args = p.parse_args(argv)
    if args.format == "longmemeval" and args.categories == ["1", "2", "3", "4"]:
        args.categories = ["all"]
    samples, _ = load(args.path, args.format)
    categories = None if args.categories == ["all"] else args.categories
    written = 0
    with args.out.open("w", encoding="utf-8") as out:
        for line in eval_lines(samples, categories):
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            written += len(line["questions"])
    print(f"{args.out}: {len(samples)} conversations, {written} questions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
