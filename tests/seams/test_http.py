"""The JSON-over-HTTP client (memrules._io.http), against a real server on
loopback (tests/support/chat_server.py) that can fail the way real servers do."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from memrules import ConfigError, MemrulesError
from memrules._io.http import (
    EndpointError,
    EndpointStatusError,
    EndpointTimeoutError,
    EndpointUnreachableError,
    JSONClient,
    MalformedReplyError,
)
from tests.support.chat_server import ChatServer

KEY = "sk-test-0123456789"


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("no_proxy", "*")
    monkeypatch.setenv("NO_PROXY", "*")


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def client(url: str, **changes: Any) -> tuple[JSONClient, list[float]]:
    """A client whose waits are recorded instead of slept."""
    waits: list[float] = []
    return JSONClient(base_url=url, sleep=waits.append, **changes), waits


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_post_json_to_a_path_and_get_json_back(server: ChatServer) -> None:
    http, waits = client(server.url)
    assert http.post("echo", {"a": [1, "é"], "b": None}) == {"echo": {"a": [1, "é"], "b": None}}
    assert http.post("/echo", {}) == {"echo": {}}  # a leading slash is the same path
    assert http.get("models")["data"][0]["id"] == "loopback-model"
    assert [(r.method, r.path) for r in server.requests] == [
        ("POST", "/v1/echo"),
        ("POST", "/v1/echo"),
        ("GET", "/v1/models"),
    ]
    assert server.requests[0].headers["Content-Type"] == "application/json"
    assert waits == []


def test_retries_429_and_5xx_with_backoff(server: ChatServer) -> None:
    server.fail = [503, 429, 502]
    http, waits = client(server.url, retries=3, backoff=0.25, max_backoff=0.75)
    assert http.post("echo", {"n": 1}) == {"echo": {"n": 1}}
    assert len(server.requests) == 4
    assert waits == [0.25, 0.5, 0.75]  # doubled each time, capped


def test_retry_after_is_honoured_within_the_cap() -> None:
    with ChatServer(fail=[429, 429], retry_after="3") as running:
        http, waits = client(running.url, retries=2, max_backoff=2.0)
        assert http.post("echo", {}) == {"echo": {}}
    assert waits == [2.0, 2.0]


def test_retries_run_out_into_a_status_error() -> None:
    with ChatServer(fail=[500, 500, 500]) as running:
        http, _ = client(running.url, retries=2, backoff=0.0)
        with pytest.raises(EndpointStatusError) as info:
            http.post("echo", {})
        assert len(running.requests) == 3
    error = info.value
    assert error.status == 500
    assert "planned 500" in error.body
    assert str(error).startswith(f"{running.url}/echo answered HTTP 500")
    assert "\n" not in str(error)
    assert isinstance(error, MemrulesError)
    assert isinstance(error, ConnectionError)


def test_other_statuses_are_not_retried() -> None:
    with ChatServer(fail=[404, 404]) as running:
        http, waits = client(running.url, retries=3)
        with pytest.raises(EndpointStatusError) as info:
            http.get("models")
        assert len(running.requests) == 1
    assert info.value.status == 404
    assert waits == []


def test_unreachable_is_its_own_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    http, waits = client(url, retries=3)
    with pytest.raises(EndpointUnreachableError) as info:
        http.post("echo", {})
    assert str(info.value).startswith(f"cannot reach {url}/echo")
    assert info.value.url == f"{url}/echo"
    assert waits == []  # connection failures are the caller's to retry


def test_a_slow_endpoint_times_out() -> None:
    with ChatServer(delay=2.0) as running:
        http, _ = client(running.url, timeout=0.2, retries=0)
        with pytest.raises(EndpointTimeoutError) as info:
            http.post("echo", {})
    assert isinstance(info.value, TimeoutError)
    assert isinstance(info.value, EndpointError)
    assert "did not answer within 0.2 s" in str(info.value)


def test_a_reply_that_is_not_json_is_malformed() -> None:
    with ChatServer(raw=b"<html>oops</html>") as running:
        http, _ = client(running.url)
        with pytest.raises(MalformedReplyError) as info:
            http.post("chat/completions", {"messages": []})
    assert isinstance(info.value, ValueError)
    assert "did not answer JSON: <html>oops</html>" in str(info.value)


def test_api_key_comes_from_the_environment_and_is_never_shown(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMRULES_TEST_KEY", KEY)
    http, _ = client(server.url, api_key_env="MEMRULES_TEST_KEY")
    http.post("echo", {})
    assert server.requests[-1].headers["Authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(http)
    monkeypatch.delenv("MEMRULES_TEST_KEY")
    http.post("echo", {})
    assert "Authorization" not in server.requests[-1].headers


def test_a_key_the_server_echoes_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMRULES_TEST_KEY", KEY)

    def refuse(messages: list[dict[str, Any]]) -> str:
        raise PermissionError(f"Incorrect API key provided: {KEY}")

    with ChatServer(reply=refuse) as running:
        http, _ = client(running.url, api_key_env="MEMRULES_TEST_KEY", retries=0)
        with pytest.raises(EndpointStatusError) as info:
            http.post("chat/completions", {"messages": []})
    assert "Incorrect API key provided: ***" in str(info.value)
    assert KEY not in str(info.value)
    assert KEY not in info.value.body


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"base_url": "not-a-url"}, "base_url='not-a-url' must be an http:// or https:// URL"),
        ({"base_url": "ftp://host/v1"}, "must be an http:// or https:// URL"),
        ({"base_url": "http:///v1"}, "with a host"),
        ({"base_url": "http://host:port/v1"}, "a port that is not a number"),
        ({"timeout": 0}, "timeout=0 must be a number above 0"),
        ({"retries": -1}, "retries=-1 must be a whole number"),
        ({"backoff": -1.0}, "backoff=-1.0 must be a number of at least 0"),
    ],
)
def test_bad_settings_are_config_errors(changes: dict[str, Any], words: str) -> None:
    settings = {"base_url": "http://127.0.0.1:1/v1", **changes}
    with pytest.raises(ConfigError) as info:
        JSONClient(**settings)
    assert words in str(info.value)
