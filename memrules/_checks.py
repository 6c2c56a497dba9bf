"""Checks of arguments that several parts of memrules take alike.

``is_whole`` is the one definition of a whole number (an ``int`` that is not
a ``bool``) at least some minimum; ``check_whole`` and ``check_api_key_env``
raise the :class:`~memrules._errors.ConfigError` that names the argument as
its YAML key, for the parts whose arguments come from a config.
"""

from __future__ import annotations

from typing import TypeGuard

from memrules._errors import ConfigError

__all__ = ["check_api_key_env", "check_whole", "is_whole"]


def is_whole(value: object, minimum: int) -> TypeGuard[int]:
    """Whether ``value`` is an ``int`` (not a ``bool``) of at least ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def check_whole(name: str, value: object, minimum: int) -> int:
    """``value`` if it is a whole number of at least ``minimum``, else a
    :class:`ConfigError` naming ``name``."""
    if not is_whole(value, minimum):
        msg = f"{name}={value!r} must be a whole number of at least {minimum}"
        raise ConfigError.single(msg, yaml_path=name)
    return value


def check_api_key_env(name: object) -> str | None:
    """``name`` (the environment variable a key is read from) if it is None
    or a non-empty string, else a :class:`ConfigError` naming it."""
    if name is not None and (not isinstance(name, str) or not name):
        msg = f"api_key_env={name!r} must name an environment variable"
        raise ConfigError.single(msg, yaml_path="api_key_env")
    return name
