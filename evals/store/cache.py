"""The response cache: diskcache with JSON entries, keyed by what determines the answer.

Key = sha256 of the canonical JSON of backend kind, base model, model digest,
rendered messages, JSON schema, options and sample index. The URL, the API key,
the case id and the time are not in the key. Entries are JSON (never pickle: a
shared cache must not be able to run code) and keep their provenance.

The diskcache layer beneath, hardened against a hostile `cache.db` (no value files,
forced settings, one-line errors), is `evals.store.cache_db`. A lease is held by a random
token kept alive by an OS lock (`evals.store.holders`), never judged by a pid; waiting on a
live holder is said once and bounded (`LeaseTimeout`). This module is a little over
300 lines: the cache's leases belong with the entries they protect.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from attest.backends.types import Backend, ChatResponse, Message
from attest.errors import run_reporting_errors
from evals.store import holders
from evals.store.cache_db import (
    DB_ERRORS,
    SETTINGS,
    CacheError,
    JSONDisk,
    SafeCache,
    canonical_json,
    delete_leases,
    drop_file_rows,
    failure,
    select_rows,
)

__all__ = [
    "DEFAULT_LEASE_WAIT_S",
    "CacheError",
    "Entry",
    "Identity",
    "JSONDisk",
    "LeaseTimeout",
    "ResponseCache",
    "canonical_json",
    "main",
    "request_key",
    "request_seed",
    "resolve_cache_dir",
    "resolve_lease_wait",
]

DEFAULT_CACHE_DIR = "cache"
DEFAULT_LEASE_WAIT_S = 60.0
_LOCK_PREFIX = "lock:"
_POLL_S = 0.05
# What Entry's fields must hold; valid JSON of the right keys but other types is corrupt too.
_ENTRY_TYPES: dict[str, type | tuple[type, ...]] = {
    "text": str,
    "latency_s": (int, float),
    "prompt_tokens": (int, type(None)),
    "completion_tokens": (int, type(None)),
    "model": str,
    "digest": str,
    "created": (int, float),
}


class LeaseTimeout(CacheError):
    """Another live run held a sample's lease for longer than the wait allowed."""


@dataclass(frozen=True)
class Identity:
    """Everything about the model side of a request that can change the answer."""

    kind: str
    model: str
    digest: str
    options: Mapping[str, Any]

    @classmethod
    def of(cls, backend: Backend) -> Identity:
        return cls(backend.kind, backend.model, backend.digest(), dict(backend.options))


# How a sampling request's seed is chosen (`request_seed`); in the key of every sampling request.
SEEDING = "base+request+sample/v1"


def samples_randomly(options: Mapping[str, Any]) -> bool:
    """Whether the options make the model sample (a temperature above 0), so the seed changes the answer."""
    temperature = options.get("temperature", 0)
    return isinstance(temperature, int | float) and temperature > 0


def request_key(identity: Identity, messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> str:
    """sha256 hex of the canonical request: the cache key."""
    payload: dict[str, Any] = {
        "backend": identity.kind,
        "model": identity.model,
        "digest": identity.digest,
        "messages": list(messages),
        "schema": schema,
        "options": identity.options,
        "sample": sample,
    }
    if samples_randomly(identity.options):
        payload["seeding"] = SEEDING  # the seed sent is derived from the request (request_seed)
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def request_seed(
    options: Mapping[str, Any], messages: Sequence[Message], schema: Mapping[str, Any], sample: int
) -> int | None:
    """The seed to send with sample `sample` of this request; None: send the options' own.

    A greedy request (temperature 0) keeps the options' seed, which changes nothing.
    A sampling request gets base + h + sample, where h comes from the rendered request
    itself: one base seed for a whole run would draw every case from the same random
    stream, and two runs would then differ as wholes (a run-level effect the paired
    per-case statistics do not model). With h, each case's draws are its own, repeats
    of a case still differ by their sample index, and the seed is fixed by the key.
    """
    if not samples_randomly(options):
        return None if sample == 0 else _base_seed(options) + sample
    h = int(hashlib.sha256(canonical_json([list(messages), schema]).encode("utf-8")).hexdigest()[:7], 16)
    return (_base_seed(options) + h + sample) % 2**31


def _base_seed(options: Mapping[str, Any]) -> int:
    seed = options.get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else 0


@dataclass(frozen=True)
class Entry(ChatResponse):
    """A cached answer: the response as the model gave it, and when it was stored."""

    created: float

    @classmethod
    def of(cls, response: ChatResponse) -> Entry:
        return cls(**asdict(response), created=time.time())


@dataclass(frozen=True)
class _Unreadable:
    """A lease row that does not decode (a planted pickle, garbage): why, as the Disk said."""

    why: str


def _foreign(holder: object) -> str:
    """How a lease row that is not a holder token reads in a warning (escaped, short)."""
    if isinstance(holder, _Unreadable):
        return f"unreadable ({holder.why})"
    return f"held by {repr(holder)[:60]}, not a holder token"


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
        try:
            entry = Entry(**raw)
        except TypeError as exc:
            return self._corrupt(key, f"unexpected shape: {exc}")
        wrong = [k for k, kind in _ENTRY_TYPES.items() if not isinstance(raw[k], kind) or isinstance(raw[k], bool)]
        if wrong:
            return self._corrupt(key, f"unexpected shape: wrong type for {', '.join(wrong)}")
        return entry

    def _corrupt(self, key: str, why: str) -> Entry | None:
        self._warn(f"cache entry {key[:12]} is unreadable ({why}); treating it as missing and regenerating")
        return None

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def put(self, key: str, entry: Entry) -> None:
        with self._guard("store an answer"):
            self._db.set(key, asdict(entry))

    # --- leases ---------------------------------------------------------------------------

    @contextmanager
    def lease(self, key: str) -> Iterator[bool]:
        """Hold the right to generate `key`; yields False if another run filled it meanwhile.

        A dead holder's lease (its OS lock is free) is broken at once; an unreadable one
        is removed with a warning; a live holder is waited on for at most `lease_wait_s`,
        said once, then LeaseTimeout.
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
        unlock = f"python -m evals.store.cache unlock --cache-dir {shlex.quote(str(self.directory))}"
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


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m evals.store.cache unlock [--cache-dir DIR]`: drop the leases a stopped run left in the cache."""
    parser = argparse.ArgumentParser(prog="python -m evals.store.cache", description="Maintain the response cache.")
    commands = parser.add_subparsers(dest="command", required=True)
    unlock = commands.add_parser("unlock", help="drop every lease (a run stopped with Ctrl-Z holds its leases)")
    unlock.add_argument("--cache-dir", help="cache and run directory (env ATTEST_CACHE_DIR; default cache/)")
    args = parser.parse_args(argv)
    return run_reporting_errors("evals.store.cache", lambda: _unlock(resolve_cache_dir(args.cache_dir)))


def _unlock(directory: Path) -> int:
    cache = ResponseCache(directory)
    try:
        print(f"dropped {cache.unlock()} lease(s) in {directory}")
    finally:
        cache.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
