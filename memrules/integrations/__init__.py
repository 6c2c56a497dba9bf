"""memrules where agents already run.

Each framework has one public module here, and each module has the same two
parts:

- the converters, `from_X(messages)` to a memrules conversation and
  `to_X(conversation)` back, lossless (written in the private `_adapters`
  package with the provider formats, and exported only here);
- the framework's hook: where the framework hands memrules its history
  before a model call (`compact_X(pipeline, messages)` for a direct call,
  and the framework's own extension point).

- `langchain` (extra `langchain`): `from_langchain`, `to_langchain`;
  `memrules_middleware`, `PreModelHook`.
- `openai_agents` (extra `agents`): `from_openai_agents`,
  `to_openai_agents`; `call_model_input_filter`, `CompactingSession`,
  `session_input_callback`.
- `pydantic_ai` (extra `pydantic-ai`): `from_pydantic_ai`,
  `to_pydantic_ai`; `history_capability`, `history_processor`.
- `llama_index` (extra `llama-index`): `from_llama_index`,
  `to_llama_index`; `compacting_memory`.
- `autogen` (extra `autogen`): `from_autogen`, `to_autogen`;
  `CompactingChatContext`.
- `otel` (extra `otel`): `OpenTelemetryObserver`; `prometheus` (extra
  `prometheus`): `PrometheusObserver`, `PrometheusRetrievalObserver`.

The provider formats (OpenAI chat, Responses, Anthropic) need no framework:
their converters are in `memrules` itself (`from_openai`, `to_anthropic`...).
Importing `memrules` or this package imports none of those frameworks.
"""

from __future__ import annotations

__all__: list[str] = []
