"""The four-turn memory example (memrules._cli.demo): offline, and against a real
OpenAI-compatible server on loopback (tests/support/chat_server.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memrules._cli.demo import (
    SYSTEM_PROMPT,
    TURNS,
    OpenAIChat,
    demo_config,
    run,
    scripted_reply,
    shape,
)
from memrules._cli.main import main as cli_main
from memrules._config.load import load_config
from memrules._core.messages import message
from memrules._engine.contract import DEFAULT_WARNING_MARKER
from memrules._io.http import MalformedReplyError
from tests.support.chat_server import ChatServer

# The design's example output ("Example"), with the model's lines left out:
# the Strategy line spells the strategy as Python, not Rust.
SEED_LINES = """\
Trigger: max_messages 6, window 256 tokens, warn at 20%
Prompt shape letters: S system, U user, A assistant

Turn 1: "The vault is in Lisbon. Reply with: noted"
  gauge: 16/256 tokens (6%), window resolved false
  prompt: 2 messages in, 2 out (SU), warning false
  reply: noted

Turn 2: "The key rotates on friday. Reply with: noted"
  gauge: 29/256 tokens (11%), window resolved false
  prompt: 4 messages in, 4 out (SUAU), warning false
  reply: noted

Turn 3: "The owner is ops@example.com. Reply with: noted"
  gauge: 43/256 tokens (17%), window resolved false
  prompt: 6 messages in, 6 out (SUAUAU), warning false
  reply: noted

Turn 4: "Where is the vault? Answer in one word."
  gauge: 56/256 tokens (22%), window resolved false
  prompt: 8 messages in, 4 out (SAUS), warning true, compacted
  reply: Unknown.
"""

SEED_PROMPTS = [(2, 2, "SU", False, False), (4, 4, "SUAU", False, False)]
SEED_PROMPTS += [(6, 6, "SUAUAU", False, False), (8, 4, "SAUS", True, True)]


def main(argv: list[str]) -> int:
    """``memrules demo ARGV``."""
    return cli_main(["demo", *argv])


def _roles(messages: list[dict[str, Any]]) -> str:
    return "".join({"system": "S", "user": "U", "assistant": "A"}[m["role"]] for m in messages)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    """A loopback chat server; proxies from the environment are bypassed."""
    monkeypatch.setenv("no_proxy", "*")
    monkeypatch.setenv("NO_PROXY", "*")
    with ChatServer() as running:
        yield running


def test_offline_turns_have_the_seeds_counts_shapes_and_edits() -> None:
    turns = list(run(scripted_reply))
    got = [(len(t.received), len(t.sent), shape(t.sent), t.warning, t.compacted) for t in turns]
    assert got == SEED_PROMPTS
    assert [t.usage.tokens for t in turns] == [16, 29, 43, 56]
    assert [t.reply for t in turns] == ["noted", "noted", "noted", "Unknown."]


def test_turn_four_keeps_system_last_reply_question_and_warning() -> None:
    last = list(run(scripted_reply))[-1]
    system, reply, question, warning = last.sent
    assert system.text == SYSTEM_PROMPT
    assert reply is last.received[-2]  # the reply to turn 3, kept as it was
    assert question.text == TURNS[3]
    assert warning.text.startswith(DEFAULT_WARNING_MARKER)
    assert "22% of a 256-token context window" in warning.text
    assert not any("Lisbon" in m.text for m in last.sent)
    # The client's history holds no warning: the edits are the prompt's only.
    assert not any(m.text.startswith(DEFAULT_WARNING_MARKER) for m in last.received)


def test_main_prints_the_seeds_lines(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if not line.startswith(("Model:", "Strategy:"))]
    assert "\n".join(lines) + "\n" == SEED_LINES
    assert "Strategy: sliding_window(keep_messages=4)\n" in out


def test_json_transcript(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json"]) == 0
    transcript = json.loads(capsys.readouterr().out)
    turns = transcript["turns"]
    assert [t["shape_out"] for t in turns] == ["SU", "SUAU", "SUAUAU", "SAUS"]
    assert [t["messages_in"] for t in turns] == [2, 4, 6, 8]
    assert [t["warning"] for t in turns] == [False, False, False, True]
    assert turns[3]["report"]["budget"] == {"kind": "messages", "limit": 6}
    assert _roles(turns[3]["prompt"]) == "SAUS"


def test_demo_config_is_the_seed_example_yaml() -> None:
    path = Path(__file__).resolve().parents[2] / "configs" / "seed_example.yaml"
    from_yaml, in_code = load_config(path), demo_config()
    fields = ("count_rule", "context_window_tokens", "max_messages", "max_fraction")
    for field in (*fields, "warn_fraction"):
        assert getattr(in_code, field) == getattr(from_yaml, field), field
    assert [repr(s.strategy) for s in in_code.strategies] == [
        repr(s.strategy) for s in from_yaml.strategies
    ]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        (("The vault is in Lisbon. Reply with: noted",), "noted"),
        (("The vault is in Lisbon.", "Where is the vault? Answer in one word."), "Lisbon."),
        (("The key rotates on friday.", "Where is the vault?"), "Unknown."),
        (("Where is the vault?",), "Unknown."),
    ],
)
def test_scripted_reply_answers_from_the_prompt_only(
    prompt: tuple[str, ...], expected: str
) -> None:
    messages = (message("system", SYSTEM_PROMPT), *(message("user", t) for t in prompt))
    assert scripted_reply(messages) == expected


def test_the_example_program_runs_the_same_turns(server: ChatServer) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "memory_demo.py"
    for extra in ([], ["--base-url", server.url]):
        done = subprocess.run(
            [sys.executable, str(example), *extra],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert "  prompt: 6 messages in, 6 out (SUAUAU)\n" in done.stdout
        assert "  prompt: 8 messages in, 4 out (SAUS)\n" in done.stdout
        assert "  gauge: 56/256 tokens (22%), window resolved false\n" in done.stdout
        assert "  compacted: 9 -> 4 messages\n" in done.stdout
        assert done.stdout.endswith("  reply: Unknown.\n\n")
    assert [_roles(b["messages"]) for b in server.chat_requests] == ["SU", "SUAU", "SUAUAU", "SAUS"]


# --- against a real HTTP server ------------------------------------------------


def test_demo_over_http_sends_the_seeds_prompts(
    server: ChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--base-url", server.url, "--model", "m-test"]) == 0
    out = capsys.readouterr().out
    bodies = server.chat_requests
    assert [_roles(b["messages"]) for b in bodies] == ["SU", "SUAU", "SUAUAU", "SAUS"]
    assert {b["model"] for b in bodies} == {"m-test"}
    last = bodies[3]["messages"]
    assert last[0]["content"] == SYSTEM_PROMPT
    assert last[2]["content"] == TURNS[3]
    assert last[3]["content"].startswith(DEFAULT_WARNING_MARKER)
    assert "Lisbon" not in json.dumps(last)
    lines = [line for line in out.splitlines() if not line.startswith(("Model:", "Strategy:"))]
    assert "\n".join(lines) + "\n" == SEED_LINES
    assert "Model: m-test at " + server.url in out
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 4


def test_replies_come_from_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("no_proxy", "*")
    with ChatServer(reply=lambda messages: f"pong {len(messages)}") as server:
        turns = list(run(OpenAIChat(base_url=server.url, model="m")))
        bodies = server.chat_requests
    assert [t.reply for t in turns] == ["pong 2", "pong 4", "pong 6", "pong 4"]
    # The client's history carries the server's replies into the next prompt.
    assert bodies[1]["messages"][2] == {"role": "assistant", "content": "pong 2"}


def test_model_defaults_to_the_first_listed_and_api_key_is_sent(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEMO_TEST_KEY", "sk-test")
    base = server.url.removesuffix("/v1")  # a bare host gets /v1
    assert main(["--base-url", base, "--api-key-env", "DEMO_TEST_KEY", "--json"]) == 0
    assert server.requests[0].path == "/v1/models"
    assert {b["model"] for b in server.chat_requests} == {"loopback-model"}
    assert all(r.headers.get("Authorization") == "Bearer sk-test" for r in server.requests)
    assert "sk-test" not in capsys.readouterr().out


def test_a_reply_without_content_is_malformed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("no_proxy", "*")
    with ChatServer(raw=b'{"choices": []}') as running:
        chat = OpenAIChat(base_url=running.url, model="m")
        with pytest.raises(MalformedReplyError, match="without choices"):
            chat(scripted_messages())


def scripted_messages() -> tuple[Any, ...]:
    return (message("system", SYSTEM_PROMPT), message("user", TURNS[0]))


def test_unreachable_endpoint_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port now.
    assert main(["--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(
        f"memrules: error: cannot reach http://127.0.0.1:{port}/v1/chat/completions"
    )
    assert captured.err.count("\n") == 1
    assert captured.out == ""  # nothing written: the output is whole or nothing


def test_server_error_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("no_proxy", "*")

    def broken(messages: list[dict[str, Any]]) -> str:
        raise RuntimeError("model crashed")

    with ChatServer(reply=broken) as server:
        assert main(["--base-url", server.url, "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert "answered HTTP 500" in err
    assert "model crashed" in err
    assert err.count("\n") == 1


def test_model_without_base_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--model", "m"]) == 2
    assert capsys.readouterr().err == "memrules: error: --model and --api-key-env need --base-url\n"
