"""Which state store a config asks for: `StateStoreConfig` (YAML `state_store`)."""

from __future__ import annotations

import urllib.parse

import attrs

from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.redaction import redact_url

__all__ = ["MEMORY_URL", "StateStoreConfig", "cluster_url", "redact"]

MEMORY_URL = "memory://"

_VALKEY_SCHEMES = ("valkey", "valkeys", "redis", "rediss", "unix")
_CLUSTER_SCHEMES = ("valkey+cluster", "valkeys+cluster", "redis+cluster", "rediss+cluster")
_CLUSTER = "+cluster"


def cluster_url(url: str) -> tuple[str, bool]:
    """`url` without a `+cluster` in its scheme, and whether it had one:
    `("valkey://h:7000", True)` for `valkey+cluster://h:7000`."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme.endswith(_CLUSTER):
        return f"{scheme[: -len(_CLUSTER)]}://{rest}", True
    return url, False


def _positive(value: object, *, whole: bool) -> bool:
    if isinstance(value, bool):
        return False
    if whole:
        return isinstance(value, int) and value >= 1
    return isinstance(value, (int, float)) and 0 < value < float("inf")


@attrs.frozen(kw_only=True, slots=True)
class StateStoreConfig:
    """Which state store a config asks for (YAML ``state_store``).

    ``url``: ``memory://`` (the default: this process, bounded by the
    plugin's ``max_conversations``), or a Valkey/Redis URL
    (``valkey://host:6379/0``, ``valkeys://`` for TLS, ``redis://``,
    ``rediss://``, ``unix:///path/to.sock``), or a node of a Valkey cluster
    (``valkey+cluster://host:7000``, ``valkeys+cluster://``, ``redis+cluster://``,
    ``rediss+cluster://``). ``cluster``: true for cluster mode with a plain
    URL (the same as ``+cluster``). ``ttl_seconds``: how long a
    Valkey-held conversation outlives its last request (86,400). ``key_prefix``
    starts every key (no braces on a cluster). ``timeout_seconds``: per Valkey
    command, and on a cluster the longest a call retries through a failover
    (5). ``wait_replicas``: how many replicas must hold a write before it is
    acknowledged (`WAIT`); 1 on a cluster, 0 on one server when not given.
    Checked when built; the URL's password is never shown in errors or ``repr``.
    """

    url: str = MEMORY_URL
    ttl_seconds: int = 86_400
    key_prefix: str = "memrules:"
    timeout_seconds: float = 5.0
    cluster: bool = False
    wait_replicas: int | None = None

    def __attrs_post_init__(self) -> None:
        problems = []

        def problem(key: str, message: str) -> None:
            problems.append(ConfigProblem(message=message, yaml_path=f"state_store.{key}"))

        if not isinstance(self.url, str):
            problem("url", f"url={self.url!r} must be a string")
        elif self.url != MEMORY_URL:
            scheme = urllib.parse.urlsplit(self.url).scheme
            if scheme not in _VALKEY_SCHEMES + _CLUSTER_SCHEMES:
                known = ", ".join(f"{s}://" for s in _VALKEY_SCHEMES + _CLUSTER_SCHEMES)
                problem(
                    "url",
                    f"url={redact(self.url)!r} must be {MEMORY_URL!r} or a Valkey URL ({known})",
                )
        if not _positive(self.ttl_seconds, whole=True):
            problem(
                "ttl_seconds",
                f"ttl_seconds={self.ttl_seconds!r} must be a whole number of at least 1",
            )
        if not isinstance(self.key_prefix, str) or not self.key_prefix:
            problem("key_prefix", f"key_prefix={self.key_prefix!r} must be a non-empty string")
        if not isinstance(self.cluster, bool):
            problem("cluster", f"cluster={self.cluster!r} must be true or false")
        elif self.in_cluster and isinstance(self.key_prefix, str):
            if "{" in self.key_prefix or "}" in self.key_prefix:
                problem(
                    "key_prefix",
                    f"key_prefix={self.key_prefix!r} holds a brace: on a cluster each "
                    "conversation's hash tag is made by the store; use a prefix without braces",
                )
            if self.in_memory:
                problem("cluster", f"cluster=true needs a Valkey URL, not {MEMORY_URL!r}")
        if self.wait_replicas is not None and (
            isinstance(self.wait_replicas, bool)
            or not isinstance(self.wait_replicas, int)
            or self.wait_replicas < 0
        ):
            problem(
                "wait_replicas",
                f"wait_replicas={self.wait_replicas!r} must be a whole number of at least 0",
            )
        if not _positive(self.timeout_seconds, whole=False):
            problem(
                "timeout_seconds",
                f"timeout_seconds={self.timeout_seconds!r} must be a number of seconds above 0",
            )
        if problems:
            raise ConfigError(problems)

    def __repr__(self) -> str:
        return (
            f"StateStoreConfig(url={redact(self.url)!r}, ttl_seconds={self.ttl_seconds!r}, "
            f"key_prefix={self.key_prefix!r}, timeout_seconds={self.timeout_seconds!r}, "
            f"cluster={self.in_cluster!r}, wait_replicas={self.wait_replicas!r})"
        )

    @property
    def in_memory(self) -> bool:
        return self.url == MEMORY_URL

    @property
    def in_cluster(self) -> bool:
        """Whether the store is a Valkey cluster (`cluster: true` or a `+cluster` URL)."""
        return self.cluster is True or (isinstance(self.url, str) and cluster_url(self.url)[1])


def redact(url: object) -> str:
    """``url`` with its credentials replaced by ``***``
    (`redact_url`, the one redaction every message uses)."""
    return redact_url(url)
