"""Generate the recall dataset: multi-session conversations of one user
whose answers sit in earlier turns, with a paraphrased and an exact-name
question for each fact.

Seeded and deterministic: ``python benchmarks/recall/generate.py`` writes
``benchmarks/recall/dataset.json`` (the committed one is seed 0, 40
sessions); ``--sessions N`` scales it (the timing run uses 10,000 messages).

Each session mixes small talk, a few facts the user states (a relative's
city, a pet, a ticket, a host and port, a meeting...), and sometimes a
coding exchange whose tool results hold file contents. Facts of one kind
recur with other names across sessions, so a question must find the right
one. Every question lists its evidence: the ids of the messages that answer
it (the statement; for a file, the call and its result).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from memrules._core.messages import Message, ToolCall, ToolResult, message
from memrules._core.seam_records import encode_message

NAMES = [
    "Priya", "Tomasz", "Aiko", "Mateo", "Ingrid", "Kwame", "Lucia", "Oskar", "Farah", "Dmitri",
    "Nadia", "Henrik", "Yusuf", "Camille", "Ravi", "Elena", "Bruno", "Sakura", "Leon", "Amara",
]  # fmt: skip
CITIES = [
    "Porto", "Gdansk", "Osaka", "Valencia", "Bergen", "Accra", "Turin", "Tallinn", "Montreal",
    "Leipzig", "Cusco", "Hobart", "Nantes", "Kraków", "Adelaide", "Lyon",
]  # fmt: skip
RELATIVES = ["sister", "brother", "cousin", "aunt", "uncle", "niece", "nephew", "grandmother"]
PETS = [("cat", "feline"), ("dog", "puppy"), ("parrot", "bird"), ("rabbit", "bunny")]
JOBS = ["data engineer", "nurse", "architect", "product manager", "teacher", "pilot"]
COMPANIES = ["Finlytic", "Orbis Health", "Kestrel Labs", "Northwind", "Bluefin Logistics"]
FOODS = ["peanuts", "shellfish", "kiwi", "sesame", "gluten", "strawberries"]
HOBBIES = [
    ("padel", "a racket sport"), ("chess", "a board game"), ("bouldering", "climbing"),
    ("sourdough baking", "bread"), ("birdwatching", "looking at birds"),
]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
MONTHS = ["March", "April", "June", "August", "October", "November"]
BUGS = [
    ("the login page freezing on Safari", "the browser hang when signing in"),
    ("duplicate invoices in the billing export", "customers being charged twice"),
    ("the mobile app crashing on startup", "the phone application closing right away"),
    ("slow search results for long queries", "lookups taking ages"),
    ("emails landing in spam", "messages ending up in the junk folder"),
]  # fmt: skip
SERVICES = [
    ("payment gateway", "the service that charges cards"),
    ("image resizer", "the thumbnail service"),
    ("report exporter", "the job that builds the PDF reports"),
    ("webhook dispatcher", "the component that notifies partner systems"),
]  # fmt: skip
SMALL_TALK = [
    ("Good morning! How are you today?", "Good morning! I'm doing well, thanks. How can I help?"),
    ("The weather is awful again.", "Sorry to hear that. Grey days can be tiring."),
    ("Can you suggest a quick lunch idea?", "A lentil salad with feta and lemon is quick."),
    ("Thanks, that was helpful.", "You're welcome!"),
    ("I'm a bit tired today.", "Take it easy; short breaks help."),
    ("Tell me a fun fact.", "Octopuses have three hearts."),
    ("What's a good stretch for my back?", "Try a gentle cat-cow stretch for a minute."),
    ("Any tips for focusing better?", "Work in 25-minute blocks with short breaks."),
]  # fmt: skip


class Builder:
    """One session's messages, with ids, and the questions it answers."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.messages: list[Message] = []

    def add(self, role: str, *content: Any) -> str:
        mid = f"{self.session}-m{len(self.messages)}"
        self.messages.append(message(role, *content, id=mid))  # type: ignore[arg-type]
        return mid


def fact(rng: random.Random, b: Builder, kind: str, used: dict[str, int]) -> list[dict[str, Any]]:
    """Add one fact of ``kind`` to the session; its questions."""
    name = rng.choice(NAMES)
    city = rng.choice(CITIES)
    out: list[tuple[str, str]] = []
    if kind == "relative":
        relative = rng.choice(RELATIVES)
        said = f"My {relative} {name} moved to {city} last {rng.choice(['spring', 'autumn'])}."
        out = [
            ("paraphrase", f"In which town has my {relative} been living since the move?"),
            ("exact", f"Where did {name} relocate to?"),
        ]
        reply = f"{city} sounds lovely. I'll remember that {name} lives there now."
    elif kind == "pet":
        pet, other = rng.choice(PETS)
        age = rng.randint(2, 14)
        said = f"Our {pet} is called {name} and turns {age} this year."
        out = [
            ("paraphrase", f"What's the name of our {other}?"),
            ("exact", f"How old is {name} going to be?"),
        ]
        reply = f"Happy early birthday to {name}!"
    elif kind == "job":
        job, company, month = rng.choice(JOBS), rng.choice(COMPANIES), rng.choice(MONTHS)
        said = f"I started a new position as a {job} at {company} in {month}."
        out = [
            ("paraphrase", "What do I do for a living these days?"),
            ("exact", f"When did I join {company}?"),
        ]
        reply = f"Congratulations on the {job} role!"
    elif kind == "allergy":
        food = rng.choice(FOODS)
        said = f"Please keep in mind that I react badly to {food}; I carry an EpiPen."
        out = [("paraphrase", "Which ingredient must my meals never contain?")]
        reply = f"Noted: no {food} in any recipe I suggest."
    elif kind == "hobby":
        hobby, other = rng.choice(HOBBIES)
        friend = rng.choice(NAMES)
        said = f"Every Saturday I do {hobby} with {friend} from the old office."
        out = [
            ("paraphrase", f"Which weekend pastime involving {other} do I have?"),
            ("exact", f"What do I do with {friend} on weekends?"),
        ]
        reply = f"{hobby.capitalize()} sounds like a great way to spend Saturdays."
    elif kind == "ticket":
        ticket = f"{rng.choice(['OPS', 'WEB', 'PAY', 'APP'])}-{rng.randint(100, 9999)}"
        bug, other = rng.choice(BUGS)
        said = f"Ticket {ticket} tracks {bug}; it is assigned to {name}."
        out = [
            ("paraphrase", f"Which issue number covers {other}?"),
            ("exact", f"Who is assigned to {ticket}?"),
        ]
        reply = f"Got it, {ticket} is with {name}."
    elif kind == "host":
        service, other = rng.choice(SERVICES)
        host = f"{service.split()[0]}-{rng.randint(1, 40):02d}.internal"
        port = rng.randint(2000, 9999)
        said = f"The staging {service} runs on {host}, port {port}."
        out = [
            ("paraphrase", f"Which machine serves {other} in the test environment?"),
            ("exact", f"What port does {host} listen on?"),
        ]
        reply = f"Thanks, {host}:{port} for staging."
    elif kind == "meeting":
        day = rng.choice(WEEKDAYS)
        hour = rng.choice(["9:30", "11:00", "14:00", "16:30"])
        said = f"My one-on-one with {name} is every {day} at {hour}."
        out = [
            ("paraphrase", f"When is my recurring chat with my manager {name}?"),
            ("exact", f"What day do I meet {name}?"),
        ]
        reply = f"I'll keep {day} {hour} in mind."
    else:  # trip
        day = rng.randint(2, 28)
        month = rng.choice(MONTHS)
        said = f"We fly to {city} on {month} {day} for my friend {name}'s wedding."
        out = [
            ("paraphrase", "When does our plane leave for the celebration?"),
            ("exact", f"When do we fly to {city}?"),
        ]
        reply = f"A wedding in {city}, how exciting!"
    used[kind] = used.get(kind, 0) + 1
    evidence = b.add("user", said)
    b.add("assistant", reply)
    return [{"kind": k, "question": q, "evidence": [evidence]} for k, q in out]


def code_exchange(rng: random.Random, b: Builder, number: int) -> list[dict[str, Any]]:
    """A coding request whose tool rounds read files; one file matters later."""
    service, other = rng.choice(SERVICES)
    module = service.replace(" ", "_")
    b.add("user", f"Can you check why the {service} keeps timing out?")
    questions: list[dict[str, Any]] = []
    target = rng.randrange(3)
    for r in range(3):
        path = f"src/{module}/{rng.choice(['client', 'config', 'worker', 'retry'])}_{number}{r}.py"
        timeout = rng.choice([3, 5, 10, 15, 30, 45, 60, 90])
        retries = rng.randint(1, 7)
        body = (
            f'"""Settings of the {service} ({other}).\n\n'
            f"How long a call may take before the {service} gives up, "
            'and how often it tries again."""\n'
            f"TIMEOUT_SECONDS = {timeout}\nMAX_RETRIES = {retries}\n"
        )
        call_id = f"{b.session}-call{r}"
        call = ToolCall(id=call_id, name="read_file", arguments=json.dumps({"path": path}))
        call_msg = b.add("assistant", f"Reading {path}.", call)
        result_msg = b.add("tool", ToolResult(call_id=call_id, content=body))
        if r == target:
            evidence = [call_msg, result_msg]
            questions = [
                {
                    "kind": "exact",
                    "question": f"What timeout is set in {path}?",
                    "evidence": evidence,
                },
                {
                    "kind": "paraphrase",
                    "question": f"How many seconds does {other} wait before it stops trying?",
                    "evidence": evidence,
                },
            ]
    b.add("assistant", f"The {service} gives up too early; raise its timeout.")
    return questions


KINDS = ["relative", "pet", "job", "allergy", "hobby", "ticket", "host", "meeting", "trip"]


def generate(*, seed: int = 0, sessions: int = 40) -> dict[str, Any]:
    rng = random.Random(seed)
    conversations: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    used: dict[str, int] = {}
    for s in range(sessions):
        session = f"s{s:04d}"
        b = Builder(session)
        asked: list[dict[str, Any]] = []
        steps = ["talk"] * rng.randint(3, 6) + ["fact"] * rng.randint(1, 3)
        if rng.random() < 0.35:
            steps.append("code")
        rng.shuffle(steps)
        for step in steps:
            if step == "talk":
                user, assistant = rng.choice(SMALL_TALK)
                b.add("user", user)
                b.add("assistant", assistant)
            elif step == "fact":
                asked += fact(rng, b, rng.choice(KINDS), used)
            else:
                asked += code_exchange(rng, b, s)
        conversations.append(
            {"id": session, "messages": [json.loads(encode_message(m)) for m in b.messages]}
        )
        for q in asked:
            questions.append({"id": f"q{len(questions):05d}", "session": session, **q})
    return {"seed": seed, "user": "u1", "conversations": conversations, "questions": questions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("dataset.json"))
    args = parser.parse_args()
    data = generate(seed=args.seed, sessions=args.sessions)
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    messages = sum(len(c["messages"]) for c in data["conversations"])
    print(
        f"{args.out}: {len(data['conversations'])} sessions, {messages} messages, "
        f"{len(data['questions'])} questions"
    )


if __name__ == "__main__":
    main()
