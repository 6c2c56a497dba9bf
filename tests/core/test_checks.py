"""The shared argument checks, as the parts that take such arguments raise them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from memrules import ConfigError, EncodingError, MemoryConfig, MemoryPlugin, TiktokenCounter
from memrules._core.checks import check_whole, is_whole
from memrules._io.http import JSONClient
from memrules.seams import (
    extractive_summarizer,
    local_embedder,
    milvus_store,
    openai_embedder,
    openai_summarizer,
    qdrant_store,
    valkey_store,
)
from memrules.state import InMemoryStateStore

URL = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("value", "minimum", "expected"),
    [(0, 0, True), (3, 1, True), (0, 1, False), (True, 0, False), (1.0, 0, False), ("1", 0, False)],
)
def test_is_whole(value: object, minimum: int, expected: bool) -> None:
    assert is_whole(value, minimum) is expected


def test_check_whole_names_the_argument_as_its_yaml_key() -> None:
    assert check_whole("turns", 4, 1) == 4
    expected = r"turns=0 must be a whole number of at least 1"
    with pytest.raises(ConfigError, match=expected) as caught:
        check_whole("turns", 0, 1)
    assert caught.value.problems[0].yaml_path == "turns"


class _NoEmbedder:
    dimension = 3
    identity: ClassVar[dict[str, Any]] = {}

    def embed(self, texts: Any) -> list[list[float]]:
        raise AssertionError("never called: the arguments are refused first")


MAKERS: dict[str, Callable[..., object]] = {
    "milvus_store": lambda **kw: milvus_store(embedder=_NoEmbedder(), **kw),
    "qdrant_store": lambda **kw: qdrant_store(embedder=_NoEmbedder(), path=":memory:", **kw),
    "valkey_store": lambda **kw: valkey_store(embedder=_NoEmbedder(), **kw),
    "openai_summarizer": lambda **kw: openai_summarizer(base_url=URL, model="m", **kw),
    "openai_embedder": lambda **kw: openai_embedder(base_url=URL, model="m", **kw),
}


@pytest.mark.parametrize("maker", list(MAKERS))
@pytest.mark.parametrize("bad", ["", 7])
def test_every_seam_refuses_an_api_key_env_that_names_no_variable(maker: str, bad: object) -> None:
    with pytest.raises(ConfigError, match="must name an environment variable") as caught:
        MAKERS[maker](api_key_env=bad)
    assert caught.value.problems[0].yaml_path == "api_key_env"


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: local_embedder(batch_size=0), "batch_size"),
        (lambda: extractive_summarizer(max_chars=True), "max_chars"),
        (lambda: openai_summarizer(base_url=URL, model="m", max_tokens=0), "max_tokens"),
        (lambda: JSONClient(base_url=URL, retries=-1), "retries"),
        (lambda: InMemoryStateStore(max_conversations=0), "max_conversations"),
        (lambda: MemoryPlugin(MemoryConfig(), max_conversations=False), "max_conversations"),
    ],
)
def test_whole_number_arguments_are_one_config_error_naming_them(
    make: Callable[[], object], name: str
) -> None:
    with pytest.raises(ConfigError, match=f"{name}=.* must be a whole number") as caught:
        make()
    assert caught.value.problems[0].yaml_path == name


@pytest.mark.parametrize("size", [0, True, 2.0])
def test_a_counter_refuses_a_cache_size_that_is_not_a_whole_number_of_at_least_1(
    size: object,
) -> None:
    with pytest.raises(EncodingError, match="cache_size"):
        TiktokenCounter.for_name("cl100k_base", cache_size=size)  # type: ignore[arg-type]
