"""Where the store is, resolved once at the entry point: argument, then environment, then default.

- `--cache-dir` / `ATTEST_CACHE_DIR` / `cache/`: the local cache and run directory;
- `--store` / `ATTEST_STORE` / `--store-file` / `ATTEST_STORE_FILE` / none: a team's shared
  PostgreSQL store, as a URL, a libpq connection string, or a bare libpq service name
  (`pg_service.conf`), or read from a file, so a password need never be on a command line
  (`ps` shows it); unset: the local cache, exactly as for a single user;
- `--lease-wait` / `ATTEST_LEASE_WAIT` / 60 s: how long to wait on a sample another run holds.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from evals.store.local.cache_db import CacheError

__all__ = [
    "DEFAULT_LEASE_WAIT_S",
    "DEFAULT_RETRY_S",
    "STORE_HELP",
    "add_store_arguments",
    "hint_options",
    "resolve_cache_dir",
    "resolve_lease_wait",
    "resolve_store_retry",
    "resolve_store_url",
]

DEFAULT_CACHE_DIR = "cache"
DEFAULT_LEASE_WAIT_S = 60.0
DEFAULT_RETRY_S = 60.0
STORE_HELP = (
    "a team's PostgreSQL store: a libpq service name, or postgresql://user@host/db with the password in ~/.pgpass "
    "(env ATTEST_STORE; default: the cache)"
)
STORE_FILE_HELP = "read the store's URL from this file (env ATTEST_STORE_FILE): keeps a password out of `ps`"
_STORE_FILE_BYTES = 64 << 10
_SERVICE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}$")


def resolve_cache_dir(arg: str | os.PathLike[str] | None) -> Path:
    """--cache-dir, then ATTEST_CACHE_DIR, then `cache/`."""
    return Path(arg or os.environ.get("ATTEST_CACHE_DIR") or DEFAULT_CACHE_DIR)


def resolve_store_retry(arg: float | None) -> float:
    """--store-retry, then ATTEST_STORE_RETRY, then 60 s: how long to reconnect to a store that went away."""
    raw: object = arg if arg is not None else os.environ.get("ATTEST_STORE_RETRY", DEFAULT_RETRY_S)
    return _seconds(raw, "the store retry", "--store-retry or ATTEST_STORE_RETRY")


def resolve_lease_wait(arg: float | None) -> float:
    """--lease-wait, then ATTEST_LEASE_WAIT, then 60 s: how long to wait on another run's lease."""
    raw: object = arg if arg is not None else os.environ.get("ATTEST_LEASE_WAIT", DEFAULT_LEASE_WAIT_S)
    return _seconds(raw, "the lease wait", "--lease-wait or ATTEST_LEASE_WAIT")


def _seconds(raw: object, what: str, where: str) -> float:
    try:
        seconds = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise CacheError(f"{what} must be a number of seconds >= 0, not {raw!r}: fix {where}")
    return seconds


def add_store_arguments(parser: argparse.ArgumentParser, **settings: Any) -> None:
    """--store and --store-file (`settings`: argparse's, such as a suppressed default on a subcommand)."""
    parser.add_argument("--store", help=STORE_HELP, **settings)
    parser.add_argument("--store-file", metavar="FILE", help=STORE_FILE_HELP, **settings)


def resolve_store_url(arg: str | None, file: str | None = None) -> str | None:
    """--store, ATTEST_STORE, --store-file, ATTEST_STORE_FILE, then None (the local cache); a bare word is a
    libpq service name (`service=NAME`)."""
    if arg and file:
        raise CacheError("give the store once: --store or --store-file, not both")
    value = arg or (None if file else os.environ.get("ATTEST_STORE"))
    path = file or (None if value else os.environ.get("ATTEST_STORE_FILE"))
    if path:
        value = _read_store_file(path)
    if not value:
        return None
    return f"service={value}" if _SERVICE.fullmatch(value) else value


def _read_store_file(path: str) -> str:
    from attest.files import FileReadError, read_text_bounded

    todo = "give a file holding one line, the store's URL or service name (--store-file, ATTEST_STORE_FILE)"
    try:
        lines = [x.strip() for x in read_text_bounded(path, _STORE_FILE_BYTES, todo=todo).splitlines()]
    except FileReadError as exc:
        raise CacheError(str(exc)) from None
    found = [x for x in lines if x and not x.startswith("#")]
    if len(found) != 1:
        raise CacheError(f"{path}: holds {len(found)} lines that are not comments: {todo}")
    return found[0]


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
