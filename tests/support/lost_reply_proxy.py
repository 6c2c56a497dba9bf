"""A TCP proxy on loopback that loses one command's reply (or the command
itself) on the way between a client and a real server.

It forwards bytes both ways, one thread per direction and connection. When
armed with a marker, the first chunk from a client that holds the marker is
either forwarded and its reply never delivered (`lose="reply"`: the server
did the work, the client's connection drops before it hears so), or not
forwarded at all (`lose="request"`); either way both sockets of that
connection close. What the client does next (a new connection, a retry) goes
through as usual. This is the fault a write acknowledged by the server but
not by the client's socket is made of, on a real server.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Literal


class LostReplyProxy:
    """Forwards ``127.0.0.1:port`` to ``upstream``; `arm` sets the next loss."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._marker: bytes | None = None
        self._lose: Literal["reply", "request"] = "reply"
        self.lost = 0
        """How many commands the proxy has lost so far."""
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, marker: bytes, lose: Literal["reply", "request"] = "reply") -> None:
        """Lose what answers (or what is) the next client chunk holding ``marker``."""
        with self._lock:
            self._marker, self._lose = marker, lose

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            with self._lock:
                self._sockets += [client, server]
            state = {"drop": False}
            threading.Thread(target=self._up, args=(client, server, state), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, state), daemon=True).start()

    def _up(self, client: socket.socket, server: socket.socket, state: dict[str, bool]) -> None:
        while True:
            try:
                chunk = client.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            with self._lock:
                hit = self._marker is not None and self._marker in chunk
                lose = self._lose
                if hit:
                    self._marker = None
                    self.lost += 1
            if hit and lose == "request":
                break
            if hit:
                state["drop"] = True  # before forwarding: the reply cannot slip through
            try:
                server.sendall(chunk)
            except OSError:
                break
        _close(client, server)

    def _down(self, server: socket.socket, client: socket.socket, state: dict[str, bool]) -> None:
        while True:
            try:
                chunk = server.recv(65536)
            except OSError:
                chunk = b""
            if not chunk or state["drop"]:
                break
            try:
                client.sendall(chunk)
            except OSError:
                break
        _close(client, server)

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                _close(sock)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()
