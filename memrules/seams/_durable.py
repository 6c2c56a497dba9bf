"""Where the files of a local store are, and whether they are still the
ones it opened.

An embedded engine (Milvus Lite, Qdrant's local mode) keeps its files open:
removed under a running process, its writes go on succeeding into files
that are no longer on disk, or into new ones a later flush makes, which
hold only part of what was stored. `Files` remembers each path of
the store by its device and inode when first seen, and
`Files.check` raises `StoreError` when one
is gone or was replaced, so a write is reported durable only while they
are the ones the store opened.
"""

from __future__ import annotations

import logging
import os

from memrules._core.errors import StoreError

__all__ = ["Files", "local_path"]

log = logging.getLogger("memrules.seams")


def local_path(path: str, field: str) -> str:
    """``path`` (the store's ``field``) made absolute against the working
    directory now, ``..`` resolved: where the store's files really are,
    fixed when the store is made. A relative path that leads out of the
    working directory (``../x.db``) is logged with the real path, as a
    warning: an operator who meant the working directory sees where the
    data went."""
    real = os.path.normpath(os.path.abspath(os.path.expanduser(path)))
    here = os.getcwd()
    if not os.path.isabs(os.path.expanduser(path)) and os.path.commonpath([here, real]) != here:
        log.warning(
            "store %s=%r is outside the working directory %s: its files are at %s",
            field,
            path,
            here,
            real,
        )
    return real


class Files:
    """The paths of one local store and their identity when first seen."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._seen: dict[str, tuple[int, int]] = {}

    def watch(self, *paths: str) -> None:
        """Remember each of ``paths`` that exists and is not remembered yet."""
        for path in paths:
            if path in self._seen:
                continue
            try:
                found = os.stat(path)
            except OSError:
                continue
            self._seen[path] = (found.st_dev, found.st_ino)

    def check(self) -> None:
        """Raise `StoreError` when a remembered path is gone or is
        another file than the one remembered; nothing is known of a path
        never seen."""
        for path, identity in self._seen.items():
            try:
                found = os.stat(path)
            except OSError:
                problem = "was removed"
            else:
                if (found.st_dev, found.st_ino) == identity:
                    continue
                problem = "was removed and made again"
            msg = (
                f"{path} {problem} while this process had it open, so what it "
                "writes is not on disk where the store keeps it; restart the process to "
                "reopen the store"
            )
            raise StoreError(msg)
