"""Bounded retries for transport faults: `RetryPolicy` and the loop that applies it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from attest.backends.types import BackendError

__all__ = ["RetryPolicy", "with_retries"]

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries for transport faults: `attempts` tries, backoff doubling from `backoff_s`."""

    attempts: int = 3
    backoff_s: float = 0.5
    timeout_s: float = 120.0
    max_wait_s: float = 10.0

    def wait_before(self, attempt: int, retry_after: str | None) -> float:
        """Seconds to sleep before retry number `attempt` (1-based), honouring Retry-After."""
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self.max_wait_s)
            except ValueError:
                pass
        return float(min(self.backoff_s * 2 ** (attempt - 1), self.max_wait_s))


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
