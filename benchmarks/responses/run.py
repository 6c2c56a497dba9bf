"""Responses-format agent loops through the default pipeline, and provider-side
context editing on an Anthropic loop: the figures in the docs.

    python benchmarks/responses/run.py

Prints, for Responses loops of 50 to 400 rounds (reasoning, parallel
function calls, screenshots) compacted by the default pipeline to a 32,000
token budget: tokens before and after, items sent, broken call/output pairs
and reasoning items separated from their item (both must be 0), and whether
every body validates against the openai SDK's ``ResponseInputParam``. Then,
for a 40-round Anthropic loop with thinking: what the provider will clear
under ``clear_tool_uses`` + ``clear_thinking`` (provider mode), and what
local mode sends.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs

from memrules import (
    ClearThinking,
    ClearToolUses,
    MemoryConfig,
    MemoryPlugin,
    Pipeline,
    ProviderEditing,
    from_responses,
    to_responses,
)

PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8"
    "/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
)


def responses_loop(rounds: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "developer", "content": "You are a coding agent."}]
    for r in range(rounds):
        if r % 10 == 0:
            items.append(
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": f"Step {r}: fix the next failing test."},
                        {"type": "input_image", "image_url": PNG, "detail": "low"},
                    ],
                }
            )
        items.append(
            {"type": "reasoning", "id": f"rs_{r}", "summary": [], "encrypted_content": "gAAAA" * 40}
        )
        calls = [f"call_{r}_{k}" for k in range(1 + r % 3)]
        for c in calls:
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{c}",
                    "call_id": c,
                    "name": "read_file",
                    "arguments": f'{{"path": "src/mod_{r % 17}.py"}}',
                }
            )
        for c in calls:
            body = "\n".join(f"def f_{r}_{k}(x): return x * {k}" for k in range(25))
            items.append({"type": "function_call_output", "call_id": c, "output": body})
        if r % 10 == 9:
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{r}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Fixed.", "annotations": []}],
                }
            )
    return items


def problems(items: list[dict[str, Any]], sent: list[dict[str, Any]]) -> tuple[int, int]:
    """(broken call/output pairs, reasoning items apart from the item after them)."""
    seen: set[str] = set()
    broken = 0
    outputs = {i["call_id"] for i in sent if i.get("type") == "function_call_output"}
    for item in sent:
        if item.get("type") == "function_call":
            seen.add(item["call_id"])
            broken += item["call_id"] not in outputs
        if item.get("type") == "function_call_output" and item["call_id"] not in seen:
            broken += 1
    keys = {i.get("call_id") or i.get("id") for i in sent}
    apart = sum(
        (a["id"] in keys) != ((b.get("call_id") or b.get("id")) in keys)
        for a, b in itertools.pairwise(items)
        if a.get("type") == "reasoning"
    )
    return broken, apart


def sdk_valid(sent: list[dict[str, Any]]) -> bool | None:
    try:
        from openai.types.responses import ResponseInputParam
        from pydantic import TypeAdapter
    except ImportError:
        return None
    TypeAdapter(ResponseInputParam).validate_python(sent)
    return True


def anthropic_loop(rounds: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the build."}]
    for r in range(rounds):
        if r and r % 8 == 0:
            messages.append({"role": "user", "content": f"Next: step {r}."})
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Let me look. " * 30, "signature": f"s{r}"},
                    {"type": "tool_use", "id": f"t{r}", "name": "bash", "input": {"cmd": "make"}},
                ],
            }
        )
        out = "\n".join(f"gcc -c mod_{k}.c -o mod_{k}.o" for k in range(40))
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{r}", "content": out}],
            }
        )
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": "You fix builds.",
        "messages": messages,
    }


def main() -> None:
    budget = 32_000
    print(f"Responses loops, default pipeline, max_tokens={budget}:")
    print(
        "rounds  items  tokens_before  tokens_after  items_sent  broken_pairs  "
        "reasoning_apart  sdk_valid"
    )
    for rounds in (50, 100, 200, 400):
        items = responses_loop(rounds)
        pipeline = Pipeline.from_config(MemoryConfig(max_tokens=budget))
        conversation = from_responses(items)
        result = pipeline.apply(conversation)
        sent = to_responses(result.messages)
        broken, apart = problems(items, sent)
        print(
            f"{rounds:6}  {len(items):5}  {result.report.tokens_before:13}  "
            f"{result.report.tokens_after:12}  {len(sent):10}  {broken:12}  {apart:15}  "
            f"{sdk_valid(sent)}"
        )

    body = anthropic_loop(40)
    editing = ProviderEditing(
        clear_tool_uses=ClearToolUses(trigger=20_000, keep=3, clear_at_least=5_000),
        clear_thinking=ClearThinking(keep=1),
    )
    base = MemoryConfig(strategies=[], context_window_tokens=200_000, max_fraction=None)
    with MemoryPlugin(attrs.evolve(base, provider_editing=editing)) as plugin:
        sent = plugin.on_anthropic_request(body)
        (plan,) = plugin.last_edits
        tokens = plugin.last_usage.tokens if plugin.last_usage else 0
    local_editing = attrs.evolve(editing, local=True)
    with MemoryPlugin(attrs.evolve(base, provider_editing=local_editing)) as plugin:
        plugin.on_anthropic_request(body)
        (local,) = plugin.last_edits
    print()
    print(
        "Anthropic loop, 40 tool rounds, clear_tool_uses(trigger=20000, keep=3, "
        "clear_at_least=5000) + clear_thinking(keep=1):"
    )
    print(f"  request tokens (memrules' count): {tokens}")
    print(
        f"  provider mode: context_management written: {'context_management' in sent}; "
        f"provider will clear {len(plan.cleared_tool_uses)} tool results and "
        f"{len(plan.cleared_thinking)} thinking blocks, {plan.cleared_tokens} tokens"
    )
    same = (local.cleared_tool_uses, local.cleared_thinking) == (
        plan.cleared_tool_uses,
        plan.cleared_thinking,
    )
    print(
        f"  local mode: cleared {len(local.cleared_tool_uses)} tool results and "
        f"{len(local.cleared_thinking)} thinking blocks, {local.cleared_tokens} tokens; "
        f"same blocks as provider mode: {same}"
    )


if __name__ == "__main__":
    main()
