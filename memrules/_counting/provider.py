"""Counting by asking the provider: for models whose tokenizer is not public.

Claude's tokenizer is not published, and tiktoken undercounts it (a
conversation that tiktoken calls 150k tokens overflows a 200k Claude
window). Anthropic answers the question itself at
``POST /v1/messages/count_tokens``. `ProviderCounter` puts such an
endpoint (any `CountEndpoint`) behind the same per-message cache as
every other counter, so an agent loop pays one request per *new* message,
never one per message per turn:

    encoder_name: "anthropic:claude-sonnet-4-5"

reads the key from ``ANTHROPIC_API_KEY`` (sent as ``x-api-key``) and the
server from ``ANTHROPIC_BASE_URL`` (``https://api.anthropic.com`` when
unset), as Anthropic's own SDK does.

An endpoint counts a whole request, which carries framing around the
message; a message's count is the request's count less that framing,
measured once per counter with a one-token text (``"a"``). Counting fails
with the endpoint's `EndpointError` (a
`MemrulesError`): a budget cannot be kept with a count
that is unknown, so nothing is guessed.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from typing import ClassVar, Protocol, runtime_checkable

import attrs

from memrules._core.checks import is_whole
from memrules._core.errors import EncodingError
from memrules._core.messages import Message
from memrules._counting.content import DEFAULT_COUNTING, message_content_tokens
from memrules._counting.images import ANTHROPIC_RULE
from memrules._counting.tokens import DEFAULT_CACHE_SIZE, BoundedCache, _message_text
from memrules._io.http import JSONClient, MalformedReplyError

__all__ = [
    "ANTHROPIC_VERSION",
    "SCHEME",
    "AnthropicCountEndpoint",
    "CountEndpoint",
    "ProviderCounter",
    "anthropic_counter",
]

SCHEME = "anthropic"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"
CALIBRATION_TEXT = "a"
"""A text of one token in every tokenizer: what the framing is measured with."""


@runtime_checkable
class CountEndpoint(Protocol):
    """The seam: counts the tokens of a request whose one user message is
    ``text`` (framing included). May do I/O; raises on failure."""

    def count_request(self, text: str) -> int: ...


@attrs.frozen(kw_only=True, slots=True)
class AnthropicCountEndpoint:
    """Anthropic's ``POST /v1/messages/count_tokens`` for ``model``."""

    client: JSONClient
    model: str

    def count_request(self, text: str) -> int:
        body = {"model": self.model, "messages": [{"role": "user", "content": text}]}
        reply = self.client.post("messages/count_tokens", body)
        count = reply.get("input_tokens") if isinstance(reply, dict) else None
        if not is_whole(count, 0):
            url = self.client.url("messages/count_tokens")
            msg = f"{url} answered without a whole input_tokens count: {str(reply)[:200]}"
            raise MalformedReplyError(msg, url=url)
        return count


class ProviderCounter:
    """A `TokenCounter` that asks a `CountEndpoint`,
    cached per message value and per text; safe to share between threads.

    ``framing`` is what the endpoint adds to every request; None measures it
    once, on first use, as ``count_request("a") - 1``.

    ``frames_itself``: its message counts are the provider's own, so no
    ``count_rule`` frames them again (which would also ask the endpoint for
    every field of every message).
    """

    __slots__ = ("_cache", "_framing", "_lock", "_texts", "cache_size", "endpoint", "name")

    frames_itself: ClassVar[bool] = True

    def __init__(
        self,
        endpoint: CountEndpoint,
        *,
        name: str,
        framing: int | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        if not is_whole(cache_size, 1):
            msg = f"cache_size={cache_size!r} must be a whole number of at least 1"
            raise EncodingError(msg)
        if framing is not None and (isinstance(framing, bool) or framing < 0):
            msg = f"framing={framing!r} must be a whole number of at least 0, or None"
            raise EncodingError(msg)
        self.endpoint = endpoint
        self.name = name
        self.cache_size = cache_size
        self._framing = framing
        self._lock = threading.Lock()
        self._cache = BoundedCache(self._compute, cache_size)
        self._texts = functools.lru_cache(maxsize=cache_size)(self._ask)

    @property
    def framing(self) -> int:
        """Tokens the endpoint adds to every request (measured on first use)."""
        if self._framing is None:
            with self._lock:
                if self._framing is None:
                    self._framing = max(0, self.endpoint.count_request(CALIBRATION_TEXT) - 1)
        return self._framing

    def _ask(self, text: str) -> int:
        return max(0, self.endpoint.count_request(text) - self.framing)

    def _compute(self, message: Message) -> int:
        # The endpoint is asked about text only: images and documents are
        # priced by Anthropic's published rule, thinking by its text.
        text = self.count_text(_message_text(message))
        return text + message_content_tokens(
            message, ANTHROPIC_RULE, DEFAULT_COUNTING, self.count_text
        )

    def count(self, message: Message) -> int:
        return self._cache.get(message)

    def counts(self, messages: Sequence[Message]) -> tuple[int, ...]:
        return self._cache.many(messages)

    def count_text(self, text: str) -> int:
        if not text:  # the endpoint refuses empty content, and it is nothing
            return 0
        count: int = self._texts(text)
        return count

    def __repr__(self) -> str:
        return f"ProviderCounter({self.name!r}, cache_size={self.cache_size})"


def anthropic_counter(
    model: str,
    *,
    base_url: str | None = None,
    api_key_env: str = "ANTHROPIC_API_KEY",
    timeout: float = 30.0,
    cache_size: int = DEFAULT_CACHE_SIZE,
) -> ProviderCounter:
    """A counter that asks Anthropic's count-tokens endpoint about ``model``,
    named ``anthropic:<model>``. ``base_url`` is the server (``ANTHROPIC_BASE_URL``
    or Anthropic's by default), without ``/v1``."""
    if not model:
        msg = "anthropic: needs a model name after it, as in 'anthropic:claude-sonnet-4-5'"
        raise EncodingError(msg)
    server = base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
    client = JSONClient(
        base_url=server.rstrip("/") + "/v1",
        api_key_env=api_key_env,
        api_key_header="x-api-key",
        headers=(("anthropic-version", ANTHROPIC_VERSION),),
        timeout=timeout,
    )
    endpoint = AnthropicCountEndpoint(client=client, model=model)
    return ProviderCounter(endpoint, name=f"{SCHEME}:{model}", cache_size=cache_size)
