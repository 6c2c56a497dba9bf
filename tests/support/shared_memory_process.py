"""One of two application processes sharing one memory server:
``python -m tests.support.shared_memory_process NAME CONFIG`` loads the YAML
file CONFIG (``stores.memory`` on a server, auto-store on the default
route), auto-stores the turns :data:`SAID` gives NAME, says so by making the
file ``NAME.stored`` beside CONFIG, waits (at most two minutes) until the
other process has said so too, then retrieves and lists ana's memories and
lists bob's and nobody's, prints what it saw as one JSON line and exits.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import memrules
from memrules import Request
from memrules._core.messages import message

TENANT = "acme"
SAID: dict[str, dict[str, list[str]]] = {
    "one": {
        "ana": ["Q: My sister Priya moved to Porto.\nA: Noted, Porto."],
        "bob": ["Q: My sister lives in Lisbon.\nA: Noted, Lisbon."],
    },
    "two": {
        "ana": ["Q: My cat is called Miso.\nA: Miso, noted."],
        "ana@globex": ["Q: My sister lives in Madrid.\nA: Noted, Madrid."],
    },
}
"""Per process, per user (``user@tenant`` for another tenant than acme),
the memories it stores, as the memory route writes them."""

OTHER = {"one": "two", "two": "one"}


def _who(key: str) -> tuple[str, str]:
    user, _, tenant = key.partition("@")
    return user, tenant or TENANT


def _ask(text: str, user: str, tenant: str) -> Request:
    return Request(
        messages=(message("user", text),), user=user, tenant=tenant, conversation_id=f"c-{user}"
    )


def run(name: str, config: Any, here: Path) -> dict[str, Any]:
    plugin = memrules.MemoryPlugin.from_config(config)
    for key, memories in SAID[name].items():
        user, tenant = _who(key)
        for memory in memories:
            question, _, answer = memory.removeprefix("Q: ").partition("\nA: ")
            outcome = plugin.on_response(_ask(question, user, tenant), answer)
            assert outcome.status == "stored", outcome
    (here / f"{name}.stored").touch()
    deadline = time.monotonic() + 120
    while not (here / f"{OTHER[name]}.stored").exists():
        if time.monotonic() > deadline:
            msg = f"process {OTHER[name]} did not store its memories in time"
            raise TimeoutError(msg)
        time.sleep(0.05)
    found = plugin.handle(_ask("Where does my sister live, and my cat?", "ana", TENANT)).memory
    return {
        "ana_retrieved": [m.text for m in found.retrieval.memories] if found else [],
        "ana_listed": [m.text for m in plugin.list_memories("ana", TENANT)],
        "bob_listed": [m.text for m in plugin.list_memories("bob", TENANT)],
        "nobody_listed": [m.text for m in plugin.list_memories("nobody", TENANT)],
    }


def main(name: str, path: str) -> None:
    config = memrules.load_config(Path(path))
    try:
        out = run(name, config, Path(path).parent)
    finally:
        config.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:])
