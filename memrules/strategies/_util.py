"""Small helpers the built-in strategies share."""

from __future__ import annotations

from memrules._core.errors import ConfigError


def check_positive(name: str, value: int, *, minimum: int = 1) -> None:
    """Raise `ConfigError` naming ``name=value`` when ``value`` is
    under ``minimum``. Types are checked before a factory runs (see
    `checked_factory`); minimums here."""
    if value < minimum:
        msg = f"{name}={value!r} must be at least {minimum}"
        raise ConfigError.single(msg, yaml_path=name)
