"""The installed memrules' version, as its package metadata states it.

Read on first use, not at import: `importlib.metadata` (with the email
parser and zip support it imports) costs more than the rest of ``import
memrules`` needs, and only a trace header, a tracer or ``memrules.__version__``
asks for the version.
"""

from __future__ import annotations

import functools

__all__ = ["UNKNOWN_VERSION", "memrules_version"]

UNKNOWN_VERSION = "0+unknown"
"""The version of a checkout that was never installed (no metadata)."""


@functools.cache
def memrules_version() -> str:
    """The version of the installed memrules distribution, or
    `UNKNOWN_VERSION` when there is none."""
    import importlib.metadata

    try:
        return importlib.metadata.version("memrules")
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN_VERSION
