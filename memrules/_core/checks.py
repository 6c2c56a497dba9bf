"""Checks of arguments that several parts of memrules take alike.

``is_whole`` is the one definition of a whole number (an ``int`` that is not
a ``bool``) at least some minimum; ``check_whole``, ``check_seconds`` and
``check_api_key_env`` raise the `ConfigError`
that names the argument as its YAML key, for the parts whose arguments come
from a config.
"""

from __future__ import annotations

import re
from typing import TypeGuard

from memrules._core.errors import ConfigError

__all__ = ["ENVIRONMENT_NAME", "check_api_key_env", "check_seconds", "check_whole", "is_whole"]

ENVIRONMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A portable environment variable name (POSIX): a letter or ``_``, then
letters, digits and ``_``."""


def is_whole(value: object, minimum: int) -> TypeGuard[int]:
    """Whether ``value`` is an ``int`` (not a ``bool``) of at least ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def check_whole(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    """``value`` if it is a whole number of at least ``minimum`` (and at
    most ``maximum``, when given), else a `ConfigError` naming ``name``."""
    if not is_whole(value, minimum) or (maximum is not None and value > maximum):
        bound = f"from {minimum} to {maximum}" if maximum is not None else f"of at least {minimum}"
        msg = f"{name}={value!r} must be a whole number {bound}"
        raise ConfigError.single(msg, yaml_path=name)
    return value


def check_seconds(name: str, value: object, maximum: float) -> float:
    """``value`` as a float if it is a number of seconds above 0 and at most
    ``maximum``, else a `ConfigError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= maximum:
        msg = f"{name}={value!r} must be a number of seconds above 0 and at most {maximum:g}"
        raise ConfigError.single(msg, yaml_path=name)
    return float(value)


def check_api_key_env(name: object) -> str | None:
    """``name`` (the environment variable a key is read from) if it is None
    or a portable variable name (`ENVIRONMENT_NAME`), else a
    `ConfigError` naming it: a name no shell can set (``'A B'``)
    would silently send no key."""
    if name is not None and (not isinstance(name, str) or ENVIRONMENT_NAME.fullmatch(name) is None):
        msg = (
            f"api_key_env={name!r} must name an environment variable: a letter or _, "
            "then letters, digits and _ (OPENAI_API_KEY)"
        )
        raise ConfigError.single(msg, yaml_path="api_key_env")
    return name
