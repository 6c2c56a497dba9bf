"""AutoGen (the ``autogen`` extra): a model context its agents accept.

`CompactingChatContext` is an AutoGen ``ChatCompletionContext`` that
keeps the whole history (``add_message``, ``clear``, ``save_state`` and
``load_state`` work on every message added) and whose ``get_messages``,
which an agent calls before each model call, returns that history
compacted by a memrules pipeline:

    from autogen_agentchat.agents import AssistantAgent
    from memrules.integrations.autogen import CompactingChatContext

    agent = AssistantAgent(
        "coder", model_client=client, tools=[...], model_context=CompactingChatContext(pipeline)
    )

An ``AssistantAgent`` adds each tool round to its context as it goes (the
calls, then their results) and reads the context again before the next
model call, so the pipeline compacts within a run too, and keeps every call
with its results (the interpreter's pairing guarantee). The agent's system
message is not in the context: the agent puts it first itself, and the
pipeline's budget is for the rest.

Messages the pipeline kept are handed back as the very objects stored; a
changed or new one (a cleared tool result, a summary) is converted back
(`to_autogen`), once: what each call
converted, both ways, is remembered for the next (by object identity going
in, by value coming back), so a call converts only what the agent added
since. An object is known by its identity, so edit a stored message by
replacing it, not in place. The compaction is awaited
(`Pipeline.apply_async`): a summarizer seam does not block
the event loop. The report of the last compaction is ``last_result``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrules._adapters.autogen import convert_one, from_autogen, to_autogen
from memrules._adapters.by_identity import ConversionsByIdentity
from memrules._core.messages import Conversation, Message
from memrules._core.public_names import report_public_module
from memrules._core.report import CompressionResult, OverBudgetMode
from memrules._runtime.pipeline import Pipeline
from memrules.integrations._extras import require

__all__ = ["CompactingChatContext", "compact_autogen", "from_autogen", "to_autogen"]

# The extra is checked on import: without AutoGen this module says which to install.
_model_context: Any = require("autogen_core.model_context", "autogen")


def _handed_back(
    messages: Sequence[Any],
    conversation: Conversation,
    result: CompressionResult,
    written: dict[Message, Any],
) -> tuple[list[Any], dict[Message, Any]]:
    """The compacted messages as AutoGen objects: the very object given for
    each message the pipeline kept, else what ``written`` (the last call's
    conversions back) holds for that value, else a new conversion; and this
    call's conversions back."""
    origin = result.report.origin
    out: list[Any] = []
    fresh: dict[Message, Any] = {}
    for j, m in enumerate(result.messages):
        i = origin[j] if j < len(origin) else None
        if i is not None and (conversation[i] is m or conversation[i] == m):
            out.append(messages[i])
            continue
        back = written.get(m)
        if back is None:
            back = to_autogen((m,))[0]
        fresh[m] = back
        out.append(back)
    return out, fresh


def compact_autogen(
    pipeline: Pipeline,
    messages: Sequence[Any],
    *,
    conversation_id: str | None = None,
    over_budget: OverBudgetMode | None = None,
) -> tuple[list[Any], CompressionResult]:
    """``pipeline.apply`` over AutoGen ``LLMMessage`` objects: the compacted
    messages (the very objects given, where the pipeline kept a message as
    it was) and the result."""
    messages = list(messages)
    conversation = from_autogen(messages)
    result = pipeline.apply(conversation, conversation_id=conversation_id, over_budget=over_budget)
    return _handed_back(messages, conversation, result, {})[0], result


class CompactingChatContext(_model_context.ChatCompletionContext):  # type: ignore[misc]
    """An AutoGen ``ChatCompletionContext`` whose ``get_messages`` is the
    whole history compacted by ``pipeline`` (see the module docs).

    ``initial_messages`` start the history (AutoGen's own argument);
    ``conversation_id`` names the conversation to the pipeline's observers;
    ``over_budget`` is what a model call that cannot fit the budget gets
    (``"send"``, ``"warn"``, ``"raise"``; the config's by default).
    """

    def __init__(
        self,
        pipeline: Pipeline,
        initial_messages: Sequence[Any] | None = None,
        *,
        conversation_id: str | None = None,
        over_budget: OverBudgetMode | None = None,
    ) -> None:
        super().__init__(None if initial_messages is None else list(initial_messages))
        self.pipeline = pipeline
        self.conversation_id = conversation_id
        self.over_budget = over_budget
        self.last_result: CompressionResult | None = None
        self._conversions = ConversionsByIdentity(convert_one)
        self._written: dict[Message, Any] = {}

    async def get_messages(self) -> list[Any]:
        """The history compacted by the pipeline, as AutoGen messages."""
        history = list(self._messages)
        conversation = self._conversions.convert(history)
        result = await self.pipeline.apply_async(
            conversation, conversation_id=self.conversation_id, over_budget=self.over_budget
        )
        self.last_result = result
        compacted, self._written = _handed_back(history, conversation, result, self._written)
        return compacted

    def history(self) -> list[Any]:
        """Every message added, uncompacted (a copy of the list)."""
        return list(self._messages)


report_public_module(__name__, __all__, globals())
del report_public_module
