"""Generate the evaluation dataset that ``memrules eval`` runs on in the tests
and the README: multi-session chats and coding-agent histories whose facts
are probed by questions, in the dataset format of :mod:`memrules._cli.dataset`.

Seeded and deterministic: ``python benchmarks/eval/generate.py`` writes
``benchmarks/eval/dataset.jsonl`` (the committed one is seed 0);
``--chats`` and ``--agents`` scale it.

- A **chat** is several sessions between a user (a named speaker) and an
  assistant, days apart: small talk, and now and then a fact the user states
  (a relative's new city, a ticket and its owner, a host and port, a
  meeting). Questions about those facts are asked in later sessions, each
  with its evidence (the message that stated it) and its answer.
- An **agent history** is one instruction followed by many tool rounds: the
  agent lists, reads, searches and edits files of a repository (tool
  results of a few hundred tokens, some files read twice). Settings in the
  files it read are probed after the last round; the evidence is the tool
  result that showed them.

Answers are distinctive strings (``PAY-4821``, ``ledger-v3-canary``) that
no other message contains, so "the answer is in the context" means what it
says.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

NAMES = ["Priya", "Tomasz", "Aiko", "Mateo", "Ingrid", "Kwame", "Lucia", "Oskar", "Farah", "Dmitri"]
CITIES = ["Porto", "Gdansk", "Osaka", "Valencia", "Bergen", "Accra", "Turin", "Tallinn", "Hobart"]
RELATIVES = ["sister", "brother", "cousin", "aunt", "uncle", "niece"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
SERVICES = ["payment gateway", "image resizer", "report exporter", "webhook dispatcher"]
SMALL_TALK = [
    ("Good morning! How are you today?", "Good morning! I'm doing well, thanks. How can I help?"),
    ("The weather is awful again.", "Sorry to hear that. Grey days can be tiring."),
    ("Can you suggest a quick lunch idea?", "A lentil salad with feta and lemon is quick to make."),
    ("I'm a bit tired today.", "Take it easy; short breaks and some water help more than coffee."),
    ("Tell me a fun fact.", "Octopuses have three hearts, and two of them stop when they swim."),
    ("Any tips for focusing better?", "Work in 25-minute blocks with short breaks in between."),
    ("What should I read this weekend?", "Short stories are easy to pick up and put down."),
    ("Thanks, that was helpful.", "You're welcome! Glad it helped."),
]  # fmt: skip
FILLER = (
    "This module is part of the service layer. It keeps the public functions small and "
    "delegates the work to helpers below, which validate their input, log what they do at "
    "debug level and raise a ServiceError with a readable message when something is off. "
)


class Chat:
    """The messages of one conversation, with ids, and its questions."""

    def __init__(self, cid: str) -> None:
        self.cid = cid
        self.sessions: list[dict[str, Any]] = []
        self.questions: list[dict[str, Any]] = []
        self.count = 0

    def session(self, time: str) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        number = len(self.sessions) + 1
        self.sessions.append({"id": f"s{number}", "time": time, "messages": messages})
        return messages

    def add(self, messages: list[dict[str, Any]], role: str, content: str, **more: Any) -> str:
        mid = f"m{self.count}"
        self.count += 1
        messages.append({"id": mid, "role": role, "content": content, **more})
        return mid


def _fact(rng: random.Random, kind: str, used: set[str]) -> tuple[str, str, str, str]:
    """(statement, reply, question, answer) for one fact of ``kind``."""
    name = rng.choice([n for n in NAMES if n not in used] or NAMES)
    used.add(name)
    if kind == "relative":
        relative, city = rng.choice(RELATIVES), rng.choice(CITIES)
        return (
            f"My {relative} {name} moved to {city} last spring.",
            f"That sounds like a big change for {name}. I'll remember it.",
            f"Which city does my {relative} live in now?",
            city,
        )
    if kind == "ticket":
        ticket = f"{rng.choice(['OPS', 'WEB', 'PAY'])}-{rng.randint(1000, 9999)}"
        return (
            f"Ticket {ticket} tracks the duplicate invoices bug; {name} owns it.",
            f"Got it, the invoice bug is with {name}.",
            "Which ticket tracks the duplicate invoices bug?",
            ticket,
        )
    if kind == "host":
        service = rng.choice(SERVICES)
        host = f"{service.split()[0]}-{rng.randint(10, 99)}.internal"
        port = rng.randint(2000, 9999)
        return (
            f"The staging {service} runs on {host}, port {port}.",
            "Thanks, noted for staging.",
            f"Which host runs the staging {service}?",
            host,
        )
    day, hour = rng.choice(WEEKDAYS), rng.choice(["9:30", "11:15", "14:45", "16:20"])
    return (
        f"My one-on-one with {name} is every {day} at {hour}.",
        "I'll keep that slot in mind.",
        f"When is my one-on-one with {name}?",
        f"{day} at {hour}",
    )


def chat(rng: random.Random, number: int) -> dict[str, Any]:
    c = Chat(f"chat-{number}")
    speaker = rng.choice(NAMES)
    used: set[str] = {speaker}
    pending: list[dict[str, Any]] = []
    kinds = ["relative", "ticket", "host", "meeting"]
    rng.shuffle(kinds)
    for s in range(rng.randint(5, 6)):
        messages = c.session(f"2024-0{3 + s}-{rng.randint(10, 28)}T{rng.randint(8, 20)}:00:00Z")
        for q in pending:  # asked in a later session
            q["after"] = c.sessions[-2]["messages"][-1]["id"]
            c.questions.append(q)
        pending = []
        steps = ["talk"] * rng.randint(4, 7) + (["fact"] if kinds else [])
        rng.shuffle(steps)
        for step in steps:
            if step == "talk":
                user, reply = rng.choice(SMALL_TALK)
                c.add(messages, "user", user, speaker=speaker)
                c.add(messages, "assistant", reply)
            else:
                said, reply, question, answer = _fact(rng, kinds.pop(), used)
                evidence = c.add(messages, "user", said, speaker=speaker)
                c.add(messages, "assistant", reply)
                pending.append(
                    {"id": f"q{len(c.questions) + len(pending)}", "question": question,
                     "answer": answer, "evidence": [evidence]}
                )  # fmt: skip
    for q in pending:
        c.questions.append(q)  # asked after the last message
    return {"id": c.cid, "user": speaker.lower(), "sessions": c.sessions, "questions": c.questions}


def _file(rng: random.Random, path: str, setting: str, value: str) -> str:
    lines = [f'"""{path}: settings and helpers of the {path.split("/")[1]} package."""', ""]
    lines += [f"# {FILLER}"] * rng.randint(2, 4)
    lines += [f"{setting} = {json.dumps(value)}", f"RETRIES = {rng.randint(2, 9)}", ""]
    lines += [f"def helper_{i}(value):\n    return value * {i}\n" for i in range(rng.randint(2, 4))]
    return "\n".join(lines)


def agent(rng: random.Random, number: int) -> dict[str, Any]:
    c = Chat(f"agent-{number}")
    messages = c.session("2024-05-02T10:00:00Z")
    c.sessions[0].pop("id")
    c.add(messages, "system", "You are a coding agent. Use the tools to read and fix the code.")
    package = rng.choice(["billing", "ledger", "search", "upload"])
    c.add(messages, "user", f"The {package} service fails in staging. Find out why and fix it.")
    settings = ["FEATURE_FLAG", "QUEUE_NAME", "CACHE_BUCKET", "SIGNING_KEY_ID"]
    values = [
        f"{package}-v{rng.randint(2, 9)}-canary",
        f"{package}.jobs.{rng.choice(['eu', 'us'])}-{rng.randint(1, 9)}",
        f"cache-{rng.randint(100, 999)}-{package}",
        f"kid-{rng.randint(10000, 99999)}",
    ]
    files = [f"src/{package}/{name}.py" for name in ("config", "queue", "cache", "keys")]
    facts: list[tuple[str, str, str, str]] = []
    rounds = rng.randint(9, 12)
    for r in range(rounds):
        i = r % len(files)
        call_id = f"call_{number}_{r}"
        if r % 5 == 4:  # a search in between
            tool, arguments = "search", {"query": f"{package} timeout"}
            hits = (f"{files[j]}:{rng.randint(5, 80)}: # timeout handling" for j in range(3))
            content = "\n".join(hits)
        else:
            tool, arguments = "read_file", {"path": files[i]}
            content = _file(rng, files[i], settings[i], values[i])
        c.add(
            messages,
            "assistant",
            f"Let me look at {arguments.get('path', 'the code')}." if r % 3 == 0 else "",
            tool_calls=[
                {"id": call_id, "type": "function",
                 "function": {"name": tool, "arguments": json.dumps(arguments)}}
            ],
        )  # fmt: skip
        result = c.add(messages, "tool", content, tool_call_id=call_id)
        if tool == "read_file" and r < len(files):
            facts.append((files[i], settings[i], values[i], result))
    c.add(
        messages,
        "assistant",
        f"The {package} service reads its settings before the queue is ready; "
        "I will reorder the startup.",
    )
    for path, setting, value, evidence in facts:
        c.questions.append(
            {"id": f"q{len(c.questions)}", "question": f"What is {setting} set to in {path}?",
             "answer": value, "evidence": [evidence]}
        )  # fmt: skip
    return {"id": c.cid, "messages": c.sessions[0]["messages"], "questions": c.questions}


def generate(*, seed: int = 0, chats: int = 4, agents: int = 3) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = [chat(rng, i) for i in range(chats)]
    out += [agent(rng, i) for i in range(agents)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chats", type=int, default=4)
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("dataset.jsonl"))
    args = parser.parse_args()
    data = generate(seed=args.seed, chats=args.chats, agents=args.agents)
    text = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in data)
    args.out.write_text(text, encoding="utf-8")
    questions = sum(len(c["questions"]) for c in data)
    print(f"{args.out}: {len(data)} conversations, {questions} questions")


if __name__ == "__main__":
    main()
