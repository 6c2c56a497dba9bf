"""What the provider's prompt cache changes in one pipeline run.

Given the conversation's previous request (a
`SentRequest`), a rule and the time,
`cache_aim` says what the interpreter does differently (an
`Aim`):

- with a ``cache:`` section, when the input is the previous input plus new
  messages, the run starts from what the previous request sent plus the
  new messages (``carry``), so that old messages are decided once and the
  prefix the provider cached stays the same; compaction then happens only
  when that reaches the budget, and aims below ``cache.compact_to``;
- when the cache has expired anyway (the previous request is older than
  the rule's lifetime), ``cache.cold_trigger`` fires compaction early;
- with a rule, the result's report gets the cache measure of what is sent,
  and the result the request to pass as ``previous`` next time.

The time is the caller's (``now``) against the previous request's ``at``:
nothing here reads a clock, so a replay given the same times reproduces
the same figures.
"""

from __future__ import annotations

import attrs

from memrules._core.budget import CachePolicy
from memrules._core.invariants import Enforced, enforce
from memrules._core.messages import Conversation, starts_with
from memrules._core.prompt_cache import Sent, SentRequest
from memrules._core.report import CompressionResult
from memrules._counting.cache import (
    DEFAULT_PRICES,
    CacheRule,
    PriceTable,
    is_warm,
    measure,
    rule_for,
)
from memrules._engine.contract import StrategyContext
from memrules._engine.interpreter import Aim

__all__ = ["cache_aim", "carried", "elapsed_since", "policy_rule"]


def policy_rule(
    policy: CachePolicy, model: str | None = None, prices: PriceTable = DEFAULT_PRICES
) -> CacheRule:
    """The rule ``policy`` measures by, for ``model`` when the policy names
    none; for the rule's default model when ``prices`` has no family for
    the one named (a self-hosted model behind an OpenAI-compatible API)."""
    named = policy.model or model
    if named is not None:
        try:
            prices.for_model(named)
        except KeyError:
            named = None
    return rule_for(policy.provider, named)


def elapsed_since(previous: SentRequest | None, now: float | None) -> float:
    """Seconds from ``previous`` to ``now``; 0 when either time is unknown
    (the cache is taken to be warm), never below 0."""
    if previous is None or previous.at is None or now is None:
        return 0.0
    return max(0.0, now - previous.at)


def carried(
    conversation: Conversation, previous: SentRequest, context: StrategyContext
) -> Enforced | None:
    """``conversation`` with what ``previous`` sent in place of the
    previous input, when ``conversation`` starts with that input (equal by
    value, in order): the previous output, its kept messages taken from
    ``conversation``, then the new messages, held to the invariants. None
    when ``conversation`` does not continue ``previous``, or carrying
    changes nothing."""
    received = previous.received
    n = len(received)
    # One C-level pass, short-cut by identity (a growing conversation
    # holds the very objects it held), not a Python-level one, no copy.
    if not starts_with(conversation, received):
        return None
    sent = previous.sent.messages
    if len(sent) == n and tuple(previous.origin) == tuple(range(n)):
        return None  # the previous request sent its input as it was
    head = tuple(
        conversation[i] if i is not None else m for m, i in zip(sent, previous.origin, strict=True)
    )
    candidate = head + conversation[n:]
    # Where each message of the candidate came from is known: the previous
    # request's origin, then the new messages. A message that request made
    # is none of the conversation's objects, unless the caller put it among
    # the new ones (then the general matching places it).
    made = {id(m) for m, i in zip(sent, previous.origin, strict=True) if i is None}
    known = None
    if not made or made.isdisjoint(map(id, conversation[n:])):
        known = (*previous.origin, *range(n, len(conversation)))
    enforced = enforce(
        conversation,
        candidate,
        measure=context.measure,
        user_first=context.user_first,
        claimed=known,
    )
    if enforced.violation is not None or not enforced.changed:
        return None
    return enforced


def _sent(result: CompressionResult, context: StrategyContext) -> Sent:
    messages = result.messages
    counts = context.sizes(messages)
    overhead = max(0, result.report.tokens_after - sum(counts))
    return Sent(messages=messages, counts=counts, overhead=overhead)


def cache_aim(
    conversation: Conversation,
    context: StrategyContext,
    policy: CachePolicy | None,
    *,
    previous: SentRequest | None,
    rule: CacheRule | None,
    now: float | None,
    prices: PriceTable,
) -> Aim | None:
    """What the run does differently for the prompt cache (see the module
    docs); None when nothing (no policy, no rule, no previous request)."""
    if policy is None and rule is None and previous is None:
        return None
    if rule is None and policy is not None:
        rule = policy_rule(policy, prices=prices)
    elapsed = elapsed_since(previous, now)
    carry = trigger = target = None
    if policy is not None:
        budget = context.budget
        target = policy.target(budget)
        if previous is not None:
            carry = carried(conversation, previous, context)
            if rule is not None and not is_warm(rule, previous.sent, elapsed):
                trigger = policy.cold_limit(budget)

    def finish(result: CompressionResult) -> CompressionResult:
        sent = _sent(result, context)
        report = result.report
        before = None if previous is None else previous.sent
        figures = (
            None if rule is None else measure(before, sent, rule, elapsed=elapsed, prices=prices)
        )
        report = attrs.evolve(
            report,
            cache=figures,
            carried=None if carry is None or previous is None else len(previous.sent.messages),
            compact_to=target if target is not None and report.passes else None,
        )
        request = SentRequest(received=conversation, sent=sent, origin=tuple(report.origin), at=now)
        return attrs.evolve(result, report=report, sent=request)

    return Aim(carry=carry, trigger=trigger, target=target, finish=finish)
