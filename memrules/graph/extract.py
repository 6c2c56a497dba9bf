"""Where graphs come from: the `GraphExtractor` seam, and
`offline_extractor`, a default that needs no model.

An extractor reads a conversation and returns the graph it implies, a
*delta* that `MemoryPlugin` merges (``union``) into the
conversation's graph after each request when ``graph_extractor`` is
configured. It reads the request as it arrived, before compaction, so what
the window is about to drop is remembered first. Merging is idempotent, so
an extractor may (and the offline one does) return the whole history's graph
every time: what it found before changes nothing the second time.

The offline extractor finds three things, each with a stated weight:

- **Facts the user stated**, in the form the design's memory example uses: a sentence
  of a user message that reads ``The|My|Our <subject> <verb> [<preposition>]
  <object>``, where the verb is ``is``, ``are``, ``was``, ``were`` or a word
  ending in ``s`` (``rotates``), and the object is one to four words:
  "The vault is in Lisbon." gives ``vault -[is_in]-> Lisbon``. The subject
  node's id is the word in lower case (label ``Entity``), the object's the
  words as written (label ``Value``); the relationship's id is
  ``fact:<subject>:<relation>``, so a later "The vault is in Porto." moves
  the fact rather than adding a second one. Weight 2: what the user said
  matters most. Questions are not facts.
- **Files the agent read or wrote**: a tool call whose JSON arguments hold a
  string under one of ``path_keys`` gives a ``File`` node ``file:<path>``
  and a relationship ``tool:<name> -[read]-> file:<path>``, or ``-[wrote]->``
  when the tool's name holds write, edit, create, save, append, patch,
  delete, move or rename. Weight 1.
- **Tools called**: a ``Tool`` node ``tool:<name>`` for each tool. Weight 0.5.

>>> from memrules import message
>>> delta = offline_extractor()((message("user", "The vault is in Lisbon. Reply with: noted"),))
>>> delta.relationship("fact:vault:is_in").target
'Lisbon'
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

import attrs

from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.messages import Conversation, Message, ToolCall
from memrules.graph.limits import GraphLimits
from memrules.graph.memory_graph import MemoryGraph
from memrules.graph.model import GraphNode, GraphRelationship

__all__ = [
    "EXTRACTORS",
    "FACT_WEIGHT",
    "FILE_WEIGHT",
    "TOOL_WEIGHT",
    "GraphExtractor",
    "extractor_from_config",
    "offline_extractor",
]

GraphExtractor: TypeAlias = Callable[[Conversation], MemoryGraph]
"""``(conversation) -> graph``: the graph a conversation implies, merged into
the conversation's graph (``union``) after each request. May do I/O (a model
that extracts entities); an extractor that raises fails the request before
anything was written."""

FACT_WEIGHT = 2.0
FILE_WEIGHT = 1.0
TOOL_WEIGHT = 0.5

_DELTA_LIMITS = GraphLimits(max_nodes=2**62, max_relationships=2**62)
"""A delta is as big as what it was read from; the conversation's graph,
which it is merged into, carries the cap."""

_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_FACT = re.compile(
    r"(?:the|my|our)\s+(?P<subject>[^\W\d_][\w-]*)\s+"
    r"(?P<verb>is|are|was|were|[a-z]+s)"
    r"(?:\s+(?P<preposition>in|on|at|to|from|for|of|by|with|under|near|inside|behind))?"
    r"\s+(?P<object>[^\s?]+(?:\s+[^\s?]+){0,3})",
    re.IGNORECASE,
)
_WRITES = re.compile(r"write|edit|create|save|append|patch|delete|move|rename", re.IGNORECASE)
_DEFAULT_PATH_KEYS = ("path", "file_path", "filename")

Contribution: TypeAlias = tuple[tuple[GraphNode, ...], tuple[GraphRelationship, ...]]


def _facts(text: str) -> Iterable[Contribution]:
    for sentence in _SENTENCES.split(text):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):
            continue
        found = _FACT.fullmatch(sentence.rstrip(".!").rstrip())
        if found is None:
            continue
        subject = found["subject"].lower()
        relation = found["verb"].lower()
        if found["preposition"]:
            relation += "_" + found["preposition"].lower()
        value = found["object"]
        yield (
            (
                GraphNode(id=subject, labels=("Entity",), weight=FACT_WEIGHT),
                GraphNode(id=value, labels=("Value",), weight=FACT_WEIGHT),
            ),
            (
                GraphRelationship(
                    id=f"fact:{subject}:{relation}",
                    source=subject,
                    target=value,
                    type=relation,
                    weight=FACT_WEIGHT,
                ),
            ),
        )


def _paths(call: ToolCall, path_keys: tuple[str, ...]) -> list[str]:
    try:
        arguments = json.loads(call.arguments) if call.arguments else None
    except ValueError:
        return []
    if not isinstance(arguments, dict):
        return []
    return [v for k in path_keys if isinstance(v := arguments.get(k), str) and v]


def _tool_call(
    call: ToolCall, *, files: bool, tools: bool, path_keys: tuple[str, ...]
) -> Contribution:
    tool = f"tool:{call.name}"
    nodes: list[GraphNode] = []
    relationships: list[GraphRelationship] = []
    if tools or files:
        nodes.append(GraphNode(id=tool, labels=("Tool",), weight=TOOL_WEIGHT))
    if files:
        action = "wrote" if _WRITES.search(call.name) else "read"
        for path in _paths(call, path_keys):
            file = f"file:{path}"
            nodes.append(GraphNode(id=file, labels=("File",), weight=FILE_WEIGHT))
            relationships.append(
                GraphRelationship(
                    id=f"{tool}>{file}", source=tool, target=file, type=action, weight=FILE_WEIGHT
                )
            )
    return tuple(nodes), tuple(relationships)


def _problem(key: str, message: str) -> ConfigProblem:
    return ConfigProblem(message=message, yaml_path=f"graph_extractor.{key}")


@attrs.frozen(kw_only=True, slots=True, repr=False)
class _OfflineExtractor:
    facts: bool
    files: bool
    tools: bool
    path_keys: tuple[str, ...]
    _contribution: Callable[[Message], Contribution] = attrs.field(
        init=False, eq=False, default=None
    )

    def __attrs_post_init__(self) -> None:
        # Per message value, bounded: a request that adds one message reads one.
        object.__setattr__(self, "_contribution", functools.lru_cache(maxsize=16_384)(self._read))

    def _read(self, m: Message) -> Contribution:
        nodes: list[GraphNode] = []
        relationships: list[GraphRelationship] = []
        if self.facts and m.role == "user":
            for found_nodes, found_relationships in _facts(m.text):
                nodes.extend(found_nodes)
                relationships.extend(found_relationships)
        if self.files or self.tools:
            for part in m.parts:
                if isinstance(part, ToolCall):
                    n, r = _tool_call(
                        part, files=self.files, tools=self.tools, path_keys=self.path_keys
                    )
                    nodes.extend(n)
                    relationships.extend(r)
        return tuple(nodes), tuple(relationships)

    def __call__(self, conversation: Conversation) -> MemoryGraph:
        nodes: dict[str, GraphNode] = {}
        relationships: dict[str, GraphRelationship] = {}
        for m in conversation:
            found_nodes, found_relationships = self._contribution(m)
            for node in found_nodes:
                nodes.pop(node.id, None)  # the latest mention is the newest
                nodes[node.id] = node
            for relationship in found_relationships:
                relationships.pop(relationship.id, None)
                relationships[relationship.id] = relationship
        return MemoryGraph.of(nodes.values(), relationships.values(), limits=_DELTA_LIMITS)

    def __repr__(self) -> str:
        return (
            f"offline_extractor(facts={self.facts!r}, files={self.files!r}, "
            f"tools={self.tools!r}, path_keys={list(self.path_keys)!r})"
        )


def offline_extractor(
    *,
    facts: bool = True,
    files: bool = True,
    tools: bool = True,
    path_keys: Iterable[str] = _DEFAULT_PATH_KEYS,
) -> GraphExtractor:
    """The offline `GraphExtractor` (see the module docs): user-stated
    ``facts``, ``files`` read or written (the tool-call arguments it looks
    in are ``path_keys``), ``tools`` called. Raises one
    `ConfigError` for settings it cannot use, or
    that can never find anything (all three off)."""
    problems = [
        _problem(key, f"{key}={value!r} must be true or false")
        for key, value in (("facts", facts), ("files", files), ("tools", tools))
        if not isinstance(value, bool)
    ]
    keys: Any = path_keys
    if isinstance(keys, str) or not isinstance(keys, Iterable):
        problems.append(_problem("path_keys", f"path_keys={keys!r} must be a list of strings"))
        keys = ()
    keys = tuple(keys)
    if any(not isinstance(k, str) or not k for k in keys):
        problems.append(
            _problem("path_keys", f"path_keys={list(keys)!r} must hold non-empty strings")
        )
    if not problems and not (facts or files or tools):
        problems.append(
            _problem("facts", "facts, files and tools are all false: the extractor finds nothing")
        )
    if not problems and files and not keys:
        problems.append(_problem("path_keys", "files is true but path_keys is empty"))
    if problems:
        raise ConfigError(problems)
    return _OfflineExtractor(facts=facts, files=files, tools=tools, path_keys=keys)


EXTRACTORS: dict[str, Callable[..., GraphExtractor]] = {"offline": offline_extractor}
"""The extractors a config may name (``graph_extractor: {type: offline}``)."""


def extractor_from_config(*, type: str = "offline", **parameters: Any) -> GraphExtractor:
    """The extractor YAML's ``graph_extractor`` section names: ``type`` (a
    key of `EXTRACTORS`) and that extractor's parameters."""
    factory = EXTRACTORS.get(type) if isinstance(type, str) else None
    if factory is None:
        known = ", ".join(sorted(EXTRACTORS))
        msg = f"type={type!r} is no graph extractor; known: {known}"
        raise ConfigError([_problem("type", msg)])
    try:
        return factory(**parameters)
    except TypeError as exc:
        msg = f"{exc}".replace(f"{factory.__name__}() ", "")
        raise ConfigError([ConfigProblem(message=msg, yaml_path="graph_extractor")]) from None
