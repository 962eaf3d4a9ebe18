"""Where the store is, resolved once at the entry point: argument, then environment, then default.

- `--cache-dir` / `ATTEST_CACHE_DIR` / `cache/`: the local cache and run directory;
- `--store` / `ATTEST_STORE` / none: a PostgreSQL URL for a team's shared store
  (unset: the local cache, exactly as for a single user);
- `--lease-wait` / `ATTEST_LEASE_WAIT` / 60 s: how long to wait on a sample another run holds.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import stat
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from attest.config import checked
from attest.errors import ConfigError
from evals.store.local.cache_db import CacheError

__all__ = [
    "DEFAULT_LEASE_WAIT_S",
    "STORE_HELP",
    "hint_options",
    "resolve_cache_dir",
    "resolve_lease_wait",
    "resolve_store_url",
]

_KEY_PASSWORD = re.compile(r"\spassword\s*=\s*(?:'(?:[^'\\]|\\.)*'|\S*)(?=\s)")
DEFAULT_CACHE_DIR = "cache"
CACHE_SETTING = "--cache-dir/ATTEST_CACHE_DIR"
CACHE_VALID = "give a directory (made if missing), e.g. --cache-dir cache"
DEFAULT_LEASE_WAIT_S = 60.0
STORE_HELP = "a team's PostgreSQL store, postgresql://user:pass@host/db (env ATTEST_STORE; default: the cache)"


def resolve_cache_dir(arg: str | os.PathLike[str] | None) -> Path:
    """--cache-dir, then ATTEST_CACHE_DIR, then `cache/`: a directory, or a path where one can be made."""
    path = Path(arg or os.environ.get("ATTEST_CACHE_DIR") or DEFAULT_CACHE_DIR)
    return checked(CACHE_SETTING, CACHE_VALID, lambda: _directory_or_missing(path))


def _directory_or_missing(path: Path) -> Path:
    """`path` if it is a directory or nothing is there yet; what stat refuses (a name too long, a symlink
    loop, a file on the way) is raised, for `checked` to make one line of."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return path
    if not stat.S_ISDIR(mode):
        raise ConfigError(f"{CACHE_SETTING} {path} is not a directory: {CACHE_VALID}")
    return path


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
    """--store, then ATTEST_STORE, then None (the local cache); a URL `connect` could not use is refused here."""
    url = arg or os.environ.get("ATTEST_STORE") or None
    if url is None:
        return None
    try:
        from evals.store.postgres.connection import check_url
    except ImportError:  # no client installed: open_store says how to install it
        return url
    return check_url(url)


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
    """The store string without its password, in each place libpq reads one: the URL's userinfo, a
    `password` query parameter, a `password=...` key (quoted or not)."""
    if "://" in url:
        try:
            split = urlsplit(url)
            query = "&".join(p for p in split.query.split("&") if not p.lower().startswith("password="))
            split = split._replace(query=query)
            if split.password is not None:
                split = split._replace(netloc=f"{split.username or ''}@{split.netloc.rpartition('@')[2]}")
            url = urlunsplit(split)
        except ValueError:  # not a URL after all: no part of it is shown
            return "URL"
    return " ".join(_KEY_PASSWORD.sub(" ", f" {url} ").split())
