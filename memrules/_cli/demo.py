"""A four-turn memory example, as ``memrules demo``.

Four turns with ``max_messages: 6``, a 256-token window, ``warn_fraction:
0.2`` and one ``sliding_window`` that keeps 4 messages. The client keeps the
conversation (a system prompt and the user and assistant turns); the plugin
edits only the prompt each request sends. On turn 4 the gauge crosses 20%, so
the warning is appended, and the nine-message prompt is over the six-message
trigger, so the window trims it to four: the first system message, the last
reply, the question and the warning (``SAUS``). The turn that said where the
vault is has gone, so the model cannot answer.

``--graph`` runs the same turns with the working graph on: the offline
extractor reads each request as it arrives (before compaction) and merges
what the user stated into the conversation's graph, and ``graph_context``
renders the graph right after the system prompt. On turn 4 the window still
drops turn 1, but "vault -[is_in]-> Lisbon" is in the graph message
(``SSAUS``), and the model answers "Lisbon." from it.

By default the model is `scripted_reply`, which answers from what the
prompt holds, offline and deterministically. ``--base-url URL`` sends the
prompts to an OpenAI-compatible chat endpoint instead (llama.cpp server,
vLLM, Ollama, OpenAI) with `OpenAIChat`, over
`JSONClient`. Replies and token counts then depend on
the model; the message counts and shapes do not.

The command line (``memrules demo``) is in `memrules._cli.parser`; this module
gives it `add_arguments` and `render`, which builds the whole
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
from memrules._config.load import MemoryConfig
from memrules._core.conversation import last_user_index
from memrules._core.errors import ConfigError
from memrules._core.messages import Conversation, Message, message
from memrules._core.redaction import redact_url
from memrules._core.report import CompressionReport
from memrules._core.survivors import SurvivorRule
from memrules._counting.usage import ContextUsage, ContextUsageObserver
from memrules._io.http import (
    EndpointStatusError,
    JSONClient,
    MalformedReplyError,
    check_base_url,
    one_line,
)
from memrules._plugin.plugin import MemoryPlugin, Request
from memrules.graph.extract import offline_extractor
from memrules.graph.render import GraphContext, RenderedGraph
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


def demo_config(*observers: ContextUsageObserver, graph: bool = False) -> MemoryConfig:
    """The example's config, with ``observers`` attached; with
    ``graph``, also ``graph_context`` (the defaults) and the offline
    ``graph_extractor``. It counts unframed (``count_rule: seed``),
    so that the gauge prints round, readable figures."""
    return MemoryConfig(
        count_rule="seed",
        context_window_tokens=256,
        max_messages=6,
        warn_fraction=0.2,
        strategies=[sliding_window(keep_messages=4)],
        # The seed keeps only the latest user message: with the task (the
        # first user message) kept too, turn 4 would keep turn 1 and answer.
        survivors=SurvivorRule(task=False),
        # Nor does it ask a prompt to lead with a user message: its turn 4
        # sends the last reply right after the system prompt (SAUS).
        user_first=False,
        # The seed's turn 4 sends the last reply before the question: the
        # hook's default repair would drop it (a prompt led by an assistant
        # message), so the demo sends what the window keeps, as it came.
        repair=False,
        observers=observers,
        graph_context=GraphContext() if graph else None,
        graph_extractor=offline_extractor() if graph else None,
    )


def shape(messages: Conversation) -> str:
    """One letter per message, by role: ``SUAU``."""
    return "".join(_LETTERS[m.role] for m in messages)


_REPLY_WITH = re.compile(r"Reply with:\s*(.+?)\s*$")
_WHERE_IS = re.compile(r"\bWhere is the ([\w-]+)\?", re.IGNORECASE)


def scripted_reply(messages: Conversation) -> str:
    """The offline model: answers the latest user message from the prompt.

    ``"... Reply with: X"`` gets ``X``. ``"Where is the T?"`` gets the place
    that a message of the prompt gives (``"The T is in P"``, or the graph
    message's line ``"- T -[is_in]-> P"`` → ``"P."``), and ``"Unknown."``
    when no message does: what was dropped is gone. Anything else gets
    ``"Unknown."``.
    """
    last = last_user_index(messages)
    if last is None:
        return "Unknown."
    question = messages[last].text
    if found := _REPLY_WITH.search(question):
        return found.group(1)
    if found := _WHERE_IS.search(question):
        thing = re.escape(found.group(1))
        fact = re.compile(
            rf"\bThe {thing} is in ([^\s.,;]+)|^- {thing} -\[is_in\]-> ([^\s.,;]+)",
            re.IGNORECASE | re.MULTILINE,
        )
        for i, m in enumerate(messages):
            if i != last and (place := fact.search(m.text)):
                return f"{place.group(1) or place.group(2)}."
    return "Unknown."


@attrs.frozen(kw_only=True, slots=True)
class OpenAIChat:
    """A `ChatModel` over an OpenAI-compatible chat-completions endpoint,
    on `JSONClient`.

    ``base_url`` is the API root, ``http://localhost:8080/v1``; a URL with no
    path (``http://localhost:8080``) gets ``/v1``. ``model`` None asks the
    endpoint for its models and takes the first (``"default"`` when it does
    not list any). ``api_key_env`` names the environment variable holding
    the API key. Raises an `EndpointError` on failure.
    """

    base_url: str = attrs.field(converter=check_base_url, repr=lambda url: repr(redact_url(url)))
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
        parts = urllib.parse.urlsplit(self.base_url)
        path = parts.path.rstrip("/") or "/v1"
        return urllib.parse.urlunsplit(parts._replace(path=path))

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
        """This client with ``model`` filled in (see `model_name`)."""
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
    graph: bool = False
    """Whether the demo ran with the working graph (``--graph``)."""
    rendered: RenderedGraph | None = None
    graph_tokens: int = 0

    @property
    def compacted(self) -> bool:
        return self.report.compacted

    def lines(self) -> list[str]:
        """The example's lines for this turn."""
        u = self.usage
        edits = f"warning {str(self.warning).lower()}" + (", compacted" if self.compacted else "")
        lines = [
            f'Turn {self.number}: "{self.user}"',
            f"  gauge: {u.tokens}/{u.window} tokens ({u.fraction:.0%}), "
            f"window resolved {str(u.window_resolved).lower()}",
            f"  prompt: {len(self.received)} messages in, {len(self.sent)} out "
            f"({shape(self.sent)}), {edits}",
        ]
        if self.graph:
            lines.append(f"  graph: {self._graph_line()}")
        lines.append(f"  reply: {one_line(self.reply, limit=400)}")
        return lines

    def _graph_line(self) -> str:
        r = self.rendered
        if r is None:
            return "empty, no message"
        left_out = r.nodes_left_out + r.relationships_left_out
        return (
            f"{_count(r.nodes_shown, 'node')} and "
            f"{_count(r.relationships_shown, 'relationship')} in the message "
            f"({self.graph_tokens} tokens, outside the budget)"
            + (f", {left_out} left out" if left_out else "")
        )

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
        } | (
            {
                "graph": {
                    "tokens": self.graph_tokens,
                    **(self.rendered.to_dict() if self.rendered is not None else {}),
                }
            }
            if self.graph
            else {}
        )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def run(chat: ChatModel, *, model: str | None = None, graph: bool = False) -> Iterator[Turn]:
    """Play the four turns against ``chat``, yielding each as it completes.

    ``model`` is the request's model name (for a window resolver; the demo
    has none). The gauge is an observer that keeps every reading; each turn
    shows the one its request produced. ``graph`` turns the working graph on.
    """
    gauge: list[ContextUsage] = []
    plugin = MemoryPlugin(demo_config(gauge.append, graph=graph))
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
            graph=graph,
            rendered=result.rendered,
            graph_tokens=result.graph_tokens,
        )


def header_lines(config: MemoryConfig) -> list[str]:
    """The example's lines before the turns: trigger, strategies, legend."""
    lines = [
        f"Trigger: max_messages {config.max_messages}, window "
        f"{config.context_window_tokens} tokens, warn at {config.warn_fraction:.0%}",
        "Strategy: " + ", ".join(repr(s.strategy) for s in config.strategies),
    ]
    if config.graph_context is not None:
        c = config.graph_context
        lines.append(
            f"Graph: graph_context max_nodes {c.max_nodes}, max_relationships "
            f"{c.max_relationships}; extractor {config.graph_extractor!r}"
        )
    lines.append("Prompt shape letters: S system, U user, A assistant")
    return lines


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
        "--graph",
        action="store_true",
        help="with the working graph: facts the user stated are rendered into every prompt",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the transcript as one JSON object"
    )


def _url_argument(text: str) -> str:
    try:
        return check_base_url(text)
    except ConfigError:
        msg = f"{redact_url(text)!r} is not an http:// or https:// URL with a host"
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

    Raises an `EndpointError` when the endpoint fails.
    """
    graph = bool(getattr(args, "graph", False))
    config = demo_config(graph=graph)
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
        label = f"{model} at {redact_url(client.api_root)}"
    if args.json:
        transcript = {
            "model": label,
            "config": {
                "context_window_tokens": config.context_window_tokens,
                "max_messages": config.max_messages,
                "warn_fraction": config.warn_fraction,
                "strategies": [repr(s.strategy) for s in config.strategies],
            }
            | (
                {
                    "graph_context": attrs.asdict(config.graph_context),
                    "graph_extractor": repr(config.graph_extractor),
                }
                if config.graph_context is not None
                else {}
            ),
            "turns": [turn.to_dict() for turn in run(chat, model=model, graph=graph)],
        }
        return json.dumps(transcript, indent=2, ensure_ascii=False) + "\n"
    lines = [f"Model: {label}", *header_lines(config)]
    for turn in run(chat, model=model, graph=graph):
        lines += ["", *turn.lines()]
    return "\n".join(lines) + "\n"
