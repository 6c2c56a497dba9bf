"""A small JSON-over-HTTP client on ``httpx`` (blocking and awaited alike),
for the seams that talk to a server: OpenAI-compatible chat and embeddings
endpoints. ``httpx`` is imported by the first request, never by
``import memrules``.

`JSONClient` sends JSON to a path under a base URL and returns the
JSON it gets back. It retries, with exponential backoff, the answers that
say "try again" (HTTP 429 and 5xx, honouring ``Retry-After``), and turns
every failure into one `EndpointError` subclass with a one-line
message: `EndpointUnreachableError`, `EndpointTimeoutError`,
`EndpointStatusError` and `MalformedReplyError`.

The API key is read from an environment variable that the client names
(``api_key_env="OPENAI_API_KEY"``) when a request is made, sent as a bearer
token, and never put in a ``repr``, a log or an error message. A password
in the URL (``http://user:secret@host/v1``) is sent as an
``Authorization: Basic`` header (when no key takes that header), and the URL
is shown everywhere with it, and any key-like query value, as ``***``
(`redact_url`):

    client = JSONClient(base_url="http://127.0.0.1:8080/v1", api_key_env="OPENAI_API_KEY")
    reply = client.post("chat/completions", {"model": "m", "messages": [...]})
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import functools
import json
import os
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from memrules._core.checks import check_api_key_env, check_whole
from memrules._core.errors import ConfigError, MemrulesError
from memrules._core.redaction import SECRET_QUERY, redact_text, redact_url, split_credentials

if TYPE_CHECKING:
    import ssl

__all__ = [
    "MAX_RETRIES",
    "MAX_TIMEOUT",
    "MAX_TOTAL_TIMEOUT",
    "RETRY_STATUSES",
    "TOTAL_TIMEOUT",
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

MAX_RETRIES = 10
"""The most ``retries`` a client takes: more would only stretch an outage."""

MAX_TIMEOUT = 600.0
"""The longest ``timeout`` (seconds per attempt) a client takes."""

TOTAL_TIMEOUT = 600.0
"""Seconds a call may take in all, attempts and the waits between them
included, unless the client is given another ``total_timeout``."""

MAX_TOTAL_TIMEOUT = 3600.0
"""The longest ``total_timeout`` a client takes."""

MAX_REPLY_BYTES = 64 * 1024 * 1024
"""The largest reply read; a bigger one is a `MalformedReplyError`."""


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
    `ConfigError` naming it (its credentials masked)."""
    shown = repr(redact_url(url)) if isinstance(url, str) else repr(url)
    try:
        parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    except ValueError:  # an unclosed IPv6 bracket
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        msg = f"base_url={shown} must be an http:// or https:// URL with a host"
        raise ConfigError.single(msg, yaml_path="base_url")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        msg = f"base_url={shown} has a port that is not a number from 0 to 65535"
        raise ConfigError.single(msg, yaml_path="base_url") from None
    return url  # type: ignore[return-value]


def _positive(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        msg = f"{attribute.name}={value!r} must be a number above 0"
        raise ConfigError.single(msg, yaml_path=attribute.name)


def _at_most(name: str, value: float, limit: float) -> None:
    if value > limit:
        msg = f"{name}={value!r} must be at most {limit:g}"
        raise ConfigError.single(msg, yaml_path=name)


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


@attrs.frozen(kw_only=True, slots=True, repr=False)
class JSONClient:
    """POST (or GET) JSON under ``base_url`` and get JSON back.

    ``timeout`` is per attempt, in seconds (at most `MAX_TIMEOUT`).
    ``retries`` is how many more attempts an answer in `RETRY_STATUSES`
    gets (at most `MAX_RETRIES`), waiting ``backoff`` seconds, doubled
    each time, at most ``max_backoff`` (or what ``Retry-After`` asks, within
    the same cap). ``total_timeout`` bounds the whole call, attempts and
    waits included (default `TOTAL_TIMEOUT`, at most
    `MAX_TOTAL_TIMEOUT`): no attempt or wait runs past it, so a server
    that answers 500 forever costs at most that long. Connection failures
    and timeouts are not retried: the caller decides. ``api_key_env`` names
    the environment variable that holds the API key, read per request; an
    unset or empty variable sends no key. The key goes as a bearer token, or,
    when ``api_key_header`` names another header (Anthropic's
    ``x-api-key``), as that header's value. ``headers`` are sent with every
    request.

    ``base_url`` reads back with its credentials masked
    (`redact_url`), as every message shows it; the
    URL as given is used only to send.
    """

    _given_url: str = attrs.field(alias="base_url", converter=check_base_url)
    api_key_env: str | None = attrs.field(default=None)
    api_key_header: str = "Authorization"
    timeout: float = attrs.field(default=60.0, validator=_positive)
    retries: int = attrs.field(default=2)
    backoff: float = attrs.field(default=0.5, validator=_not_negative)
    max_backoff: float = attrs.field(default=8.0, validator=_not_negative)
    total_timeout: float = attrs.field(default=TOTAL_TIMEOUT, validator=_positive)
    headers: tuple[tuple[str, str], ...] = attrs.field(default=())
    sleep: Callable[[float], None] = attrs.field(default=time.sleep)
    clock: Callable[[], float] = attrs.field(default=time.monotonic)

    @api_key_env.validator
    def _check_api_key_env(self, attribute: attrs.Attribute[str | None], value: object) -> None:
        check_api_key_env(value)

    @retries.validator
    def _check_retries(self, attribute: attrs.Attribute[int], value: int) -> None:
        check_whole("retries", value, 0, MAX_RETRIES)

    @timeout.validator
    def _check_timeout(self, attribute: attrs.Attribute[float], value: float) -> None:
        _at_most("timeout", value, MAX_TIMEOUT)

    @total_timeout.validator
    def _check_total(self, attribute: attrs.Attribute[float], value: float) -> None:
        _at_most("total_timeout", value, MAX_TOTAL_TIMEOUT)

    def __repr__(self) -> str:
        key = f", api_key_env={self.api_key_env!r}" if self.api_key_env else ""
        return (
            f"JSONClient(base_url={self.base_url!r}{key}, timeout={self.timeout!r}, "
            f"retries={self.retries!r}, total_timeout={self.total_timeout!r})"
        )

    @property
    def base_url(self) -> str:
        """The base URL, its credentials masked: what every message shows."""
        return redact_url(self._given_url)

    def url(self, path: str) -> str:
        """The URL of ``path`` under ``base_url`` (``"chat/completions"``),
        credentials masked, as messages show it."""
        return redact_url(_joined(self._given_url, path))

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        """POST ``body`` as JSON to ``path``; the decoded JSON reply."""
        data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        return self._request("POST", path, data)

    def get(self, path: str) -> Any:
        """GET ``path``; the decoded JSON reply."""
        return self._request("GET", path, None)

    def _prepare(self, path: str, data: bytes | None) -> _Prepared:
        """What a request sends and what its errors show: the same for the
        blocking and the awaitable client. The key is read now; a password
        in the URL becomes a Basic ``Authorization`` header (unless the key
        takes that header), since no HTTP client sends it from the URL alike."""
        joined = _joined(self._given_url, path)
        wire, credentials = split_credentials(joined)
        headers = {"Accept": "application/json", **dict(self.headers)}
        if data is not None:
            headers["Content-Type"] = "application/json"
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        secrets = [key] if key else []
        if credentials is not None:
            user, password = credentials
            secrets += [s for s in (password, user if not password else "") if s]
            token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
        if key:
            bearer = self.api_key_header.lower() == "authorization"
            headers[self.api_key_header] = f"Bearer {key}" if bearer else key
        secrets += _query_secrets(wire)
        return _Prepared(
            wire=wire, shown=redact_url(joined), headers=headers, secrets=tuple(secrets)
        )

    def _remaining(self, start: float) -> float:
        return self.total_timeout - (self.clock() - start)

    def _request(self, method: str, path: str, data: bytes | None) -> Any:
        import httpx

        _mask_httpx_log()

        prepared = self._prepare(path, data)
        start = self.clock()
        delay = self.backoff
        for attempt in range(self.retries + 1):
            try:
                raw = self._send(httpx, method, prepared, data, self._remaining(start))
            except _RetryableError as retry:
                wait = retry.wait(delay, self.max_backoff)
                if attempt == self.retries or wait >= self._remaining(start):
                    raise self._gave_up(retry.error, attempt) from None
                self.sleep(wait)
                delay *= 2
                continue
            return _decoded(raw, prepared.shown)
        raise AssertionError("unreachable")  # pragma: no cover

    def _gave_up(self, error: EndpointStatusError, attempt: int) -> EndpointStatusError:
        """The last answer's error; saying so when the time ran out first."""
        if attempt == self.retries:
            return error
        msg = (
            f"{error} (gave up after {attempt + 1} attempts: "
            f"total_timeout {self.total_timeout:g} s)"
        )
        return EndpointStatusError(msg, url=error.url, status=error.status, body=error.body)

    def _send(
        self, httpx: Any, method: str, prepared: _Prepared, data: bytes | None, remaining: float
    ) -> bytes:
        url = prepared.shown
        timeout = min(self.timeout, remaining)
        if timeout <= 0:
            raise self._timed_out(url, self.total_timeout)
        try:
            with (
                httpx.Client(timeout=timeout, follow_redirects=True, verify=_tls()) as client,
                client.stream(
                    method, prepared.wire, content=data, headers=prepared.headers
                ) as response,
            ):
                raw = bytearray()
                for chunk in response.iter_bytes():
                    raw += chunk
                    if len(raw) > MAX_REPLY_BYTES:
                        break
                status, reason = response.status_code, response.reason_phrase
                retry_after = response.headers.get("Retry-After")
        except httpx.TimeoutException:
            raise self._timed_out(url, timeout) from None
        except (httpx.TransportError, OSError) as exc:
            raise _unreachable(url, exc, prepared.secrets) from None
        if status >= 400:
            raise _status_error(
                url, status, reason, bytes(raw[:4096]), prepared.secrets, retry_after
            )
        return _within_limit(bytes(raw), url)

    def _timed_out(self, url: str, seconds: float) -> EndpointTimeoutError:
        within = (
            f"{seconds:g} s"
            if seconds == self.timeout
            else (f"{seconds:g} s (what was left of total_timeout {self.total_timeout:g} s)")
        )
        msg = f"{url} did not answer within {within}"
        return EndpointTimeoutError(msg, url=url)

    # --- without blocking the event loop ------------------------------------------------

    async def post_async(self, path: str, body: Mapping[str, Any]) -> Any:
        """`post`, awaited: the same request, timeouts, retries (waiting
        with ``asyncio.sleep``) and errors, over ``httpx.AsyncClient``
        without blocking the event loop. Each call opens its own connection,
        as `post` does."""
        import httpx

        _mask_httpx_log()
        data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        prepared = self._prepare(path, data)
        start = self.clock()
        delay = self.backoff
        for attempt in range(self.retries + 1):
            try:
                raw = await self._send_async(httpx, prepared, data, self._remaining(start))
            except _RetryableError as retry:
                wait = retry.wait(delay, self.max_backoff)
                if attempt == self.retries or wait >= self._remaining(start):
                    raise self._gave_up(retry.error, attempt) from None
                await asyncio.sleep(wait)
                delay *= 2
                continue
            return _decoded(raw, prepared.shown)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send_async(
        self, httpx: Any, prepared: _Prepared, data: bytes, remaining: float
    ) -> bytes:
        url = prepared.shown
        timeout = min(self.timeout, remaining)
        if timeout <= 0:
            raise self._timed_out(url, self.total_timeout)
        try:
            async with asyncio.timeout(timeout):
                raw, status, reason, retry_after = await self._exchange(
                    httpx, prepared, data, timeout
                )
        except (httpx.TimeoutException, TimeoutError):
            raise self._timed_out(url, timeout) from None
        except httpx.TransportError as exc:
            raise _unreachable(url, exc, prepared.secrets) from None
        if status >= 400:
            raise _status_error(url, status, reason, raw[:4096], prepared.secrets, retry_after)
        return _within_limit(raw, url)

    async def _exchange(
        self, httpx: Any, prepared: _Prepared, data: bytes, timeout: float
    ) -> tuple[bytes, int, str, str | None]:
        async with (
            httpx.AsyncClient(timeout=timeout, follow_redirects=True, verify=_tls()) as client,
            client.stream(
                "POST", prepared.wire, content=data, headers=prepared.headers
            ) as response,
        ):
            raw = bytearray()
            async for chunk in response.aiter_bytes():
                raw += chunk
                if len(raw) > MAX_REPLY_BYTES:
                    break
            return (
                bytes(raw),
                response.status_code,
                response.reason_phrase,
                response.headers.get("Retry-After"),
            )


@attrs.frozen(kw_only=True, slots=True)
class _Prepared:
    """One request: the URL it goes to (``wire``, without userinfo), the
    URL its messages show (``shown``, masked), its headers, and the secrets
    to mask in whatever a server echoes back."""

    wire: str
    shown: str
    headers: dict[str, str]
    secrets: tuple[str, ...]


def _joined(base: str, path: str) -> str:
    """``path`` under ``base``, a query on ``base`` kept at the end."""
    parts = urllib.parse.urlsplit(base)
    joined = parts.path.rstrip("/") + "/" + path.lstrip("/")
    return urllib.parse.urlunsplit(parts._replace(path=joined))


def _query_secrets(url: str) -> list[str]:
    """The values of ``url``'s secret-looking query parameters."""
    query = urllib.parse.urlsplit(url).query
    return [
        value
        for name, value in urllib.parse.parse_qsl(query, keep_blank_values=False)
        if SECRET_QUERY.search(name) and value
    ]


def _masked(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with each of ``secrets`` (and any URL's credentials) as ``***``."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return redact_text(text)


class _MaskedLog:
    """A filter for the ``httpx`` logger: each request it logs (``HTTP
    Request: POST <url>``) with the URL's credentials and key-like query
    values as ``***``, as every message of this module shows a URL."""

    def filter(self, record: Any) -> bool:
        record.msg = redact_text(record.getMessage())
        record.args = ()
        return True


@functools.cache
def _mask_httpx_log() -> None:
    """Install `_MaskedLog` on the ``httpx`` logger, once."""
    import logging

    logging.getLogger("httpx").addFilter(_MaskedLog())


@functools.cache
def _tls() -> ssl.SSLContext:
    """The TLS settings every request shares: the system's default (made
    once: building it costs some 20 ms of CPU, which would block the event
    loop per request)."""
    import ssl

    return ssl.create_default_context()


def _status_error(
    url: str, code: int, reason: str, raw: bytes, secrets: tuple[str, ...], retry_after: str | None
) -> EndpointStatusError | _RetryableError:
    """What an HTTP error status is: an `EndpointStatusError` naming
    it and the start of the body (the key and URL credentials masked: some
    servers echo what they refused), wrapped to be retried when the status
    says so."""
    body = _masked(one_line(raw[:4096]), secrets)
    msg = f"{url} answered HTTP {code} {one_line(reason)}" + (f": {body}" if body else "")
    error = EndpointStatusError(msg, url=url, status=code, body=body)
    if code in RETRY_STATUSES:
        return _RetryableError(error, _retry_after(retry_after))
    return error


def _unreachable(
    url: str, exc: BaseException, secrets: tuple[str, ...] = ()
) -> EndpointUnreachableError:
    msg = f"cannot reach {url}: {type(exc).__name__}: {_masked(one_line(str(exc)), secrets)}"
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
        msg = f"{url} did not answer JSON: {redact_text(one_line(raw))}"
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
