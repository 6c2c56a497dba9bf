"""LlamaIndex (the ``llama-index`` extra): a memory its agents accept.

`compacting_memory` wraps any LlamaIndex memory (by default a
``ChatMemoryBuffer`` with no token limit of its own) so that what an agent
reads from it (``get``, ``aget``) is compacted by a memrules pipeline, while
what is stored stays whole:

    from llama_index.core.agent.workflow import FunctionAgent
    from memrules.integrations.llama_index import compacting_memory

    memory = compacting_memory(pipeline)
    agent = FunctionAgent(tools=[...], llm=llm)
    await agent.run("next question", memory=memory)

Messages the pipeline kept are handed back as the very objects stored; a
changed or new one (a cleared tool output, a summary) is converted back
(`to_llama_index`). Conversions are
remembered by message identity, so a call converts what the turn added.
The report of the last compaction is the memory's ``last_result``.

A LlamaIndex ``FunctionAgent`` keeps the tool calls of the run in progress
in its own scratchpad and writes them to memory when the run ends: within
one run, memrules compacts the history before it, not the run's own steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrules._adapters.by_identity import ConversionsByIdentity
from memrules._adapters.llama_index import convert_one, from_llama_index, to_llama_index
from memrules._core.public_names import report_public_module
from memrules._core.report import CompressionResult, OverBudgetMode
from memrules._runtime.pipeline import Pipeline
from memrules.integrations._extras import require

__all__ = ["compact_llama_index", "compacting_memory", "from_llama_index", "to_llama_index"]


def _conversions() -> ConversionsByIdentity:
    return ConversionsByIdentity(convert_one)


def compact_llama_index(
    pipeline: Pipeline,
    messages: Sequence[Any],
    *,
    conversation_id: str | None = None,
    conversions: ConversionsByIdentity | None = None,
    over_budget: OverBudgetMode | None = None,
) -> tuple[list[Any], CompressionResult]:
    """``pipeline.apply`` over LlamaIndex chat messages: the compacted
    messages (the very objects given, where the pipeline kept a message as it
    was) and the result."""
    messages = list(messages)
    conversation = (
        from_llama_index(messages) if conversions is None else conversions.convert(messages)
    )
    result = pipeline.apply(conversation, conversation_id=conversation_id, over_budget=over_budget)
    origin = result.report.origin
    out: list[Any] = []
    for j, m in enumerate(result.messages):
        i = origin[j] if j < len(origin) else None
        if i is not None and (conversation[i] is m or conversation[i] == m):
            out.append(messages[i])
        else:
            out.extend(to_llama_index((m,)))
    return out, result


_MEMORY: list[type] = []


def _memory_class() -> type:
    if _MEMORY:
        return _MEMORY[0]
    memory_module = require("llama_index.core.memory", "llama-index")
    pydantic = require("pydantic", "llama-index")

    class CompactingMemory(memory_module.BaseMemory):  # type: ignore[misc, name-defined]
        """A LlamaIndex memory whose reads are compacted by a memrules
        pipeline (see `compacting_memory`)."""

        model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
        inner: Any
        pipeline: Any
        conversation_id: str | None = None
        over_budget: str | None = None
        last_result: Any = None
        conversions: Any = pydantic.Field(default_factory=_conversions, exclude=True)

        @classmethod
        def class_name(cls) -> str:
            return "CompactingMemory"

        @classmethod
        def from_defaults(cls, **kwargs: Any) -> CompactingMemory:
            if "inner" not in kwargs:
                kwargs["inner"] = memory_module.ChatMemoryBuffer.from_defaults(token_limit=10**9)
            return cls(**kwargs)

        def get(self, input: str | None = None, **kwargs: Any) -> list[Any]:
            history = self.inner.get_all()
            compacted, result = compact_llama_index(
                self.pipeline,
                history,
                conversation_id=self.conversation_id,
                conversions=self.conversions,
                over_budget=self.over_budget,  # type: ignore[arg-type]
            )
            self.last_result = result
            return compacted

        def get_all(self) -> list[Any]:
            return list(self.inner.get_all())

        def put(self, message: Any) -> None:
            self.inner.put(message)

        def set(self, messages: list[Any]) -> None:
            self.inner.set(messages)

        def reset(self) -> None:
            self.inner.reset()

    _MEMORY.append(CompactingMemory)
    return CompactingMemory


def compacting_memory(
    pipeline: Pipeline,
    *,
    memory: Any = None,
    conversation_id: str | None = None,
    over_budget: OverBudgetMode | None = None,
) -> Any:
    """A LlamaIndex ``BaseMemory`` whose ``get`` returns ``memory``'s whole
    history (a ``ChatMemoryBuffer`` by default) compacted by ``pipeline``;
    writes go to ``memory`` unchanged. ``conversation_id`` names the
    conversation to observers; ``over_budget`` is what a read that cannot
    fit the budget gets (``"send"``, ``"warn"``, ``"raise"``; the config's
    by default)."""
    cls: Any = _memory_class()
    options = {"conversation_id": conversation_id, "over_budget": over_budget}
    if memory is None:
        return cls.from_defaults(pipeline=pipeline, **options)
    return cls(inner=memory, pipeline=pipeline, **options)


report_public_module(__name__, __all__, globals())
del report_public_module
