"""Every HTTP seam call ends: retries and timeouts have maxima, and one
total time bounds a call however often a server answers 500 or however
slowly it answers (a real server on loopback, tests/support/chat_server.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from memrules import ConfigError, load_config
from memrules._io.http import (
    MAX_RETRIES,
    EndpointStatusError,
    EndpointTimeoutError,
    JSONClient,
)
from tests.support.chat_server import ChatServer

FOREVER = [500] * 100_000


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("no_proxy", "*")
    monkeypatch.setenv("NO_PROXY", "*")


def test_a_server_answering_500_forever_costs_at_most_the_total_time() -> None:
    with ChatServer(fail=FOREVER) as server:
        client = JSONClient(
            base_url=server.url,
            retries=MAX_RETRIES,
            backoff=0.2,
            max_backoff=0.4,
            total_timeout=1.5,
        )
        start = time.monotonic()
        with pytest.raises(EndpointStatusError) as caught:
            client.post("chat/completions", {"x": 1})
        elapsed = time.monotonic() - start
    assert elapsed < 1.5 + 0.5, elapsed
    assert "HTTP 500" in str(caught.value)
    assert "total_timeout 1.5 s" in str(caught.value)
    assert 2 <= len(server.requests) <= MAX_RETRIES + 1


def test_the_awaited_call_keeps_the_same_total_time() -> None:
    with ChatServer(fail=FOREVER) as server:
        client = JSONClient(
            base_url=server.url,
            retries=MAX_RETRIES,
            backoff=0.2,
            max_backoff=0.4,
            total_timeout=1.5,
        )
        start = time.monotonic()
        with pytest.raises(EndpointStatusError):
            asyncio.run(client.post_async("chat/completions", {"x": 1}))
        elapsed = time.monotonic() - start
    assert elapsed < 1.5 + 0.5, elapsed


@pytest.mark.parametrize("awaited", [False, True])
def test_a_slow_server_is_cut_at_the_total_time_not_the_attempt_timeout(awaited: bool) -> None:
    with ChatServer(delay=4.0) as server:
        client = JSONClient(base_url=server.url, timeout=30.0, total_timeout=1.0)
        start = time.monotonic()
        call = (
            (lambda: asyncio.run(client.post_async("chat/completions", {"x": 1})))
            if awaited
            else (lambda: client.post("chat/completions", {"x": 1}))
        )
        with pytest.raises(EndpointTimeoutError) as caught:
            call()
        elapsed = time.monotonic() - start
    assert elapsed < 2.0, elapsed
    assert "total_timeout 1 s" in str(caught.value)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("retries", "99999999999", "retries=99999999999 must be a whole number from 0 to 10"),
        ("timeout_s", "1e9", "at most 600"),
        ("api_key_env", "'A B'", "api_key_env='A B' must name an environment variable"),
        ("api_key_env", "'KEY=x'", "must name an environment variable"),
        ("api_key_env", "''", "must name an environment variable"),
    ],
)
def test_unbounded_or_unusable_settings_are_config_errors_with_file_path_and_line(
    tmp_path: Path, key: str, value: str, words: str
) -> None:
    config = tmp_path / "seams.yaml"
    config.write_text(
        "strategies: []\nsummarizer:\n  type: openai\n  base_url: http://127.0.0.1:9/v1\n"
        f"  model: m\n  {key}: {value}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert str(caught.value).startswith(f"{config}:6: summarizer.{key}: "), str(caught.value)
    assert words in str(caught.value)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"retries": MAX_RETRIES + 1}, "from 0 to 10"),
        ({"timeout": 601.0}, "timeout=601.0 must be at most 600"),
        ({"total_timeout": 3601.0}, "at most 3600"),
        ({"total_timeout": 0}, "above 0"),
        ({"api_key_env": "A B"}, "must name an environment variable"),
    ],
)
def test_the_client_refuses_unbounded_settings(changes: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        JSONClient(base_url="http://127.0.0.1:9/v1", **changes)  # type: ignore[arg-type]
    assert words in str(caught.value)
