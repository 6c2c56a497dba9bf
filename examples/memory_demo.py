"""MemoryPlugin in a chat loop: the seed's four-turn example, written out.

Run it offline (a scripted model answers)::

    python examples/memory_demo.py

or against any OpenAI-compatible endpoint (llama.cpp server, vLLM, Ollama),
with the API key, if it needs one, in an environment variable you name::

    python examples/memory_demo.py --base-url http://localhost:8080/v1 --model my-model \
        --api-key-env OPENAI_API_KEY

The client keeps the whole conversation. Before each request the plugin
measures it (the gauge observer prints the reading), appends a one-shot
warning once it fills 20% of the 256-token window, and, when the prompt has
more than 6 messages, lets a sliding window keep 4 of them. ``memrules demo``
runs the same thing with the seed's exact output.
"""

from __future__ import annotations

import argparse

from memrules import (
    ContextUsage,
    MemoryConfig,
    MemoryPlugin,
    Message,
    Request,
    SurvivorRule,
    Text,
)
from memrules._cli.demo import OpenAIChat, scripted_reply  # the demo's chat clients
from memrules.strategies import sliding_window


def message(role: str, text: str) -> Message:
    return Message(role=role, parts=(Text(text=text),))


def gauge(usage: ContextUsage) -> None:
    """A ContextUsageObserver: any callable that takes the reading. It runs
    before anything is changed; raising here would fail the request."""
    print(
        f"  gauge: {usage.tokens}/{usage.window} tokens ({usage.fraction:.0%}), "
        f"window resolved {str(usage.window_resolved).lower()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible API root, e.g. .../v1")
    parser.add_argument("--model", help="the model to ask (default: the first listed)")
    parser.add_argument("--api-key-env", help="the environment variable holding the API key")
    args = parser.parse_args()
    chat = (
        scripted_reply
        if args.base_url is None
        else OpenAIChat(
            base_url=args.base_url, model=args.model, api_key_env=args.api_key_env
        ).with_model()
    )

    config = MemoryConfig(
        count_rule="seed",  # count "<role> <text>" as the seed does, without framing
        context_window_tokens=256,  # the window that max_fraction and warn_fraction scale
        max_messages=6,  # the trigger: compact a prompt of more than 6 messages
        warn_fraction=0.2,  # warn, once, at 20% of the window
        strategies=[sliding_window(keep_messages=4)],
        # The seed keeps only the latest user message, not the task (the first).
        survivors=SurvivorRule(task=False),
        user_first=False,  # nor leads with a user message: turn 4 sends SAUS
        repair=False,  # send the last reply before the question, as the seed's turn 4 does
        observers=[gauge],
    )
    plugin = MemoryPlugin(config)

    history: list[Message] = [message("system", "You are terse.")]
    questions = [
        "The vault is in Lisbon. Reply with: noted",
        "The key rotates on friday. Reply with: noted",
        "The owner is ops@example.com. Reply with: noted",
        "Where is the vault? Answer in one word.",
    ]
    for number, question in enumerate(questions, start=1):
        print(f'Turn {number}: "{question}"')
        history.append(message("user", question))

        # plugin.on_request(request) returns the prompt to send; handle() also
        # says what it did. Either way the history stays as it is.
        result = plugin.handle(Request(messages=history))
        prompt = result.request
        roles = "".join(m.role[0].upper() for m in prompt.messages)
        print(f"  prompt: {len(history)} messages in, {len(prompt.messages)} out ({roles})")
        if result.warned:
            print(f"  warned: {prompt.messages[-1].text}")
        if result.compacted:
            report = result.report
            print(f"  compacted: {report.messages_before} -> {report.messages_after} messages")

        reply = chat(prompt.messages)
        print(f"  reply: {reply}\n")
        history.append(message("assistant", reply))


if __name__ == "__main__":
    main()
