"""One conversation's memo: what its requests measured and converted.

The request hook serves many conversations through one pipeline. What makes
a request of a long conversation cheap (the counts, tool links and held
messages a :class:`~memrules._measure.Measure` remembers, and the provider
messages a :class:`~memrules._adapters._memo.ConversionMemo` has converted)
is about one conversation, so each conversation gets its own: requests of
one conversation never evict another's, and forgetting a conversation
forgets its memo with it.
"""

from __future__ import annotations

from memrules._adapters._memo import ConversionMemo
from memrules._measure import Measure
from memrules._pipeline import Pipeline

__all__ = ["ConversationMemo"]


class ConversationMemo:
    """The :class:`~memrules._measure.Measure` (``measure``) and the
    :class:`~memrules._adapters._memo.ConversionMemo` (``conversion``) of one
    conversation served by ``pipeline``. Both are bounded by that
    conversation and safe to share between threads (the plugin runs one
    request of a conversation at a time anyway)."""

    __slots__ = ("conversion", "measure")

    def __init__(self, pipeline: Pipeline) -> None:
        self.measure: Measure = pipeline.memo()
        self.conversion = ConversionMemo()
