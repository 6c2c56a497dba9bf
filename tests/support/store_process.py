"""One process of a restart test, as an application runs memrules:
``python -m tests.support.store_process ACTION CONFIG`` loads the YAML file CONFIG
(a pipeline ``store:`` that offloads, and ``stores.memory`` with auto-store
on the default route), does ACTION, prints what it saw as one JSON line on
stdout, closes its stores and exits.

- ``write``: one request whose old rounds offload (the pipeline store), and
  one turn auto-stored (the memory route).
- ``read``: what a later process does with that: recall, list and offload
  again in the pipeline store; retrieve and list in the memory route; then
  forget both, and list again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import memrules
from memrules import Request
from memrules._core.messages import message
from memrules.seams import Scope
from tests.strategies.test_units import agent_loop

USER, TENANT = "ana", "acme"
SCOPE = Scope(user=USER, tenant=TENANT)
SAID = "My sister Priya moved to Porto last spring."
SCHEDULER = "def schedule(job):\n    return queue.put(job, priority=7)  # the retry scheduler"


def history(conversation_id: str) -> tuple[Any, ...]:
    """An agent loop of 12 rounds whose third round reads a file that
    matters later; conversation ``c2`` opens with another instruction."""
    rounds = list(agent_loop(12))
    call = memrules.ToolCall(id="call_2", name="read_file", arguments='{"path": "src/sched.py"}')
    rounds[6] = message("assistant", "Reading src/sched.py.", call)
    rounds[7] = message("tool", memrules.ToolResult(call_id="call_2", content=SCHEDULER))
    if conversation_id != "c1":
        rounds[1] = message("user", "Now fix the failing test in the lexer.")
    return tuple(rounds)


def request(conversation_id: str, messages: tuple[Any, ...]) -> Request:
    return Request(messages=messages, user=USER, tenant=TENANT, conversation_id=conversation_id)


def offloaded(plugin: Any, conversation_id: str) -> dict[str, Any]:
    """One request of ``conversation_id``'s history: how many messages it
    sent on, and what its offload's store call answered or failed with."""
    step = plugin.handle(request(conversation_id, history(conversation_id)))
    calls = [c for a in step.report.actions for c in a.seam_calls if c.seam == "store"]
    return {
        "sent": len(step.request.messages),
        "calls": [{"response": c.response, "error": c.error} for c in calls],
    }


def write(config: Any) -> dict[str, Any]:
    plugin = memrules.MemoryPlugin.from_config(config)
    out = offloaded(plugin, "c1")
    said = request("monday", (message("user", SAID),))
    out["stored"] = plugin.on_response(said, "Porto is lovely; noted.").to_dict()
    return out


def read(config: Any) -> dict[str, Any]:
    plugin = memrules.MemoryPlugin.from_config(config)
    store = plugin.pipeline.seams.store
    out: dict[str, Any] = {}
    scope = {"conversation_id": "c1", "user": USER, "tenant": TENANT}
    # k=10 of 16 stored records: what the first process stored is read back,
    # whatever the (toy, on loopback) embedder ranks first.
    hits = plugin.pipeline.recall("src/sched.py", k=10, **scope)
    out["recalled"] = [h.text for h in hits]
    out["listed"] = len(store.scan(SCOPE))
    out["again"] = offloaded(plugin, "c2")
    out["listed_after_offload"] = len(store.scan(SCOPE))
    later = request("friday", (message("user", "Where does my sister live now?"),))
    result = plugin.handle(later)
    out["retrieval"] = result.memory.retrieval.status
    out["retrieval_error"] = result.memory.retrieval.error
    out["memories"] = [m.text for m in plugin.list_memories(USER, TENANT)]
    out["forgotten_memories"] = plugin.forget(USER, TENANT)
    out["memories_after"] = len(plugin.list_memories(USER, TENANT))
    out["forgotten_offloaded"] = store.delete_scope(SCOPE)
    out["listed_after_forget"] = len(store.scan(SCOPE))
    store.close()
    return out


def main(action: str, path: str) -> None:
    config = memrules.load_config(Path(path))
    try:
        out = write(config) if action == "write" else read(config)
    finally:
        config.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:])
