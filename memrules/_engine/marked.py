"""Whether a conversation holds a message that starts with a marker (the
near-limit warning's), reading only the messages that are new since the
conversation's last request."""

from __future__ import annotations

import attrs

from memrules._core.messages import Conversation, Message
from memrules._counting.measure import Measure
from memrules._engine.incremental import facts

__all__ = ["any_marked"]


@attrs.frozen
class _StartsWith:
    marker: str

    def __call__(self, message: Message) -> bool:
        return message.text.startswith(self.marker)


def any_marked(messages: Conversation, marker: str, measure: Measure) -> bool:
    """Whether any message's text starts with ``marker``: what the notes in
    ``measure`` (the conversation's) say for the messages that are the same
    objects as last time, the text read for the rest."""
    return any(facts(_StartsWith(marker), messages, measure))
