"""Which counter an ``encoder_name`` means: ``"estimate"`` (the script-aware
estimator), a scheme name (``hf:...``, ``anthropic:...``; see
`memrules._counting.schemes`), or a tiktoken encoder or model name.

Kept apart from `memrules._counting.tokens` so that the counters below
it (tiktoken's and the estimate in ``tokens``, Hugging Face's in ``hf``, the
provider's in ``provider``) do not know each other: only this module knows
them all, and it imports the scheme counters only when a name asks for one.
"""

from __future__ import annotations

from memrules._counting.schemes import is_scheme, scheme_counter
from memrules._counting.tokens import (
    EstimatingCounter,
    SharedCounters,
    TiktokenCounter,
    TokenCounter,
)

__all__ = ["counter_for", "counter_named"]


def counter_named(name: str) -> TokenCounter:
    """A new counter for an encoder or model name, ``"estimate"`` for the
    script-aware estimator, or a scheme name (``hf:...``, ``anthropic:...``)."""
    if name == "estimate":
        return EstimatingCounter()
    if is_scheme(name):
        return scheme_counter(name)
    return TiktokenCounter.for_name(name)


_SHARED: SharedCounters[str] = SharedCounters(counter_named)


def counter_for(name: str) -> TokenCounter:
    """The process-wide shared counter for an encoder or model name, or
    ``"estimate"`` for the script-aware estimator."""
    return _SHARED.get(name)
