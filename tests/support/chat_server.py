"""A real OpenAI-compatible chat server on loopback, for tests.

:class:`ChatServer` runs the standard library's HTTP server in a thread,
bound to ``127.0.0.1`` on a free port. It answers ``GET /v1/models`` and
``POST /v1/chat/completions`` deterministically (and ``POST /v1/echo`` with
``{"echo": body}``, and ``POST /v1/embeddings`` with :func:`bag_of_words`
vectors, or what ``embeddings`` answers for the body), with the reply a function
of the messages (the demo's scripted model by default), and records every
request it received, so a test can check what a client really sent over
the wire. It can also misbehave, as real servers do: answer the first
requests with error statuses (``fail=(503, 429)``, with ``retry_after``),
answer with a raw body that is not JSON (``raw``), or wait before answering
(``delay`` seconds).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import attrs

from memrules._adapters import from_openai
from memrules._cli.demo import scripted_reply

Reply = Callable[[list[dict[str, Any]]], str]
Embeddings = Callable[[dict[str, Any]], Any]


def bag_of_words(text: str, dimensions: int = 16) -> list[float]:
    """A deterministic stand-in for an embedding model: word counts hashed
    into ``dimensions`` buckets (the server under test is not a model)."""
    import hashlib

    vector = [0.0] * dimensions
    for word in text.lower().split():
        vector[hashlib.sha256(word.encode()).digest()[0] % dimensions] += 1.0
    return vector


def embeddings_reply(body: dict[str, Any]) -> Any:
    """An OpenAI embeddings reply for ``body``, its data in reverse order
    (as a server may send it: clients must use each item's ``index``)."""
    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
    dimensions = body.get("dimensions", 16)
    data = [
        {"object": "embedding", "index": i, "embedding": bag_of_words(text, dimensions)}
        for i, text in enumerate(inputs)
    ]
    return {"object": "list", "data": data[::-1], "model": body.get("model")}


def scripted(messages: list[dict[str, Any]]) -> str:
    """The demo's scripted model, over OpenAI messages."""
    return scripted_reply(from_openai(messages))


@attrs.frozen(kw_only=True)
class Received:
    """One request as the server got it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class ChatServer:
    """``with ChatServer() as server:`` serves at ``server.url`` (``.../v1``)
    until the block ends. ``server.requests`` lists what it received, in
    order; ``server.chat_requests`` only the chat completions' bodies."""

    def __init__(
        self,
        reply: Reply = scripted,
        *,
        models: tuple[str, ...] = ("loopback-model",),
        fail: Sequence[int] = (),
        retry_after: str | None = None,
        raw: bytes | None = None,
        delay: float = 0.0,
        embeddings: Embeddings = embeddings_reply,
    ):
        self.reply = reply
        self.embeddings = embeddings
        self.models = models
        self.fail = list(fail)
        self.retry_after = retry_after
        self.raw = raw
        self.delay = delay
        self.requests: list[Received] = []
        self.in_flight = 0
        self.most_in_flight = 0  # the most requests it held at once (waiting out ``delay``)
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def chat_requests(self) -> list[Any]:
        return [r.body for r in self.requests if r.path == "/v1/chat/completions"]

    @property
    def embedding_requests(self) -> list[Any]:
        return [r.body for r in self.requests if r.path == "/v1/embeddings"]

    def record(self, received: Received) -> int | None:
        """Keep ``received``; the error status to answer it with, if any is left."""
        with self._lock:
            self.requests.append(received)
            return self.fail.pop(0) if self.fail else None

    def hold(self, seconds: float) -> None:
        """Wait ``seconds`` inside a request, counting the requests held at once."""
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(seconds)
        finally:
            with self._lock:
                self.in_flight -= 1

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


class _Server(ThreadingHTTPServer):
    """The standard library's threading server, with room for a hundred
    connections arriving at once (its default backlog is 5, and a dropped
    connection is retried by the client's kernel a second later)."""

    request_queue_size = 128
    daemon_threads = True


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def _send(self, status: int, payload: object) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _record(self, body: Any) -> bool:
            """Record the request; True when it was answered with a planned failure."""
            status = server.record(
                Received(method=self.command, path=self.path, headers=dict(self.headers), body=body)
            )
            if server.delay:
                server.hold(server.delay)
            if status is None:
                return False
            data = json.dumps({"error": {"message": f"planned {status}"}}).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if server.retry_after is not None:
                self.send_header("Retry-After", server.retry_after)
            self.end_headers()
            self.wfile.write(data)
            return True

        def do_GET(self) -> None:
            if self._record(None):
                return
            if self.path != "/v1/models":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            data = [{"id": m, "object": "model", "owned_by": "tests"} for m in server.models]
            self._send(200, {"object": "list", "data": data})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                if not self._record(None):
                    self._send(400, {"error": {"message": "body is not JSON"}})
                return
            if self._record(body):
                return
            if self.path == "/v1/echo":
                self._send(200, {"echo": body})
                return
            if self.path not in ("/v1/chat/completions", "/v1/embeddings"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            if server.raw is not None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(server.raw)))
                self.end_headers()
                self.wfile.write(server.raw)
                return
            if self.path == "/v1/embeddings":
                self._send(200, server.embeddings(body))
                return
            try:
                content = server.reply(body["messages"])
            except Exception as exc:
                self._send(500, {"error": {"message": f"{type(exc).__name__}: {exc}"}})
                return
            n = len(server.chat_requests)
            self._send(
                200,
                {
                    "id": f"chatcmpl-{n}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                },
            )

    return Handler
