"""The prompt-cache carry as part of a conversation's state: `CacheCarry`.

A route with a `cache:` section (`configs/cache_aware.yaml`) sends what it
sent last time again and appends, instead of deciding about old messages
afresh; for that it needs the conversation's previous request (a
`SentRequest`: the messages it was given, what it sent, where each sent
message came from). Kept in one process, a conversation whose requests reach
several replicas, or a replica that restarted, loses it, and with it most of
the prompt cache.

`CacheCarry` is what the next request depends on, small enough to live in
the conversation's state: how many messages the previous request was given
and a digest of them, where each sent message came from (an index into those
messages), in full only the messages a strategy made (a summary, a cleared
tool result), the sent messages' token counts, the framing overhead and the
time. `rebuild` turns it back into the very `SentRequest` the previous
request produced, given the next request's messages, when those continue the
previous ones (equal by value, in order: an agent loop); when they do not,
the previous request could not have been carried either, and `rebuild` gives
None.

```python
from memrules.state.carry import CacheCarry, rebuild

carry = CacheCarry.of(previous)          # previous: a result's `sent`
assert rebuild(carry, messages) == previous  # messages continue previous.received
```
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from memrules._core.messages import Message
from memrules._core.prompt_cache import Sent, SentRequest
from memrules._core.seam_records import content_hash, decode_message, encode_message

__all__ = [
    "CARRY_FORMAT",
    "CacheCarry",
    "Held",
    "digest",
    "hold",
    "previous_request",
    "rebuild",
    "with_carry",
]

CARRY_FORMAT = 1


def _chain(start: str, messages: Sequence[Message]) -> str:
    value = start
    for m in messages:
        value = hashlib.blake2b(
            (value + content_hash(m)).encode("ascii"), digest_size=16
        ).hexdigest()
    return value


def digest(messages: Sequence[Message], *, base: Held | None = None) -> str:
    """One hash of `messages`' values in order, a chain over the messages'
    content hashes: equal lists of equal messages (by value) give the same
    digest in any process. With `base` (a request this process handled
    before), the chain starts from its carry's digest when `messages` start
    with what it was given, so only the messages after those are hashed."""
    if base is not None:
        old = base.request.received
        n = len(old)
        if n <= len(messages) and all(
            a is b or a == b for a, b in zip(old, messages[:n], strict=True)
        ):
            return _chain(base.carry.received_digest, messages[n:])
    return _chain("", messages)


def _known(base: Held | None) -> dict[Message, str]:
    """The JSON `base` kept of each message a strategy made, by message
    value (a cleared tool result stays cleared from one request to the
    next: encoded once)."""
    if base is None:
        return {}
    before = base.request.sent.messages
    known = {}
    for i, text in base.carry.made:
        with contextlib.suppress(TypeError):  # a message holding a dict: not hashable
            known[before[i]] = text
    return known


def _encoded(message: Message, known: dict[Message, str]) -> str:
    try:
        text = known.get(message)
    except TypeError:
        text = None
    return encode_message(message) if text is None else text


def _ints(value: Sequence[int]) -> tuple[int, ...]:
    return tuple(value)


def _origins(value: Sequence[int | None]) -> tuple[int | None, ...]:
    return tuple(value)


def _made(value: Mapping[int, str]) -> tuple[tuple[int, str], ...]:
    return tuple(sorted(dict(value).items()))


@attrs.frozen(kw_only=True, slots=True)
class CacheCarry:
    """What a conversation's next request needs of its previous one (see
    the module docs). `received`: how many messages the previous request was
    given, `received_digest` their `digest`; `origin`: for each sent
    message, its index among them, or None for a message a strategy made,
    kept in full (as `encode_message` JSON) in `made`, by sent index;
    `counts` and `overhead`: the sent messages' tokens and the framing's;
    `at`: when (the caller's clock). `token` names this carry: a process that
    still holds the `SentRequest` it was made from can use that instead of
    rebuilding it."""

    received: int
    received_digest: str
    origin: tuple[int | None, ...] = attrs.field(converter=_origins)
    made: tuple[tuple[int, str], ...] = attrs.field(converter=_made)
    counts: tuple[int, ...] = attrs.field(converter=_ints)
    overhead: int = 0
    at: float | None = None
    token: str = ""

    @classmethod
    def of(
        cls, request: SentRequest, *, base: Held | None = None, token: str | None = None
    ) -> CacheCarry:
        """The carry of `request` (a pipeline result's `sent`); `base`, the
        request this process handled before, saves hashing what the two
        share (see `digest`)."""
        known = _known(base)
        made = {
            i: _encoded(m, known)
            for i, (m, o) in enumerate(zip(request.sent.messages, request.origin, strict=True))
            if o is None
        }
        return cls(
            received=len(request.received),
            received_digest=digest(request.received, base=base),
            origin=request.origin,
            made=made,
            counts=request.sent.counts,
            overhead=request.sent.overhead,
            at=request.at,
            token=uuid.uuid4().hex if token is None else token,
        )

    def to_dict(self) -> dict[str, Any]:
        """The carry as JSON-ready data (what the state stores keep)."""
        return {
            "format": CARRY_FORMAT,
            "received": self.received,
            "digest": self.received_digest,
            "origin": list(self.origin),
            "made": {str(i): text for i, text in self.made},
            "counts": list(self.counts),
            "overhead": self.overhead,
            "at": self.at,
            "token": self.token,
        }

    @classmethod
    def from_dict(cls, raw: Any) -> CacheCarry:
        """The carry `to_dict` wrote; `ValueError` for anything else."""
        if not isinstance(raw, Mapping) or raw.get("format") != CARRY_FORMAT:
            msg = f"carry={raw!r:.60} is not a format {CARRY_FORMAT} prompt-cache carry"
            raise ValueError(msg)
        origin = tuple(raw["origin"])
        counts = tuple(raw["counts"])
        received = raw["received"]
        if not all(o is None or (type(o) is int and 0 <= o < received) for o in origin) or not all(
            type(c) is int and c >= 0 for c in counts
        ):
            msg = "carry: an origin or a count is not a whole number in range"
            raise ValueError(msg)
        if len(origin) != len(counts):
            msg = f"carry: {len(origin)} origins for {len(counts)} counts"
            raise ValueError(msg)
        made = {int(i): str(text) for i, text in raw["made"].items()}
        if set(made) != {i for i, o in enumerate(origin) if o is None}:
            msg = "carry: the made messages are not the sent messages without an origin"
            raise ValueError(msg)
        at = raw.get("at")
        return cls(
            received=received,
            received_digest=str(raw["digest"]),
            origin=origin,
            made=made,
            counts=counts,
            overhead=int(raw["overhead"]),
            at=None if at is None else float(at),
            token=str(raw.get("token", "")),
        )


def rebuild(
    carry: CacheCarry, messages: Sequence[Message], *, base: Held | None = None
) -> SentRequest | None:
    """The `SentRequest` `carry` was made from, given the next request's
    `messages`; None when they do not start with the previous request's
    messages (fewer, or another digest). `base` as for `digest`: a replica
    that handled an earlier request of the conversation hashes only the
    messages since."""
    n = carry.received
    if len(messages) < n:
        return None
    received = tuple(messages[:n])
    if digest(received, base=base) != carry.received_digest:
        return None
    made = dict(carry.made)
    sent = tuple(
        received[o] if o is not None else decode_message(made[i])
        for i, o in enumerate(carry.origin)
    )
    return SentRequest(
        received=received,
        sent=Sent(messages=sent, counts=carry.counts, overhead=carry.overhead),
        origin=carry.origin,
        at=carry.at,
    )


@attrs.frozen(slots=True)
class Held:
    """A process's own copy of the request a carry was made from: when the
    state's carry is this very `carry` (this process wrote it last), the
    next request uses `request` as it is, without rebuilding."""

    carry: CacheCarry
    request: SentRequest


def hold(sent: SentRequest | None, base: Held | None = None) -> Held | None:
    """What a request leaves for the next: its carry (for the state) with
    the request itself (for this process); None when the route has no
    `cache:` section (no `sent`). `base`: what this process held for the
    conversation before (see `digest`)."""
    return None if sent is None else Held(CacheCarry.of(sent, base=base), sent)


def previous_request(
    carry: CacheCarry | None, messages: Sequence[Message], held: Held | None
) -> SentRequest | None:
    """The previous request a conversation's next one depends on, from its
    state's `carry`: the process's own copy when it wrote that carry, else
    rebuilt from `messages` (`rebuild`); None without a carry."""
    if carry is None:
        return None
    if held is not None and held.carry is carry:
        return held.request
    return rebuild(carry, messages, base=held)


def with_carry(state: Any, held: Held | None) -> Any:
    """`state` (a `ConversationState`) carrying `held`'s carry; the same
    state when there is nothing to carry or it carries that one already."""
    if held is None or state.carry is held.carry:
        return state
    return attrs.evolve(state, carry=held.carry)
