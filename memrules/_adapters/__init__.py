"""Provider message formats, both ways, losslessly.

- `memrules._adapters.openai`: OpenAI chat-completions messages
  (`from_openai`, `to_openai`).
- `memrules._adapters.anthropic`: Anthropic Messages API messages and the
  ``system`` parameter (`from_anthropic`, `to_anthropic`,
  `to_anthropic_request`).
- `memrules._adapters.responses`: OpenAI Responses API input items
  (`from_responses`, `to_responses`).
- `memrules._adapters.context_editing`: provider-side context editing
  (Anthropic's ``context_management`` edits, OpenAI's server compaction) as
  one policy, written into a body or made locally.
- the frameworks' converters (`langchain`, `openai_agents`, `pydantic_ai`,
  `llama_index`, `autogen`: `from_<framework>` and `to_<framework>`, each
  importing its framework on first use). They are public only through
  `memrules.integrations.<framework>`, next to that framework's hook; this
  package holds the conversions, `memrules.integrations` what plugs them in.

``to_x(from_x(m)) == m`` for every valid input ``m``; a conversation's
`ConversionCache` makes ``from_x`` pay only for messages that
conversation has not sent before; malformed input raises
`MessageFormatError` naming the message index and
field. Fields the data model has no place for are kept in
``Message.metadata`` and in each part's ``extra`` under the provider's name
(``"openai"``, ``"anthropic"``) and a few ``"<provider>_..."`` keys that each
module documents. Each writer reads only its own provider's keys, so
converting between formats drops the other provider's fields; each module
says what else is lost that way.
"""

from memrules._adapters.anthropic import from_anthropic, to_anthropic, to_anthropic_request
from memrules._adapters.conversion_cache import ConversionCache
from memrules._adapters.openai import from_openai, to_openai
from memrules._adapters.responses import from_responses, to_responses

__all__ = [
    "ConversionCache",
    "from_anthropic",
    "from_openai",
    "from_responses",
    "to_anthropic",
    "to_anthropic_request",
    "to_openai",
    "to_responses",
]
