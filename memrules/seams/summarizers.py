"""Summarizers: a deterministic extractive one, and any OpenAI-compatible
chat endpoint.

Both read the messages as ``<name or role>: <text>`` lines (tool calls as
``name(arguments)``, tool results after the call they answer) and keep what
a conversation needs later: names, numbers, paths, decisions and open tasks.

>>> from memrules import message
>>> summarizer = extractive_summarizer(max_chars=200)
>>> print(summarizer.summarize((
...     message("user", "Hi! The deploy key is in vault/prod/deploy.key, rotate it by May 3."),
...     message("assistant", "Noted. We decided to use Terraform 1.7 for the rollout."),
... )))
- user: The deploy key is in vault/prod/deploy.key, rotate it by May 3.
- assistant: We decided to use Terraform 1.7 for the rollout.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from memrules._core.checks import check_api_key_env, check_seconds, check_whole
from memrules._core.errors import ConfigError, SummarizerError
from memrules._core.messages import Conversation, ToolCall
from memrules._core.seam_protocols import Summarizer
from memrules._core.seam_records import index_text
from memrules._io.http import (
    MAX_RETRIES,
    MAX_TIMEOUT,
    EndpointError,
    JSONClient,
    check_base_url,
    one_line,
)

__all__ = [
    "SUMMARY_PROMPT",
    "extractive_summarizer",
    "openai_summarizer",
    "transcript",
]

SUMMARY_PROMPT = (
    "You summarize part of a conversation between a user and an AI assistant, with the "
    "assistant's tool calls and their results. These messages are being removed from the "
    "assistant's context; it will go on with only your summary in their place, so write what "
    "it needs to go on, under these headings (leave out a heading with nothing under it):\n"
    "Task and constraints: what the user asked for, and every requirement, limit or "
    "preference they set.\n"
    "Files touched: each file read, created, edited or deleted, by its exact path, and what "
    "was done to it.\n"
    "Decisions: each decision made, with its reason.\n"
    "Errors seen: each error, failing test or non-zero exit, with the command that gave it "
    "and its key line exactly as printed, and whether it was fixed.\n"
    "What is left: every open task, question or promise not yet done, and the next step.\n"
    "Keep exactly as written: names of people, projects and tools; numbers, dates, versions "
    "and identifiers; paths, URLs and commands. Drop greetings, repetition and tool output "
    "nobody needs again. Add nothing that is not in the messages. Answer with the summary only."
)
"""The system prompt of `openai_summarizer` unless it is given another
(``prompt``): the sections an agent needs to go on with its task."""


def _clip(text: str, limit: int) -> str:
    """``text`` cut to its head and tail, ``limit`` characters in all."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head - 5
    return f"{text[:head]} […] {text[len(text) - tail :]}" if tail > 0 else text[:limit]


def transcript(messages: Conversation, *, max_message_chars: int = 4000) -> str:
    """The messages as numbered lines, ``[i] <name or role>: <text>``, each
    cut to ``max_message_chars`` (head and tail kept)."""
    calls = {p.id: p for m in messages for p in m.parts if isinstance(p, ToolCall)}
    return "\n".join(
        f"[{i}] {_clip(index_text(m, calls), max_message_chars)}" for i, m in enumerate(messages)
    )


# --- extractive ------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_PATH = re.compile(r"[\w.~-]*/[\w./-]+|\b[\w-]+\.(?:[a-z]{1,5})\b")
_NUMBER = re.compile(r"\b\d[\d.,:/-]*\b")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:[A-Z][a-z]+)*\b")
_DECISION = re.compile(
    r"\b(decided|decision|agreed|chose|choose|will use|we use|going with|settled|prefer|must)\b",
    re.IGNORECASE,
)
_OPEN = re.compile(
    r"\b(todo|to do|next|need to|needs to|remaining|pending|open|not yet|follow up|fix|"
    r"remember|deadline|by (?:mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|"
    r"oct|nov|dec)\w*)\b",
    re.IGNORECASE,
)
_ERROR = re.compile(
    r"\b(error|errors|exception|traceback|failed|failure|fatal|panic|segmentation fault|"
    r"exit (?:code|status)|non-zero|assertionerror|\w+error)\b|^E\s",
    re.IGNORECASE,
)
_COMMAND = re.compile(
    r"^[\w.-]+\(\{.*\}\)|^\$ |\b(?:pytest|python|pip|npm|git|make|cargo|go test)\b"
)
_CONSTRAINT = re.compile(
    r"\b(do not|don't|never|must not|should not|shouldn't|without changing|only use|keep the)\b",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(hi|hello|hey|thanks|thank you|ok|okay|sure|great|noted|got it|you're welcome)\b[\s!.,]*$",
    re.IGNORECASE,
)


def _score(sentence: str) -> int:
    """How much of what a summary must keep ``sentence`` holds: errors,
    commands and constraints most, then paths, decisions, open tasks,
    numbers and names."""
    score = 3 * len(_PATH.findall(sentence)) + 2 * len(_NUMBER.findall(sentence))
    score += 2 * len(_NAME.findall(sentence))
    score += 4 * bool(_DECISION.search(sentence)) + 4 * bool(_OPEN.search(sentence))
    score += 8 * bool(_ERROR.search(sentence)) + 8 * bool(_COMMAND.search(sentence))
    score += 6 * bool(_CONSTRAINT.search(sentence))
    return score


def _sentences(line: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(line) if s and s.strip()]


@attrs.frozen(slots=True, repr=False)
class _Extractive:
    max_chars: int
    max_sentence_chars: int

    def summarize(self, messages: Conversation) -> str:
        calls = {p.id: p for m in messages for p in m.parts if isinstance(p, ToolCall)}
        found: list[tuple[int, int, str, str]] = []  # (score, order, speaker, sentence)
        for m in messages:
            speaker, _, body = index_text(m, calls).partition(": ")
            for sentence in _sentences(body):
                if _FILLER.match(sentence):
                    continue
                clipped = _clip(sentence, self.max_sentence_chars)
                found.append((_score(sentence), len(found), speaker, clipped))
        chosen: list[tuple[int, str, str]] = []
        used = 0
        for score, order, speaker, sentence in sorted(found, key=lambda f: (-f[0], f[1])):
            line = len(speaker) + len(sentence) + 5
            if used + line > self.max_chars:
                if score == 0:
                    break
                continue
            chosen.append((order, speaker, sentence))
            used += line
        if not chosen:
            return f"({len(messages)} messages with nothing to keep)"
        return "\n".join(f"- {speaker}: {sentence}" for _, speaker, sentence in sorted(chosen))

    def request_json(self, messages: Conversation) -> dict[str, Any]:
        return {
            "summarizer": "extractive",
            "max_chars": self.max_chars,
            "max_sentence_chars": self.max_sentence_chars,
            "transcript": transcript(messages),
        }

    def __repr__(self) -> str:
        return (
            f"extractive_summarizer(max_chars={self.max_chars}, "
            f"max_sentence_chars={self.max_sentence_chars})"
        )


def extractive_summarizer(*, max_chars: int = 2000, max_sentence_chars: int = 300) -> Summarizer:
    """A summarizer that needs no model: it keeps the sentences that hold
    paths, numbers, names, decisions and open tasks (in that spirit, scored),
    as many as fit ``max_chars``, in their original order, each as ``-
    speaker: sentence`` and cut to ``max_sentence_chars``. Greetings and
    acknowledgements go. Deterministic: the same messages give the same text.
    """
    check_whole("max_chars", max_chars, 100)
    check_whole("max_sentence_chars", max_sentence_chars, 40)
    return _Extractive(max_chars, max_sentence_chars)


# --- OpenAI-compatible ------------------------------------------------------------------


@attrs.frozen(slots=True, repr=False)
class _OpenAISummarizer:
    client: JSONClient
    model: str
    max_tokens: int
    max_message_chars: int
    prompt: str = SUMMARY_PROMPT

    def with_prompt(self, prompt: str) -> Summarizer:
        """This summarizer with ``prompt`` as its system prompt (a new one;
        this one is unchanged): what ``summarize``'s ``prompt`` asks for."""
        _check_prompt(prompt)
        return attrs.evolve(self, prompt=prompt)

    def request_json(self, messages: Conversation) -> dict[str, Any]:
        """The chat-completions body `summarize` posts."""
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": self.prompt},
                {
                    "role": "user",
                    "content": "Summarize these messages:\n\n"
                    + transcript(messages, max_message_chars=self.max_message_chars),
                },
            ],
            "max_tokens": self.max_tokens,
            "temperature": 0,
        }

    def summarize(self, messages: Conversation) -> str:
        try:
            reply = self.client.post("chat/completions", self.request_json(messages))
        except EndpointError as exc:
            raise self._failed(exc) from exc
        return self._summary(reply)

    async def summarize_async(self, messages: Conversation) -> str:
        """`summarize` without blocking the event loop: the same
        request, retries and errors (what ``Pipeline.apply_async`` awaits)."""
        try:
            reply = await self.client.post_async("chat/completions", self.request_json(messages))
        except EndpointError as exc:
            raise self._failed(exc) from exc
        return self._summary(reply)

    def _failed(self, exc: EndpointError) -> SummarizerError:
        return SummarizerError(f"summarizer {self.model!r} failed: {exc}")

    def _summary(self, reply: object) -> str:
        text = _content(reply)
        if text is None:
            msg = (
                f"summarizer {self.model!r} at {self.client.url('chat/completions')} answered "
                "no summary (expected choices[0].message.content, a non-empty string): "
                f"{one_line(repr(reply))}"
            )
            raise SummarizerError(msg)
        return text

    def __repr__(self) -> str:
        c = self.client
        key = f", api_key_env={c.api_key_env!r}" if c.api_key_env else ""
        prompt = "" if self.prompt == SUMMARY_PROMPT else f", prompt={self.prompt!r}"
        return (
            f"openai_summarizer(base_url={c.base_url!r}, model={self.model!r}{key}, "
            f"max_tokens={self.max_tokens}, timeout_s={c.timeout:g}, retries={c.retries}{prompt})"
        )


def _content(reply: object) -> str | None:
    if not isinstance(reply, Mapping):
        return None
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return None
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        return None
    content = message.get("content")
    if not isinstance(content, str) or not content.strip():
        return None
    return content.strip()


def openai_summarizer(
    *,
    base_url: str,
    model: str,
    api_key_env: str | None = None,
    max_tokens: int = 512,
    timeout_s: float = 60.0,
    retries: int = 2,
    max_message_chars: int = 4000,
    prompt: str = SUMMARY_PROMPT,
) -> Summarizer:
    """A summarizer that asks an OpenAI-compatible chat endpoint (llama.cpp
    server, vLLM, Ollama, OpenAI) at ``base_url`` (``http://host:8080/v1``)
    with ``prompt`` as the system message (`SUMMARY_PROMPT` unless
    given; a ``summarize`` strategy's own ``prompt`` replaces it for its
    calls), ``temperature: 0`` and at most ``max_tokens``. Each attempt
    waits ``timeout_s``; HTTP 429 and 5xx are retried ``retries`` times
    with backoff. The API key is read from the environment variable
    ``api_key_env`` names, at each request, and never logged or recorded.
    Failures raise `SummarizerError`.
    """
    check_base_url(base_url)
    if not isinstance(model, str) or not model:
        msg = f"model={model!r} must be a non-empty string"
        raise ConfigError.single(msg, yaml_path="model")
    check_api_key_env(api_key_env)
    check_whole("max_tokens", max_tokens, 1)
    check_whole("max_message_chars", max_message_chars, 100)
    timeout = check_seconds("timeout_s", timeout_s, MAX_TIMEOUT)
    check_whole("retries", retries, 0, MAX_RETRIES)
    _check_prompt(prompt)
    client = JSONClient(
        base_url=base_url, api_key_env=api_key_env, timeout=timeout, retries=retries
    )
    return _OpenAISummarizer(client, model, max_tokens, max_message_chars, prompt)


def _check_prompt(prompt: object) -> None:
    if not isinstance(prompt, str) or not prompt.strip():
        msg = f"prompt={prompt!r} must be a string that says something"
        raise ConfigError.single(msg, yaml_path="prompt")
