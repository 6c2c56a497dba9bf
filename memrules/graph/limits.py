"""The working graph's size cap: `GraphLimits` and `AtCap`.

Every `MemoryGraph` carries limits, so a graph that
merges whatever an extractor finds, request after request, cannot grow
without bound. What happens at the cap is stated, not left to chance:

- ``evict`` (the default): the update goes through, then the lowest-weight
  entries go, the oldest first among equal weights (age is the last time an
  entry was added or changed), until the graph fits. A node that goes takes
  its relationships with it. An entry just added can be the one that goes,
  when it weighs least.
- ``reject``: what is already in the graph stays, and new entries are let in,
  in the incoming graph's order (oldest first), while there is room; the rest
  are refused, with every relationship that names a refused node. A single
  `MemoryGraph.add_node` at the cap raises
  `GraphError`.

Either way the `MergeReport` lists what went or was
refused. In YAML:

    graph_limits:
      max_nodes: 10000
      max_relationships: 50000
      at_cap: evict
"""

from __future__ import annotations

import enum

import attrs

from memrules._core.checks import is_whole
from memrules._core.errors import ConfigError, ConfigProblem

__all__ = ["DEFAULT_MAX_NODES", "DEFAULT_MAX_RELATIONSHIPS", "AtCap", "GraphLimits"]

DEFAULT_MAX_NODES = 10_000
DEFAULT_MAX_RELATIONSHIPS = 50_000


class AtCap(enum.StrEnum):
    """What a graph at its cap does with more (see the module docs)."""

    EVICT = "evict"
    """Take the update, then drop the lowest-weight entries, oldest first."""
    REJECT = "reject"
    """Keep what is there; refuse new entries that do not fit."""


@attrs.frozen(kw_only=True, slots=True)
class GraphLimits:
    """How big one conversation's graph may grow, and what happens at the cap.

    ``max_nodes`` and ``max_relationships`` are whole numbers of at least 1;
    ``at_cap`` is ``"evict"`` or ``"reject"`` (an `AtCap`). Checked
    when built: a bad value raises one
    `ConfigError` naming every problem, each at its
    YAML path (``graph_limits.max_nodes``).
    """

    max_nodes: int = DEFAULT_MAX_NODES
    max_relationships: int = DEFAULT_MAX_RELATIONSHIPS
    at_cap: AtCap = AtCap.EVICT

    def __attrs_post_init__(self) -> None:
        problems = []
        for key in ("max_nodes", "max_relationships"):
            value = getattr(self, key)
            if not is_whole(value, 1):
                problems.append(
                    ConfigProblem(
                        message=f"{key}={value!r} must be a whole number of at least 1",
                        yaml_path=f"graph_limits.{key}",
                    )
                )
        if isinstance(self.at_cap, str) and self.at_cap in AtCap._value2member_map_:
            object.__setattr__(self, "at_cap", AtCap(self.at_cap))
        else:
            known = ", ".join(repr(a.value) for a in AtCap)
            problems.append(
                ConfigProblem(
                    message=f"at_cap={self.at_cap!r} must be one of {known}",
                    yaml_path="graph_limits.at_cap",
                )
            )
        if problems:
            raise ConfigError(problems)
