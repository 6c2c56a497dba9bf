"""Route-local retrieval memory, end to end: configs/routes.yaml's two routes.

Run it offline (a scripted model answers; the local embedding model and
Milvus Lite run here; ``pip install -e '.[local-embed,milvus]'``)::

    python examples/route_memory.py

It runs in a temporary directory, so the Milvus Lite file the config names
(relative paths are relative to the working directory) is gone afterwards.

What it shows: on the ``support`` route, what Ana said in one conversation is
put in front of the model in a later one (and what Bob said is not, nor
anything of Ana's for Bob); a request without a user and a tenant gets no
memory, and its report says why; the ``code`` route shares the file but has
no memory; Ana's memories can be listed and forgotten; and, with
``prometheus-client`` installed, the retrieval metrics (no user label).
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

import memrules
from memrules import Message, Request, Text

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "routes.yaml"
DAY = 86_400.0
MONDAY = 1_767_000_000.0  # the clock is explicit, so every run prints the same

REPLIES = {
    "My sister Priya moved to Porto last spring.": "Porto is lovely; noted.",
    "Our deploy key is vault/prod/deploy.key and it rotates every 90 days.": "Noted: "
    "vault/prod/deploy.key, rotated every 90 days.",
    "I am allergic to peanuts.": "Understood, no peanuts.",
}


def message(role: str, text: str) -> Message:
    return Message(role=role, parts=(Text(text=text),))


def request(text: str, *, user: str | None, tenant: str | None, conversation: str) -> Request:
    return Request(
        messages=(message("system", "You are a helpful assistant."), message("user", text)),
        user=user,
        tenant=tenant,
        conversation_id=conversation,
    )


def show(title: str, result: Any) -> None:
    print(f"== {title}")
    memory = result.memory
    if memory is None:
        print("   (this route has no memory)")
    else:
        retrieval = memory.retrieval
        print(
            f"   retrieval: {retrieval.status}"
            + (f" ({retrieval.reason})" if retrieval.reason else "")
        )
    for m in result.request.messages:
        text = m.text.replace("\n", "\n   " + " " * 10)
        print(f"   {m.role:>9}: {text}")


def main() -> None:
    observers: list[Any] = []
    registry = None
    if importlib.util.find_spec("prometheus_client") is not None:
        from prometheus_client import CollectorRegistry

        from memrules.integrations.prometheus import PrometheusRetrievalObserver

        registry = CollectorRegistry()
        observers.append(PrometheusRetrievalObserver(registry))

    config = memrules.load_config(CONFIG)
    support = memrules.MemoryPlugin.from_config(
        config, route="support", memory_observers=observers, clock=lambda: MONDAY
    )
    code = memrules.MemoryPlugin.from_config(config, route="code")

    # Monday: Ana and Bob (of one tenant) each tell the support route something.
    for user, text in [
        ("ana", "My sister Priya moved to Porto last spring."),
        ("ana", "Our deploy key is vault/prod/deploy.key and it rotates every 90 days."),
        ("bob", "I am allergic to peanuts."),
        ("ana", "thanks!"),
    ]:
        asked = request(text, user=user, tenant="acme", conversation=f"{user}-monday")
        sent = support.on_request(asked)
        reply = REPLIES.get(text, "You're welcome!")  # the model's answer to `sent`
        outcome = support.on_response(asked, reply)
        print(
            f"{user}: {text!r} -> {outcome.status}"
            + (f" ({outcome.reason})" if outcome.reason else "")
        )
        assert sent.messages[-1].text == text

    # Twelve days later, in new conversations.
    later = MONDAY + 12 * DAY
    question = "Where does my sister live these days?"
    show(
        "ana asks the support route",
        support.handle(
            request(question, user="ana", tenant="acme", conversation="ana-2"), now=later
        ),
    )
    show(
        "bob asks the same",
        support.handle(
            request(question, user="bob", tenant="acme", conversation="bob-2"), now=later
        ),
    )
    show(
        "a request without a user or tenant",
        support.handle(request(question, user=None, tenant=None, conversation="anon"), now=later),
    )
    show(
        "ana asks the code route",
        code.handle(request(question, user="ana", tenant="acme", conversation="ana-code")),
    )

    print("== ana's memories")
    for kept in support.list_memories("ana", "acme"):
        print(f"   {kept.id[:8]} {kept.text.splitlines()[0]!r} in {kept.collection}")
    print(f"== forget ana: {support.forget('ana', 'acme')} memories deleted")
    print(
        f"   ana now has {len(support.list_memories('ana', 'acme'))}, bob has "
        f"{len(support.list_memories('bob', 'acme'))}"
    )

    if registry is not None:
        from prometheus_client import generate_latest

        print("== metrics")
        for line in generate_latest(registry).decode().splitlines():
            if line.startswith(
                ("llm_memory_retrieval_total", "llm_memory_retrieval_skipped_total")
            ):
                print(f"   {line}")
    config.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as where:
        os.chdir(where)
        main()
