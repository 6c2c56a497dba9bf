"""A configured pipeline: a config, a token counter and seams, ready to apply.

>>> pipeline = load_pipeline('''
... context_window_tokens: 256
... max_messages: 6
... strategies:
...   - type: sliding_window
...     keep_messages: 4
... ''')
>>> pipeline.budget()
Budget.messages(6)
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

import attrs

from memrules._config.for_pipeline import load_pipeline_config
from memrules._config.pipeline_config import PipelineConfig
from memrules._core.budget import Budget, resolve_budget
from memrules._core.errors import ConfigError, StoreError
from memrules._core.messages import Conversation, Message, as_messages, check_messages
from memrules._core.prompt_cache import SentRequest
from memrules._core.report import CompressionResult, OverBudgetMode
from memrules._core.seam_protocols import Seams, VectorStore
from memrules._core.seam_records import (
    IndexContext,
    RecallHit,
    Scope,
    StoredMessage,
    StoreWrite,
)
from memrules._counting.cache import DEFAULT_PRICES, CacheRule, PriceTable
from memrules._counting.content import DEFAULT_COUNTING
from memrules._counting.framing import count_rule_named, framed
from memrules._counting.measure import Measure
from memrules._counting.models import base_counter, count_rule_for, model_counting
from memrules._counting.tokens import TokenCounter
from memrules._engine.contract import StrategyContext, StrategyFactory
from memrules._engine.interpreter import MAX_PASSES, Aim, run_once, run_pipeline
from memrules._engine.observe import PipelineObserver
from memrules._runtime.arguments import arguments_of
from memrules._runtime.estimates import with_estimates
from memrules._runtime.lead import lead_with_user
from memrules._runtime.over_budget import check_mode, settle
from memrules._runtime.prompt_cache import cache_aim
from memrules._runtime.records import remembered_records

__all__ = ["IndexContext", "Pipeline", "RecallHit", "as_conversation", "load_pipeline"]


class _Unset(enum.Enum):
    CONFIG = "the config's index_context"


_CONFIG = _Unset.CONFIG


class _Remembered(enum.Enum):
    MEASURE = "what memo= remembers"


_REMEMBERED = _Remembered.MEASURE


def as_conversation(messages: Iterable[Message]) -> Conversation:
    """``messages`` as a tuple, checking that each one is a `Message`."""
    conversation = as_messages(messages)
    check_messages(conversation)
    return conversation


def _observers(values: Iterable[PipelineObserver]) -> tuple[PipelineObserver, ...]:
    return tuple(values)


def model_counter(
    config: PipelineConfig, model: str | None, given: TokenCounter | None
) -> TokenCounter:
    """The counter of a pipeline of ``config`` for requests to ``model``:
    ``given``, else the config's ``encoder_name``, else the table's row for
    ``model`` (see the counting guide), framed by the config's
    ``count_rule`` (else the row's)."""
    rule = count_rule_for(config.count_rule, config.encoder_name, model)
    base = given or base_counter(config.encoder_name, model)
    return framed(
        base,
        count_rule_named(
            rule,
            counting=config.counting or DEFAULT_COUNTING,
            model=config.encoder_name or model,
        ),
    )


@attrs.frozen(kw_only=True, slots=True)
class Pipeline:
    """CompressionResult as a value: ``apply`` and ``compress`` return new messages
    and a report and change nothing else.

    ``counter`` counts messages; `from_config` makes it from the
    config's ``encoder_name`` (or the counter given) and ``count_rule``.

    What a request measured (counts, tool links, held messages, input
    problems) is remembered in a `Measure`, so
    that the next request of a growing conversation pays for its new
    messages only. The pipeline owns one, used by default; a caller that
    serves many conversations passes each its own (`measure`), so that
    one conversation's turns never evict another's.

    ``observers`` watch every run and strategy run (tracing, metrics,
    logging, a progress bar; see `memrules.observability`); they change
    nothing in the result. ``prices`` is the price table the prompt-cache
    measure costs requests by (see `PriceTable`).
    ``default_repair`` is what the config's ``repair: null`` means here (see
    `repairs`).
    """

    config: PipelineConfig
    counter: TokenCounter
    seams: Seams = attrs.field(factory=Seams)
    max_passes: int = MAX_PASSES
    observers: tuple[PipelineObserver, ...] = attrs.field(default=(), converter=_observers)
    prices: PriceTable = DEFAULT_PRICES
    default_repair: bool = False
    _measure: Measure = attrs.field(
        init=False,
        default=attrs.Factory(
            lambda self: Measure(self.counter, self.config.survivors), takes_self=True
        ),
        eq=False,
        repr=False,
    )
    _by_model: dict[object, Pipeline] = attrs.field(init=False, factory=dict, eq=False, repr=False)
    # The context of a call that names no budget, scope or memo, made once:
    # a value, and this pipeline's config, seams and measure do not change.
    _plain: list[StrategyContext] = attrs.field(init=False, factory=list, eq=False, repr=False)

    @classmethod
    def from_config(
        cls,
        config: PipelineConfig,
        *,
        seams: Seams | None = None,
        counter: TokenCounter | None = None,
        observers: Iterable[PipelineObserver] = (),
    ) -> Pipeline:
        """A pipeline for ``config``; loads its encoder unless ``counter`` is
        given. Messages are counted by the config's ``count_rule`` over the
        counter's ``count_text`` (``seed``: the counter's own message count, unframed).
        The seams are ``seams``, and, for each one it leaves absent,
        the one the config's ``store:`` (with ``embedder:``) or
        ``summarizer:`` section describes (built, not yet connected)."""
        return cls(
            config=config,
            counter=model_counter(config, config.model, counter),
            seams=config.with_section_seams(seams or Seams()),
            observers=tuple(observers),
        )

    @property
    def repairs(self) -> bool:
        """Whether this pipeline removes what a provider would reject (see
        the request hook guide): the config's ``repair``, or, when
        that is None, ``default_repair`` (off for a pipeline of its own, on
        for the request hook's)."""
        repair = self.config.repair
        return self.default_repair if repair is None else repair

    def for_model(self, model: str | None) -> Pipeline:
        """This pipeline counting for ``model`` (a request's ``model``), when
        the config leaves the choice to the model (no ``encoder_name``) and
        the dated model table knows it; else this
        pipeline itself. One pipeline per model, made once and kept."""
        if self.config.encoder_name is not None or model_counting(model) is None:
            return self
        if model_counting(model) == model_counting(self.config.model):
            return self
        key = model_counting(model)
        found = self._by_model.get(key)
        if found is None:
            counter = model_counter(self.config, model, None)
            found = attrs.evolve(self, counter=counter)
            if len(self._by_model) < 16:
                self._by_model[key] = found
        return found

    def budget(self, window: int | None = None) -> Budget:
        """The budget the config sets, for a context ``window`` if known."""
        return resolve_budget(self.config.trigger, window=window)

    def measure(self) -> Measure:
        """A new, empty `Measure` for one
        conversation: what its requests measured (counts and their running
        sums, tool links, held messages), kept so that each request pays for
        its new messages only. Pass it as ``memo=`` to `apply`,
        `apply_async` and `count` with each of the conversation's
        requests (see the class docs). It also keeps the request the
        conversation sent last (a result's ``sent``), which `apply` takes as
        ``previous`` when given none."""
        return Measure(self.counter, self.config.survivors)

    def context(
        self,
        budget: Budget | None = None,
        scope: Scope | None = None,
        memo: Measure | None = None,
    ) -> StrategyContext:
        """What the strategies read in a run with ``budget`` (the config's by
        default), ``scope`` and ``memo`` (the pipeline's measure by
        default)."""
        if budget is None and scope is None and memo is None:
            plain = self._plain
            if not plain:
                plain.append(self._context(None, None, None))
            return plain[0]
        return self._context(budget, scope, memo)

    def _context(
        self, budget: Budget | None, scope: Scope | None, memo: Measure | None
    ) -> StrategyContext:
        return StrategyContext(
            counter=self.counter,
            budget=self.budget() if budget is None else budget,
            seams=self.seams,
            scope=Scope() if scope is None else scope,
            offload_turns=self.config.offload_turns,
            warning_marker=self.config.warning_marker,
            user_first=self.config.user_first,
            index_context=self.config.index_context,
            measure=self._measure if memo is None else memo,
        )

    def count(self, messages: Iterable[Message], *, memo: Measure | None = None) -> int:
        """Tokens of ``messages`` as one request under this pipeline's
        counter. Measured as `apply` measures, in the same ``memo``,
        so applying the same tuple next (as the request hook does) looks
        nothing up again."""
        measure = self._measure if memo is None else memo
        return measure.total(measure.conversation(messages))

    def apply(
        self,
        messages: Iterable[Message],
        *,
        budget: Budget | None = None,
        memo: Measure | None = None,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
        previous: SentRequest | _Remembered | None = _REMEMBERED,
        cache: CacheRule | None = None,
        now: float | None = None,
        over_budget: OverBudgetMode | None = None,
    ) -> CompressionResult:
        """Compact ``messages`` until they fit ``budget`` (the config's by
        default). Returns the new messages and the report.
        When they cannot fit (``report.over_budget``), ``over_budget`` (the
        config's by default) says what happens: ``"send"`` returns them,
        ``"warn"`` also emits an `OverBudgetWarning` and a
        log record, ``"raise"`` raises `OverBudgetError`. ``memo`` is the
        conversation's own measure (`measure`), the pipeline's by default.
        ``conversation_id`` names the conversation to the observers (a trace's
        ``gen_ai.conversation.id``); what ``offload`` stores is filed under
        ``conversation_id``, ``user`` and ``tenant``.

        The prompt cache: ``previous`` is the conversation's previous
        request (the last result's ``sent``); by default, the request the
        ``memo`` given last sent (its result's ``sent``), when ``messages``
        continue what that request was given, so a loop that passes the
        conversation's own measure need not pass ``previous`` (None: no
        previous request). ``now`` is the time of this one
        (seconds; with ``previous.at``, how long the cache has waited) and
        ``cache`` the provider's rule
        (`OpenAIRule`,
        `AnthropicRule`; the config's
        ``cache.provider`` when it has a ``cache:`` section). With a rule,
        ``report.cache`` says how many tokens of what is sent the cache
        serves and what the request costs; with a rule or ``previous``,
        ``result.sent`` is this request, to pass as ``previous`` next time.
        A ``cache:`` section also acts on them (see
        `CachePolicy`).

        >>> from memrules import message
        >>> from memrules import OpenAIRule
        >>> pipeline = load_pipeline("{max_tokens: 100000, strategies: []}")
        >>> history = [message("system", "rules " * 1200), message("user", "hi")]
        >>> first = pipeline.apply(history, cache=OpenAIRule())
        >>> history.append(message("user", "and then"))
        >>> second = pipeline.apply(history, cache=OpenAIRule(), previous=first.sent)
        >>> second.report.cache.cached, second.report.cache.uncached
        (1152, 67)
        """
        mode = self._over_budget(over_budget)
        context = self.context(budget, _scope(conversation_id, user, tenant), memo)
        conversation = context.measure.conversation(messages)
        if isinstance(previous, _Remembered):
            previous = self.previous(conversation, memo)
        aim = cache_aim(
            conversation,
            context,
            self.config.cache,
            previous=previous,
            rule=cache,
            now=now,
            prices=self.prices,
        )
        if self.repairs:
            aim = _leading_user(aim, context)
        result = run_pipeline(
            conversation,
            self.config.strategies,
            context,
            max_passes=self.max_passes,
            repair=self.repairs,
            observers=self.observers,
            conversation_id=conversation_id,
            aim=aim,
        )
        result = with_estimates(result, self.counter, context.measure, conversation)
        # A refused request is not sent: the measure keeps the last one that was.
        settle(result.report, mode)
        if memo is not None:
            memo.sent(result.sent)
        return result

    def previous(self, messages: Iterable[Message], memo: Measure | None) -> SentRequest | None:
        """The ``previous`` `apply` takes when given none: the request
        ``memo`` sent last, when ``messages`` continue what it was given;
        None without a ``memo`` (the pipeline's own measure, shared by its
        conversations, carries nothing)."""
        if memo is None:
            return None
        return memo.previous(as_messages(messages))

    def _over_budget(self, value: OverBudgetMode | None) -> OverBudgetMode:
        return self.config.over_budget if value is None else check_mode(value)

    @arguments_of(apply)
    async def apply_async(self, messages: Iterable[Message], **options: Any) -> CompressionResult:
        """`apply`, awaiting the seams instead of blocking on them: the
        same arguments and the same result, report included (and the same
        ``over_budget`` warning or error, once).

        The strategies stay sync and run once, in a thread of their own; each
        seam call they make is awaited on this event loop (an
        OpenAI-compatible summarizer's ``summarize_async``, a store's
        ``add_async`` when it has one; a seam without one blocks that thread,
        never the loop, as Milvus Lite and Qdrant's local mode do, which are
        local CPU and disk work). Every seam call is made once, and the
        observers watch the one run. See the async guide.

        >>> import asyncio
        >>> from memrules import message
        >>> from memrules.seams import extractive_summarizer
        >>> pipeline = load_pipeline(
        ...     "{max_messages: 3, strategies: [{type: summarize, turns: 2}]}",
        ...     seams=Seams(summarizer=extractive_summarizer()),
        ... )
        >>> step = "rename the handler, update its tests and the changelog; "
        >>> turns = [message("user", f"Edit src/app{i}.py: {step * 8}") for i in range(5)]
        >>> result = asyncio.run(pipeline.apply_async(turns))
        >>> result == pipeline.apply(turns), len(result.messages)
        (True, 3)
        """
        # The seam log's proxies and the driver load with the async path, not with apply.
        from memrules._runtime.awaiting import run_awaiting
        from memrules._runtime.logged import logged_seams

        mode = self._over_budget(options.pop("over_budget", None))
        conversation = as_conversation(messages)
        awaited = attrs.evolve(self, seams=logged_seams(self.seams))

        def core() -> CompressionResult:
            return awaited.apply(conversation, **options, over_budget="send")

        if self.seams.store is None and self.seams.summarizer is None:
            result = core()  # nothing to await: no thread for it
        else:
            result = await run_awaiting(core)
        settle(result.report, mode)
        return result

    def compress(
        self,
        messages: Iterable[Message],
        *,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
    ) -> CompressionResult:
        """Run every strategy once, with no budget."""
        context = self.context(scope=_scope(conversation_id, user, tenant))
        result = run_once(
            as_conversation(messages),
            self.config.strategies,
            context,
            repair=self.repairs,
            observers=self.observers,
            conversation_id=conversation_id,
        )
        if self.repairs:
            result = lead_with_user(result, context)
        return with_estimates(result, self.counter)

    # --- memory: what the store keeps -------------------------------------------------

    def _store(self) -> VectorStore:
        store = self.seams.store
        if store is None:
            msg = (
                "this pipeline has no store: add a store: section to its config, or pass "
                "seams=Seams(store=...)"
            )
            raise StoreError(msg)
        return store

    def remember(
        self,
        messages: Iterable[Message],
        *,
        conversation_id: str,
        user: str | None = None,
        tenant: str | None = None,
        session_time: date | datetime | None = None,
        context: IndexContext | _Unset | None = _CONFIG,
    ) -> StoreWrite:
        """Store ``messages`` (a conversation, in order: an old history to
        import) in the pipeline's store, under ``conversation_id``, ``user``
        and ``tenant``, as ``offload`` would have: one record per message,
        with the turn and exchange it belongs to. Idempotent: messages stored
        already are neither embedded nor written again (the answer lists
        them as ``existing``). All or nothing; raises
        `StoreError` (or ``EmbedderError``).

        Each message is found by its text and by ``context``
        (`IndexContext`; by default the config's
        ``index_context``, which is the message before it and the day it was
        said with its relative dates resolved unless set; None: its own text
        only). ``session_time`` is when these messages were said,
        for those without a ``metadata["time"]`` of their own: remember one
        session per call to give each its date. The stored messages are
        unchanged whatever the context."""
        if context is _CONFIG:
            context = self.config.index_context
        records = remembered_records(messages, conversation_id, user, tenant, session_time, context)
        return self._store().add(records)

    def remember_many(
        self,
        conversations: Mapping[str, Iterable[Message]] | Iterable[tuple[str, Iterable[Message]]],
        *,
        user: str | None = None,
        tenant: str | None = None,
        session_time: date | datetime | None = None,
        context: IndexContext | _Unset | None = _CONFIG,
    ) -> tuple[StoreWrite, ...]:
        """Store several conversations at once, as `remember` stores
        one: ``conversations`` maps each ``conversation_id`` to its messages
        (a mapping, or ``(conversation_id, messages)`` pairs, each id once).
        One write for all of them, so the embedding model gets every new
        text in one batch (texts of similar length together) instead of a
        few per call: for importing many histories, several times faster
        than one `remember` per conversation. All or nothing for the
        whole call; the answer is one `StoreWrite` per conversation,
        in order (its records ``added`` or ``existing``)."""
        if context is _CONFIG:
            context = self.config.index_context
        pairs = list(conversations.items() if isinstance(conversations, Mapping) else conversations)
        built: list[tuple[StoredMessage, ...]] = []
        seen: set[object] = set()
        for n, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                msg = f"conversations[{n}]={pair!r:.80} must be a (conversation_id, messages) pair"
                raise ConfigError.single(msg, yaml_path=f"conversations[{n}]")
            conversation_id, messages = pair
            if conversation_id in seen:
                msg = f"conversation_id={conversation_id!r} is given twice: give each once"
                raise ConfigError.single(msg, yaml_path=f"conversations[{n}]")
            seen.add(conversation_id)
            built.append(
                remembered_records(messages, conversation_id, user, tenant, session_time, context)
            )
        if not any(built):
            return tuple(StoreWrite() for _ in built)
        write = self._store().add([r for records in built for r in records])
        added, existing = set(write.added), set(write.existing)
        return tuple(
            StoreWrite(
                added=tuple(r.id for r in records if r.id in added),
                existing=tuple(r.id for r in records if r.id in existing),
                durable=write.durable,
            )
            for records in built
        )

    def recall(
        self,
        query: str,
        *,
        k: int = 5,
        conversation_id: str | None = None,
        user: str | None = None,
        tenant: str | None = None,
        mode: str | None = None,
        gate: bool | None = None,
    ) -> tuple[RecallHit, ...]:
        """The ``k`` stored messages that best match ``query``, best first:
        within ``user`` and ``tenant`` exactly (None finds what was stored
        without one), in ``conversation_id`` or, when None, in every
        conversation of theirs. ``mode`` overrides the store's search mode
        (``hybrid``, ``dense``, ``lexical``). Each hit has the original
        ``message``, its ``score`` and ``conversation_id``.

        ``gate`` drops the hits the memory-poisoning checks of the route's
        reflection gate refuse (its block patterns, and its detector when
        ``detector: true``; see `memrules.memory.screen`), as the route
        does before it injects memories: on by default for a route with
        retrieval memory (`stores.memory`), off otherwise (the defaults
        of `ReflectionConfig` when asked for without one). Fewer than ``k``
        hits come back when some are dropped."""
        # Retrieval memory's gate loads with a store's recall, not with apply.
        from memrules._config.config import MemoryConfig
        from memrules.memory.config import ReflectionConfig
        from memrules.memory.screen import screen_text

        scope = Scope(conversation_id=conversation_id, user=user, tenant=tenant)
        hits = self._store().search(query, k=k, scope=scope, mode=mode)
        settings = self.config.memory_store if isinstance(self.config, MemoryConfig) else None
        if gate is None:
            gate = settings is not None
        if not gate:
            return hits
        reflection = settings.reflection if settings is not None else ReflectionConfig()
        return tuple(h for h in hits if screen_text(h.message.text, reflection) is None)


def _leading_user(aim: Aim | None, context: StrategyContext) -> Aim:
    """``aim`` whose finish first makes the output start with a user message
    (`lead_with_user`), then does its own."""
    then = None if aim is None else aim.finish

    def finish(result: CompressionResult) -> CompressionResult:
        result = lead_with_user(result, context)
        return result if then is None else then(result)

    return Aim(finish=finish) if aim is None else attrs.evolve(aim, finish=finish)


def _scope(conversation_id: str | None, user: str | None, tenant: str | None) -> Scope | None:
    """Their scope; None (the empty one) when all three are."""
    if conversation_id is None and user is None and tenant is None:
        return None
    return Scope(conversation_id=conversation_id, user=user, tenant=tenant)


def load_pipeline(
    source: str | Path | PipelineConfig,
    *,
    registry: Mapping[str, StrategyFactory] | None = None,
    allow_imports: bool | Iterable[str] = (),
    seams: Seams | None = None,
    counter: TokenCounter | None = None,
    observers: Iterable[PipelineObserver] = (),
) -> Pipeline:
    """A pipeline from a YAML file path, YAML text, or a config (a
    `MemoryConfig`, or the pipeline's alone, a `PipelineConfig`).

    ``registry`` and ``allow_imports`` are `load_config`'s; ``observers``
    watch its runs. A file that sets only the pipeline's keys makes a
    `PipelineConfig` (and imports nothing of memory, the graph or the
    seams); one with a service key (``store:``, ``memory:``,
    ``graph_context:``, ``routes:``...) a `MemoryConfig`. Raises
    `ConfigError` naming the file, YAML path and
    line of every problem.
    """
    config = (
        source
        if isinstance(source, PipelineConfig)
        else load_pipeline_config(source, registry=registry, allow_imports=allow_imports)
    )
    return Pipeline.from_config(config, seams=seams, counter=counter, observers=observers)
