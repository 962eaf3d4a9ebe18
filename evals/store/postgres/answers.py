"""Answers and sample claims in a team's PostgreSQL store (`attest.answers`).

Same key as the local cache (evals.store.keys), the value the same JSON Entry (jsonb,
never pickle), with the host and user that stored it in their own columns.

Claims: a session-level advisory lock, `pg_try_advisory_lock(<first 64 bits of the key>)`,
taken on this store's one connection and held while the model answers. Chosen over
`SELECT ... FOR UPDATE SKIP LOCKED` because:
- it needs no row to lock: a sample has no row until its answer exists, and SKIP LOCKED
  would need a claims table filled in advance (and cleaned up);
- it holds no transaction open during the model call: SKIP LOCKED keeps a transaction
  idle for as long as the model takes (seconds to minutes), which
  `idle_in_transaction_session_timeout` would kill and which holds back vacuum;
- PostgreSQL drops a session's advisory locks the instant its connection ends, however
  the worker ends (SIGKILL too), so a dead worker's claims are free at once.
The lock belongs to the session, so the connection that took it is the one kept for the
claim's whole life (no pool hands it to anyone else); a second thread of this process
asking for a key this process holds is told "held" by an in-process set, since a session
may take its own advisory lock twice. A partitioned worker: the server drops its session
within ~20 s (tcp keepalives and `tcp_user_timeout`, evals.store.postgres.connection), freeing its
claims; the worker's own next query fails within about the same time. A claim is only
used after re-reading the answer table, and answers are inserted `ON CONFLICT DO NOTHING`,
so even a model call made twice across a partition stores one answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict
from typing import Any

import psycopg

from attest.errors import AttestError
from evals.store.keys import Entry, entry_from_json
from evals.store.local.cache import LeaseTimeout
from evals.store.local.cache_db import canonical_json
from evals.store.postgres.connection import StoreReadOnly, describe, guard, who

__all__ = ["PgAnswers", "lock_id"]

_CHUNK = 1000
_POLL_S = 0.05


def lock_id(key: str) -> int:
    """The advisory lock id of a sample: the key's first 64 bits as a signed bigint."""
    return int.from_bytes(bytes.fromhex(key[:16]), "big", signed=True)


class PgAnswers:
    """The `Answers` protocol on PostgreSQL; `close` ends the session and so frees every claim it holds."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        url: str,
        *,
        lease_wait_s: float,
        notify: Callable[[str], None],
    ) -> None:
        self._conn = conn
        self._url = url
        self.where = describe(url)
        self.lease_wait_s = lease_wait_s
        self.warnings: list[str] = []
        self._notify = notify
        self._noticed = False
        self._lock = threading.Lock()
        self._held: set[str] = set()
        self._host, self._user = who()
        with guard("read the store's privileges", url):
            row = conn.execute("SELECT has_table_privilege('attest.answers', 'INSERT')").fetchone()
        self.writable = bool(row and row[0])

    def _decode(self, key: str, raw: object) -> Entry | None:
        entry = entry_from_json(raw)
        if isinstance(entry, str):
            warning = f"answer {key[:12]} in {self.where} is unreadable ({entry}); treating it as missing"
            with self._lock:
                if warning not in self.warnings:
                    self.warnings.append(warning)
            return None
        return entry

    def get(self, key: str) -> Entry | None:
        with guard("read an answer", self._url):
            row = self._conn.execute("SELECT value FROM attest.answers WHERE key = %s", (key,)).fetchone()
        return None if row is None else self._decode(key, row[0])

    def get_many(self, keys: Sequence[str]) -> dict[str, Entry | None]:
        found: dict[str, Any] = {}
        unique = list(dict.fromkeys(keys))
        with guard("read answers", self._url):
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                rows = self._conn.execute("SELECT key, value FROM attest.answers WHERE key = ANY(%s)", (chunk,))
                found.update(rows.fetchall())
        return {key: self._decode(key, found[key]) if key in found else None for key in keys}

    def put(self, key: str, entry: Entry) -> None:
        self.put_many([(key, entry)])

    def put_many(self, items: Sequence[tuple[str, Entry]]) -> int:
        """Store answers not yet stored (an existing one is kept as it is); how many were new."""
        rows = [(key, canonical_json(asdict(entry)), self._host, self._user) for key, entry in items]
        with guard("store an answer", self._url), self._conn.cursor() as cur:
            new = 0
            for start in range(0, len(rows), _CHUNK):
                cur.execute(
                    "INSERT INTO attest.answers (key, value, host, username) "
                    "SELECT * FROM unnest(%s::text[], %s::jsonb[], %s::text[], %s::text[]) "
                    "ON CONFLICT (key) DO NOTHING",
                    [list(col) for col in zip(*rows[start : start + _CHUNK], strict=True)],
                )
                new += max(cur.rowcount, 0)
        return new

    def keys(self) -> Iterator[str]:
        """Every answer's key, in pages (for `runs pull`)."""
        after = ""
        while True:
            with guard("list answers", self._url):
                page = self._conn.execute(
                    "SELECT key FROM attest.answers WHERE key > %s ORDER BY key LIMIT %s", (after, _CHUNK)
                ).fetchall()
            if not page:
                return
            yield from (row[0] for row in page)
            after = page[-1][0]

    # --- claims -----------------------------------------------------------------------------

    def _try_claim(self, key: str) -> bool:
        with self._lock:
            if key in self._held:
                return False
            with guard("claim a sample", self._url):
                row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (lock_id(key),)).fetchone()
            if row and row[0]:
                self._held.add(key)
                return True
            return False

    def _unclaim(self, key: str) -> None:
        with self._lock:
            self._held.discard(key)
            with suppress(psycopg.Error):  # a lost session has dropped the lock already
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (lock_id(key),))

    @contextmanager
    def lease(self, key: str, *, wait: bool = True) -> Iterator[bool | None]:
        """Claim `key` (see the module docstring); True: generate it, False: stored meanwhile, None: held."""
        if not self.writable:
            raise StoreReadOnly(
                f"the store's role may only read {self.where}: sample {key[:12]} is missing and cannot be stored; "
                "reads work, to generate use a role granted INSERT on schema attest"
            )
        deadline = time.monotonic() + self.lease_wait_s
        while not self._try_claim(key):
            if self.get(key) is not None:
                yield False
                return
            if not wait:
                yield None
                return
            self._wait(key, deadline)
        try:
            yield self.get(key) is None  # re-read after claiming: the holder before may have just stored it
        finally:
            self._unclaim(key)

    def _wait(self, key: str, deadline: float) -> None:
        if time.monotonic() >= deadline:
            raise LeaseTimeout(
                f"sample {key[:12]} is still being generated by another worker on {self.where} after "
                f"{self.lease_wait_s:g} s: let it finish or stop it (its claims end with its connection), then rerun"
            )
        if not self._noticed:
            self._noticed = True
            self._notify(
                f"waiting for samples other workers on {self.where} are generating "
                f"(at most {self.lease_wait_s:g} s each)"
            )
        time.sleep(_POLL_S)

    def unlock(self) -> int:
        """Nothing to drop: a claim here ends with the connection that holds it."""
        return 0

    def collect(self, keep: set[str], *, before: float, dry_run: bool = True) -> tuple[int, int]:
        raise AttestError(f"answers are collected in the local cache only, not in {self.where}: drop --store")

    def close(self) -> None:
        with suppress(psycopg.Error):
            self._conn.close()
