"""Suite-wide setup: the hypothesis profile, and a shared token counter.

The profile is ``ci`` (derandomized, reproducible) unless the environment
variable ``HYPOTHESIS_PROFILE`` names another (``dev`` runs 1000 examples).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from memrules._tokens import TiktokenCounter, counter_for
from memrules.testing import register_profiles

register_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def cl100k() -> TiktokenCounter:
    """The shared cl100k_base counter (session-scoped, so hypothesis tests may use it)."""
    counter = counter_for("cl100k_base")
    assert isinstance(counter, TiktokenCounter)
    return counter
