"""Where the store is, resolved once at the entry point: argument, then environment, then default.

- `--cache-dir` / `ATTEST_CACHE_DIR` / `cache/`: the local cache and run directory;
- `--store` / `ATTEST_STORE` / none: a PostgreSQL URL for a team's shared store
  (unset: the local cache, exactly as for a single user);
- `--lease-wait` / `ATTEST_LEASE_WAIT` / 60 s: how long to wait on a sample another run holds.
"""

from __future__ import annotations

import math
import os
import shlex
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from evals.store.local.cache_db import CacheError

__all__ = [
    "DEFAULT_LEASE_WAIT_S",
    "STORE_HELP",
    "hint_options",
    "resolve_cache_dir",
    "resolve_lease_wait",
    "resolve_store_url",
]

DEFAULT_CACHE_DIR = "cache"
DEFAULT_LEASE_WAIT_S = 60.0
STORE_HELP = "a team's PostgreSQL store, postgresql://user:pass@host/db (env ATTEST_STORE; default: the cache)"


def resolve_cache_dir(arg: str | os.PathLike[str] | None) -> Path:
    """--cache-dir, then ATTEST_CACHE_DIR, then `cache/`."""
    return Path(arg or os.environ.get("ATTEST_CACHE_DIR") or DEFAULT_CACHE_DIR)


def resolve_lease_wait(arg: float | None) -> float:
    """--lease-wait, then ATTEST_LEASE_WAIT, then 60 s: how long to wait on another run's lease."""
    raw: object = arg if arg is not None else os.environ.get("ATTEST_LEASE_WAIT", DEFAULT_LEASE_WAIT_S)
    try:
        seconds = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise CacheError(
            f"the lease wait must be a number of seconds >= 0, not {raw!r}: fix --lease-wait or ATTEST_LEASE_WAIT"
        )
    return seconds


def resolve_store_url(arg: str | None) -> str | None:
    """--store, then ATTEST_STORE, then None (the local cache)."""
    return arg or os.environ.get("ATTEST_STORE") or None


def hint_options(cache_dir: str | None, store: str | None) -> str:
    """` --cache-dir D --store URL` as given on the command line, for a printed hint that works when pasted.

    A password in the URL is left out (libpq then reads PGPASSWORD or ~/.pgpass): hints are printed to logs.
    A store from ATTEST_STORE needs no option: the variable is still set where the hint is pasted.
    """
    parts = [f" --cache-dir {shlex.quote(str(cache_dir))}"] if cache_dir else []
    if store:
        parts.append(f" --store {shlex.quote(_without_password(store))}")
    return "".join(parts)


def _without_password(url: str) -> str:
    try:
        split = urlsplit(url)
        if split.password is None:
            return url
        user = split.username or ""
        host = split.netloc.rpartition("@")[2]
        return urlunsplit(split._replace(netloc=f"{user}@{host}"))
    except ValueError:
        return url
