"""Valkey lexical search fetches twice ``k`` candidates (a record holding
no query term is dropped as read) and builds a hit, decoding its stored
message, for only the ``k`` it answers, in the order a full ranking has."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memrules import Message, Text
from memrules._core.seam_records import build_records
from memrules.seams import Embedder, Scope
from memrules.seams import valkey as valkey_module
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
