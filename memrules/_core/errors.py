"""The exceptions memrules raises.

Every error is a `MemrulesError`; each specific one also subclasses the
built-in an ordinary ``except`` clause would reach for (``ValueError`` for bad
input), so callers need not import memrules to catch them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

__all__ = [
    "CollectionError",
    "ConfigError",
    "ConfigProblem",
    "EmbedderError",
    "EncodingError",
    "GraphError",
    "MemrulesError",
    "MemrulesWarning",
    "MessageFormatError",
    "MessageTypeError",
    "ObserverError",
    "OutputError",
    "OverBudgetError",
    "OverBudgetWarning",
    "ReplayMismatch",
    "SeamError",
    "StateStoreError",
    "StoreError",
    "StrategyError",
    "SummarizerError",
    "TraceError",
]


class MemrulesError(Exception):
    """Base class of every error memrules raises on purpose."""


@attrs.frozen(kw_only=True, slots=True)
class ConfigProblem:
    """One thing wrong with a configuration, and where it is."""

    message: str
    yaml_path: str = ""
    line: int | None = None

    def render(self, path: str | None) -> str:
        """``file:line: yaml.path: message``, leaving out what is unknown (a
        config built in Python has no file or line)."""
        where = path or ("<config>" if self.line is not None else "")
        if self.line is not None:
            where += f":{self.line}"
        if self.yaml_path:
            where += f": {self.yaml_path}" if where else self.yaml_path
        return f"{where}: {self.message}" if where else self.message


class ConfigError(MemrulesError, ValueError):
    """A configuration that cannot be used.

    Every problem found is listed, each with the file, the YAML path
    (``strategies[1].keep_messages``) and the 1-based line. ``path``,
    ``yaml_path`` and ``line`` describe the first problem.
    """

    def __init__(self, problems: Sequence[ConfigProblem], *, path: str | None = None) -> None:
        if not problems:
            msg = "ConfigError needs at least one problem"
            raise ValueError(msg)
        self.problems = tuple(problems)
        self.path = path
        first = self.problems[0]
        self.yaml_path = first.yaml_path
        self.line = first.line
        super().__init__("; ".join(p.render(path) for p in self.problems))

    @classmethod
    def single(
        cls, message: str, *, path: str | None = None, yaml_path: str = "", line: int | None = None
    ) -> ConfigError:
        return cls([ConfigProblem(message=message, yaml_path=yaml_path, line=line)], path=path)


class MessageFormatError(MemrulesError, ValueError):
    """A message that cannot be read: names the message index and the field."""

    def __init__(self, message: str, *, index: int | None = None, field: str = "") -> None:
        self.index = index
        self.field = field
        where = ""
        if index is not None:
            where = f"messages[{index}]"
            if field:
                where += f".{field}"
        elif field:
            where = field
        super().__init__(f"{where}: {message}" if where else message)


class MessageTypeError(MessageFormatError, TypeError):
    """A message built from a value of the wrong type: a part that is not a
    part, metadata that cannot be frozen. Also a ``TypeError``, as Python
    raises for a wrong type; a `MessageFormatError` like every other
    problem with a message."""


class EncodingError(MemrulesError, LookupError):
    """A tokenizer that cannot be loaded (unknown name, corrupt data)."""


class StrategyError(MemrulesError, RuntimeError):
    """Raised by a strategy for a real failure; the pipeline records it and goes on.

    ``seam_calls`` are the seam calls made before the failure, for the report.
    """

    def __init__(self, message: str, *, seam_calls: Sequence[Any] = ()) -> None:
        self.seam_calls = tuple(seam_calls)
        super().__init__(message)


class OverBudgetError(MemrulesError, ValueError):
    """A request that compaction could not bring within its budget, under
    ``over_budget: raise``: what no strategy may remove (the first system
    message, the latest user message, the tool pairs they need) or what the
    strategies left still costs more than the budget allows. Nothing was
    sent. ``tokens`` and ``messages`` are what the survivors cost, ``budget``
    the `Budget` they exceed, and ``report`` the whole
    `CompressionReport`. A ``ValueError``: the input is too
    big for the budget."""

    def __init__(
        self, message: str, *, tokens: int, messages: int, budget: Any, report: Any
    ) -> None:
        self.tokens = tokens
        self.messages = messages
        self.budget = budget
        self.report = report
        super().__init__(message)


class ObserverError(MemrulesError, RuntimeError):
    """A usage observer failed, so the request failed before anything changed."""


class GraphError(MemrulesError, ValueError):
    """A working-graph update or import that cannot be done: a relationship
    naming an unknown node, a duplicate id or a non-finite weight in a
    snapshot, a graph at its cap that refuses more. The graph it was asked
    of is unchanged.

    ``ids`` are the offending node and relationship ids, in the order the
    message names them.
    """

    def __init__(self, message: str, *, ids: Sequence[str] = ()) -> None:
        self.ids = tuple(ids)
        super().__init__(message)


class StateStoreError(MemrulesError, OSError):
    """The conversation state store failed: it cannot be reached, it timed
    out, it holds data memrules cannot read, or an update lost the race too
    many times. Nothing was written: the state is as it was before the call.
    An ``OSError``, as the network and disk errors behind it are."""


class OutputError(MemrulesError, OSError):
    """A file memrules was asked to write that it could not write (a full
    disk, a closed stdout) or must not write (a path that is also an input,
    a device or a directory). The message names the path; the file there is
    as it was before. An ``OSError``, as the disk errors behind it are."""


class SeamError(MemrulesError, RuntimeError):
    """A seam (a vector store, an embedder, a summarizer) failed. The
    message says which one, what it was doing, and what to do about it; the
    cause is chained."""


class StoreError(SeamError):
    """The vector store failed: it could not be opened, written or searched,
    or its collection was made for another embedder. A failed write leaves
    the conversation as it was (see ``offload``)."""


class CollectionError(StoreError):
    """A vector store's collection cannot be used with this embedder: it was
    made for another embedder, or holds vectors of another dimension. Raised
    before anything is written or compared, never as near-zero scores later;
    the fix is another collection, or the embedder the collection was made
    for."""


class EmbedderError(SeamError):
    """The embedder failed: the local model could not be loaded, or the
    embeddings endpoint failed or answered something other than one finite
    vector of the expected dimension per text."""


class SummarizerError(SeamError):
    """The summarizer failed: its endpoint failed, or answered no summary."""


# --- traces and replay ----------------------------------------------------------


class TraceError(MemrulesError, ValueError):
    """A trace that cannot be written, read or replayed: a file that is not a
    memrules trace (or of a format version this memrules does not read), a
    line that is not what its kind needs, a config the trace cannot hold or
    rebuild. The message names the file and line."""


class ReplayMismatch(MemrulesError, AssertionError):  # noqa: N818 - it reports a mismatch
    """A replay that differs from the run it replays: a seam call the trace
    has no answer for, a request that is not the recorded one, or an output,
    report or answer that is not the recorded one.

    ``request`` is the request's number in the trace (None for the header),
    ``path`` where the first difference is (``output[3].parts[0].text``),
    ``recorded`` and ``replayed`` the two values there (``MISSING`` when one
    side has nothing), and ``differences`` every difference found, as lines.
    """

    def __init__(
        self,
        message: str,
        *,
        request: int | None = None,
        path: str = "",
        recorded: Any = None,
        replayed: Any = None,
        differences: Sequence[str] = (),
    ) -> None:
        self.request = request
        self.path = path
        self.recorded = recorded
        self.replayed = replayed
        self.differences = tuple(differences) or (message,)
        super().__init__(message)


# --- warnings -------------------------------------------------------------------


class MemrulesWarning(UserWarning):
    """Base class of every warning memrules emits: something was done, but
    not what was asked (filter them all with
    ``warnings.simplefilter("error", memrules.MemrulesWarning)``)."""


class OverBudgetWarning(MemrulesWarning):
    """A request sent over its budget, under ``over_budget: warn`` (the
    default): compaction could not make it fit. The request's report says
    ``over_budget``; ``over_budget: raise`` makes it an
    `OverBudgetError` instead, ``over_budget: send`` silences it."""
