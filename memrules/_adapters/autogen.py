"""AutoGen model messages (``autogen_core.models.LLMMessage``) to memrules
messages and back.

AutoGen's model context holds four kinds of message, and each maps to one
memrules message:

- ``SystemMessage``: a ``system`` message of one `Text`;
- ``UserMessage``: a ``user`` message; its text is `Text`
  and each ``Image`` an `Opaque` part holding it as an
  OpenAI ``image_url`` with a PNG data URI (what AutoGen's OpenAI client
  sends, so the counter prices the image by its size);
- ``AssistantMessage``: an ``assistant`` message; text content is
  `Text`, each ``FunctionCall`` a `ToolCall`
  (its arguments are already JSON text), and the ``thought`` (reasoning, or
  the text that came with the calls, which the model reads again) a first
  `Text` marked ``extra={"autogen": "thought"}``;
- ``FunctionExecutionResultMessage``: a ``tool`` message with one
  `ToolResult` per result (parallel calls answered together
  stay together); each result's function name is kept in its ``extra``.

A message's ``source`` (the agent that wrote it) is the memrules message's
``name``, which is what AutoGen's OpenAI client sends as ``name``. Whether
the content was a string or a list, and a result's unset ``is_error``, are
kept under the ``"autogen"`` key (in the message's metadata, in the result's
``extra``), so `to_autogen` gives equal messages back. ``Image`` has no
value equality of its own: an image comes back as an equal picture (the same
PNG), a new ``Image`` object.

This module imports no AutoGen module until `to_autogen` needs its
classes (the ``autogen`` extra).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memrules._adapters.frameworks import require
from memrules._core.errors import MessageFormatError
from memrules._core.messages import (
    Conversation,
    Message,
    Opaque,
    Part,
    Role,
    Text,
    ToolCall,
    ToolResult,
    part_text,
)

__all__ = ["IMAGE", "KEY", "THOUGHT", "convert_one", "from_autogen", "to_autogen"]

KEY = "autogen"
"""The metadata key of what memrules keeps of an AutoGen message."""

THOUGHT = "thought"
"""``Text.extra[KEY]`` of the part that holds an assistant message's thought."""

IMAGE = "autogen:image_url"
"""The `Opaque` kind of an AutoGen ``Image``."""

_ROLES: dict[str, Role] = {
    "SystemMessage": "system",
    "UserMessage": "user",
    "AssistantMessage": "assistant",
    "FunctionExecutionResultMessage": "tool",
}
_DATA_URI = "data:"
_BASE64 = ";base64,"


def _image(image: Any) -> Opaque:
    url = image.data_uri
    return Opaque(kind=IMAGE, payload={"type": "image_url", "image_url": {"url": url}})


def _user_parts(content: Any, index: int) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (Text(text=content),)
    parts: list[Part] = []
    for item in content:
        if isinstance(item, str):
            parts.append(Text(text=item))
        elif hasattr(item, "data_uri"):
            parts.append(_image(item))
        else:
            msg = f"a user message's content holds {type(item).__name__}, not str or Image"
            raise MessageFormatError(msg, index=index, field="content")
    return tuple(parts)


def _assistant_parts(message: Any) -> tuple[Part, ...]:
    parts: list[Part] = []
    if message.thought is not None:
        parts.append(Text(text=message.thought, extra={KEY: THOUGHT}))
    content = message.content
    if isinstance(content, str):
        parts.append(Text(text=content))
        return tuple(parts)
    parts.extend(ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in content)
    return tuple(parts)


def _result(result: Any) -> ToolResult:
    extra: dict[str, Any] = {"name": result.name}
    if result.is_error is None:
        extra[KEY] = {"is_error": None}
    return ToolResult(
        call_id=result.call_id,
        content=result.content,
        is_error=bool(result.is_error),
        extra=extra,
    )


def convert_one(message: Any, index: int) -> Message:
    """AutoGen ``LLMMessage`` ``message``, at ``index`` of its list, as a
    memrules message (see the module docs)."""
    kind = getattr(message, "type", None)
    if kind not in _ROLES:
        msg = f"expected an AutoGen LLMMessage, got {type(message).__name__} (type {kind!r})"
        raise MessageFormatError(msg, index=index, field="type")
    role = _ROLES[kind]
    content = message.content
    if role == "system":
        return Message(role=role, parts=(Text(text=content),), metadata={KEY: {"type": kind}})
    if role == "tool":
        results = tuple(_result(r) for r in content)
        return Message(role=role, parts=results, metadata={KEY: {"type": kind}})
    listed = not isinstance(content, str)
    meta = {KEY: {"type": kind, "list": listed}}
    parts = _user_parts(content, index) if role == "user" else _assistant_parts(message)
    return Message(role=role, parts=parts, name=message.source, metadata=meta)


def from_autogen(messages: Iterable[Any]) -> Conversation:
    """AutoGen ``LLMMessage`` objects as a memrules conversation (see the
    module docs). Raises `MessageFormatError` naming the
    index of anything that is not one."""
    return tuple(convert_one(m, i) for i, m in enumerate(messages))


# --- memrules → AutoGen ----------------------------------------------------------------


def _kept(message: Message) -> Mapping[str, Any]:
    kept = message.metadata.get(KEY)
    return kept if isinstance(kept, Mapping) else {}


def _is_thought(part: Part) -> bool:
    return isinstance(part, Text) and part.extra.get(KEY) == THOUGHT


def _image_back(part: Opaque, core: Any, index: int) -> Any:
    payload = part.payload
    image = payload.get("image_url") if isinstance(payload, Mapping) else None
    url = image.get("url") if isinstance(image, Mapping) else image
    if isinstance(url, str) and url.startswith(_DATA_URI) and _BASE64 in url:
        return core.Image.from_base64(url.partition(_BASE64)[2])
    msg = (
        f"an AutoGen UserMessage holds text and images (pixels, as a base64 data URI): "
        f"the {part.kind!r} part is neither"
    )
    raise MessageFormatError(msg, index=index, field="parts")


def _result_back(part: ToolResult, models: Any) -> Any:
    content = part.content if isinstance(part.content, str) else part_text(part)
    unset = part.extra.get(KEY)
    is_error: bool | None = part.is_error
    if not part.is_error and isinstance(unset, Mapping) and "is_error" in unset:
        is_error = None
    name = part.extra.get("name", "")
    return models.FunctionExecutionResult(
        content=content,
        name=name if isinstance(name, str) else "",
        call_id=part.call_id,
        is_error=is_error,
    )


def _user_back(message: Message, listed: bool, core: Any, index: int) -> Any:
    items: list[Any] = []
    for part in message.parts:
        if isinstance(part, Opaque):
            items.append(_image_back(part, core, index))
        else:
            items.append(part_text(part))
    if listed or any(not isinstance(item, str) for item in items):
        return items
    return "\n".join(items)


def _assistant_back(message: Message, listed: bool, core: Any) -> tuple[Any, str | None]:
    thought = next((p.text for p in message.parts if isinstance(p, Text) and _is_thought(p)), None)
    calls = [
        core.FunctionCall(id=p.id, arguments=p.arguments, name=p.name)
        for p in message.parts
        if isinstance(p, ToolCall)
    ]
    texts = [
        part_text(p)
        for p in message.parts
        if not _is_thought(p) and not isinstance(p, (ToolCall, Opaque))
    ]
    if listed or calls:
        if texts:  # text beside calls: AutoGen keeps it as the thought
            thought = "\n".join([t for t in (thought,) if t is not None] + texts)
        return calls, thought
    return "\n".join(texts), thought


def to_autogen(messages: Sequence[Message]) -> list[Any]:
    """memrules messages as AutoGen ``LLMMessage`` objects: what
    `from_autogen` kept, else the message's own role (a ``tool``
    message's results as one ``FunctionExecutionResultMessage``; the
    ``source`` of a message without a name is its role; an assistant's text
    beside tool calls as its ``thought``). A user message's
    `Opaque` part must be an image with its pixels (a
    base64 data URI): anything else raises
    `MessageFormatError` naming the index, since AutoGen has
    no place for it."""
    core = require("autogen_core", "autogen")
    models = require("autogen_core.models", "autogen")
    out: list[Any] = []
    for index, message in enumerate(messages):
        role = message.role
        listed = bool(_kept(message).get("list", False))
        if role == "system":
            out.append(models.SystemMessage(content="\n".join(map(part_text, message.parts))))
        elif role == "tool":
            results = [_result_back(p, models) for p in message.parts if isinstance(p, ToolResult)]
            out.append(models.FunctionExecutionResultMessage(content=results))
        elif role == "user":
            content = _user_back(message, listed, core, index)
            source = message.name if message.name is not None else role
            out.append(models.UserMessage(content=content, source=source))
        else:
            content, thought = _assistant_back(message, listed, core)
            source = message.name if message.name is not None else role
            out.append(models.AssistantMessage(content=content, thought=thought, source=source))
    return out
