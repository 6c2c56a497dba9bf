"""``encoder_name`` values that are not tiktoken's: ``scheme:rest``.

- ``hf:<tokenizer.json, directory or package>``: a Hugging Face tokenizer
  (`memrules._counting.hf`), loaded from disk, offline;
- ``anthropic:<model>``: Anthropic's count-tokens endpoint
  (`memrules._counting.provider`).

Only these prefixes are schemes: tiktoken's own model names may hold a
colon too (``ft:gpt-4o:...``), and stay tiktoken's. Importing this module
imports neither ``tokenizers`` nor any network code's dependencies.
"""

from __future__ import annotations

from memrules._core.errors import EncodingError, MemrulesError
from memrules._counting.tokens import TokenCounter

__all__ = ["SCHEMES", "is_scheme", "scheme_counter", "scheme_problem"]

SCHEMES = ("hf", "anthropic")
DESCRIBED = "'hf:<tokenizer.json, directory or package>', 'anthropic:<model>'"
"""The schemes as a config error lists them."""


def is_scheme(name: object) -> bool:
    """Whether ``name`` is a ``scheme:rest`` encoder name of this module's."""
    return isinstance(name, str) and name.partition(":")[0] in SCHEMES and ":" in name


def scheme_counter(name: str) -> TokenCounter:
    """A new counter for the scheme name ``name``."""
    scheme, _, rest = name.partition(":")
    if scheme == "hf":
        from memrules._counting.hf import HuggingFaceCounter

        return HuggingFaceCounter.for_spec(rest)
    from memrules._counting.provider import anthropic_counter

    return anthropic_counter(rest)


def scheme_problem(name: str) -> str | None:
    """What is wrong with the scheme name ``name``, for a config error, or
    None. A Hugging Face tokenizer is loaded (as a tiktoken encoder is, when
    a config is checked); a provider is not asked anything."""
    scheme, _, rest = name.partition(":")
    try:
        if scheme == "hf":
            from memrules._counting.hf import load_tokenizer

            load_tokenizer(rest)
        elif not rest:
            msg = "anthropic: needs a model name after it, as in 'anthropic:claude-sonnet-4-5'"
            raise EncodingError(msg)
    except MemrulesError as exc:
        return f"a tokenizer that loads ({exc})"
    return None
