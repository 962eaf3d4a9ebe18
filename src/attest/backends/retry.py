"""Bounded retries for transport faults: `RetryPolicy` and the loop that applies it."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

from attest.backends.types import BackendError
from attest.errors import ConfigError

__all__ = ["RetryPolicy", "with_retries"]

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries for transport faults: `attempts` tries, backoff doubling from `backoff_s`."""

    attempts: int = 3
    backoff_s: float = 0.5
    timeout_s: float = 120.0
    max_wait_s: float = 10.0

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int) or self.attempts < 1:
            raise ConfigError(f"RetryPolicy.attempts={self.attempts!r}: give a whole number of attempts, at least 1")
        _check_seconds("timeout_s", self.timeout_s, zero_ok=False)
        _check_seconds("backoff_s", self.backoff_s, zero_ok=True)
        _check_seconds("max_wait_s", self.max_wait_s, zero_ok=True)

    def wait_before(self, attempt: int, retry_after: str | None) -> float:
        """Seconds to sleep before retry number `attempt` (1-based), honouring Retry-After within `max_wait_s`.

        Retry-After is delay-seconds or an HTTP date; a value that is neither, or is
        negative or NaN, is ignored (the policy's own backoff applies); a huge one is capped.
        """
        asked = _retry_after_seconds(retry_after) if retry_after is not None else None
        if asked is not None:
            return min(asked, self.max_wait_s)
        return float(min(self.backoff_s * 2 ** (attempt - 1), self.max_wait_s))


def _check_seconds(name: str, value: float, *, zero_ok: bool) -> None:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        least = "0 or more" if zero_ok else "more than 0"
        raise ConfigError(f"RetryPolicy.{name}={value!r}: give a finite number of seconds, {least}")


def _retry_after_seconds(value: str) -> float | None:
    """A Retry-After header as seconds from now (never negative), or None when it means nothing usable."""
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        return _http_date_seconds(text)
    if math.isnan(seconds) or seconds < 0:
        return None
    return seconds


def _http_date_seconds(text: str) -> float | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


def with_retries(policy: RetryPolicy, once: Callable[[], T], hint: str | None = None) -> T:
    """Call `once` until it returns, at most `policy.attempts` times.

    Only a `BackendError` with `retryable` set is tried again, after the policy's
    wait (the server's Retry-After honoured, within the cap). The last error is
    raised; a retryable one says how many attempts were made and what to do (`hint`, if given).
    """
    last: BackendError | None = None
    attempt = 0
    for attempt in range(1, policy.attempts + 1):
        try:
            return once()
        except BackendError as exc:
            last = exc
        if not last.retryable or attempt == policy.attempts:
            break
        time.sleep(policy.wait_before(attempt, last.retry_after))
    assert last is not None
    if not last.retryable:
        raise last
    tries = f" after {attempt} attempts" if attempt > 1 else ""
    advice = f": {hint}" if hint else ""
    raise BackendError(f"{last}{tries}{advice}", url=last.url, retryable=True, cause=last.cause)
