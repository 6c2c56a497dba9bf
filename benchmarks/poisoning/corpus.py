"""The poisoning corpora: reading them, and the memory each entry becomes.

An entry is one memory (``text``) or two memories of the same user
(``parts``, a split payload or a benign pair). :func:`stored` is the text
auto-store keeps for a turn that asked it (``Q: …\\nA: …``), which is what
the gate sees in a real store.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
HELDOUT = HERE / "heldout.yaml"
TUNING = HERE / "tuning.yaml"
BLIND = HERE / "blind.yaml"
EARLIER = ROOT / "tests" / "data" / "memory_poisoning.yaml"
# The earlier corpus's forged framing is neutralised by the memory block's
# quoting, not by the detector: those entries are not detector examples.
FRAMING_KINDS = frozenset({"forged-line", "forged-header"})
ACK = "Noted."


@attrs.frozen(kw_only=True)
class Entry:
    id: str
    poisoned: bool
    klass: str
    lang: str
    memories: tuple[str, ...]


def _entries(path: Path, *, earlier: bool = False) -> Iterator[Entry]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    for poisoned, key in ((True, "payloads"), (False, "benign")):
        for i, raw in enumerate(data[key]):
            if earlier and raw.get("kind") in FRAMING_KINDS:
                continue
            parts = tuple(raw["parts"]) if "parts" in raw else (raw["text"],)
            klass = raw.get("class") or raw.get("kind") or ("earlier" if poisoned else "benign")
            yield Entry(
                id=str(raw.get("id", f"{path.stem}-{key}-{i}")),
                poisoned=poisoned,
                klass=str(klass),
                lang=str(raw.get("lang", "en")),
                memories=parts,
            )


def heldout() -> tuple[Entry, ...]:
    """The held-out corpus: scored, never trained or tuned on."""
    return tuple(_entries(HELDOUT))


def blind() -> tuple[Entry, ...]:
    """The blind corpus: written after the held-out corpus was first
    scored, scored only for the final figures."""
    return tuple(_entries(BLIND))


def tuning() -> tuple[Entry, ...]:
    """The tuning corpus, the project's earlier poisoning corpus, and the
    templated examples of :mod:`benchmarks.poisoning.generate`."""
    from benchmarks.poisoning.generate import (
        generated,
        generated_english,
        generated_plain,
        generated_turns,
    )

    return (
        *_entries(TUNING),
        *_entries(EARLIER, earlier=True),
        *generated(),
        *generated_english(),
        *generated_turns(),
        *generated_plain(),
    )


def stored(text: str, answer: str = ACK) -> str:
    """The memory auto-store keeps for a turn that asked ``text`` (a text
    that is already a turn, ``Q: …``, as it is)."""
    return text if text.startswith("Q: ") else f"Q: {text}\nA: {answer}"
