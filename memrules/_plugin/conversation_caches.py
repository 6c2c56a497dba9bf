"""Each conversation's memo: what its requests measured and converted.

The request hook serves many conversations through one pipeline. What makes
a request of a long conversation cheap (the counts, tool links and held
messages a `Measure` remembers, and the provider
messages a `ConversionCache` has converted)
is about one conversation, so each conversation gets its own: requests of
one conversation never evict another's.

Memos are this process's, not conversation state: they hold message
objects, so they are never written to a state store (Valkey) and are not
shared between replicas; a replica that has not seen a conversation, or
has forgotten it, builds its memo again on the next request, which then
costs what a first request costs. `ConversationCaches` keeps at most
``cap`` of them, least recently used out first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from memrules._adapters.conversion_cache import ConversionCache
from memrules._adapters.openai import Written
from memrules._core.bounded import BoundedTable
from memrules._counting.measure import Measure
from memrules._runtime.pipeline import Pipeline
from memrules.state.carry import Held

__all__ = ["ConversationCache", "ConversationCaches"]


class ConversationCache:
    """The `Measure` (``measure``) and the
    `ConversionCache` of each body
    format (``conversion`` for OpenAI chat bodies, `conversion_for`) of one
    conversation served by ``pipeline`` (``edits_in_place`` as the
    conversion caches take it). Both are bounded by that
    conversation and safe to share between threads.

    ``previous`` is the conversation's last request as the pipeline sent
    it (on a route with a ``cache:`` section), which the prompt-cache
    measure and the append path compare the next one with; written under
    the conversation's lock.

    ``contended`` says that the conversation's last request here found the
    state this process held out of date (another replica serves the
    conversation too), so the next one reads the state before it runs
    rather than running twice (see `memrules._plugin.hook`)."""

    __slots__ = ("_others", "contended", "conversion", "measure", "previous", "written")

    def __init__(self, pipeline: Pipeline, *, edits_in_place: bool = True) -> None:
        self.measure: Measure = pipeline.measure()
        self.conversion = ConversionCache(edits_in_place=edits_in_place)
        self.previous: Held | None = None
        self.contended = False
        # What the last OpenAI body's converted messages became (see
        # memrules._adapters.openai.write_back), replaced whole each request.
        self.written: Written = {}
        self._others: dict[str, ConversionCache] = {}

    def conversion_for(self, provider: str) -> ConversionCache:
        """The conversation's conversion cache for bodies of ``provider``
        (``"openai"``: `conversion`; ``"anthropic"``, ``"responses"``:
        their own, made on first use), so that a conversation whose bodies
        come in two formats keeps both."""
        if provider == "openai":
            return self.conversion
        found = self._others.get(provider)
        if found is None:
            made = ConversionCache(edits_in_place=self.conversion.edits_in_place)
            found = self._others.setdefault(provider, made)
        return found


class ConversationCaches:
    """The memos of at most ``cap`` conversations, by conversation id, made
    by ``make`` on first use; the least recently used goes first. Owned by
    one plugin; thread-safe (its lock guards the table, never held while a
    request runs)."""

    __slots__ = ("_lock", "_make", "_table", "cap")

    def __init__(self, make: Callable[[], ConversationCache], cap: int) -> None:
        self.cap = cap
        self._make = make
        # least recently used first: get touches each hit
        self._table: BoundedTable[str | None, ConversationCache] = BoundedTable(cap)
        self._lock = threading.Lock()

    def get(self, conversation_id: str | None) -> ConversationCache:
        """The conversation's memo, made if new."""
        with self._lock:
            memo = self._table.get(conversation_id)
            if memo is None:
                memo = self._make()
                self._table.put(conversation_id, memo)
            else:
                self._table.touch(conversation_id)
            return memo

    def forget(self, conversation_id: str | None) -> None:
        with self._lock:
            self._table.pop(conversation_id, None)

    def __len__(self) -> int:
        return len(self._table)
