"""HTTP helpers the two HTTP backends share: the client, the retried POST, and errors as one line.

httpx is imported inside the functions that make a request, so importing a backend
module (as every offline run and rescore does) stays cheap.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from attest.backends.retry import RetryPolicy, with_retries
from attest.backends.types import BackendError

if TYPE_CHECKING:
    import httpx

__all__ = [
    "Wire",
    "decode",
    "error_text",
    "int_or_none",
    "is_loopback",
    "new_client",
    "post_json",
    "status_error",
    "transport_error",
]


@dataclass(frozen=True)
class Wire:
    """How one server API is spoken: its name in messages, the remedy when it fails, where its answer sits."""

    server: str
    hint: str
    answer: Callable[[Mapping[str, Any]], str | None]
    answer_field: str


def post_json(
    client: httpx.Client,
    url: str,
    body: Mapping[str, Any],
    retry: RetryPolicy,
    describe: Callable[[httpx.Response], BackendError],
    wire: Wire,
    headers: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], str, float]:
    """POST with bounded retries; return the decoded body, the answer text in it, and the good try's latency.

    Only transport faults, 5xx, 429 and garbled or answerless bodies are retried;
    the final error names the URL, the cause, the number of attempts and what to do.
    """

    def once() -> tuple[dict[str, Any], str, float]:
        return _post_once(client, url, body, retry, describe, wire, headers)

    return with_retries(retry, once, wire.hint)


def _post_once(
    client: httpx.Client,
    url: str,
    body: Mapping[str, Any],
    retry: RetryPolicy,
    describe: Callable[[httpx.Response], BackendError],
    wire: Wire,
    headers: Mapping[str, str] | None,
) -> tuple[dict[str, Any], str, float]:
    import httpx

    start = time.perf_counter()
    try:
        resp = client.post(url, json=body, headers=headers, timeout=retry.timeout_s)
    except httpx.TransportError as exc:
        raise transport_error(exc, url, wire.server, retry) from None
    if resp.status_code >= 400:
        raise describe(resp)
    data = decode(resp, url, wire.server)
    text = wire.answer(data)
    if text is None:
        raise BackendError(f"{wire.server} at {url} answered without {wire.answer_field}", url=url, retryable=True)
    return data, text, time.perf_counter() - start


def is_loopback(url: str) -> bool:
    return urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")


def new_client(url: str) -> httpx.Client:
    """A client for `url`; proxy settings from the environment never reroute loopback traffic."""
    import httpx

    return httpx.Client(trust_env=not is_loopback(url))


def decode(resp: httpx.Response, url: str, server: str) -> dict[str, Any]:
    """The response body as a JSON object, or a retryable BackendError saying what it was instead."""
    try:
        data = resp.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BackendError(
            f"{server} at {url} sent a body that is not JSON ({len(resp.content)} bytes)",
            url=url,
            retryable=True,
        ) from None
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
        data = resp.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
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
