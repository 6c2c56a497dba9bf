"""Public names report the module users import them from.

A class or function is defined in a private module (``memrules._core.messages``)
and exported by a public one (``memrules``); `report_public_module`,
called once at the bottom of each public package, sets its ``__module__`` to
that package, as httpx does, so reprs, tracebacks, pickles and documentation
name ``memrules.Message`` rather than where it happens to live today:

    >>> import memrules
    >>> memrules.Message
    <class 'memrules.Message'>

A name exported at two levels reports the shorter path (``memrules`` over
``memrules.graph``), whichever package is imported first. Only classes and
functions carry a ``__module__`` of their own; constants and type aliases are
left as they are.

A class's own annotations are resolved first, in the namespace of the module
that defines them: ``typing.get_type_hints`` (and ``attrs.resolve_types``)
look string annotations up in ``sys.modules[cls.__module__]``, which is no
longer that namespace once ``__module__`` names the package.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterable, Mapping
from types import FunctionType

__all__ = ["report_public_module"]


def _is_public(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split("."))


def _reported_by(package: str, current: str) -> bool:
    """Whether a name now in module ``current`` should report ``package``: it
    lives in a private module, or deeper under ``package`` than ``package``."""
    return current.startswith("memrules") and (
        not _is_public(current) or current.startswith(package + ".")
    )


def _resolve_annotations(cls: type) -> None:
    """``cls``'s own string annotations replaced by what they name (those that
    resolve; a class whose annotations never resolved is left as it was)."""
    own = inspect.get_annotations(cls)
    if not own or not any(isinstance(a, str) for a in own.values()):
        return
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # names only a type checker sees: unresolvable before, too
        return
    cls.__annotations__ = {name: hints.get(name, value) for name, value in own.items()}


def report_public_module(
    package: str, names: Iterable[str], namespace: Mapping[str, object]
) -> None:
    """Set ``__module__ = package`` on each class and function among
    ``names`` in ``namespace`` (a package's ``__all__`` and ``globals()``)
    that does not already report a public module at least as short; names
    missing from ``namespace`` (loaded lazily) are skipped."""
    for name in names:
        value = namespace.get(name)
        if isinstance(value, type) and issubclass(type(value), type):  # not ``tuple[int]``
            if _reported_by(package, value.__module__):
                _resolve_annotations(value)
                value.__module__ = package
        elif isinstance(value, FunctionType) and _reported_by(package, value.__module__):
            value.__module__ = package
