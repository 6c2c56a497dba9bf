"""A LangGraph agent whose history memrules keeps inside its budget.

Needs the ``langchain`` extra (``pip install 'memrules[langchain]'``). Run it
offline, where a scripted model reads files with a tool for 40 turns::

    python examples/langgraph_agent.py
    python examples/langgraph_agent.py --mode remove_messages --turns 100

With a real model, replace ``ScriptedModel()`` by your chat model (for
example ``ChatOpenAI(model="gpt-4o")``); nothing else changes.

Before every model call the pre-model hook runs the pipeline below. With
``--mode llm_input_messages`` (the default) the graph keeps the whole
history and the model is sent the compacted messages; with
``remove_messages`` the history itself is rewritten. Either way every tool
call the model sees has its result, and every result its call: the script
checks each model call and says so.
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from pydantic import Field

from memrules import load_pipeline
from memrules.integrations.langchain import PreModelHook, from_langchain

# LangGraph 1.x points new code at langchain's create_agent (for which
# memrules has memrules_middleware); create_react_agent still takes the hook.
warnings.filterwarnings("ignore", message="create_react_agent has been moved")

PIPELINE = """
context_window_tokens: 8000
max_tokens: 2000
strategies:
  - type: deduplicate_file_reads
  - type: clear_tool_results
    keep_pairs: 3
    preview_chars: 0          # these reads are short: a preview would be most of one
  - type: sliding_window
    keep_messages: 30
  - type: trim_to_budget      # whatever is left over the budget
"""


@tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"# {path}\n" + "\n".join(f"def f{i}(): return {i}" for i in range(30))


class ScriptedModel(BaseChatModel):
    """Stands in for a chat model: reads ``turns`` files, one or two at a
    time, then answers. Records the size of every prompt it is sent."""

    turns: int = 40
    prompts: list[list[Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(
        self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.prompts.append(list(messages))
        turn = len(self.prompts) - 1
        if turn >= self.turns:
            reply = AIMessage("I have read the project.")
        else:
            calls = [
                {
                    "name": "read_file",
                    "args": {"path": f"src/m{(turn + k) % 12}.py"},
                    "id": f"call_{turn}_{k}",
                    "type": "tool_call",
                }
                for k in range(1 + turn % 2)
            ]
            reply = AIMessage(f"Reading file {turn}.", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=reply)])


def broken_pairs(messages: list[Any]) -> int:
    """Tool results without their call, plus calls without their result."""
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return len(results - calls) + len(calls - results)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mode", choices=("llm_input_messages", "remove_messages"), default="llm_input_messages"
    )
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args(argv)

    pipeline = load_pipeline(PIPELINE)
    model = ScriptedModel(turns=args.turns)
    agent = create_react_agent(
        model, [read_file], pre_model_hook=PreModelHook(pipeline, mode=args.mode)
    )
    start = [SystemMessage("You review code."), HumanMessage("Read the project, then sum it up.")]
    state = agent.invoke({"messages": start}, {"recursion_limit": 10 * args.turns + 20})

    sizes = [pipeline.count(from_langchain(p)) for p in model.prompts]
    broken = sum(broken_pairs(p) for p in model.prompts)
    print(f"mode: {args.mode}")
    print(f"model calls: {len(model.prompts)}")
    print(f"history kept by the graph: {len(state['messages'])} messages")
    print(f"largest prompt sent: {max(sizes)} tokens (budget 2000)")
    print(f"last prompt: {len(model.prompts[-1])} messages, {sizes[-1]} tokens")
    print(f"broken tool pairs in any prompt: {broken}")
    print(f"answer: {state['messages'][-1].content}")


if __name__ == "__main__":
    main()
