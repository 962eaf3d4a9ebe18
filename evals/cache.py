"""The response cache: diskcache with JSON entries, keyed by what determines the answer.

Key = sha256 of the canonical JSON of backend kind, base model, model digest,
rendered messages, JSON schema, options and sample index. The URL, the API key,
the case id and the time are not in the key. Entries are JSON (never pickle: a
shared cache must not be able to run code) and keep their provenance.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import diskcache

from attest.backends.types import Backend, ChatResponse, Message
from attest.errors import AttestError

__all__ = [
    "CacheError",
    "Entry",
    "Identity",
    "JSONDisk",
    "ResponseCache",
    "canonical_json",
    "request_key",
    "resolve_cache_dir",
]

DEFAULT_CACHE_DIR = "cache"
_LOCK_PREFIX = "lock:"
_SQL_CHUNK = 500  # keys per query; SQLite allows 999 parameters in old builds
_UNREADABLE = (ValueError, UnicodeDecodeError, OSError)
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


class CacheError(AttestError):
    """The cache directory cannot be used."""


def canonical_json(value: object) -> str:
    """JSON with sorted keys and no whitespace: the same value always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


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


def request_key(identity: Identity, messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> str:
    """sha256 hex of the canonical request: the cache key."""
    payload = {
        "backend": identity.kind,
        "model": identity.model,
        "digest": identity.digest,
        "messages": list(messages),
        "schema": schema,
        "options": identity.options,
        "sample": sample,
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Entry(ChatResponse):
    """A cached answer: the response as the model gave it, and when it was stored."""

    created: float

    @classmethod
    def of(cls, response: ChatResponse) -> Entry:
        return cls(**asdict(response), created=time.time())


class JSONDisk(diskcache.Disk):  # type: ignore[misc]
    """A diskcache Disk that stores values as JSON bytes and refuses anything pickled."""

    def store(self, value: Any, read: bool, key: Any = diskcache.core.UNKNOWN) -> Any:
        if read:
            raise TypeError("the attest cache stores JSON values only")
        return super().store(canonical_json(value).encode("utf-8"), False, key=key)

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        if mode not in (diskcache.core.MODE_RAW, diskcache.core.MODE_BINARY) or read:
            raise ValueError(f"cache value has mode {mode}; only JSON bytes are accepted (never unpickled)")
        data = super().fetch(mode, filename, value, False)
        if not isinstance(data, bytes):
            raise ValueError(f"cache value is {type(data).__name__}, not JSON bytes")
        return json.loads(data.decode("utf-8"))


def resolve_cache_dir(arg: str | os.PathLike[str] | None) -> Path:
    """--cache-dir, then ATTEST_CACHE_DIR, then `cache/`."""
    return Path(arg or os.environ.get("ATTEST_CACHE_DIR") or DEFAULT_CACHE_DIR)


class ResponseCache:
    """Model answers by request key, plus per-key leases so concurrent runs don't ask twice."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.warnings: list[str] = []
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._db = diskcache.Cache(
                str(directory / "responses"), disk=JSONDisk, timeout=60, eviction_policy="none", size_limit=2**40
            )
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(
                f"cannot open the cache in {directory} ({exc}): "
                "give a writable directory with --cache-dir or ATTEST_CACHE_DIR"
            ) from None

    def get(self, key: str) -> Entry | None:
        """The entry for `key`, or None; an unreadable entry is a miss with a warning."""
        try:
            raw = self._db.get(key)
        except _UNREADABLE as exc:
            return self._corrupt(key, str(exc))
        return self._entry(key, raw)

    def get_many(self, keys: Sequence[str]) -> dict[str, Entry | None]:
        """`get` for many keys at once, a few SQL queries instead of one per key (the score stage's read).

        It reads diskcache's own table (`Cache`: key, raw, mode, filename, value,
        expire_time) and decodes each value with the cache's JSON Disk, as `get` does.
        """
        rows: dict[str, tuple[int, str | None, Any]] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _SQL_CHUNK):
            chunk = unique[start : start + _SQL_CHUNK]
            select = (
                "SELECT key, mode, filename, value FROM Cache WHERE raw = 1"
                f" AND key IN ({','.join('?' * len(chunk))}) AND (expire_time IS NULL OR expire_time > ?)"
            )
            for key, mode, filename, value in self._db._sql(select, (*chunk, time.time())).fetchall():
                rows[key] = (mode, filename, value)
        return {key: self._decode(key, rows[key]) if key in rows else None for key in keys}

    def _decode(self, key: str, row: tuple[int, str | None, Any]) -> Entry | None:
        try:
            raw = self._db.disk.fetch(*row, False)
        except _UNREADABLE as exc:
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
        warning = f"cache entry {key[:12]} is unreadable ({why}); treating it as missing and regenerating"
        if warning not in self.warnings:  # one key is read several times per run: warn once
            self.warnings.append(warning)
        return None

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def put(self, key: str, entry: Entry) -> None:
        self._db.set(key, asdict(entry))

    @contextmanager
    def lease(self, key: str, *, wait_s: float = 600.0) -> Iterator[bool]:
        """Hold the right to generate `key`; yields False if another live process filled it meanwhile."""
        token = _lease_token(os.getpid())
        deadline = time.monotonic() + wait_s
        while not self._db.add(_LOCK_PREFIX + key, token, expire=wait_s):
            if self.get(key) is not None:
                yield False
                return
            holder = self._db.get(_LOCK_PREFIX + key)
            if holder is not None and not _alive(str(holder)):
                self._break_lease(key, holder)
            elif time.monotonic() > deadline:
                break
            time.sleep(0.05)
        try:
            yield self.get(key) is None
        finally:
            if self._db.get(_LOCK_PREFIX + key) == token:
                self._db.delete(_LOCK_PREFIX + key)

    def _break_lease(self, key: str, holder: object) -> None:
        """Delete a dead process's lease, unless someone else replaced it meanwhile."""
        with self._db.transact():
            if self._db.get(_LOCK_PREFIX + key) == holder:
                self._db.delete(_LOCK_PREFIX + key)

    def collect(self, keep: set[str], *, dry_run: bool = True) -> tuple[int, int]:
        """Remove (or, dry, count) answers whose key is not in `keep`: (entries, bytes of answer text)."""
        count = size = 0
        for key in list(self._db.iterkeys()):
            if not isinstance(key, str) or key.startswith(_LOCK_PREFIX) or key in keep:
                continue
            entry = self.get(key)
            count += 1
            size += len(entry.text.encode("utf-8")) if entry else 0
            if not dry_run:
                self._db.delete(key)
        return count, size

    def close(self) -> None:
        self._db.close()


def _lease_token(pid: int) -> str:
    """host:pid:start-time; the start time tells a reused pid from the process that took the lease."""
    return f"{os.uname().nodename}:{pid}:{_start_time(pid)}"


def _start_time(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[19]  # field 22, counted after the command name


def _alive(token: str) -> bool:
    """Whether the process that took a lease still runs (a lease from another host counts as alive)."""
    host, _, rest = token.partition(":")
    pid, _, started = rest.partition(":")
    if host != os.uname().nodename or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not started or _start_time(int(pid)) in ("", started)
