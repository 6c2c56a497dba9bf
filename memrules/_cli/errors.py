"""The command line's one error type: a command line that cannot be carried out.

Raised by any command (a bad flag value, an input that cannot be read or
decoded); `main` prints it as one line on stderr and
exits with status 2, as it does every `MemrulesError`.
"""

from __future__ import annotations

from memrules._core.errors import MemrulesError

__all__ = ["UsageError"]


class UsageError(MemrulesError, ValueError):
    """A command line that cannot be carried out."""
