"""Answers and sample claims in a team's PostgreSQL store (`attest.answers`, `attest.claims`).

Same key as the local cache (evals.store.keys), the value the same JSON Entry (jsonb,
never pickle), with the host and user that stored it in their own columns. Every row read
is untrusted: its length is measured in SQL and an answer over the cap is never fetched,
and a value that is not an Entry is a miss with one `skipped answer KEY: why` line.

Claims: a row in `attest.claims` naming the holder, a random token this process puts in
the `application_name` of each of its connections, and the role that claimed. A claim is
live while a session with that application name and that role exists (`pg_stat_activity`),
so PostgreSQL frees a dead worker's claims the instant its connections end, however it ends
(SIGKILL too), and a partitioned worker's within ~20 s (keepalives and `tcp_user_timeout`,
evals.store.postgres.connection). Claiming is one statement, `INSERT ... ON CONFLICT DO
UPDATE ... WHERE <the holder is gone> RETURNING key`, which also skips a key whose answer
exists: the claim and the re-read are one round trip for a batch of keys, and a batch's
answers are stored in one statement (evals/engine/answer_buffer.py). Claiming needs INSERT
and UPDATE on the table, so a read-only role can neither hold nor block a claim. Each request
thread has its own connection, so `--concurrency` overlaps round trips instead of queueing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict

import psycopg

from evals.store.keys import ANSWER_BYTES, Entry, canonical_json, entry_from_text
from evals.store.local.cache import LeaseTimeout
from evals.store.postgres.connection import Link, StoreError, StoreReadOnly, describe, who
from evals.store.postgres.relink import thread_link
from evals.store.protocols import BatchClaims

__all__ = ["PgAnswers", "lock_id"]

_CHUNK = 1000
_INSERT = (
    "INSERT INTO attest.answers (key, value, host, username) "
    "SELECT * FROM unnest(%s::text[], %s::jsonb[], %s::text[], %s::text[]) "
    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, host = EXCLUDED.host, username = EXCLUDED.username, "
    "stored_at = now() WHERE attest.answers.key = ANY(%s::text[])"
)
_PRIVILEGES = (
    "SELECT has_table_privilege('attest.answers', 'INSERT') AND has_table_privilege('attest.claims', 'INSERT') "
    "AND has_table_privilege('attest.claims', 'UPDATE')"
)
_LIVE = "SELECT 1 FROM pg_stat_activity s WHERE s.application_name = c.holder AND s.usename = c.role"
# One round trip: claim what is neither answered nor held by a live holder (a claim this holder made
# before a reconnect is its own again), and say which of the keys are answered.
_CLAIM = (
    "WITH mine AS (INSERT INTO attest.claims AS c (key, holder, role) SELECT k, %(holder)s, current_user "
    "FROM unnest(%(keys)s::text[]) AS k WHERE NOT EXISTS (SELECT 1 FROM attest.answers a WHERE a.key = k) "
    "ON CONFLICT (key) DO UPDATE SET holder = EXCLUDED.holder, role = EXCLUDED.role, claimed_at = now() "
    f"WHERE c.holder = EXCLUDED.holder OR NOT EXISTS ({_LIVE}) RETURNING key) "
    "SELECT key, true FROM mine UNION ALL SELECT key, false FROM attest.answers WHERE key = ANY(%(keys)s::text[])"
)
# Claim up to `limit` of the keys, in their order, that are neither answered nor held by a live holder
# (other workers' claims are skipped, not visited one by one), and say which of the keys are answered.
_CLAIM_MANY = (
    "WITH wanted AS (SELECT k, o FROM unnest(%(keys)s::text[]) WITH ORDINALITY AS w(k, o)), "
    "answered AS (SELECT key FROM attest.answers WHERE key = ANY(%(keys)s::text[]) AND key <> ALL(%(redo)s::text[])), "
    "free AS (SELECT k, o FROM wanted WHERE k NOT IN (SELECT key FROM answered) AND NOT EXISTS (SELECT 1 FROM "
    f"attest.claims c WHERE c.key = wanted.k AND c.holder <> %(holder)s AND EXISTS ({_LIVE})) "
    "ORDER BY o LIMIT %(limit)s), "
    "mine AS (INSERT INTO attest.claims AS c (key, holder, role) SELECT k, %(holder)s, current_user FROM free "
    "ON CONFLICT (key) DO UPDATE SET holder = EXCLUDED.holder, role = EXCLUDED.role, claimed_at = now() "
    f"WHERE c.holder = EXCLUDED.holder OR NOT EXISTS ({_LIVE}) RETURNING key) "
    "SELECT key, true FROM mine UNION ALL SELECT key, false FROM answered"
)
_RELEASE = "UPDATE attest.claims SET holder = '', role = '' WHERE key = %s AND holder = %s"
_KEYS = "SELECT key FROM attest.answers WHERE key > %s ORDER BY key LIMIT %s"
_SELECT = (
    "SELECT key, size, CASE WHEN size <= %s THEN value::text END FROM "
    "(SELECT key, value, octet_length(value::text) AS size FROM attest.answers WHERE key = ANY(%s)) AS a"
)
_POLL_S = 0.05
_MAX_POLL_S = 0.5


def lock_id(key: str) -> int:
    """The advisory lock id attest used for a sample's claim before claims were rows (kept for tests)."""
    return int.from_bytes(bytes.fromhex(key[:16]), "big", signed=True)


class PgAnswers:
    """The `Answers` protocol on PostgreSQL; `close` ends the session and so frees every claim it holds."""

    def __init__(self, link: Link, *, lease_wait_s: float, notify: Callable[[str], None]) -> None:
        self._link = link
        self._url = url = link.url
        self.where = describe(url)
        self.lease_wait_s = lease_wait_s
        self.warnings: list[str] = []
        self._notify = notify
        self._noticed = False
        self._lock = threading.Lock()
        self._held: set[str] = set()  # keys a thread of this process is claiming or holds
        self._owner = threading.get_ident()
        self._local = threading.local()
        self._extra: list[Link] = []
        self.holder = link.application_name  # a claim lives while a session with this name (and role) exists
        self._unreadable: set[str] = set()  # keys whose stored row was skipped: a new answer replaces it
        self._host, self._user = who()
        [row] = link.fetch("read the store's privileges", _PRIVILEGES)
        self.writable = bool(row[0])

    def _decode(self, key: str, size: int, text: str | None) -> Entry | None:
        """A row read as untrusted: over the cap (measured in SQL, never fetched) or not an Entry is a
        miss with one warning line, never a hit and never an error."""
        entry = entry_from_text(text) if text is not None else f"{size} bytes, over the {ANSWER_BYTES}-byte answer cap"
        if isinstance(entry, str):
            warning = f"skipped answer {key[:12]}: {entry} (in {self.where}; treated as missing)"
            with self._lock:
                self._unreadable.add(key)
                if warning not in self.warnings:
                    self.warnings.append(warning)
            return None
        return entry

    def get(self, key: str) -> Entry | None:
        return self.get_many([key])[key]

    def get_many(self, keys: Sequence[str]) -> dict[str, Entry | None]:
        """One `ANY` query per 1,000 keys; each value's length is measured in SQL and an oversized one is not sent."""
        found: dict[str, tuple[int, str | None]] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _CHUNK):
            chunk = unique[start : start + _CHUNK]
            rows = self._here().fetch("read answers", _SELECT, (ANSWER_BYTES, chunk))
            found.update((key, (size, text)) for key, size, text in rows)
        return {key: self._decode(key, *found[key]) if key in found else None for key in keys}

    def put(self, key: str, entry: Entry) -> None:
        self.put_many([(key, entry)])

    def put_many(self, items: Sequence[tuple[str, Entry]]) -> int:
        """Store answers not yet stored, one statement per 1,000; an existing answer is kept as it is, unless
        this store skipped it as unreadable, when the new one replaces it. How many were written."""
        rows = [(key, canonical_json(asdict(entry)), self._host, self._user) for key, entry in items]
        with self._lock:
            replace = sorted(self._unreadable.intersection(key for key, _ in items))
        new = 0
        for start in range(0, len(rows), _CHUNK):
            columns = [list(col) for col in zip(*rows[start : start + _CHUNK], strict=True)]
            new += self._here().count("store an answer", _INSERT, [*columns, replace])
        with self._lock:
            self._unreadable.difference_update(replace)
        return new

    def keys(self) -> Iterator[str]:
        """Every answer's key, in pages (for `runs pull`)."""
        after = ""
        while True:
            page = self._here().fetch("list answers", _KEYS, (after, _CHUNK))
            if not page:
                return
            yield from (row[0] for row in page)
            after = page[-1][0]

    # --- claims -----------------------------------------------------------------------------

    def _claim(self, key: str) -> bool | None:
        """True: this process now holds `key`; False: its answer is stored; None: a live holder has it."""
        claim = {"holder": self.holder, "keys": [key]}
        with self._lock:
            if key in self._held:
                return None
            self._held.add(key)
        try:
            said = dict(self._here().fetch("claim a sample", _CLAIM, claim))
        except BaseException:
            self._forget(key)
            raise
        if said.get(key):
            return True
        self._forget(key)
        return False if key in said else None

    def _forget(self, key: str) -> None:
        with self._lock:
            self._held.discard(key)

    def _unclaim(self, key: str) -> None:
        """Give a claim back (the model call failed); a stored answer needs none: its claim is moot."""
        with suppress(psycopg.Error, StoreError):  # a lost session's claims are free already
            self._here().count("give a claim back", _RELEASE, (key, self.holder))

    def claim_many(self, keys: Sequence[str], limit: int) -> tuple[list[str], set[str]]:
        """One statement: claim up to `limit` of `keys` (in order) that nobody answered or holds; (the keys now
        this process's to generate, the keys already answered). Give each claimed key back with `settle`."""
        self._need_write(keys[0] if keys else "")
        with self._lock:
            mine = [k for k in keys if k not in self._held]
            redo = sorted(self._unreadable.intersection(mine))  # stored but unreadable: generated again
        params = {"holder": self.holder, "keys": mine, "limit": limit, "redo": redo}
        rows = self._here().fetch("claim samples", _CLAIM_MANY, params)
        claimed = [key for key, ours in rows if ours]
        with self._lock:
            self._held.update(claimed)
        return claimed, {key for key, ours in rows if not ours}

    def settle(self, key: str, *, stored: bool) -> None:
        """A claimed key is done: its answer stored (the claim is moot) or not (the claim is given back)."""
        self._forget(key)
        if not stored:
            self._unclaim(key)

    def _need_write(self, key: str) -> None:
        if not self.writable:
            raise StoreReadOnly(
                f"the store's role may only read {self.where}: sample {key[:12]} is missing and cannot be stored; "
                "reads work, to generate use a role granted INSERT and UPDATE on schema attest"
            )

    @contextmanager
    def lease(self, key: str, *, wait: bool = True) -> Iterator[bool | None]:
        """Claim `key` (see the module docstring); True: generate it, False: stored meanwhile, None: held."""
        self._need_write(key)
        deadline, pause = time.monotonic() + self.lease_wait_s, _POLL_S
        while (mine := self._claim(key)) is None:
            if not wait:
                yield None
                return
            self._wait(key, deadline, pause)
            pause = min(pause * 2, _MAX_POLL_S)  # a long wait polls less often
        if not mine:
            yield False
            return
        with self._lock:
            self._held.add(key)
        stored = False
        try:
            yield True
            stored = True
        finally:
            self._forget(key)
            if not stored:
                self._unclaim(key)

    def _wait(self, key: str, deadline: float, pause: float) -> None:
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
        time.sleep(pause)

    # --- connections ------------------------------------------------------------------------

    def _here(self) -> Link:
        """This thread's connection: the one given for the thread that opened the store, a new one for
        each request thread (opened once, closed with the store), each with the same holder token."""
        if threading.get_ident() == self._owner:
            return self._link
        link: Link | None = getattr(self._local, "link", None)
        if link is None:
            base = self._link
            link = thread_link(base, self.holder)  # opened again while the store is away
            self._local.link = link
            with self._lock:
                self._extra.append(link)
        return link

    def unlock(self) -> int:
        """Nothing to drop: a claim here ends with the connection that holds it."""
        return 0

    def collect(self, keep: set[str], *, before: float, dry_run: bool = True) -> tuple[int, int]:
        """One statement: (count, bytes of) the answers stored before `before` whose key is not in `keep`,
        deleted unless `dry_run`. Needs DELETE on schema attest: a role without it is refused in one line."""
        match = "FROM attest.answers a WHERE a.stored_at < to_timestamp(%(before)s) AND a.key <> ALL(%(keep)s::text[])"
        size = "octet_length(a.value::text)"
        query = (
            f"SELECT count(*), COALESCE(sum({size}), 0) {match}"
            if dry_run
            else f"WITH gone AS (DELETE {match} RETURNING {size} AS size) "
            "SELECT count(*), COALESCE(sum(size), 0) FROM gone"
        )
        [(count, total)] = self._here().fetch(
            "collect unreferenced answers", query, {"before": before, "keep": sorted(keep)}
        )
        return int(count), int(total)

    def batch_claims(self) -> BatchClaims | None:  # itself: claims are rows, many keys per statement
        return self

    def close(self) -> None:
        with self._lock:
            extra, self._extra = self._extra, []
        for link in [*extra, self._link]:
            link.close()
