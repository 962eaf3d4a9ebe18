"""A request thread's own connection to the store, opened while the store may be away."""

from __future__ import annotations

import time

from evals.store.postgres.connection import Link, StoreError, describe

__all__ = ["thread_link"]

_MAX_PAUSE_S = 2.0


def thread_link(base: Link, application_name: str) -> Link:
    """A new Link like `base` (URL, retry bound, notices) under `application_name`. Opened while the store is
    away (a thread's first statement during a restart), it is tried again with backoff for up to
    `base.retry_s` seconds, said in one line, as a lost connection is."""
    deadline, pause, said = time.monotonic() + base.retry_s, 0.25, False
    while True:
        try:
            return Link(base.url, application_name=application_name, retry_s=base.retry_s, notify=base.notify)
        except StoreError as exc:
            if time.monotonic() >= deadline:
                raise
            if not said:
                said = True
                base.notify(
                    f"lost the connection to {describe(base.url)} ({str(exc)[:120]}); "
                    f"reconnecting for up to {base.retry_s:g} s (--store-retry)"
                )
            time.sleep(min(pause, max(deadline - time.monotonic(), 0.0)))
            pause = min(pause * 2, _MAX_PAUSE_S)
