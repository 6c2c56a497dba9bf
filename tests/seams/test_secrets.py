"""Credentials in a seam's URL never reach any output: stderr, stdout, the
report, the trace, an exception's text or ``repr``, a log record.

A real server on loopback answers (or fails, echoing back what it was
sent, as some servers do); every output of the run is grepped for the
password, the query token and the API key.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from memrules import load_config
from memrules._cli.main import main
from memrules._core.errors import MemrulesError
from memrules._io.http import JSONClient
from memrules.seams.embedders import openai_embedder
from memrules.seams.summarizers import openai_summarizer

PASSWORD = "pw-7Hq2s3cr3t"
TOKEN = "tok-Zx81q9"
KEY = "sk-envkey-55aa"
SECRETS = (PASSWORD, TOKEN, KEY)

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "The vault is in Lisbon."},
    {"role": "assistant", "content": "noted"},
    {"role": "user", "content": "The key rotates on friday."},
    {"role": "assistant", "content": "noted"},
    {"role": "user", "content": "Where is the vault?"},
]


class Echo(ThreadingHTTPServer):
    """Answers ``chat/completions`` and ``embeddings`` under any path and
    query; with ``fail`` set, HTTP 500 with a body echoing the request line
    and its Authorization header (the worst a server can do)."""

    daemon_threads = True

    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.seen: list[dict[str, str]] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    server: Echo

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.server.seen.append({"path": self.path, **dict(self.headers)})
        if self.server.fail:
            status = 500
            payload: Any = {"error": f"refused {self.path} {self.headers.get('Authorization')}"}
        elif self.path.split("?")[0].endswith("/embeddings"):
            status = 200
            data = [{"index": i, "embedding": [1.0, float(i)]} for i, _ in enumerate(body["input"])]
            payload = {"data": data}
        else:
            status = 200
            payload = {"choices": [{"message": {"content": "- user: the vault is in Lisbon"}}]}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(params=["failing", "succeeding"])
def server(request: pytest.FixtureRequest) -> Iterator[Echo]:
    httpd = Echo(fail=request.param == "failing")
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def secret_url(port: int) -> str:
    return f"http://ops:{PASSWORD}@127.0.0.1:{port}/v1?api_key={TOKEN}&model=m"


def assert_clean(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} appears in {where}: {text[:2000]}"


def test_redact_url_masks_userinfo_and_key_like_query_values() -> None:
    from memrules._core.redaction import redact_text, redact_url

    assert redact_url("http://u:p@h:1/v1?api_key=k&model=m") == (
        "http://u:***@h:1/v1?api_key=***&model=m"
    )
    assert redact_url("https://TOKEN@h/v1") == "https://***@h/v1"
    assert redact_url("http://h/v1?access_token=t&X-Amz-Signature=s") == (
        "http://h/v1?access_token=***&X-Amz-Signature=***"
    )
    assert redact_url("http://h/v1?model=m") == "http://h/v1?model=m"
    assert redact_url("http://[::1") == "http://***"
    assert redact_text("cannot reach http://u:p@h/v1: refused.") == (
        "cannot reach http://u:***@h/v1: refused."
    )


def test_no_output_of_a_compact_run_holds_a_url_secret(
    server: Echo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SECRETS_TEST_KEY", KEY)
    config = tmp_path / "c.yaml"
    config.write_text(
        "context_window_tokens: 1000\nmax_messages: 3\n"
        "summarizer:\n  type: openai\n"
        f"  base_url: '{secret_url(server.port)}'\n"
        "  model: m\n  api_key_env: SECRETS_TEST_KEY\n  retries: 0\n"
        "strategies:\n  - type: summarize\n    turns: 1\n",
        encoding="utf-8",
    )
    source = tmp_path / "in.json"
    source.write_text(json.dumps(MESSAGES), encoding="utf-8")
    report, trace = tmp_path / "report.json", tmp_path / "trace.jsonl"
    caplog.set_level(logging.DEBUG)
    status = main(
        [
            "compact",
            "--config",
            str(config),
            "--report",
            str(report),
            "--trace",
            str(trace),
            "--no-progress",
            str(source),
        ]
    )
    out, err = capsys.readouterr()
    for where, text in (
        ("stdout", out),
        ("stderr", err),
        ("the report", report.read_text(encoding="utf-8")),
        ("the trace", trace.read_text(encoding="utf-8")),
        ("the log", "\n".join(r.getMessage() for r in caplog.records)),
    ):
        assert_clean(where, text)
    assert status == 0
    assert server.seen, "the summarizer never reached the server"
    assert ("HTTP 500" in err) is server.fail  # the failure is still said, and where
    if server.fail:
        assert "http://ops:***@127.0.0.1" in err
    # The password and key still reach the server, as headers: never in the URL.
    assert server.seen[0]["Authorization"] == f"Bearer {KEY}"
    assert PASSWORD not in server.seen[0]["path"]
    pipeline_text = repr(load_config(config))
    assert_clean("the config's repr", pipeline_text)
    status = main(["replay", "--no-progress", str(trace)])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert_clean("the replay's output", out + err)


def test_seam_errors_and_reprs_hold_no_url_secret(
    server: Echo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRETS_TEST_KEY", KEY)
    url = secret_url(server.port)
    summarizer = openai_summarizer(base_url=url, model="m", retries=0)
    embedder = openai_embedder(base_url=url, model="e", retries=0)
    client = JSONClient(base_url=url, api_key_env="SECRETS_TEST_KEY", retries=0)
    for seam in (summarizer, embedder, client):
        assert_clean("a repr", repr(seam))
    assert_clean("the embedder's identity", json.dumps(embedder.identity))
    from memrules import Message, Text

    conversation = (Message(role="user", parts=(Text(text="hello there"),)),)
    calls = (
        lambda: summarizer.summarize(conversation),
        lambda: embedder.embed(["a", "b"]),
        lambda: client.post("chat/completions", {"x": 1}),
    )
    for call in calls:
        try:
            call()
        except MemrulesError as exc:
            assert server.fail
            for text in (str(exc), repr(exc), str(getattr(exc, "url", ""))):
                assert_clean("an error", text)
        else:
            assert not server.fail
    assert server.seen
    # Without an API key, the URL's password is sent as Basic auth.
    assert any(s.get("Authorization", "").startswith("Basic ") for s in server.seen)


def test_a_bad_url_in_a_config_error_is_masked(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        f"summarizer: {{type: openai, base_url: 'ftp://ops:{PASSWORD}@h/v1', model: m}}\n"
        "strategies: []\n",
        encoding="utf-8",
    )
    with pytest.raises(MemrulesError) as caught:
        load_config(config)
    assert "base_url" in str(caught.value)
    assert_clean("a config error", str(caught.value))


def test_store_reprs_and_errors_hold_no_url_secret() -> None:
    """A server store's URL shows masked in its repr, its config errors and
    the errors of a failed call (here: nothing listens on the port)."""
    pytest.importorskip("qdrant_client")
    from memrules._core.errors import StoreError
    from memrules._core.seam_records import Scope
    from memrules.seams.qdrant import qdrant_store

    class Constant:
        dimension = 4
        identity: ClassVar[dict[str, Any]] = {"model": "constant", "dimension": 4}

        def embed(self, texts: Any) -> list[list[float]]:
            return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    url = "http://ops:hunter2@127.0.0.1:9/?api_key=k3y"
    store = qdrant_store(url=url, collection="c", embedder=Constant())
    with pytest.raises(StoreError) as caught:
        store.search("where", k=1, scope=Scope(user="u"))
    with pytest.raises(MemrulesError) as bad:
        qdrant_store(url=url, path="/tmp/x", embedder=Constant())
    for text in (repr(store), str(caught.value), repr(caught.value), str(bad.value)):
        assert "hunter2" not in text
        assert "k3y" not in text
    assert "127.0.0.1" in repr(store)
