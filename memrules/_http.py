"""A small JSON-over-HTTP client on the standard library, for the seams that
talk to a server: OpenAI-compatible chat and embeddings endpoints.

:class:`JSONClient` sends JSON to a path under a base URL and returns the
JSON it gets back. It retries, with exponential backoff, the answers that
say "try again" (HTTP 429 and 5xx, honouring ``Retry-After``), and turns
every failure into one :class:`EndpointError` subclass with a one-line
message: :class:`EndpointUnreachableError`, :class:`EndpointTimeoutError`,
:class:`EndpointStatusError` and :class:`MalformedReplyError`.

The API key is read from an environment variable that the client names
(``api_key_env="OPENAI_API_KEY"``) when a request is made, sent as a bearer
token, and never put in a ``repr``, a log or an error message::

    client = JSONClient(base_url="http://127.0.0.1:8080/v1", api_key_env="OPENAI_API_KEY")
    reply = client.post("chat/completions", {"model": "m", "messages": [...]})
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import http.client
import json
import os
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from memrules._checks import check_whole
from memrules._errors import ConfigError, MemrulesError

__all__ = [
    "RETRY_STATUSES",
    "EndpointError",
    "EndpointStatusError",
    "EndpointTimeoutError",
    "EndpointUnreachableError",
    "JSONClient",
    "MalformedReplyError",
    "check_base_url",
    "one_line",
]

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
"""Answers worth asking again: rate limited, or the server failed for now."""

MAX_REPLY_BYTES = 64 * 1024 * 1024
"""The largest reply read; a bigger one is a :class:`MalformedReplyError`."""


class EndpointError(MemrulesError, ConnectionError):
    """A request to an HTTP endpoint failed; ``url`` is where it went."""

    def __init__(self, message: str, *, url: str) -> None:
        self.url = url
        super().__init__(message)


class EndpointUnreachableError(EndpointError):
    """No connection could be made (refused, no route, DNS, TLS)."""


class EndpointTimeoutError(EndpointError, TimeoutError):
    """The endpoint did not answer within the client's ``timeout``."""


class EndpointStatusError(EndpointError):
    """The endpoint answered with an HTTP error status (after any retries).
    ``status`` is the code; ``body`` the start of what it said."""

    def __init__(self, message: str, *, url: str, status: int, body: str) -> None:
        self.status = status
        self.body = body
        super().__init__(message, url=url)


class MalformedReplyError(EndpointError, ValueError):
    """The endpoint answered, but not with JSON (or not with the JSON expected)."""


def one_line(raw: bytes | str, limit: int = 200) -> str:
    """``raw`` as one line of at most ``limit`` characters."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_base_url(url: object) -> str:
    """``url`` if it is an ``http``/``https`` URL with a host, else
    :class:`ConfigError` naming it."""
    parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        msg = f"base_url={url!r} must be an http:// or https:// URL with a host"
        raise ConfigError.single(msg, yaml_path="base_url")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        msg = f"base_url={url!r} has a port that is not a number from 0 to 65535"
        raise ConfigError.single(msg, yaml_path="base_url") from None
    return url  # type: ignore[return-value]



def _positive(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        msg = f"{attribute.name}={value!r} must be a number above 0"
        raise ConfigError.single(msg, yaml_path=attribute.name)


def _not_negative(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        msg = f"{attribute.name}={value!r} must be a number of at least 0"
        raise ConfigError.single(msg, yaml_path=attribute.name)


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@attrs.frozen(kw_only=True, slots=True)
class JSONClient:
    """POST (or GET) JSON under ``base_url`` and get JSON back.

    ``timeout`` is per attempt, in seconds. ``retries`` is how many more
    attempts an answer in :data:`RETRY_STATUSES` gets, waiting ``backoff``
    seconds, doubled each time, at most ``max_backoff`` (or what
    ``Retry-After`` asks, within the same cap). Connection failures and
    timeouts are not retried: the caller decides. ``api_key_env`` names the
    environment variable that holds the API key, read per request; an unset
    or empty variable sends no key. The key goes as a bearer token, or, when
    ``api_key_header`` names another header (Anthropic's ``x-api-key``), as
    that header's value. ``headers`` are sent with every request.
    """

    base_url: str = attrs.field(converter=check_base_url)
    api_key_env: str | None = None
    api_key_header: str = "Authorization"
    timeout: float = attrs.field(default=60.0, validator=_positive)
    retries: int = attrs.field(default=2)
    backoff: float = attrs.field(default=0.5, validator=_not_negative)
    max_backoff: float = attrs.field(default=8.0, validator=_not_negative)
    headers: tuple[tuple[str, str], ...] = attrs.field(default=(), repr=False)
    sleep: Callable[[float], None] = attrs.field(default=time.sleep, repr=False)

    @retries.validator
    def _check_retries(self, attribute: attrs.Attribute[int], value: int) -> None:
        check_whole("retries", value, 0)

    def url(self, path: str) -> str:
        """The URL of ``path`` under ``base_url`` (``"chat/completions"``)."""
        return self.base_url.rstrip("/") + "/" + path.lstrip("/")

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        """POST ``body`` as JSON to ``path``; the decoded JSON reply."""
        data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        return self._request("POST", path, data)

    def get(self, path: str) -> Any:
        """GET ``path``; the decoded JSON reply."""
        return self._request("GET", path, None)

    def _prepare(
        self, method: str, path: str, data: bytes | None
    ) -> tuple[str, dict[str, str], str]:
        """The URL, headers and key (read now) of a request: the same for
        the blocking and the awaitable client."""
        url = self.url(path)
        headers = {"Accept": "application/json", **dict(self.headers)}
        if data is not None:
            headers["Content-Type"] = "application/json"
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key:
            bearer = self.api_key_header.lower() == "authorization"
            headers[self.api_key_header] = f"Bearer {key}" if bearer else key
        return url, headers, key

    def _request(self, method: str, path: str, data: bytes | None) -> Any:
        url, headers, key = self._prepare(method, path, data)
        delay = self.backoff
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                raw = self._send(request, url, key)
            except _RetryableError as retry:
                if attempt == self.retries:
                    raise retry.error from None
                self.sleep(retry.wait(delay, self.max_backoff))
                delay *= 2
                continue
            return _decoded(raw, url)
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(self, request: urllib.request.Request, url: str, key: str) -> bytes:
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw: bytes = response.read(MAX_REPLY_BYTES + 1)
        except urllib.error.HTTPError as exc:
            try:
                body = exc.read(4096)
            except (OSError, http.client.HTTPException):
                body = b""
            raise _status_error(
                url, exc.code, str(exc.reason), body, key, exc.headers.get("Retry-After")
            ) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise self._timed_out(url) from None
            msg = f"cannot reach {url}: {one_line(str(exc.reason))}"
            raise EndpointUnreachableError(msg, url=url) from None
        except TimeoutError:
            raise self._timed_out(url) from None
        except (OSError, http.client.HTTPException) as exc:
            raise _unreachable(url, exc) from None
        return _within_limit(raw, url)

    def _timed_out(self, url: str) -> EndpointTimeoutError:
        msg = f"{url} did not answer within {self.timeout:g} s"
        return EndpointTimeoutError(msg, url=url)

    # --- without blocking the event loop ------------------------------------------------

    async def post_async(self, path: str, body: Mapping[str, Any]) -> Any:
        """:meth:`post`, awaited: the same request, timeout, retries (waiting
        with ``asyncio.sleep``) and errors, over ``httpx`` (the ``async``
        extra) without blocking the event loop. Each call opens its own
        connection, as :meth:`post` does. Without ``httpx`` installed it is
        :meth:`post` in a worker thread (``asyncio.to_thread``), which does
        not block the loop either but holds a thread while it waits."""
        data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        try:
            import httpx
        except ImportError:  # pragma: no cover - the async extra is missing
            return await asyncio.to_thread(self._request, "POST", path, data)
        url, headers, key = self._prepare("POST", path, data)
        delay = self.backoff
        for attempt in range(self.retries + 1):
            try:
                raw = await self._send_async(httpx, url, headers, data, key)
            except _RetryableError as retry:
                if attempt == self.retries:
                    raise retry.error from None
                await asyncio.sleep(retry.wait(delay, self.max_backoff))
                delay *= 2
                continue
            return _decoded(raw, url)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send_async(
        self, httpx: Any, url: str, headers: dict[str, str], data: bytes, key: str
    ) -> bytes:
        try:
            async with (
                httpx.AsyncClient(
                    timeout=self.timeout, follow_redirects=True, verify=_tls()
                ) as client,
                client.stream("POST", url, content=data, headers=headers) as response,
            ):
                raw = bytearray()
                async for chunk in response.aiter_bytes():
                    raw += chunk
                    if len(raw) > MAX_REPLY_BYTES:
                        break
                if response.status_code >= 400:
                    raise _status_error(
                        url,
                        response.status_code,
                        response.reason_phrase,
                        bytes(raw[:4096]),
                        key,
                        response.headers.get("Retry-After"),
                    )
        except httpx.TimeoutException:
            raise self._timed_out(url) from None
        except httpx.TransportError as exc:
            raise _unreachable(url, exc) from None
        return _within_limit(bytes(raw), url)


@functools.cache
def _tls() -> ssl.SSLContext:
    """The TLS settings every awaited request shares: the system's default,
    as ``urllib`` uses for :meth:`JSONClient.post` (made once: building it
    costs some 20 ms of CPU, which would block the event loop per request)."""
    return ssl.create_default_context()


def _status_error(
    url: str, code: int, reason: str, raw: bytes, key: str, retry_after: str | None
) -> EndpointStatusError | _RetryableError:
    """What an HTTP error status is: an :class:`EndpointStatusError` naming
    it and the start of the body (the key masked: some servers echo the key
    they refused), wrapped to be retried when the status says so."""
    body = one_line(raw[:4096])
    if key:
        body = body.replace(key, "***")
    msg = f"{url} answered HTTP {code} {one_line(reason)}" + (f": {body}" if body else "")
    error = EndpointStatusError(msg, url=url, status=code, body=body)
    if code in RETRY_STATUSES:
        return _RetryableError(error, _retry_after(retry_after))
    return error


def _unreachable(url: str, exc: BaseException) -> EndpointUnreachableError:
    msg = f"cannot reach {url}: {type(exc).__name__}: {one_line(str(exc))}"
    return EndpointUnreachableError(msg, url=url)


def _within_limit(raw: bytes, url: str) -> bytes:
    if len(raw) > MAX_REPLY_BYTES:
        msg = f"{url} answered more than {MAX_REPLY_BYTES:,} bytes"
        raise MalformedReplyError(msg, url=url)
    return raw


def _decoded(raw: bytes, url: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        msg = f"{url} did not answer JSON: {one_line(raw)}"
        raise MalformedReplyError(msg, url=url) from None


class _RetryableError(Exception):
    """An answer worth retrying, and how long the server asked us to wait."""

    def __init__(self, error: EndpointStatusError, after: float | None) -> None:
        self.error = error
        self.after = after
        super().__init__(str(error))

    def wait(self, delay: float, cap: float) -> float:
        """Seconds to wait before the next attempt: what the server asked,
        else ``delay``; at most ``cap``."""
        return min(delay if self.after is None else self.after, cap)
