"""Valkey lexical search reads ``k`` records (the engine keeps out those
holding no query token) and builds a hit, decoding its stored message, for
only the ``k`` it answers, in the order a full ranking has; hybrid search
decodes only the records fusion keeps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memrules import Message, Text
from memrules._core.seam_records import build_records
from memrules.seams import Embedder, Scope
from memrules.seams import _valkey_backend as valkey_module
from memrules.seams._fusion import reciprocal_rank_fusion
from memrules.seams.valkey import valkey_store
from tests.support.valkey_search import SearchServer, key_prefix, needs_valkey_search

pytestmark = needs_valkey_search

SCOPE = Scope(conversation_id="c1", user="u1", tenant="t1")
SAID = tuple(
    Message(role="user", parts=(Text(text=t),))
    for t in [
        "I went to a pottery class on Sunday.",
        "Pottery is relaxing, the class was small.",
        "The pottery teacher showed us the wheel.",
        "My sister wants to come to pottery next time.",
        "We glazed two pottery bowls in class.",
        "The weather was grey all weekend.",
    ]
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SearchServer]:
    running = SearchServer(data_dir=tmp_path / "data").start()
    yield running
    running.stop()


def test_lexical_search_decodes_only_the_hits_it_answers(
    server: SearchServer,
    tmp_path: Path,
    local_embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decoded: list[str] = []
    real = valkey_module.decode_message

    def counting(text: str) -> Any:
        decoded.append(text)
        return real(text)

    with valkey_store(
        embedder=local_embedder, url=server.url, key_prefix=key_prefix(tmp_path), search="lexical"
    ) as store:
        store.add(build_records(SAID, scope=SCOPE))
        everything = store.search("pottery class", k=len(SAID), scope=SCOPE)
        monkeypatch.setattr(valkey_module, "decode_message", counting)
        top = store.search("pottery class", k=2, scope=SCOPE)
    assert [h.message for h in everything][:2] == [h.message for h in top]
    assert len(everything) == 5  # the weather holds neither term
    assert len(decoded) == 2


def _replies(monkeypatch: pytest.MonkeyPatch, store: Any) -> list[tuple[tuple[Any, ...], Any]]:
    """Every ``FT.SEARCH`` the store's client sends from now on, with its reply."""
    client = store._backend._open()
    real = client.execute_command
    seen: list[tuple[tuple[Any, ...], Any]] = []

    def recording(*args: Any, **options: Any) -> Any:
        reply = real(*args, **options)
        if args[0] == "FT.SEARCH":
            seen.append((args, reply))
        return reply

    monkeypatch.setattr(client, "execute_command", recording)
    return seen


def test_lexical_search_reads_k_records_none_without_a_token(
    server: SearchServer,
    tmp_path: Path,
    local_embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The engine answers only records holding a query token, ranked as
    before (the clause that keeps the others out scores nothing), so a
    search reads ``k`` records, not twice ``k``, and no ``terms`` field."""
    with valkey_store(
        embedder=local_embedder, url=server.url, key_prefix=key_prefix(tmp_path), search="lexical"
    ) as store:
        store.add(build_records(SAID, scope=SCOPE))
        seen = _replies(monkeypatch, store)
        top = store.search("pottery class", k=2, scope=SCOPE)
        everything = store.search("pottery class", k=len(SAID), scope=SCOPE)
    (_, two), (_, six) = seen
    assert two[0] == 5  # the records holding a token: the weather holds neither
    assert len(two) == 1 + 3 * 2  # two records read: id, score, fields each
    assert len(six) == 1 + 3 * 5  # all five that hold a token, and not the weather
    assert all(b"terms" not in reply[3::3][0] for _, reply in seen)
    assert [h.id for h in top] == [h.id for h in everything][:2]
    scores = [h.score for h in everything]
    assert scores == sorted(scores, reverse=True)
    assert scores[-1] > 0
    # both terms outrank one: the clause that keeps records out adds nothing
    assert {h.message for h in everything[:3]} == {SAID[0], SAID[1], SAID[4]}


def test_hybrid_search_decodes_only_the_records_fusion_keeps(
    server: SearchServer,
    tmp_path: Path,
    local_embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hybrid search reads both rankings in their replies, then decodes
    (and answers) only the ``k`` records fusion keeps, the same records
    and scores as fusing the two searches' hits."""
    decoded: list[str] = []
    real = valkey_module.decode_message

    def counting(text: str) -> Any:
        decoded.append(text)
        return real(text)

    with valkey_store(
        embedder=local_embedder, url=server.url, key_prefix=key_prefix(tmp_path), candidates=6
    ) as store:
        store.add(build_records(SAID, scope=SCOPE))
        dense = store.search("pottery class", k=6, scope=SCOPE, mode="dense")
        lexical = store.search("pottery class", k=6, scope=SCOPE, mode="lexical")
        monkeypatch.setattr(valkey_module, "decode_message", counting)
        top = store.search("pottery class", k=2, scope=SCOPE, mode="hybrid")
    assert len(decoded) == 2
    fused = reciprocal_rank_fusion([[h.id for h in dense], [h.id for h in lexical]])[:2]
    assert [(h.id, h.score) for h in top] == fused
    by_id = {h.id: h.message for h in dense}
    assert [h.message for h in top] == [by_id[i] for i, _ in fused]
