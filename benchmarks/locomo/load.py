"""Read a multi-session dialogue benchmark into one shape: samples of turns
and questions whose evidence names turns.

Two published formats:

- **LoCoMo** (``data/locomo10.json`` of snap-research/LoCoMo): a list of
  samples, each a ``conversation`` of ``session_N`` turn lists (``speaker``,
  ``dia_id`` like ``D3:7``, ``text``, sometimes ``blip_caption``) with
  ``session_N_date_time``, and ``qa`` items (``question``, ``answer``,
  ``evidence`` dia_ids, ``category`` 1–5). A few evidence entries are
  malformed: two or more ids in one string (``D8:6; D9:17``, ``D9:1 D4:4``),
  an id with a stray colon (``D:11:26``), a bare ``D``, or an id of a turn
  that does not exist. :func:`normalise_evidence` splits and repairs what it
  can and drops the rest, and the :class:`Normalisation` counts each kind,
  so a reader sees how many questions' evidence changed.
- **LongMemEval** (xiaowu0162/LongMemEval, ``longmemeval_s.json`` and kin):
  a list of instances, each its own haystack: ``question_id``,
  ``question_type``, ``question``, ``answer``, ``question_date``,
  ``haystack_session_ids``, ``haystack_dates`` and ``haystack_sessions``
  (lists of ``{"role", "content"}`` turns; an evidence turn carries
  ``"has_answer": true``), and ``answer_session_ids``. A turn's id is
  ``<session id>:<index from 1>``; a question's evidence is its
  ``has_answer`` turns (abstention questions, ``_abs``, have none).

Nothing here imports memrules: the loader only reads the files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

__all__ = [
    "Normalisation",
    "Question",
    "Sample",
    "Turn",
    "load",
    "load_locomo",
    "load_longmemeval",
    "normalise_evidence",
    "parse_locomo_date",
]

_ID = re.compile(r"D:?(\d+):(\d+)")
_SEPARATORS = re.compile(r"[;,\s]+")
_SESSION = re.compile(r"session_(\d+)")


@attrs.frozen(kw_only=True, slots=True)
class Turn:
    """One utterance: its ``id`` (LoCoMo's dia_id), who said it, the text,
    the session it belongs to (its number and date as written), and the
    caption of an image shared with it."""

    id: str
    speaker: str
    text: str
    session: int
    date: str | None = None
    caption: str | None = None


@attrs.frozen(kw_only=True, slots=True)
class Question:
    """A question about one sample: its ``category`` (LoCoMo's 1–5, or
    LongMemEval's question type), the reference answer, and the ids of the
    turns that hold the answer, after normalisation."""

    question: str
    answer: str
    category: int | str
    evidence: tuple[str, ...]


@attrs.frozen(kw_only=True, slots=True)
class Sample:
    """One conversation (LoCoMo) or haystack (LongMemEval): its turns in
    order and the questions asked about it."""

    id: str
    speakers: tuple[str, ...]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@attrs.frozen(kw_only=True, slots=True)
class Normalisation:
    """What :func:`normalise_evidence` did to a file's evidence strings:
    how many there were, how many were one well-formed id, how many held
    several ids (``split``) or one misspelt id (``repaired``), and how many
    ids were dropped: not an id at all (``malformed``) or an id of no turn
    (``missing``). ``examples`` keeps a few of the strings that changed."""

    entries: int = 0
    well_formed: int = 0
    split: int = 0
    repaired: int = 0
    malformed: int = 0
    missing: int = 0
    examples: tuple[str, ...] = ()

    @property
    def dropped(self) -> int:
        return self.malformed + self.missing

    def plus(self, other: Normalisation) -> Normalisation:
        return Normalisation(
            entries=self.entries + other.entries,
            well_formed=self.well_formed + other.well_formed,
            split=self.split + other.split,
            repaired=self.repaired + other.repaired,
            malformed=self.malformed + other.malformed,
            missing=self.missing + other.missing,
            examples=(self.examples + other.examples)[:8],
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "well_formed": self.well_formed,
            "split": self.split,
            "repaired": self.repaired,
            "malformed": self.malformed,
            "missing": self.missing,
            "dropped": self.dropped,
            "examples": list(self.examples),
        }


def normalise_evidence(
    entries: Iterable[object], turn_ids: frozenset[str] | set[str]
) -> tuple[tuple[str, ...], Normalisation]:
    """The turn ids ``entries`` name, in order and each once, and what it
    took: a string is split on ``;``, ``,`` and whitespace, each piece read
    as ``D<session>:<turn>`` (a stray colon after ``D`` and leading zeros
    forgiven), and an id that names none of ``turn_ids`` is dropped."""
    out: list[str] = []
    entries_n = well = split = repaired = malformed = missing = 0
    examples: list[str] = []
    for entry in entries:
        entries_n += 1
        raw = str(entry).strip()
        pieces = [p for p in _SEPARATORS.split(raw) if p]
        changed = False
        if len(pieces) > 1:
            split += 1
            changed = True
        for piece in pieces or [raw]:
            match = _ID.fullmatch(piece)
            if match is None:
                malformed += 1
                changed = True
                continue
            ident = f"D{int(match.group(1))}:{int(match.group(2))}"
            if ident != piece and len(pieces) == 1:
                repaired += 1
                changed = True
            if ident not in turn_ids:
                missing += 1
                changed = True
                continue
            if ident not in out:
                out.append(ident)
        if not changed:
            well += 1
        elif len(examples) < 8:
            examples.append(raw)
    return tuple(out), Normalisation(
        entries=entries_n,
        well_formed=well,
        split=split,
        repaired=repaired,
        malformed=malformed,
        missing=missing,
        examples=tuple(examples),
    )


def parse_locomo_date(text: str | None) -> datetime | None:
    """LoCoMo's session time (``1:56 pm on 8 May, 2023``) as a naive
    datetime, or None when it reads otherwise."""
    if not text:
        return None
    cleaned = re.sub(r"\s*,\s*", ", ", re.sub(r"\s+", " ", text.strip()))
    for pattern in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(cleaned, pattern)
        except ValueError:
            continue
    return None


def _locomo_sample(raw: Mapping[str, Any]) -> tuple[Sample, Normalisation]:
    conversation = raw["conversation"]
    numbers = sorted(
        int(m.group(1))
        for key, value in conversation.items()
        if (m := _SESSION.fullmatch(key)) is not None and isinstance(value, list)
    )
    turns: list[Turn] = []
    for n in numbers:
        date = conversation.get(f"session_{n}_date_time")
        for t in conversation[f"session_{n}"]:
            turns.append(
                Turn(
                    id=str(t["dia_id"]),
                    speaker=str(t["speaker"]),
                    text=str(t.get("text", "")),
                    session=n,
                    date=date,
                    caption=t.get("blip_caption"),
                )
            )
    ids = frozenset(t.id for t in turns)
    total = Normalisation()
    questions: list[Question] = []
    for q in raw.get("qa", ()):
        evidence, done = normalise_evidence(q.get("evidence", ()), ids)
        total = total.plus(done)
        answer = q.get("answer", q.get("adversarial_answer", ""))
        questions.append(
            Question(
                question=str(q["question"]),
                answer=str(answer),
                category=int(q["category"]),
                evidence=evidence,
            )
        )
    speakers = tuple(str(conversation[k]) for k in ("speaker_a", "speaker_b") if k in conversation)
    return (
        Sample(
            id=str(raw["sample_id"]),
            speakers=speakers,
            turns=tuple(turns),
            questions=tuple(questions),
        ),
        total,
    )


def load_locomo(path: str | Path) -> tuple[tuple[Sample, ...], Normalisation]:
    """The samples of a LoCoMo file, and what normalising its evidence did."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    samples: list[Sample] = []
    total = Normalisation()
    for raw in data:
        sample, done = _locomo_sample(raw)
        samples.append(sample)
        total = total.plus(done)
    return tuple(samples), total


def _longmemeval_sample(raw: Mapping[str, Any]) -> Sample:
    session_ids: Sequence[Any] = raw.get("haystack_session_ids") or ()
    dates: Sequence[Any] = raw.get("haystack_dates") or ()
    turns: list[Turn] = []
    evidence: list[str] = []
    for n, session in enumerate(raw["haystack_sessions"], 1):
        sid = str(session_ids[n - 1]) if n - 1 < len(session_ids) else f"session_{n}"
        date = str(dates[n - 1]) if n - 1 < len(dates) else None
        for i, t in enumerate(session, 1):
            ident = f"{sid}:{i}"
            turns.append(
                Turn(
                    id=ident,
                    speaker=str(t["role"]),
                    text=str(t.get("content", "")),
                    session=n,
                    date=date,
                )
            )
            if t.get("has_answer") is True:
                evidence.append(ident)
    question = Question(
        question=str(raw["question"]),
        answer=str(raw.get("answer", "")),
        category=str(raw.get("question_type", "")),
        evidence=tuple(evidence),
    )
    return Sample(
        id=str(raw["question_id"]),
        speakers=("user", "assistant"),
        turns=tuple(turns),
        questions=(question,),
    )


def load_longmemeval(path: str | Path) -> tuple[tuple[Sample, ...], Normalisation]:
    """The instances of a LongMemEval file, one sample each (its own
    haystack and its one question). Nothing needs normalising: the
    evidence is the turns marked ``has_answer``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return tuple(_longmemeval_sample(raw) for raw in data), Normalisation()


def load(path: str | Path, fmt: str = "locomo") -> tuple[tuple[Sample, ...], Normalisation]:
    """:func:`load_locomo` or :func:`load_longmemeval`, by ``fmt``."""
    if fmt == "locomo":
        return load_locomo(path)
    if fmt == "longmemeval":
        return load_longmemeval(path)
    msg = f"format={fmt!r}: expected locomo or longmemeval"
    raise ValueError(msg)
