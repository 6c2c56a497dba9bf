"""The plugin's retrieval-memory side: what a request asks the route's store
before its step, and the endpoints that write and read the store around
requests (the completed turn kept, a user's memories listed or forgotten).

A route without memory asks nothing: `MemoryEndpoints.retrieve` answers
None, `on_response` says `disabled`, and `forget` and `list_memories` raise
`ConfigError` naming the config entry that would give it memory."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from memrules._adapters import from_openai
from memrules._core.errors import ConfigError, MessageFormatError
from memrules._core.messages import Message
from memrules._plugin.request import Request
from memrules._runtime.logged import retrieval_request
from memrules._trace.plugin_tracer import PluginTracer
from memrules.memory.autostore import StoreOutcome
from memrules.memory.retrieve import Retrieval
from memrules.memory.service import ListedRecord, RetrievalService
from memrules.seams._log import seam_call

__all__ = ["MemoryEndpoints"]


@attrs.frozen(kw_only=True)
class MemoryEndpoints:
    """The route's retrieval memory ``service`` (None: the route has none),
    its calls written to ``tracer``'s trace when there is one. ``source`` is
    the config file a missing memory is blamed on; ``conversation_id_of``
    finds the conversation of an OpenAI body."""

    service: RetrievalService | None
    tracer: PluginTracer | None
    source: str | None
    conversation_id_of: Callable[[Mapping[str, Any]], str | None]

    def retrieve(self, request: Request) -> Retrieval | None:
        """What the store answers for ``request``, through the seam log (None
        on a route without memory)."""
        memory, messages = self.service, request.messages
        if memory is None:
            return None
        found: Retrieval = seam_call(
            "memory",
            "retrieve",
            lambda: retrieval_request(messages, user=request.user, tenant=request.tenant),
            lambda: memory.retrieve(messages, user=request.user, tenant=request.tenant),
            answer=Retrieval.to_dict,
            rebuild=Retrieval.from_dict,
        )
        return found

    def on_response(
        self, request: Request, reply: Message | str, now: float | None
    ) -> StoreOutcome:
        """Keep the turn ``request`` and ``reply`` make (see `MemoryPlugin.on_response`)."""
        memory = self.service
        if memory is None:
            return StoreOutcome(status="disabled", reason="this route has no retrieval memory")

        def store() -> StoreOutcome:
            return memory.store_turn(
                request.messages,
                reply,
                user=request.user,
                tenant=request.tenant,
                conversation_id=request.conversation_id,
                now=now,
            )

        if self.tracer is None:
            return store()
        outcome: StoreOutcome = self.tracer.respond(request, reply, store, now=now)
        return outcome

    def on_openai_response(
        self,
        body: Mapping[str, Any],
        response: Mapping[str, Any],
        *,
        conversation_id: str | None,
        user: str | None,
        tenant: str | None,
        now: float | None,
    ) -> StoreOutcome:
        """`on_response` for an OpenAI chat body and its completion."""
        request = Request.from_openai(
            body,
            conversation_id=conversation_id,
            conversation_id_of=self.conversation_id_of,
            user=user,
            tenant=tenant,
        )
        choices = response.get("choices") if isinstance(response, Mapping) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        reply = first.get("message") if isinstance(first, Mapping) else None
        if not isinstance(reply, Mapping):
            msg = "expected a chat completion with choices[0].message"
            raise MessageFormatError(msg, field="response")
        (answer,) = from_openai([reply])
        return self.on_response(request, answer, now)

    def forget(self, user: str, tenant: str) -> int:
        """Delete every memory of ``user`` and ``tenant``; how many there were."""
        return self._required("forget").forget(user=user, tenant=tenant)

    def list_memories(self, user: str, tenant: str) -> tuple[ListedRecord, ...]:
        """Every memory of ``user`` and ``tenant``, oldest first."""
        return self._required("list memories").memories(user=user, tenant=tenant)

    def _required(self, doing: str) -> RetrievalService:
        if self.service is None:
            msg = (
                f"cannot {doing}: this route has no retrieval memory (give it a memory: entry "
                "with enabled: true, and the file a stores.memory)"
            )
            raise ConfigError.single(msg, path=self.source, yaml_path="memory")
        return self.service
