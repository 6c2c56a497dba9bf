"""memrules where agents already run.

Each module imports its framework only when used, and needs its extra:

- :mod:`memrules.integrations.langchain`: ``from_langchain``/``to_langchain``,
  a LangGraph ``pre_model_hook`` and a LangChain agent middleware
  (``pip install 'memrules[langchain]'``);
- :mod:`memrules.integrations.openai_agents`: a compacting ``Session`` and a
  ``session_input_callback`` for the OpenAI Agents SDK (``memrules[agents]``);
- :mod:`memrules.integrations.pydantic_ai`: a ``history_processors`` entry
  (``memrules[pydantic-ai]``);
- :mod:`memrules.integrations.autogen`: a compacting ``ChatCompletionContext``
  for AutoGen's agents (``memrules[autogen]``);
- :mod:`memrules.integrations.otel`: OpenTelemetry spans (``memrules[otel]``);
- :mod:`memrules.integrations.prometheus`: Prometheus metrics
  (``memrules[prometheus]``).

Importing ``memrules`` or this package imports none of those frameworks.
"""

from __future__ import annotations

__all__: list[str] = []
