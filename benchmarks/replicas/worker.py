"""One replica of the benchmark's service: the request hook (`MemoryPlugin`,
`configs/cache_aware.yaml`) in a small HTTP server on loopback, its state in
the Valkey store the command line names.

POST / with `{"conversation": id, "body": <OpenAI chat body>}` answers
`{"digest": <hash of the messages sent>, "sent": [<hash of each>],
"loads": <s for json.loads of the body>, "hook": <s in the hook>}`;
GET /stats answers `{"round_trips": n, "requests": n}`.

    python -m benchmarks.replicas.worker PORT STATE_URL
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from memrules import load_config
from memrules._plugin.plugin import MemoryPlugin
from memrules.state import StateStoreConfig

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "cache_aware.yaml"


def main(port: int, url: str) -> None:
    import attrs

    config = attrs.evolve(load_config(CONFIG), state_store=StateStoreConfig(url=url))
    plugin = MemoryPlugin(config)
    store = plugin.state_store
    served = [0]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _answer(self, data: object) -> None:
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            self._answer({"round_trips": getattr(store, "round_trips", 0), "requests": served[0]})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            t0 = time.perf_counter()
            data = json.loads(raw)
            t1 = time.perf_counter()
            out = plugin.on_openai_request(data["body"], conversation_id=data["conversation"])
            t2 = time.perf_counter()
            sent = [
                hashlib.blake2b(json.dumps(m, sort_keys=True).encode(), digest_size=8).hexdigest()
                for m in out["messages"]
            ]
            with lock:
                served[0] += 1
            self._answer(
                {
                    "digest": hashlib.blake2b("".join(sent).encode()).hexdigest(),
                    "sent": sent,
                    "sizes": [len(json.dumps(m)) for m in out["messages"]],
                    "loads": t1 - t0,
                    "hook": t2 - t1,
                }
            )

    class Server(ThreadingHTTPServer):
        request_queue_size = 1024  # hundreds of conversations connect at once

    server = Server(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
