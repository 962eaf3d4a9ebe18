"""HTTP helpers the two HTTP backends share: one `Server` per backend, and errors as one line.

A `Server` holds the endpoint, the client, the retry policy and the headers, and it
masks every secret it holds (API key, URL credentials) in every error it raises and
in every answer it returns, so no secret reaches a message, a cache entry or a report.
httpx is imported inside the functions that make a request, so importing a backend
module (as every offline run and rescore does) stays cheap.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from attest.backends.endpoint import Endpoint, redact
from attest.backends.retry import RetryPolicy, with_retries
from attest.backends.types import BackendError

if TYPE_CHECKING:
    import httpx

__all__ = [
    "Describe",
    "Server",
    "Wire",
    "decode",
    "error_text",
    "int_or_none",
    "is_loopback",
    "new_client",
    "status_error",
    "transport_error",
]

# Makes the error for a refused request from the response and the URL as messages show it.
Describe = Callable[["httpx.Response", str], BackendError]


@dataclass(frozen=True)
class Wire:
    """How one server API is spoken: its name in messages, the remedy when it fails, where its answer sits."""

    server: str
    hint: str
    answer: Callable[[Mapping[str, Any]], str | None]
    answer_field: str


class Server:
    """One model server as a backend speaks to it; every error and answer it hands back is free of secrets."""

    def __init__(
        self,
        endpoint: Endpoint,
        wire: Wire,
        *,
        client: httpx.Client | None = None,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        secrets: tuple[str, ...] = (),
        max_bytes: int,
    ) -> None:
        self.endpoint = endpoint
        self.wire = wire
        self.retry = retry or RetryPolicy()
        self.max_bytes = max_bytes
        self._client = client or new_client(endpoint.url)
        # Compressed bodies would be inflated before the size cap could see them.
        self._headers = {"Accept-Encoding": "identity", **(headers or {})}
        self._secrets = (*secrets, *endpoint.secrets)

    def shown(self, path: str) -> str:
        """The URL of `path` as messages show it (no credentials)."""
        return self.endpoint.shown(path)

    def post(self, path: str, body: Mapping[str, Any], describe: Describe) -> tuple[dict[str, Any], str, float]:
        """POST with bounded retries; the decoded body, the answer text in it, and the good try's latency."""
        try:
            data, text, latency = with_retries(
                self.retry, lambda: self._post_once(path, body, describe), self.wire.hint
            )
        except BackendError as exc:
            raise self.redacted(exc) from None
        return data, self.mask(text), latency

    def get(self, path: str, describe: Describe, *, attempts: int = 1) -> dict[str, Any]:
        """GET, tried up to `attempts` times: the decoded JSON object, or a BackendError free of secrets."""
        policy = replace(self.retry, attempts=attempts)
        try:
            return with_retries(policy, lambda: self._get_once(path, describe, policy))
        except BackendError as exc:
            raise self.redacted(exc) from None

    def mask(self, text: str) -> str:
        """`text` with every secret this server holds replaced by `[redacted]`."""
        return redact(text, self._secrets) if self._secrets else text

    def redacted(self, exc: BackendError) -> BackendError:
        """`exc` again, its message and cause free of secrets."""
        message, cause = self.mask(str(exc)), self.mask(exc.cause)
        if message == str(exc) and cause == exc.cause:
            return exc
        return BackendError(message, url=exc.url, retryable=exc.retryable, cause=cause, retry_after=exc.retry_after)

    def close(self) -> None:
        self._client.close()

    def _send(self, method: str, path: str, retry: RetryPolicy, body: Mapping[str, Any] | None) -> httpx.Response:
        """One request, its body streamed and read whole only within the size cap and the deadline.

        `retry.timeout_s` bounds each wait for bytes (httpx) and the whole answer
        (checked as each chunk arrives), so a server trickling bytes fails at about
        the timeout; the worst case, a byte just under the timeout late, is twice it.
        """
        import httpx

        auth = self.endpoint.auth if "Authorization" not in self._headers else None
        deadline = time.monotonic() + retry.timeout_s
        try:
            with self._client.stream(
                method,
                self.endpoint.url + path,
                json=body,
                params=list(self.endpoint.params),
                headers=self._headers,
                auth=auth,
                timeout=retry.timeout_s,
            ) as resp:
                content = self._read(resp, path, retry, deadline)
        except httpx.TransportError as exc:
            raise transport_error(exc, self.shown(path), self.wire.server, retry) from None
        return _complete(resp, content)

    def _read(self, resp: httpx.Response, path: str, retry: RetryPolicy, deadline: float) -> bytes:
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise self._too_big(path)
        parts: list[bytes] = []
        size = 0
        for chunk in resp.iter_bytes():
            size += len(chunk)
            if size > self.max_bytes:
                raise self._too_big(path)
            parts.append(chunk)
            if time.monotonic() > deadline:
                raise self._late(path, retry)
        return b"".join(parts)

    def _too_big(self, path: str) -> BackendError:
        url = self.shown(path)
        return BackendError(
            f"{self.wire.server} at {url} sent an answer over the {self.max_bytes}-byte limit; "
            "it was not kept (raise ATTEST_MAX_ANSWER_BYTES if such answers are expected)",
            url=url,
            cause=f"answer over {self.max_bytes} bytes",
        )

    def _late(self, path: str, retry: RetryPolicy) -> BackendError:
        url, cause = self.shown(path), f"no whole answer within {retry.timeout_s:g} s"
        return BackendError(
            f"cannot get an answer from {self.wire.server} at {url} ({cause})", url=url, retryable=True, cause=cause
        )

    def _refuse_redirect(self, resp: httpx.Response, path: str) -> None:
        """A 3xx is not followed (it could send the key elsewhere): one line naming the status and where it
        pointed, not an empty body taken for a bad answer."""
        if not 300 <= resp.status_code < 400:
            return
        url = self.shown(path)
        location = self.mask(resp.headers.get("location", ""))[:200] or "(no Location header)"
        raise BackendError(
            f"{self.wire.server} at {url} redirected the request ({resp.status_code} to {location}); redirects "
            "are not followed: set the server URL to where it points",
            url=url,
        )

    def _post_once(self, path: str, body: Mapping[str, Any], describe: Describe) -> tuple[dict[str, Any], str, float]:
        start = time.perf_counter()
        resp = self._send("POST", path, self.retry, body)
        self._refuse_redirect(resp, path)
        if resp.status_code >= 400:
            raise describe(resp, self.shown(path))
        data = decode(resp, self.shown(path), self.wire.server)
        text = self.wire.answer(data)
        if text is None:
            url = self.shown(path)
            raise BackendError(
                f"{self.wire.server} at {url} answered without {self.wire.answer_field}", url=url, retryable=True
            )
        return data, text, time.perf_counter() - start

    def _get_once(self, path: str, describe: Describe, retry: RetryPolicy) -> dict[str, Any]:
        resp = self._send("GET", path, retry, None)
        self._refuse_redirect(resp, path)
        if resp.status_code >= 400:
            raise describe(resp, self.shown(path))
        return decode(resp, self.shown(path), self.wire.server)


def _complete(resp: httpx.Response, content: bytes) -> httpx.Response:
    """A read, closed response rebuilt around `content` (already decoded), for `decode` and `describe`."""
    import httpx

    dropped = ("content-encoding", "content-length", "transfer-encoding")
    headers = [(k, v) for k, v in resp.headers.multi_items() if k.lower() not in dropped]
    return httpx.Response(resp.status_code, headers=headers, content=content, request=resp.request)


def is_loopback(url: str) -> bool:
    return urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")


def new_client(url: str) -> httpx.Client:
    """A client for `url`; proxy settings from the environment never reroute loopback traffic."""
    import httpx

    return httpx.Client(trust_env=not is_loopback(url))


def decode(resp: httpx.Response, url: str, server: str) -> dict[str, Any]:
    """The response body as a JSON object, or a retryable BackendError saying what it was instead."""
    try:
        data = json.loads(resp.content)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BackendError(
            f"{server} at {url} sent a body that is not JSON ({len(resp.content)} bytes)",
            url=url,
            retryable=True,
        ) from None
    except RecursionError:
        raise BackendError(f"{server} at {url} sent JSON nested too deeply", url=url, retryable=True) from None
    if not isinstance(data, dict):
        raise BackendError(f"{server} at {url} sent JSON that is not an object", url=url, retryable=True)
    return data


def transport_error(exc: httpx.TransportError, url: str, server: str, retry: RetryPolicy) -> BackendError:
    """A transport fault (refused, timed out, reset) as one retryable line naming the URL."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        cause = f"no answer within {retry.timeout_s:g} s"
    elif isinstance(exc, httpx.ConnectError):
        cause = "connection refused"
    else:
        cause = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return BackendError(f"cannot get an answer from {server} at {url} ({cause})", url=url, retryable=True, cause=cause)


def error_text(resp: httpx.Response) -> str:
    """The server's own reason for an error status, at most 200 characters."""
    try:
        data = json.loads(resp.content)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return resp.text[:200]
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            return str(err.get("message", err))[:200]
        if err is not None:
            return str(err)[:200]
    return resp.text[:200]


def status_error(resp: httpx.Response, url: str, server: str, hint: str) -> BackendError:
    """An error status as one line: 401/403 say what to set, 5xx and 429 are retryable."""
    code = resp.status_code
    detail = error_text(resp)
    if code in (401, 403):
        return BackendError(f"{server} at {url} refused the request ({code}: {detail}): {hint}", url=url)
    if code >= 500 or code == 429:
        retry_after = resp.headers.get("retry-after")
        return BackendError(
            f"{server} at {url} failed ({code}: {detail})", url=url, retryable=True, retry_after=retry_after
        )
    return BackendError(f"{server} at {url} rejected the request ({code}: {detail})", url=url)


def int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
