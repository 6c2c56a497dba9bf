"""The hypothesis profiles memrules' own suite runs under: ``ci`` and ``dev``."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

__all__ = ["register_profiles"]


def register_profiles() -> None:
    """Register the hypothesis profiles memrules' own suite runs under.

    ``ci``: reproducible (derandomized, no example database), 100 examples,
    no deadline, and the blob to reproduce a failure printed. ``dev``: 1000
    random examples per test. Load one with
    ``hypothesis.settings.load_profile(name)``.
    """
    quiet = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile(
        "ci",
        derandomize=True,
        database=None,
        max_examples=100,
        deadline=None,
        print_blob=True,
        suppress_health_check=quiet,
    )
    settings.register_profile(
        "dev",
        max_examples=1000,
        deadline=None,
        print_blob=True,
        suppress_health_check=quiet,
    )
