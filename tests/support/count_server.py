"""A real Anthropic-style count-tokens server on loopback, for tests.

``POST /v1/messages/count_tokens`` answers ``{"input_tokens": n}`` where
``n`` is the cl100k_base count of every message's text plus ``framing``
tokens, as the real endpoint adds framing to a request. Every request is
recorded (path, headers, body). ``status`` makes it answer with that error
instead; ``raw`` with that body.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from memrules._counting.named import counter_for


class CountServer:
    """``with CountServer() as server:`` serves at ``server.url`` (no ``/v1``)."""

    def __init__(self, *, framing: int = 9, status: int | None = None, raw: bytes | None = None):
        self.framing = framing
        self.status = status
        self.raw = raw
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def count(self, body: Any) -> int:
        counter = counter_for("cl100k_base")
        texts = [m["content"] for m in body["messages"]]
        return sum(counter.count_text(t) for t in texts) + self.framing

    def __enter__(self) -> CountServer:
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


def _handler(server: CountServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            headers = {k.lower(): v for k, v in self.headers.items()}
            with server._lock:
                server.requests.append((self.path, headers, body))
            if self.path != "/v1/messages/count_tokens":
                self._send(404, b'{"error": "no route"}')
            elif server.status is not None:
                error = {"type": "error", "error": {"message": "planned failure"}}
                self._send(server.status, json.dumps(error).encode())
            elif server.raw is not None:
                self._send(200, server.raw)
            else:
                self._send(200, json.dumps({"input_tokens": server.count(body)}).encode())

    return Handler
