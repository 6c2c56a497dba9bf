"""Writes batched across conversations and calls: ``Pipeline.remember_many``
embeds every conversation's new texts in one model call, and calls of
``MessageStore.add`` that arrive while another writes are embedded and
written together, each call still all or nothing on its own. Real stores,
the real local model, counted."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from memrules import MemoryConfig, Pipeline
from memrules._core.errors import ConfigError, EmbedderError
from memrules._core.messages import Message, message
from memrules._core.seam_records import Scope, StoredMessage, build_records
from memrules.seams import Embedder, MessageStore, Seams
from tests.support.counted_store import counted, counted_store
from tests.support.seams import CLIENT_BACKENDS, maker


def conversation(n: int, *, poison: bool = False) -> tuple[Message, ...]:
    said = "POISON" if poison else f"number {n}"
    return (
        message("user", f"Conversation {n}: where does my sister live? ({said})"),
        message("assistant", f"In Porto, since spring {n}."),
        message("user", f"And the deploy key of project {n}?"),
        message("assistant", f"It is in vault/prod/key-{n}."),
    )


@pytest.fixture(params=CLIENT_BACKENDS)
def store(
    request: pytest.FixtureRequest, tmp_path: Path, local_embedder: Embedder
) -> Iterator[MessageStore]:
    yield from counted_store(request.param, tmp_path, local_embedder)


def test_remember_many_embeds_every_conversation_in_one_model_call(store: MessageStore) -> None:
    pipeline = Pipeline.from_config(MemoryConfig(), seams=Seams(store=store))
    history = {f"import-{n}": conversation(n) for n in range(8)}
    writes = pipeline.remember_many(history, user="ana", tenant="acme")
    assert len(counted(store).calls) == 1
    assert len(counted(store).calls[0]) == 32
    for (cid, messages), write in zip(history.items(), writes, strict=True):
        scope = Scope(conversation_id=cid, user="ana", tenant="acme")
        assert write.added == tuple(r.id for r in build_records(messages, scope=scope))
        assert write.existing == ()
    # The same records as one remember per conversation, so nothing is written twice.
    write = pipeline.remember(
        history["import-3"], conversation_id="import-3", user="ana", tenant="acme"
    )
    assert write.added == ()
    again = pipeline.remember_many(list(history.items()), user="ana", tenant="acme")
    assert [w.existing for w in again] == [w.added for w in writes]
    assert len(counted(store).calls) == 1  # nothing embedded again
    hits = pipeline.recall("deploy key of project 5", k=1, user="ana", tenant="acme")
    assert hits[0].conversation_id == "import-5"


def test_remember_many_is_all_or_nothing(store: MessageStore) -> None:
    pipeline = Pipeline.from_config(MemoryConfig(), seams=Seams(store=store))
    history = [(f"c{n}", conversation(n, poison=n == 2)) for n in range(4)]
    with pytest.raises(EmbedderError):
        pipeline.remember_many(history, user="ana", tenant="acme")
    assert store.scan(Scope(user="ana", tenant="acme")) == ()
    with pytest.raises(ConfigError, match="given twice"):
        pipeline.remember_many([("c1", conversation(1)), ("c1", conversation(3))])
    assert pipeline.remember_many({}) == ()


def _add_in_threads(
    store: MessageStore, first: Sequence[StoredMessage], others: list[Sequence[StoredMessage]]
) -> list[Any]:
    """``store.add(first)`` in a thread, held inside the model until the
    ``others``, each added from a thread of its own, are waiting; what each
    call answered or raised, in order."""
    embedder = counted(store)
    embedder.gate = threading.Event()
    answers: list[Any] = [None] * (1 + len(others))

    def add(n: int, records: Sequence[StoredMessage]) -> None:
        try:
            answers[n] = store.add(records)
        except Exception as exc:
            answers[n] = exc

    threads = [threading.Thread(target=add, args=(0, first))]
    threads[0].start()
    assert embedder.entered.wait(30)
    for n, records in enumerate(others, start=1):
        threads.append(threading.Thread(target=add, args=(n, records)))
        threads[-1].start()
    # Each of the others waits for the first call's write to end (in the
    # store's queue of calls to write).
    deadline = time.monotonic() + 10
    while len(getattr(store, "_queue", ())) < len(others) and time.monotonic() < deadline:
        time.sleep(0.01)
    embedder.gate.set()
    for thread in threads:
        thread.join(30)
    return answers


def records(n: int, *, user: str = "ana", poison: bool = False) -> tuple[StoredMessage, ...]:
    scope = Scope(conversation_id=f"c{n}", user=user, tenant="acme")
    return build_records(conversation(n, poison=poison), scope=scope)


def test_calls_that_wait_are_embedded_in_one_model_call(store: MessageStore) -> None:
    store.add(records(99))  # the collection exists
    counted(store).calls.clear()
    others = [records(n, user=f"user-{n}") for n in range(1, 5)]
    answers = _add_in_threads(store, records(0), others)
    calls = counted(store).calls
    assert len(calls) == 2, [len(c) for c in calls]  # the first call, then the four together
    assert sorted(calls[1]) == sorted(r.text for group in others for r in group)
    for group, write in zip([records(0), *others], answers, strict=True):
        assert write.added == tuple(r.id for r in group)
        assert write.durable is not False or store.engine == "qdrant"
    for n in range(1, 5):
        held = store.scan(Scope(user=f"user-{n}", tenant="acme"))
        assert {h.id for h in held} == {r.id for r in others[n - 1]}


def test_a_call_that_fails_in_a_group_fails_alone(store: MessageStore) -> None:
    store.add(records(99))
    counted(store).calls.clear()
    good, bad, twice = records(1), records(2, poison=True), records(1)
    answers = _add_in_threads(store, records(0), [good, bad, twice])
    assert isinstance(answers[2], EmbedderError)
    assert answers[1].added == tuple(r.id for r in good)
    assert answers[3].added == ()  # the same records: the first call added them
    assert answers[3].existing == tuple(r.id for r in good)
    assert {h.id for h in store.scan(Scope(user="ana", tenant="acme"))} == {
        r.id for r in (*records(99), *records(0), *good)
    }


def test_a_qdrant_file_commits_a_write_once_not_once_per_point(
    tmp_path: Path, local_embedder: Embedder
) -> None:
    store = maker("qdrant-disk", tmp_path, local_embedder)()
    store.add(records(99))  # the collection exists
    connection = store._backend._client._client.collections[store.collection].storage.storage  # type: ignore[attr-defined]
    statements: list[str] = []
    connection.set_trace_callback(statements.append)
    write = store.add([r for n in range(10) for r in records(n)])
    connection.set_trace_callback(None)
    assert len(write.added) == 40
    commits = [s for s in statements if s.strip().upper().startswith("COMMIT")]
    assert len(commits) == 1, len(commits)
    store.close()
    again = maker("qdrant-disk", tmp_path, local_embedder)()  # the same directory
    assert len(again.scan(Scope(user="ana", tenant="acme"))) == 44
    again.close()
