"""The diskcache layer under the response cache, hardened against its own database.

A shared cache is a stated use, so `responses/cache.db` is untrusted input:
- answers live in the database only: `JSONDisk` never reads, writes or deletes a
  value file, whatever a row names, never unpickles a value or a key; rows naming a
  file are dropped at open (`drop_file_rows`), their files left alone;
- the settings are attest's whatever the Settings table says, at open and on every
  later connection (`SafeCache`): WAL journal, synchronous NORMAL, no eviction, no
  culling (diskcache deletes the file an expired row names when it culls);
- a sqlite or disk failure becomes one line (`failure`) saying what to do: a damaged
  database (move it aside), a full disk, a lock held too long, an unusable directory.

diskcache is pinned (`diskcache==5.6.3` in pyproject.toml) because `select_rows`,
`drop_file_rows` and `delete_leases` query its `Cache` table through `Cache._sql`,
which is private: one query per 500 keys is twice as fast as a `get` per key for the
score stage's 10,000 reads. tests/store/test_local_cache_pinned.py exercises that use.
"""

from __future__ import annotations

import errno
import json
import shlex
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import diskcache

from attest.errors import AttestError
from evals.store.keys import canonical_json

__all__ = [
    "DB_ERRORS",
    "SETTINGS",
    "CacheError",
    "JSONDisk",
    "SafeCache",
    "delete_leases",
    "drop_file_rows",
    "failure",
    "select_rows",
]

_NEVER = 2**62  # a size no answer reaches: no value file, no eviction by size
_SQL_CHUNK = 500  # keys per query; SQLite allows 999 parameters in old builds
# Every setting diskcache reads from its Settings table, forced at open and on every connection.
SETTINGS: dict[str, Any] = {
    "statistics": 0,
    "tag_index": 0,
    "eviction_policy": "none",
    "size_limit": _NEVER,
    "cull_limit": 0,  # diskcache culls expired rows (and deletes the files they name) on each write
    "sqlite_auto_vacuum": 1,
    "sqlite_cache_size": 2**13,
    "sqlite_journal_mode": "wal",
    "sqlite_mmap_size": 2**26,
    "sqlite_synchronous": 1,  # NORMAL: with WAL, a crash never loses a committed transaction
    "disk_min_file_size": _NEVER,
    "disk_pickle_protocol": 0,
}
DB_ERRORS = (sqlite3.Error, OSError, diskcache.Timeout)
Row = tuple[int, str | None, Any]  # mode, filename, value: what JSONDisk.fetch decodes


class CacheError(AttestError):
    """The cache directory cannot be used."""


class JSONDisk(diskcache.Disk):  # type: ignore[misc]
    """A diskcache Disk for JSON values in the database: no pickle, and no file is ever read, written or deleted."""

    def __init__(self, directory: str, **_settings: Any) -> None:  # a planted disk_* setting is ignored
        super().__init__(directory, min_file_size=_NEVER, pickle_protocol=0)

    def put(self, key: Any) -> tuple[str, bool]:
        if not isinstance(key, str):
            raise TypeError("the attest cache takes str keys only")
        return key, True

    def get(self, key: Any, raw: bool) -> Any:
        if not raw:
            raise ValueError("cache key is pickled; only text keys are accepted (never unpickled)")
        return key

    def store(self, value: Any, read: bool, key: Any = diskcache.core.UNKNOWN) -> Any:
        if read:
            raise TypeError("the attest cache stores JSON values only")
        return 0, diskcache.core.MODE_RAW, None, sqlite3.Binary(canonical_json(value).encode("utf-8"))

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        if mode != diskcache.core.MODE_RAW or read:
            raise ValueError(f"cache value has mode {mode}; only JSON bytes are accepted (never unpickled)")
        if filename is not None or not isinstance(value, bytes):
            raise ValueError(f"cache value is not JSON bytes in the database (file {filename!r:.80})")
        return json.loads(value.decode("utf-8"))

    def filename(self, key: Any = None, value: Any = None) -> Any:
        raise TypeError("the attest cache writes no value files")

    def remove(self, file_path: str) -> None:
        """Never delete: the cache writes no value file, so a file a row names is not the cache's to remove."""


class SafeCache(diskcache.Cache):  # type: ignore[misc]
    """A diskcache Cache that applies attest's settings whatever its Settings table holds."""

    def reset(self, key: str, value: Any = diskcache.core.ENOVAL, update: bool = True) -> Any:
        if key in SETTINGS:
            value = SETTINGS[key]
        elif key not in diskcache.core.METADATA:
            return None  # an unknown setting (planted, or from another version) is never applied
        return super().reset(key, value, update)


def failure(exc: BaseException, doing: str, directory: Path) -> CacheError:
    """One line for a sqlite or disk failure while `doing` in the cache at `directory`: what failed, what to do."""
    responses = directory / "responses"
    text = " ".join(str(exc).split()) or type(exc).__name__
    code = getattr(exc, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_FULL or getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
        return CacheError(
            f"no space left to {doing} in {directory} ({text}): free some space and rerun; "
            "every answer stored so far is kept and will not be asked again"
        )
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        where = shlex.quote(str(responses))
        return CacheError(
            f"the cache database {responses / 'cache.db'} is damaged ({text}): "
            f"move it aside (mv {where} {where}.damaged) and rerun; the answers it held will be asked again"
        )
    if isinstance(exc, diskcache.Timeout) or code == sqlite3.SQLITE_BUSY:
        return CacheError(
            f"the cache database in {responses} stayed locked while trying to {doing}: "
            "another process is writing to it; wait for it to finish or give another --cache-dir"
        )
    return CacheError(
        f"cannot {doing} in {directory} ({text}): give a writable directory with --cache-dir or ATTEST_CACHE_DIR"
    )


def drop_file_rows(db: SafeCache, directory: Path) -> str | None:
    """Drop rows that name a value file (planted, or from an old version), leaving the files alone; a warning."""
    found = db._sql("SELECT filename FROM Cache WHERE filename IS NOT NULL").fetchall()
    if not found:
        return None
    with db.transact():
        db._sql("DELETE FROM Cache WHERE filename IS NOT NULL")
    entries = f"{len(found)} {'entry' if len(found) == 1 else 'entries'}"
    return (
        f"{entries} in {directory / 'responses' / 'cache.db'} named a file ({str(found[0][0])!r:.80}); attest keeps "
        "answers in its database and never reads, writes or deletes such files: dropped the entries, "
        "their answers will be asked again"
    )


def select_rows(db: SafeCache, keys: Sequence[str]) -> dict[str, Row]:
    """The rows of `keys` that are present (text keys, not expired), a few queries for all of them."""
    rows: dict[str, Row] = {}
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), _SQL_CHUNK):
        chunk = unique[start : start + _SQL_CHUNK]
        select = (
            "SELECT key, mode, filename, value FROM Cache WHERE raw = 1"
            f" AND key IN ({','.join('?' * len(chunk))}) AND (expire_time IS NULL OR expire_time > ?)"
        )
        for key, mode, filename, value in db._sql(select, (*chunk, time.time())).fetchall():
            rows[key] = (mode, filename, value)
    return rows


def delete_leases(db: SafeCache, prefix: str) -> int:
    """Delete every row whose text key starts with `prefix`; returns how many."""
    with db.transact():
        return int(db._sql("DELETE FROM Cache WHERE raw = 1 AND key LIKE ?", (prefix + "%",)).rowcount)
