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
import stat
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from attest.config import checked, refusal, shown_value
from attest.errors import ConfigError
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

_KEY_PASSWORD = re.compile(r"\spassword\s*=\s*(?:'(?:[^'\\]|\\.)*'|\S*)(?=\s)")
DEFAULT_CACHE_DIR = "cache"
CACHE_SETTING = "--cache-dir/ATTEST_CACHE_DIR"
CACHE_VALID = "give a directory (made if missing), e.g. --cache-dir cache"
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
    except OSError as exc:  # a path holds no secret: name it, with the system's words
        raise ConfigError(f"{CACHE_SETTING} {_shown(path)} cannot be used ({refusal(exc)}): {CACHE_VALID}") from None
    if not stat.S_ISDIR(mode):
        raise ConfigError(f"{CACHE_SETTING} {_shown(path)} is not a directory: {CACHE_VALID}")
    return path


def _shown(path: Path) -> str:
    """A cache path as a message names it: as given when printable and of sane length, else escaped and cut."""
    text = str(path)
    return text if text.isprintable() and len(text) <= 240 else shown_value(text)


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
    return _checked(f"service={value}" if _SERVICE.fullmatch(value) else value)


def _checked(url: str) -> str:
    """`url` if `connect` could use it (evals.store.postgres.check.check_url), else one ConfigError."""
    try:
        from evals.store.postgres.check import check_url
    except ImportError:  # no client installed: open_store says how to install it
        return url
    return check_url(url)


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
