"""The local store of answers: diskcache with JSON entries in `cache/responses/`.

The key and the entry are `evals.store.keys` (the same in every store); this is
the `Answers` protocol (evals.store.protocols) over diskcache.

The diskcache layer beneath, hardened against a hostile `cache.db` (no value files,
forced settings, one-line errors), is `evals.store.local.cache_db`. A lease is held by a random
token kept alive by an OS lock (`evals.store.local.holders`), never judged by a pid; waiting on a
live holder is said once and bounded (`LeaseTimeout`)."""

from __future__ import annotations

import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evals.store.keys import Entry, entry_from_json
from evals.store.local import holders
from evals.store.local.cache_db import (
    DB_ERRORS,
    SETTINGS,
    CacheError,
    JSONDisk,
    SafeCache,
    delete_leases,
    drop_file_rows,
    failure,
    select_rows,
)
from evals.store.protocols import BatchClaims
from evals.store.settings import DEFAULT_LEASE_WAIT_S

__all__ = [
    "LeaseTimeout",
    "ResponseCache",
]

_LOCK_PREFIX = "lock:"
_POLL_S = 0.05


class LeaseTimeout(CacheError):
    """Another live run held a sample's lease for longer than the wait allowed."""


@dataclass(frozen=True)
class _Unreadable:
    """A lease row that does not decode (a planted pickle, garbage): why, as the Disk said."""

    why: str


def _foreign(holder: object) -> str:
    """How a lease row that is not a holder token reads in a warning (escaped, short)."""
    if isinstance(holder, _Unreadable):
        return f"unreadable ({holder.why})"
    return f"held by {repr(holder)[:60]}, not a holder token"


def _print_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class ResponseCache:
    """Model answers by request key, plus per-key leases so concurrent runs don't ask twice.

    `notify` gets the one line said when a run starts waiting on another's lease
    (default: stderr); `disk` is the diskcache Disk class, a seam for tests.
    """

    def __init__(
        self,
        directory: Path,
        *,
        lease_wait_s: float = DEFAULT_LEASE_WAIT_S,
        notify: Callable[[str], None] = _print_line,
        disk: type[JSONDisk] = JSONDisk,
    ) -> None:
        self.directory = directory
        self.warnings: list[str] = []
        self.lease_wait_s = lease_wait_s
        self._notify = notify
        self._noticed: set[str] = set()
        self._lock = threading.Lock()
        self._holder = holders.Holder(directory / "holders")
        with self._guard("open the cache"):
            directory.mkdir(parents=True, exist_ok=True)
            self._db = SafeCache(str(self.directory / "responses"), disk=disk, timeout=60, **SETTINGS)
            dropped = drop_file_rows(self._db, self.directory)
        if dropped:
            self._warn(dropped)

    # --- errors ---------------------------------------------------------------------------

    @contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        """Turn a sqlite or disk failure while `doing` into one CacheError line saying what to do."""
        try:
            yield
        except DB_ERRORS as exc:
            raise failure(exc, doing, self.directory) from None

    def _warn(self, warning: str) -> None:
        with self._lock:
            if warning not in self.warnings:  # one key is read several times per run: warn once
                self.warnings.append(warning)

    # --- entries --------------------------------------------------------------------------

    def get(self, key: str) -> Entry | None:
        """The entry for `key`, or None; an unreadable entry is a miss with a warning."""
        try:
            with self._guard("read the cache"):
                raw = self._db.get(key)
        except ValueError as exc:
            return self._corrupt(key, str(exc))
        return self._entry(key, raw)

    def get_many(self, keys: Sequence[str]) -> dict[str, Entry | None]:
        """`get` for many keys at once, a few SQL queries instead of one per key (the score stage's read).

        It reads diskcache's own table (`cache_db.select_rows`; diskcache is pinned for
        this) and decodes each value with the cache's JSON Disk, as `get` does.
        """
        with self._guard("read the cache"):
            rows = select_rows(self._db, keys)
        return {key: self._decode(key, rows[key]) if key in rows else None for key in keys}

    def _decode(self, key: str, row: tuple[int, str | None, Any]) -> Entry | None:
        try:
            raw = self._db.disk.fetch(*row, False)
        except ValueError as exc:
            return self._corrupt(key, str(exc))
        return self._entry(key, raw)

    def _entry(self, key: str, raw: Any) -> Entry | None:
        if raw is None:
            return None
        entry = entry_from_json(raw)
        return self._corrupt(key, entry) if isinstance(entry, str) else entry

    def _corrupt(self, key: str, why: str) -> Entry | None:
        self._warn(f"cache entry {key[:12]} is unreadable ({why}); treating it as missing and regenerating")
        return None

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def put(self, key: str, entry: Entry) -> None:
        with self._guard("store an answer"):
            self._db.set(key, asdict(entry))

    # --- leases ---------------------------------------------------------------------------

    def keys(self) -> Iterator[str]:
        """Every answer's key (no leases), for `runs push`."""
        with self._guard("list the cache"):
            found = list(self._db.iterkeys())
        return (k for k in found if isinstance(k, str) and not k.startswith(_LOCK_PREFIX))

    @property
    def where(self) -> str:
        return str(self.directory)

    @contextmanager
    def lease(self, key: str, *, wait: bool = True) -> Iterator[bool | None]:
        """Hold the right to generate `key`; yields False if another run filled it meanwhile.

        A dead holder's lease (its OS lock is free) is broken at once; an unreadable one
        is removed with a warning; a live holder is waited on for at most `lease_wait_s`,
        said once, then LeaseTimeout; with `wait=False` a live holder yields None at once.
        """
        name = _LOCK_PREFIX + key
        with self._guard("create a lease holder file"):
            token = self._holder.acquire()
        deadline = time.monotonic() + self.lease_wait_s
        while not self._add(name, token):
            if self.get(key) is not None:
                yield False
                return
            holder = self._read_lease(name)
            if holder is None:
                continue
            if isinstance(holder, str) and holders.alive(self._holder.directory, holder):
                if not wait:
                    yield None
                    return
                self._wait_on(key, holder, deadline)
                continue
            if not (isinstance(holder, str) and holders.TOKEN.fullmatch(holder)):
                self._warn(f"the lease on sample {key[:12]} is {_foreign(holder)}; removed it")
            self._break_lease(name, holder)
        try:
            yield self.get(key) is None
        finally:
            self._release(name, token)

    def _add(self, name: str, token: str) -> bool:
        with self._guard("take a lease"):
            return bool(self._db.add(name, token))

    def _read_lease(self, name: str) -> object:
        """The lease's holder token, None if there is no lease, or what else the row holds."""
        try:
            with self._guard("read a lease"):
                return self._db.get(name)
        except ValueError as exc:
            return _Unreadable(str(exc))

    def _wait_on(self, key: str, holder: str, deadline: float) -> None:
        """Say once what we wait for and how to break it; LeaseTimeout once the wait is over."""
        who = holders.describe(self._holder.directory, holder)
        unlock = f"python -m evals.unlock --cache-dir {shlex.quote(str(self.directory))}"
        if time.monotonic() >= deadline:
            raise LeaseTimeout(
                f"sample {key[:12]} is still being generated by another run ({who}) after {self.lease_wait_s:g} s: "
                f"resume or end that run, or drop its leases with `{unlock}`, then rerun "
                "(every answer stored so far is kept)"
            )
        with self._lock:
            first = holder not in self._noticed
            self._noticed.add(holder)
        if first:
            pid = who.partition("(pid ")[2].partition(" ")[0]
            resume = f"`fg` or `kill -CONT {pid}`" if pid else "`fg`"
            self._notify(
                f"waiting for sample {key[:12]}: another run is generating it ({who}); waiting at most "
                f"{self.lease_wait_s:g} s. If that run is stopped (Ctrl-Z), resume it ({resume}) or end it; "
                f"`{unlock}` drops every lease in this cache"
            )
        time.sleep(_POLL_S)

    def _break_lease(self, name: str, seen: object) -> None:
        """Delete a lease whose holder is gone (or unreadable), unless someone replaced it meanwhile."""
        with self._guard("break a lease"), self._db.transact():
            if self._read_lease(name) == seen:
                self._db.delete(name)

    def _release(self, name: str, token: str) -> None:
        """Give a lease back; on failure it stays, and dies with this process's lock."""
        with suppress(CacheError, *DB_ERRORS), self._db.transact():
            if self._read_lease(name) == token:
                self._db.delete(name)

    def unlock(self) -> int:
        """Drop every lease in the cache, live or not; returns how many there were."""
        with self._guard("drop the leases"):
            return delete_leases(self._db, _LOCK_PREFIX)

    def collect(self, keep: set[str], *, before: float, dry_run: bool = True) -> tuple[int, int]:
        """Remove (or, dry, count) answers not in `keep` and stored before `before`: (entries, bytes of text).

        `before` is when the caller started reading the runs that make `keep`: an answer
        stored since then may belong to a run that started meanwhile, so it stays.
        """
        count = size = 0
        for key in list(self._db.iterkeys()):
            if not isinstance(key, str) or key.startswith(_LOCK_PREFIX) or key in keep:
                continue
            entry = self.get(key)
            if entry is not None and entry.created >= before:
                continue
            count += 1
            size += len(entry.text.encode("utf-8")) if entry else 0
            if not dry_run:
                self._db.delete(key)
        return count, size

    def close(self) -> None:
        self._holder.release()
        self._db.close()

    def batch_claims(self) -> BatchClaims | None:
        """None: a local cache leases one key at a time (its holders are processes on this machine)."""
        return None
