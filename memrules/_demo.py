"""The seed's four-turn example, as ``memrules demo``.

Four turns with ``max_messages: 6``, a 256-token window, ``warn_fraction:
0.2`` and one ``sliding_window`` that keeps 4 messages. The client keeps the
conversation (a system prompt and the user and assistant turns); the plugin
edits only the prompt each request sends. On turn 4 the gauge crosses 20%, so
the warning is appended, and the nine-message prompt is over the six-message
trigger, so the window trims it to four: the first system message, the last
reply, the question and the warning (``SAUS``). The turn that said where the
vault is has gone, so the model cannot answer.

By default the model is :func:`scripted_reply`, which answers from what the
prompt holds, offline and deterministically. ``--base-url URL`` sends the
prompts to an OpenAI-compatible chat endpoint instead (llama.cpp server,
vLLM, Ollama, OpenAI) with :class:`OpenAIChat`, over
:class:`memrules._http.JSONClient`. Replies and token counts then depend on
the model; the message counts and shapes do not.

The command line (``memrules demo``) is in :mod:`memrules._cli`; this module
gives it :func:`add_arguments` and :func:`render`, which builds the whole
output before anything is written.
"""

from __future__ import annotations

import argparse
import json
import re
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

import attrs

from memrules._adapters import to_openai
from memrules._config import MemoryConfig
from memrules._conversation import last_user_index
from memrules._errors import ConfigError
from memrules._http import (
    EndpointStatusError,
    JSONClient,
    MalformedReplyError,
    check_base_url,
    one_line,
)
from memrules._messages import Conversation, Message, message
from memrules._plugin import MemoryPlugin, Request
from memrules._report import CompressionReport
from memrules._usage import ContextUsage, ContextUsageObserver
from memrules.strategies import sliding_window

__all__ = [
    "SYSTEM_PROMPT",
    "TURNS",
    "ChatModel",
    "OpenAIChat",
    "Turn",
    "add_arguments",
    "demo_config",
    "header_lines",
    "render",
    "run",
    "scripted_reply",
    "shape",
]

SYSTEM_PROMPT = "You are terse."
TURNS = (
    "The vault is in Lisbon. Reply with: noted",
    "The key rotates on friday. Reply with: noted",
    "The owner is ops@example.com. Reply with: noted",
    "Where is the vault? Answer in one word.",
)

ChatModel: TypeAlias = Callable[[Conversation], str]
"""A chat model: the prompt's messages in, the reply's text out."""

_LETTERS = {"system": "S", "user": "U", "assistant": "A", "tool": "T"}


def demo_config(*observers: ContextUsageObserver) -> MemoryConfig:
    """The seed example's config, with ``observers`` attached. It counts by
    the seed's rule (``count_rule: seed``, no framing), so that the gauge
    prints the seed's figures."""
    return MemoryConfig(
        count_rule="seed",
        context_window_tokens=256,
        max_messages=6,
        warn_fraction=0.2,
        strategies=[sliding_window(keep_messages=4)],
        observers=observers,
    )


def shape(messages: Conversation) -> str:
    """One letter per message, by role: ``SUAU``."""
    return "".join(_LETTERS[m.role] for m in messages)


_REPLY_WITH = re.compile(r"Reply with:\s*(.+?)\s*$")
_WHERE_IS = re.compile(r"\bWhere is the ([\w-]+)\?", re.IGNORECASE)


def scripted_reply(messages: Conversation) -> str:
    """The offline model: answers the latest user message from the prompt.

    ``"... Reply with: X"`` gets ``X``. ``"Where is the T?"`` gets the place
    that a message of the prompt gives (``"The T is in P"`` → ``"P."``), and
    ``"Unknown."`` when no message does: what was dropped is gone. Anything
    else gets ``"Unknown."``.
    """
    last = last_user_index(messages)
    if last is None:
        return "Unknown."
    question = messages[last].text
    if found := _REPLY_WITH.search(question):
        return found.group(1)
    if found := _WHERE_IS.search(question):
        fact = re.compile(rf"\bThe {re.escape(found.group(1))} is in ([^\s.,;]+)", re.IGNORECASE)
        for i, m in enumerate(messages):
            if i != last and (place := fact.search(m.text)):
                return f"{place.group(1)}."
    return "Unknown."


@attrs.frozen(kw_only=True, slots=True)
class OpenAIChat:
    """A :data:`ChatModel` over an OpenAI-compatible chat-completions endpoint,
    on :class:`~memrules._http.JSONClient`.

    ``base_url`` is the API root, ``http://localhost:8080/v1``; a URL with no
    path (``http://localhost:8080``) gets ``/v1``. ``model`` None asks the
    endpoint for its models and takes the first (``"default"`` when it does
    not list any). ``api_key_env`` names the environment variable holding
    the API key. Raises an :class:`~memrules._http.EndpointError` on failure.
    """

    base_url: str = attrs.field(converter=check_base_url)
    model: str | None = None
    api_key_env: str | None = None
    timeout: float = 60.0
    retries: int = 2
    _client: JSONClient = attrs.field(
        init=False,
        repr=False,
        default=attrs.Factory(
            lambda self: JSONClient(
                base_url=self.api_root,
                api_key_env=self.api_key_env,
                timeout=self.timeout,
                retries=self.retries,
            ),
            takes_self=True,
        ),
    )

    @property
    def api_root(self) -> str:
        root = self.base_url.rstrip("/")
        if urllib.parse.urlsplit(root).path == "":
            root += "/v1"
        return root

    def model_name(self) -> str:
        """``model``, or the first model the endpoint lists at ``/models``."""
        if self.model is not None:
            return self.model
        try:
            listing = self._client.get("models")
        except (EndpointStatusError, MalformedReplyError):
            return "default"
        data = listing.get("data") if isinstance(listing, dict) else None
        if isinstance(data, list) and data and isinstance(data[0], dict):
            first = data[0].get("id")
            if isinstance(first, str) and first:
                return first
        return "default"

    def with_model(self) -> OpenAIChat:
        """This client with ``model`` filled in (see :meth:`model_name`)."""
        if self.model is not None:
            return self
        return OpenAIChat(
            base_url=self.base_url,
            model=self.model_name(),
            api_key_env=self.api_key_env,
            timeout=self.timeout,
            retries=self.retries,
        )

    def __call__(self, messages: Conversation) -> str:
        body = {"model": self.model_name(), "messages": to_openai(messages), "temperature": 0}
        payload = self._client.post("chat/completions", body)
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            url = self._client.url("chat/completions")
            msg = f"{url} answered without choices[0].message.content: {one_line(str(payload))}"
            raise MalformedReplyError(msg, url=url)
        return content.strip()


@attrs.frozen(kw_only=True, slots=True)
class Turn:
    """One turn of the demo: what the user said, the gauge reading, the
    prompt as received and as sent, and the reply."""

    number: int
    user: str
    usage: ContextUsage
    received: Conversation
    sent: Conversation
    warning: bool
    report: CompressionReport
    reply: str

    @property
    def compacted(self) -> bool:
        return self.report.compacted

    def lines(self) -> list[str]:
        """The seed's lines for this turn."""
        u = self.usage
        edits = f"warning {str(self.warning).lower()}" + (", compacted" if self.compacted else "")
        return [
            f'Turn {self.number}: "{self.user}"',
            f"  gauge: {u.tokens}/{u.window} tokens ({u.fraction:.0%}), "
            f"window resolved {str(u.window_resolved).lower()}",
            f"  prompt: {len(self.received)} messages in, {len(self.sent)} out "
            f"({shape(self.sent)}), {edits}",
            f"  reply: {one_line(self.reply, limit=400)}",
        ]

    def to_dict(self) -> dict[str, Any]:
        u = self.usage
        return {
            "turn": self.number,
            "user": self.user,
            "usage": {
                "tokens": u.tokens,
                "window": u.window,
                "fraction": u.fraction,
                "messages": u.messages,
                "window_resolved": u.window_resolved,
            },
            "messages_in": len(self.received),
            "messages_out": len(self.sent),
            "shape_in": shape(self.received),
            "shape_out": shape(self.sent),
            "warning": self.warning,
            "compacted": self.compacted,
            "prompt": to_openai(self.sent),
            "reply": self.reply,
            "report": self.report.to_dict(),
        }


def run(chat: ChatModel, *, model: str | None = None) -> Iterator[Turn]:
    """Play the four turns against ``chat``, yielding each as it completes.

    ``model`` is the request's model name (for a window resolver; the demo
    has none). The gauge is an observer that keeps every reading; each turn
    shows the one its request produced.
    """
    gauge: list[ContextUsage] = []
    plugin = MemoryPlugin(demo_config(gauge.append))
    history: list[Message] = [message("system", SYSTEM_PROMPT)]
    for number, text in enumerate(TURNS, start=1):
        history.append(message("user", text))
        received = Request(messages=history, model=model)
        result = plugin.handle(received)
        sent = result.request
        reply = chat(sent.messages)
        history.append(message("assistant", reply))
        yield Turn(
            number=number,
            user=text,
            usage=gauge[-1],
            received=received.messages,
            sent=sent.messages,
            warning=result.warned,
            report=result.report,
            reply=reply,
        )


def header_lines(config: MemoryConfig) -> list[str]:
    """The seed's lines before the turns: trigger, strategies, legend."""
    return [
        f"Trigger: max_messages {config.max_messages}, window "
        f"{config.context_window_tokens} tokens, warn at {config.warn_fraction:.0%}",
        "Strategy: " + ", ".join(repr(s.strategy) for s in config.strategies),
        "Prompt shape letters: S system, U user, A assistant",
    ]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``memrules demo`` arguments, on the command line's one parser."""
    parser.add_argument(
        "--base-url",
        metavar="URL",
        type=_url_argument,
        help="an OpenAI-compatible API root, e.g. http://localhost:8080/v1 (llama.cpp, vLLM, "
        "Ollama); without it a scripted local model answers",
    )
    parser.add_argument(
        "--model", help="the model to ask (default: the first one the endpoint lists)"
    )
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="the environment variable that holds the API key (sent as a bearer token)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds_argument,
        default=60.0,
        metavar="SECONDS",
        help="per request (60)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the transcript as one JSON object"
    )


def _url_argument(text: str) -> str:
    try:
        return check_base_url(text)
    except ConfigError:
        msg = f"{text!r} is not an http:// or https:// URL with a host"
        raise argparse.ArgumentTypeError(msg) from None


def _seconds_argument(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        msg = f"{text!r} is not a number of seconds above 0"
        raise argparse.ArgumentTypeError(msg)
    return value


def render(args: argparse.Namespace) -> str:
    """The demo's whole output for ``args`` (``memrules demo`` arguments).

    Raises an :class:`~memrules._http.EndpointError` when the endpoint fails.
    """
    config = demo_config()
    chat: ChatModel = scripted_reply
    model: str | None = None
    label = "scripted (offline; --base-url URL for a real endpoint)"
    if args.base_url is not None:
        client = OpenAIChat(
            base_url=args.base_url,
            model=args.model,
            api_key_env=args.api_key_env,
            timeout=args.timeout,
        ).with_model()
        chat, model = client, client.model
        label = f"{model} at {client.api_root}"
    if args.json:
        transcript = {
            "model": label,
            "config": {
                "context_window_tokens": config.context_window_tokens,
                "max_messages": config.max_messages,
                "warn_fraction": config.warn_fraction,
                "strategies": [repr(s.strategy) for s in config.strategies],
            },
            "turns": [turn.to_dict() for turn in run(chat, model=model)],
        }
        return json.dumps(transcript, indent=2, ensure_ascii=False) + "\n"
    lines = [f"Model: {label}", *header_lines(config)]
    for turn in run(chat, model=model):
        lines += ["", *turn.lines()]
    return "\n".join(lines) + "\n"
