"""What one ``remember`` call costs beside the model: how many round trips
a write takes on a server, what text the model reads for each message, and
that a write is still checked (a record that does not read back fails it).
Real stores, the real local model, counted."""

from __future__ import annotations

import datetime
import itertools
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules import MemoryConfig, Pipeline
from memrules._core.errors import StoreError
from memrules._core.messages import Message, message
from memrules._core.seam_records import DEFAULT_CONTEXT, Scope, StoredMessage, build_records
from memrules.seams import Embedder, MessageStore, Seams
from tests.support.counted_store import counted, counted_store
from tests.support.seams import CLIENT_BACKENDS, HAS_MILVUS, maker
from tests.support.valkey_search import needs_valkey_search

SCOPE = Scope(conversation_id="c1", user="ana", tenant="acme")


def said(role: str, name: str, text: str) -> Message:
    return message(role, text, name=name)


HISTORY = (
    said("user", "Melanie", "Did you end up going to the support group?"),
    said("assistant", "Caroline", "Yes, I went yesterday and it was so powerful."),
    said("user", "Melanie", "That's great! What did you talk about there?"),
    said("assistant", "Caroline", "Mostly about courage, and my new adoption agency."),
)


@pytest.fixture(params=CLIENT_BACKENDS)
def store(
    request: pytest.FixtureRequest, tmp_path: Path, local_embedder: Embedder
) -> Iterator[MessageStore]:
    yield from counted_store(request.param, tmp_path, local_embedder)


# --- what the model reads ----------------------------------------------------------------


def test_remember_embeds_a_conversation_in_one_call_with_its_context(
    store: MessageStore,
) -> None:
    """One model call per conversation, on the texts it is indexed by: the
    message's own line, then the message before it (on the development
    conversations of ``benchmarks/locomo``, leaving the neighbour out of
    what the model reads made ``remember`` faster and hybrid recall lower,
    so the model reads it)."""
    pipeline = Pipeline.from_config(MemoryConfig(), seams=Seams(store=store))
    write = pipeline.remember(HISTORY, conversation_id="c1", user="ana", tenant="acme")
    assert len(write.added) == 4
    (texts,) = counted(store).calls
    records = build_records(HISTORY, scope=SCOPE, context=DEFAULT_CONTEXT)
    assert texts == [r.text for r in records]
    assert texts[1] == (
        "Caroline: Yes, I went yesterday and it was so powerful.\n"
        "(before) Melanie: Did you end up going to the support group?"
    )


# --- round trips to a server ----------------------------------------------------------------


class RoundTrips:
    """Counts what a Valkey client sends: one packed send per command or
    per pipeline, so one per round trip."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import valkey.connection

        self.count = 0
        send = valkey.connection.AbstractConnection.send_packed_command

        def counting(connection: Any, command: Any, check_health: bool = True) -> None:
            self.count += 1
            send(connection, command, check_health)

        monkeypatch.setattr(valkey.connection.AbstractConnection, "send_packed_command", counting)


def records(n: int) -> tuple[StoredMessage, ...]:
    history = (
        message("user", f"Where does my sister live? ({n})"),
        message("assistant", f"In Porto, since spring {n}."),
        message("user", f"And the deploy key of project {n}?"),
        message("assistant", f"It is in vault/prod/key-{n}."),
    )
    return build_records(history, scope=SCOPE)


@needs_valkey_search
def test_a_valkey_write_takes_two_round_trips(
    tmp_path: Path, local_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which records are new, then the write (one transaction), the fsync
    and the read-back of the records it wrote, sent together."""
    store = maker("valkey", tmp_path, local_embedder)()
    store.add(records(0))  # the collection exists
    trips = RoundTrips(monkeypatch)
    write = store.add(records(1))
    assert len(write.added) == 4
    assert write.durable
    assert trips.count == 2
    trips.count = 0
    assert store.add(records(1)).existing == write.added  # nothing new: lookup, fsync
    assert trips.count <= 2
    store.close()


class EngineCalls:
    """The Milvus client a store holds, counting the calls made to the
    engine through it (each one gRPC call to Milvus Lite's server)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.client, name)
        if not callable(found):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return found(*args, **kwargs)

        return counted


@pytest.mark.skipif(not HAS_MILVUS, reason="needs pymilvus")
def test_a_milvus_lite_write_is_one_call_to_the_engine(
    tmp_path: Path, local_embedder: Embedder
) -> None:
    """Once the local index is built, which records are new is the index's
    answer, and the records the upsert answered it wrote are the ones
    read back: one call to the engine per remember, the upsert itself."""
    store = maker("milvus", tmp_path, local_embedder)()
    store.add(records(0))
    store.search("sister", k=3, scope=SCOPE)  # the local index is built
    backend = store._backend  # type: ignore[attr-defined]
    engine = EngineCalls(backend._open())
    backend._client = engine
    write = store.add(records(1))
    assert len(write.added) == 4
    assert engine.calls == ["upsert"]
    engine.calls.clear()
    assert store.add(records(1)).existing == write.added  # nothing new
    assert engine.calls == []
    assert store.holds(write.added) == frozenset(write.added)
    backend._client = engine.client
    store.close()


class DropsTheLast:
    """A real backend whose writes leave out their last record, as a
    server that acknowledged what it did not keep."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.engine = backend.engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def write(self, rows: Sequence[tuple[StoredMessage, list[float]]]) -> None:
        self.backend.write(rows[:-1])


@pytest.mark.parametrize("backend", CLIENT_BACKENDS)
def test_a_record_that_does_not_read_back_fails_the_write(
    backend: str, tmp_path: Path, local_embedder: Embedder
) -> None:
    real = maker(backend, tmp_path, local_embedder)()
    store = MessageStore(
        backend=DropsTheLast(real._backend),  # type: ignore[attr-defined]
        embedder=local_embedder,
        description=repr(real),
    )
    with pytest.raises(StoreError, match="1 of them do not read back"):
        store.add(records(0))
    real.close()


# --- model runs -------------------------------------------------------------------------------


def test_one_conversation_runs_the_model_once(store: MessageStore, local_embedder: Any) -> None:
    """The four messages of one call go through the model in one run:
    padding four short texts to the longest costs less than a second run."""
    model = local_embedder.load()
    runs: list[int] = []
    session = model.session

    class Counting:
        def run(self, names: Any, feeds: dict[str, Any]) -> Any:
            runs.append(len(feeds["input_ids"]))
            return session.run(names, feeds)

    model.session = Counting()
    try:
        pipeline = Pipeline.from_config(MemoryConfig(), seams=Seams(store=store))
        pipeline.remember(HISTORY, conversation_id="c1", user="ana", tenant="acme")
    finally:
        model.session = session
    assert runs == [4]


def test_texts_of_very_different_lengths_run_apart() -> None:
    from memrules.seams.embedders import _batches

    assert _batches([13, 20, 30, 24], 32) == [[0, 1, 3, 2]]
    assert _batches([13, 20, 30, 38], 32) == [[0, 1], [2, 3]]  # 13 padded to 38 costs more
    assert _batches([12, 200, 14], 32) == [[0, 2], [1]]  # a long one is not padded to
    assert _batches([20] * 5, 2) == [[0, 1], [2, 3], [4]]
    many = _batches([10 + n for n in range(100)], 32)
    assert [len(b) for b in many] == [8] * 9 + [7] * 4


def _cost(lengths: Sequence[int], batches: Sequence[Sequence[int]]) -> int:
    from memrules.seams.embedders import _RUN_TOKENS

    return sum(_RUN_TOKENS + len(b) * max(lengths[i] for i in b) for b in batches)


def _least_cost(lengths: Sequence[int], size: int) -> int:
    """The least cost of any split of the sorted lengths into stretches of
    at most ``size``, by trying every split."""
    ordered = sorted(lengths)
    best = None
    for cuts in itertools.product((False, True), repeat=max(0, len(ordered) - 1)):
        runs, run = [], [0]
        for i, cut in enumerate(cuts, start=1):
            if cut:
                runs.append(run)
                run = []
            run.append(i)
        runs.append(run)
        if all(len(r) <= size for r in runs):
            cost = _cost(ordered, runs)
            best = cost if best is None else min(best, cost)
    assert best is not None
    return best


@given(
    lengths=st.lists(st.integers(min_value=3, max_value=256), min_size=1, max_size=9),
    size=st.integers(min_value=1, max_value=9),
)
def test_texts_are_split_into_runs_at_the_least_cost(lengths: list[int], size: int) -> None:
    """Every text in exactly one run of at most ``size``, shortest first,
    and no split of the sorted lengths costs less (a run, plus its texts
    padded to its longest)."""
    from memrules.seams.embedders import _batches

    batches = _batches(lengths, size)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(0 < len(b) <= size for b in batches)
    widths = [lengths[i] for b in batches for i in b]
    assert widths == sorted(widths)
    assert _cost(lengths, batches) == _least_cost(lengths, size)


def _session(turns: int) -> tuple[Message, ...]:
    """A chat session's turns of 6 to 50 words, in a fixed order."""
    words = [
        "we",
        "went",
        "to",
        "the",
        "lake",
        "on",
        "saturday",
        "and",
        "my",
        "sister",
        "brought",
        "her",
        "new",
        "puppy",
        "along",
    ]
    rng = random.Random(7)
    return tuple(
        said(
            ("user", "assistant")[n % 2],
            ("Melanie", "Caroline")[n % 2],
            " ".join(rng.choice(words) for _ in range(rng.randint(6, 50))),
        )
        for n in range(turns)
    )


def test_a_session_of_turns_is_padded_little(store: MessageStore, local_embedder: Any) -> None:
    """Remembering one session of 24 turns of very different lengths (each
    with the turn before it and the day) feeds the model at most 10% more
    tokens than the texts hold, in few runs."""
    model = local_embedder.load()
    fed: list[tuple[int, int]] = []  # (texts, their padded width) of each run
    held: list[int] = []
    session = model.session

    class Counting:
        def run(self, names: Any, feeds: dict[str, Any]) -> Any:
            fed.append(feeds["input_ids"].shape)
            held.append(int(feeds["attention_mask"].sum()))
            return session.run(names, feeds)

    model.session = Counting()
    try:
        pipeline = Pipeline.from_config(MemoryConfig(), seams=Seams(store=store))
        pipeline.remember(
            _session(24),
            conversation_id="c1",
            user="ana",
            tenant="acme",
            session_time=datetime.datetime(2023, 5, 8, tzinfo=datetime.UTC),
        )
    finally:
        model.session = session
    assert sum(n for n, _ in fed) == 24
    assert sum(n * width for n, width in fed) <= 1.10 * sum(held)
    assert len(fed) <= 8
