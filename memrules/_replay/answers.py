"""Answer-level scoring: a model answers from the compacted context, a judge
model grades the answer against the dataset's, and both calls go through the
seam log, so a trace of the run replays without either model.

The answer model gets the compacted request as it is (the conversation as
compaction left it, the question last, as OpenAI messages), with
``temperature: 0``. The judge gets `JUDGE_PROMPT` as its system message
and the question, the reference answer and the candidate answer as the user
message (`judge_messages`), also at ``temperature: 0``; its reply's
first word decides: ``CORRECT`` scores 1, ``WRONG`` (or ``INCORRECT``)
scores 0, anything else is *unjudged* (score None, counted apart). A question
without a reference answer is answered but not judged.

A trace line of kind ``answer`` holds what went in (the conversation, the
question, the reference, the context, the two model names), the two calls,
and what came out (the answer, the judge's verdict, the score);
`replay_answer` runs it again with each call answered from the line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from memrules._adapters import to_openai
from memrules._core.errors import MemrulesError
from memrules._core.messages import Conversation
from memrules.seams._log import seam_call

if TYPE_CHECKING:  # the HTTP client loads only when a model is asked (import memrules loads none)
    from memrules._io.http import JSONClient

__all__ = [
    "ANSWER_INPUTS",
    "ANSWER_MAX_TOKENS",
    "JUDGE_MAX_TOKENS",
    "JUDGE_PROMPT",
    "AnswerError",
    "ChatModel",
    "Scored",
    "answer_line",
    "chat_model",
    "judge_messages",
    "replay_answer",
    "score_answer",
    "verdict_score",
]

JUDGE_PROMPT = (
    "You grade answers to questions about a conversation. You are given a question, "
    "the reference answer and a candidate answer. The candidate is CORRECT if it states "
    "the same fact as the reference (other wording, extra detail or a different date "
    "format are fine) and WRONG if it contradicts the reference, misses the fact, or says "
    "it does not know. Reply with exactly one word: CORRECT or WRONG."
)
"""The judge's system prompt, pinned: changing it changes every score."""

ANSWER_MAX_TOKENS = 256
JUDGE_MAX_TOKENS = 8


class AnswerError(MemrulesError, RuntimeError):
    """An answer or judge model that failed or answered nothing usable;
    names the model and its endpoint."""


@attrs.frozen(kw_only=True, slots=True)
class ChatModel:
    """An OpenAI-compatible chat endpoint asked through the seam log as
    ``seam`` (``answer_model`` or ``judge_model``). Without a ``client`` (a
    replay), it can say its requests but never send them."""

    seam: str
    model: str
    max_tokens: int
    client: JSONClient | None = None

    def request_json(self, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The chat-completions body `chat` posts."""
        return {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "max_tokens": self.max_tokens,
            "temperature": 0,
        }

    def _send(self, messages: Sequence[Mapping[str, Any]]) -> str:
        from memrules._io.http import EndpointError

        if self.client is None:
            msg = f"{self.seam} {self.model!r} has no endpoint here (a replay answers its calls)"
            raise AnswerError(msg)
        try:
            reply = self.client.post("chat/completions", self.request_json(messages))
        except EndpointError as exc:
            msg = f"{self.seam} {self.model!r} failed: {exc}"
            raise AnswerError(msg) from None
        text = _content(reply)
        if text is None:
            msg = (
                f"{self.seam} {self.model!r} at {self.client.url('chat/completions')} answered "
                "no text (expected choices[0].message.content, a string)"
            )
            raise AnswerError(msg)
        return text

    def chat(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """The model's reply to ``messages``, through the seam log."""
        text: str = seam_call(
            self.seam,
            "chat",
            lambda: self.request_json(messages),
            lambda: self._send(messages),
            answer=lambda text: {"text": text},
            rebuild=lambda data: str(data["text"]),
        )
        return text


def _content(reply: object) -> str | None:
    if not isinstance(reply, Mapping):
        return None
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return None
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    return content.strip() if isinstance(content, str) else None


def chat_model(
    seam: str,
    base_url: str,
    *,
    model: str | None = None,
    api_key_env: str | None = None,
    max_tokens: int = ANSWER_MAX_TOKENS,
    timeout_s: float = 120.0,
) -> ChatModel:
    """A `ChatModel` at ``base_url`` (``http://host:8080/v1``); without
    ``model``, the first one the endpoint lists at ``GET /models``."""
    from memrules._io.http import EndpointError, JSONClient

    client = JSONClient(base_url=base_url, api_key_env=api_key_env, timeout=timeout_s)
    if model is None:
        try:
            listed = client.get("models")
        except EndpointError as exc:
            msg = f"{seam} at {client.base_url}: cannot list its models ({exc}); give the name"
            raise AnswerError(msg) from None
        data = listed.get("data") if isinstance(listed, Mapping) else None
        first = data[0] if isinstance(data, list) and data else None
        model = first.get("id") if isinstance(first, Mapping) else None
        if not isinstance(model, str) or not model:
            msg = f"{seam} at {client.base_url}: GET /models lists no model; give the name"
            raise AnswerError(msg)
    return ChatModel(seam=seam, model=model, max_tokens=max_tokens, client=client)


def judge_messages(question: str, reference: str, answer: str) -> list[dict[str, str]]:
    """What the judge is sent (see the module docs)."""
    return [
        {"role": "system", "content": JUDGE_PROMPT},
        {
            "role": "user",
            "content": f"Question: {question}\nReference answer: {reference}\n"
            f"Candidate answer: {answer}",
        },
    ]


def verdict_score(verdict: str) -> int | None:
    """1 for ``CORRECT``, 0 for ``WRONG`` or ``INCORRECT``, None for anything
    else: the first word of the judge's reply, case and punctuation aside."""
    words = verdict.strip().split()
    first = words[0].strip(".,:;!*\"'`").upper() if words else ""
    if first == "CORRECT":
        return 1
    if first in ("WRONG", "INCORRECT"):
        return 0
    return None


@attrs.frozen(kw_only=True, slots=True)
class Scored:
    """One question answered: the answer, the judge's reply (None when there
    was no reference to judge against) and the score it gives."""

    answer: str
    verdict: str | None
    score: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "verdict": self.verdict, "score": self.score}


def score_answer(
    context: Conversation,
    question: str,
    reference: str | None,
    *,
    answer_model: ChatModel,
    judge_model: ChatModel | None,
) -> Scored:
    """Ask ``answer_model`` from ``context`` (the question last), and have
    ``judge_model`` grade the answer against ``reference``."""
    answer = answer_model.chat(to_openai(context))
    if reference is None or judge_model is None:
        return Scored(answer=answer, verdict=None, score=None)
    verdict = judge_model.chat(judge_messages(question, reference, answer))
    return Scored(answer=answer, verdict=verdict, score=verdict_score(verdict))


def answer_line(
    index: int,
    inputs: Mapping[str, Any],
    calls: Sequence[Mapping[str, Any]],
    scored: Scored,
) -> dict[str, Any]:
    """A trace line of kind ``answer`` (without its number)."""
    return {
        "kind": "answer",
        "pipeline": index,
        **{key: inputs[key] for key in ANSWER_INPUTS},
        "calls": list(calls),
        **scored.to_dict(),
    }


ANSWER_INPUTS = (
    "conversation_id",
    "question",
    "query",
    "reference",
    "context",
    "answer_model",
    "judge_model",
)
"""What an ``answer`` line says went in, in this order."""


def replay_answer(
    index: int, data: Mapping[str, Any], context: Conversation, calls: Any
) -> dict[str, Any]:
    """The ``answer`` line ``data`` gives when run again (under the
    replaying log ``calls``, which answers both models): the same line if
    nothing changed."""
    inputs = {key: data.get(key) for key in ANSWER_INPUTS}
    judge = inputs["judge_model"]
    with calls.active():
        scored = score_answer(
            context,
            str(inputs["query"]),
            inputs["reference"],
            answer_model=ChatModel(
                seam="answer_model", model=str(inputs["answer_model"]), max_tokens=ANSWER_MAX_TOKENS
            ),
            judge_model=None
            if judge is None
            else ChatModel(seam="judge_model", model=str(judge), max_tokens=JUDGE_MAX_TOKENS),
        )
    return answer_line(index, inputs, calls.calls, scored)
