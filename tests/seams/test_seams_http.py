"""The OpenAI-compatible summarizer and embedder against a real server on
loopback (tests/support/chat_server.py): what they send, and every way the server
can fail them: each a clear error, and nothing lost."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from memrules import MemoryConfig, Pipeline, load_pipeline
from memrules._core.errors import ConfigError, EmbedderError, SummarizerError
from memrules._core.messages import Conversation, ToolCall, ToolResult, message
from memrules._core.survivors import SurvivorRule
from memrules.seams import Seams, openai_embedder, openai_summarizer
from memrules.seams.summarizers import SUMMARY_PROMPT
from memrules.strategies import summarize
from memrules.strategies.seamed import SUMMARY_PREFIX
from tests.support.chat_server import ChatServer, bag_of_words
from tests.support.strategies import COUNTER

KEY = "sk-seam-0123456789"


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("no_proxy", "*")
    monkeypatch.setenv("NO_PROXY", "*")
    monkeypatch.setenv("MEMRULES_SEAM_KEY", KEY)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(
        reply=lambda messages: "The vault is in Lisbon; open task: rotate the key."
    ) as s:
        yield s


HISTORY: Conversation = (
    message("system", "You are terse."),
    message("user", "The vault is in Lisbon."),
    message(
        "assistant", "Noted.", ToolCall(id="c1", name="read_file", arguments='{"path": "v.md"}')
    ),
    message("tool", ToolResult(call_id="c1", content="vault: Lisbon")),
    message("assistant", "It is in Lisbon."),
    message("user", "Rotate the key on Friday."),
    message("assistant", "Will do."),
    message("user", "Where is the vault?"),
)


def summarizing(url: str, **options: Any) -> Pipeline:
    summarizer = openai_summarizer(
        base_url=url, model="m", api_key_env="MEMRULES_SEAM_KEY", **options
    )
    # Without the task rule: the first turn is the one summarized, as a chat's old turn is.
    config = MemoryConfig(
        max_messages=3, strategies=[summarize(turns=1)], survivors=SurvivorRule(task=False)
    )
    return Pipeline.from_config(config, seams=Seams(summarizer=summarizer), counter=COUNTER)


def test_the_summarizer_sends_the_prompt_and_records_the_call(server: ChatServer) -> None:
    result = summarizing(server.url).apply(HISTORY)
    (body,) = server.chat_requests
    assert body["model"] == "m"
    assert body["temperature"] == 0
    assert body["max_tokens"] == 512
    assert body["messages"][0] == {"role": "system", "content": SUMMARY_PROMPT}
    transcript = body["messages"][1]["content"]
    assert '[1] assistant: Noted.\nread_file({"path": "v.md"})' in transcript
    assert '[2] tool: read_file({"path": "v.md"}) -> vault: Lisbon' in transcript
    assert server.requests[0].headers["Authorization"] == f"Bearer {KEY}"

    summary = result.messages[1]
    assert summary.role == "user"
    assert summary.text.startswith(SUMMARY_PREFIX)
    assert (
        'in place of the turn "The vault is in Lisbon."; the turn "Rotate the key' in summary.text
    )
    assert summary.text.endswith("The vault is in Lisbon; open task: rotate the key.")
    (action,) = [a for a in result.report.actions if a.changed]
    (call,) = action.seam_calls
    assert call.request == body  # what was sent, as JSON: a replay can answer it
    assert call.response == {"text": "The vault is in Lisbon; open task: rotate the key."}
    report = json.dumps(result.report.to_dict())
    assert KEY not in report
    assert "MEMRULES_SEAM_KEY" not in report


def test_the_summarizer_retries_429_and_5xx(server: ChatServer) -> None:
    server.fail = [429, 503]
    server.retry_after = "0"
    result = summarizing(server.url).apply(HISTORY)
    assert result.report.errors == ()
    assert len(server.chat_requests) == 3


@pytest.mark.parametrize(
    ("server_options", "words"),
    [
        ({"fail": [503, 503, 503]}, "answered HTTP 503"),
        ({"delay": 1.0}, "did not answer within 0.2 s"),
        ({"raw": b"<html>busy</html>"}, "did not answer JSON"),
        ({"reply": lambda messages: ""}, "answered no summary"),
    ],
)
def test_a_failing_summarizer_leaves_every_message_in_place(
    server_options: dict[str, Any], words: str
) -> None:
    with ChatServer(retry_after="0", **server_options) as failing:
        result = summarizing(failing.url, timeout_s=0.2, retries=2).apply(HISTORY)
    assert result.messages is HISTORY
    assert result.report.last_error is not None
    assert words in result.report.last_error
    call = result.report.actions[0].seam_calls[0]
    assert call.error is not None
    assert call.error.startswith("SummarizerError: ")
    assert words in call.error
    assert call.request["model"] == "m"
    assert KEY not in json.dumps(result.report.to_dict())


def test_the_summarizer_raises_its_own_error(server: ChatServer) -> None:
    summarizer = openai_summarizer(base_url=server.url, model="m")
    server.raw = b'{"choices": []}'
    with pytest.raises(SummarizerError, match=r"answered no summary .*choices\[0\]"):
        summarizer.summarize(HISTORY[1:3])


def test_summarizer_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        openai_summarizer(base_url="ftp://x", model="m")
    with pytest.raises(ConfigError, match="max_tokens=0"):
        openai_summarizer(base_url="http://x/v1", model="m", max_tokens=0)
    assert "sk-" not in repr(openai_summarizer(base_url="http://x/v1", model="m", api_key_env="K"))


# --- the embedder ----------------------------------------------------------------------


def test_the_embedder_sends_batches_and_orders_by_index(server: ChatServer) -> None:
    embedder = openai_embedder(
        base_url=server.url, model="e", api_key_env="MEMRULES_SEAM_KEY", batch_size=2
    )
    texts = ["user: the vault", "assistant: Lisbon", "tool: x = 1"]
    vectors = embedder.embed(texts)
    assert [r["input"] for r in server.embedding_requests] == [texts[:2], texts[2:]]
    assert server.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    for text, vector in zip(texts, vectors, strict=True):
        expected = bag_of_words(text)
        norm = sum(x * x for x in expected) ** 0.5
        assert vector == pytest.approx([x / norm for x in expected])
    assert embedder.dimension == 16
    assert KEY not in repr(embedder)


def test_the_embedder_asks_for_its_dimensions(server: ChatServer) -> None:
    embedder = openai_embedder(base_url=server.url, model="e", dimensions=8)
    assert len(embedder.embed(["hello"])[0]) == 8
    assert server.embedding_requests[0]["dimensions"] == 8


def test_the_embedder_retries_429_and_5xx(server: ChatServer) -> None:
    server.fail = [500, 429]
    server.retry_after = "0"
    assert len(openai_embedder(base_url=server.url, model="e").embed(["a"])) == 1
    assert len(server.embedding_requests) == 3


def _reply(**changes: Any) -> Any:
    def answer(body: dict[str, Any]) -> Any:
        data = [{"index": i, "embedding": [1.0, 0.0]} for i, _ in enumerate(body["input"])]
        return {"data": data, **changes}

    return answer


@pytest.mark.parametrize(
    ("server_options", "words"),
    [
        ({"fail": [502, 502, 502]}, "answered HTTP 502"),
        ({"delay": 1.0}, "did not answer within 0.2 s"),
        ({"raw": b"not json"}, "did not answer JSON"),
        ({"embeddings": lambda body: {"nope": 1}}, "answered no data list"),
        ({"embeddings": _reply(data=[])}, "answered 0 embeddings for 2 inputs"),
        (
            {
                "embeddings": _reply(
                    data=[{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]
                )
            },
            "two embeddings for input 0",
        ),
        (
            {
                "embeddings": _reply(
                    data=[{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": ["x"]}]
                )
            },
            "not a list of finite numbers",
        ),
        (
            {
                "embeddings": _reply(
                    data=[{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]
                )
            },
            "a vector of 2 floats for input 1, expected 1",
        ),
    ],
)
def test_a_failing_embedder_is_one_clear_error(server_options: dict[str, Any], words: str) -> None:
    with ChatServer(retry_after="0", **server_options) as failing:
        embedder = openai_embedder(base_url=failing.url, model="e", timeout_s=0.2)
        with pytest.raises(EmbedderError) as info:
            embedder.embed(["a", "b"])
    assert words in str(info.value)
    assert str(info.value).startswith("embedder 'e'")


def test_a_config_builds_both_http_seams(server: ChatServer) -> None:
    pipeline = load_pipeline(
        "summarizer:\n"
        "  type: openai\n"
        f"  base_url: {server.url}\n"
        "  model: m\n"
        "  api_key_env: MEMRULES_SEAM_KEY\n"
        "  max_tokens: 100\n"
        "  timeout_s: 5\n"
        "  retries: 1\n"
        "max_messages: 4\n"
        "survivors: {task: false}\n"
        "strategies:\n"
        "  - type: summarize\n"
        "    turns: 1\n",
        counter=COUNTER,
    )
    assert repr(pipeline.seams.summarizer).startswith("openai_summarizer(base_url=")
    # The file read is long enough that its summary saves tokens (one that
    # saves none is refused).
    long_read = message("tool", ToolResult(call_id="c1", content="vault: Lisbon\n" * 40))
    result = pipeline.apply((*HISTORY[:3], long_read, *HISTORY[4:]))
    assert server.chat_requests[0]["max_tokens"] == 100
    assert result.messages[1].text.startswith(SUMMARY_PREFIX)
    assert "MEMRULES_SEAM_KEY" in repr(pipeline.config.summarizer)
    assert KEY not in repr(pipeline.config)
