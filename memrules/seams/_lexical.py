"""Lexical (BM25) vectors for stores that take sparse vectors (Qdrant).

A text becomes a sparse vector: each term's index is a stable hash of it,
its value BM25's term-frequency part, ``tf * (k1 + 1) / (tf + k1 * (1 - b +
b * length / AVG_TOKENS))``. The store multiplies in the inverse document
frequency itself (Qdrant's ``IDF`` modifier), over everything it holds, so
no index of every record lives in Python. A query's vector gives each
distinct term weight 1. ``AVG_TOKENS`` stands in for the corpus's average
length in terms, which the store does not tell (a chat turn indexed with
the message before it and its day holds about 32); Milvus's BM25 function
uses the true one, so the two backends rank alike but not identically.

Tokens are lower-cased runs of letters, digits and ``_`` (``invoice_7``,
``py``); Chinese, Japanese and Korean characters are one token each. The
terms indexed are the tokens less English stop words (NLTK's classic list:
"what", "did", "the" would otherwise match every message), each cut to a
light stem (`stem`: "paintings", "painted" and "painting" are one
term). On a public multi-session chat benchmark the two lifted BM25 from
49.9% to 58.1% of the questions answered within the first five.

A message indexed with its neighbours (`IndexContext`:
the lines from the first ``(before) `` or ``(after) `` line on) counts
their terms at `NEIGHBOUR_WEIGHT` of its own: the message before a
reply helps find the reply, but a message should not rank first for what
its neighbour said. On the same benchmark, a weight of 0.3 against 1
lifted hybrid search from 66.7% to 71.4% of the questions answered within
the first five.

A query also searches with its tokens as written (stop words left out), so
records indexed before terms were stemmed are still found by their words.
"""

from __future__ import annotations

import hashlib
import re

from memrules._core.seam_records import NEIGHBOUR_LABELS

__all__ = [
    "AVG_TOKENS",
    "K1",
    "NEIGHBOUR_WEIGHT",
    "STOP_WORDS",
    "B",
    "document_vector",
    "query_vector",
    "stem",
    "term_weights",
    "terms",
    "tokens",
]

K1 = 1.2
B = 0.75
AVG_TOKENS = 32
NEIGHBOUR_WEIGHT = 0.3
"""What a neighbour's term counts for, against the message's own (1)."""

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")

STOP_WORDS = frozenset(
    [
        "i",
        "me",
        "my",
        "myself",
        "we",
        "our",
        "ours",
        "ourselves",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "her",
        "hers",
        "herself",
        "it",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "what",
        "which",
        "who",
        "whom",
        "this",
        "that",
        "these",
        "those",
        "am",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "having",
        "do",
        "does",
        "did",
        "doing",
        "a",
        "an",
        "the",
        "and",
        "but",
        "if",
        "or",
        "because",
        "as",
        "until",
        "while",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "against",
        "between",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "to",
        "from",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
        "again",
        "further",
        "then",
        "once",
        "here",
        "there",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "s",
        "t",
        "can",
        "will",
        "just",
        "don",
        "should",
        "now",
    ]
)
"""NLTK's classic English stop words (127), left out of the terms."""

_UNDOUBLE = frozenset("bdfgkmnprt")


def stem(token: str) -> str:
    """A light English stem of a lower-cased token: a plural ending, then
    an ``-ing`` or ``-ed`` ending, cut (``paintings`` → ``paint``,
    ``stopped`` → ``stop``, ``stories`` → ``story``); short words, digits
    and other scripts are kept as they are. Deliberately small: it merges
    the forms a question and an answer most often differ by, and never
    maps two common words of different meaning to one term the way a
    stronger stemmer can (``university``/``universe``).

    >>> [stem(t) for t in ("paintings", "painted", "stopped", "stories", "class", "bus")]
    ['paint', 'paint', 'stop', 'story', 'class', 'bus']
    """
    if not token.isascii() or not token.isalpha():
        return token
    word = token
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 4 and word.endswith("es") and word[-3] in "sxzh":
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for ending in ("ing", "ed"):
        if len(word) - len(ending) >= 3 and word.endswith(ending):
            base = word[: -len(ending)]
            if ending == "ed" and base.endswith("i"):
                base = base[:-1] + "y"
            if len(base) > 3 and base[-1] == base[-2] and base[-1] in _UNDOUBLE:
                base = base[:-1]
            word = base
            break
    return word


def tokens(text: str) -> list[str]:
    """The lexical tokens of ``text``, lower-cased, in order."""
    return _WORD.findall(text.lower())


def terms(text: str) -> list[str]:
    """The terms ``text`` is indexed by, in order: its tokens less stop
    words, each stemmed."""
    return [stem(t) for t in tokens(text) if t not in STOP_WORDS]


def _own_and_neighbours(text: str) -> tuple[str, str]:
    """``text`` cut where its first neighbour line starts (see
    `NEIGHBOUR_LABELS`)."""
    found = [i for i in (text.find("\n" + label) for label in NEIGHBOUR_LABELS) if i >= 0]
    cut = min(found, default=-1)
    return (text, "") if cut < 0 else (text[:cut], text[cut:])


def term_weights(text: str) -> dict[str, float]:
    """Each term of ``text`` with how much it counts: 1 for each time it
    occurs in the message's own text and day, `NEIGHBOUR_WEIGHT` for
    each time in a neighbour's line. Their sum is the text's length.

    >>> term_weights("Caroline: Yes, last week!\\n(before) Melanie: Did you go?")
    {'caroline': 1.0, 'yes': 1.0, 'last': 1.0, 'week': 1.0, 'melanie': 0.3, 'go': 0.3}
    """
    own, neighbours = _own_and_neighbours(text)
    weights: dict[str, float] = {}
    for part, weight in ((own, 1.0), (neighbours, NEIGHBOUR_WEIGHT)):
        for term in terms(part):
            weights[term] = weights.get(term, 0.0) + weight
    return weights


def _index(token: str) -> int:
    digest = hashlib.blake2b(token.encode("utf-8", "replace"), digest_size=4).digest()
    return int.from_bytes(digest, "big")


def _vector(weights: dict[int, float]) -> tuple[list[int], list[float]]:
    indices = sorted(weights)
    return indices, [weights[i] for i in indices]


def document_vector(text: str) -> tuple[list[int], list[float]]:
    """The sparse vector a stored text is indexed by: (indices, values),
    each term's saturated `term_weights`."""
    counted = term_weights(text)
    scale = K1 * (1 - B + B * sum(counted.values()) / AVG_TOKENS)
    weights: dict[int, float] = {}
    for term, tf in counted.items():
        index = _index(term)
        weights[index] = weights.get(index, 0.0) + tf * (K1 + 1) / (tf + scale)
    return _vector(weights)


def query_vector(text: str) -> tuple[list[int], list[float]]:
    """The sparse vector a query searches with: weight 1 per distinct term,
    and per distinct token as written that is not a stop word."""
    words = {t for t in tokens(text) if t not in STOP_WORDS}
    return _vector({_index(w): 1.0 for w in words | {stem(w) for w in words}})
