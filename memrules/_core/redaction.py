"""Credentials out of everything memrules shows: the one place a URL is
made safe to print.

A URL may carry a secret in two places: its userinfo
(``http://user:secret@host/v1``, or a token alone, ``https://TOKEN@host``)
and its query (``?api_key=...``, ``?token=...``, ``?sig=...``).
`redact_url` replaces both with ``***`` and keeps the rest, so a
message still says where a request went; `redact_text` does the same
for every URL inside a longer text (an error message, a ``repr``). Every
error, ``repr``, report, trace, log line and command-line message that
names a URL goes through one of them:

    >>> redact_url("http://user:secret@127.0.0.1:8080/v1?api_key=k&model=m")
    'http://user:***@127.0.0.1:8080/v1?api_key=***&model=m'
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["SECRET_QUERY", "redact_text", "redact_url", "split_credentials"]

SECRET_QUERY = re.compile(
    r"(key|token|secret|pass|pwd|auth|sig|credential|session|cookie)", re.IGNORECASE
)
"""Query parameter names whose value is treated as a secret (searched in the
name: ``api_key``, ``X-Amz-Signature``, ``access_token``, ``password``)."""

_MASK = "***"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]*[^\s'\"<>`.,:;)\]]")


def _netloc(parts: urllib.parse.SplitResult) -> str:
    """The host and port of ``parts``, as written (brackets kept for IPv6)."""
    return parts.netloc.rpartition("@")[2]


def redact_url(url: object) -> str:
    """``url`` (as text) with its userinfo and secret-looking query values
    replaced by ``***``; a username before a password is kept (it names the
    account, not the secret), a userinfo without a password is masked whole
    (it is a token). Text that does not parse as a URL is returned masked
    from its ``://`` on, since it cannot be told safe."""
    text = str(url)
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        scheme, sep, _ = text.partition("://")
        return f"{scheme}{sep}{_MASK}" if sep else text
    netloc = parts.netloc
    if "@" in netloc:
        userinfo = netloc.rpartition("@")[0]
        user, colon, _ = userinfo.partition(":")
        shown = f"{user}:{_MASK}" if colon else _MASK
        netloc = f"{shown}@{_netloc(parts)}"
    query = parts.query
    if query:
        pieces = []
        for piece in query.split("&"):
            name, equals, value = piece.partition("=")
            secret = equals and value and SECRET_QUERY.search(urllib.parse.unquote_plus(name))
            pieces.append(f"{name}={_MASK}" if secret else piece)
        query = "&".join(pieces)
    if netloc == parts.netloc and query == parts.query:
        return text
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through `redact_url`."""
    if "://" not in text:
        return text
    return _URL.sub(lambda match: redact_url(match.group(0)), text)


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its userinfo, and the ``(user, password)`` it held
    (percent-decoded; None when there was none), for a client that sends
    them as an ``Authorization: Basic`` header instead of in the URL."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo = parts.netloc.rpartition("@")[0]
    user, _, password = userinfo.partition(":")
    bare = urllib.parse.urlunsplit(parts._replace(netloc=_netloc(parts)))
    return bare, (urllib.parse.unquote(user), urllib.parse.unquote(password))
