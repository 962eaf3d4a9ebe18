"""A team's store on PostgreSQL: the connection, its one-line failures, and attest's schema.

The store lives in its own PostgreSQL schema, `attest`, versioned in `attest.meta`
(`schema_version`). The first worker to use an empty database creates it inside one
transaction holding `pg_advisory_xact_lock(_MIGRATION_LOCK)`, so N workers starting at
once on an empty database create it exactly once (the others wait on the lock, then see
the version). A database holding a newer version than this attest knows is refused in
one line. The answers (`PgAnswers`) and run records (`PgRuns`) are sibling modules.

Every failure is one `StoreError` line naming the host and the database (from the URL
with its password removed, `describe`), never the password: a store that cannot be
reached, a wrong password, a missing database, a role that may only read, and a
connection lost mid-run (the server restarted).

A lost connection (`Link`) is not the end of a run: the statement is retried on a new
connection with backoff for at most `--store-retry` seconds (default 60), announced in one
line. Every statement attest sends is safe to send twice (upserts, `ON CONFLICT`, reads),
and the new connection carries the same holder token, so this process's claims are its own
again. Past the bound the run stops with one line; everything stored so far stays, and a
rerun asks the model only for what is missing.
"""

from __future__ import annotations

import getpass
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

import psycopg
from psycopg import conninfo

from evals.store.local.cache_db import CacheError
from evals.store.protocols import WritesRefused

__all__ = [
    "DEFAULT_RETRY_S",
    "SCHEMA_VERSION",
    "STORE_SETTING",
    "STORE_VALID",
    "Link",
    "StoreError",
    "StoreReadOnly",
    "connect",
    "connect_kwargs",
    "describe",
    "ensure_schema",
    "failure",
    "guard",
    "who",
]

T = TypeVar("T")
DEFAULT_RETRY_S = 60.0
_MAX_BACKOFF_S = 5.0
SCHEMA_VERSION = 2  # 2: claims are rows in attest.claims (were advisory locks); a summary row per run
STORE_SETTING = "--store/ATTEST_STORE"
STORE_VALID = "give postgresql://user:password@host:port/database (or host=... dbname=...)"
_MIGRATION_LOCK = 0x617474657374_0001  # "attest" + 1: the one advisory lock id attest takes outside sample claims
# Server side: drop a session whose client is gone within ~20 s (keepalives, unacked data), so a
# partitioned worker's claims do not outlive it for long; and never keep a transaction open and idle.
_SERVER_OPTIONS = (
    "-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=5 -c tcp_user_timeout=20000 "
    "-c idle_in_transaction_session_timeout=60000 -c statement_timeout=300000"
)
# Client side, the same for libpq: a partition is noticed at the next query within ~20 s.
_CLIENT_OPTIONS: dict[str, Any] = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 5,
    "tcp_user_timeout": 20000,
    "application_name": "attest",
}
_DDL = (
    "CREATE SCHEMA IF NOT EXISTS attest",
    "CREATE TABLE IF NOT EXISTS attest.meta (name text PRIMARY KEY, value text NOT NULL)",
    """CREATE TABLE IF NOT EXISTS attest.answers (
        key text PRIMARY KEY, value jsonb NOT NULL, host text NOT NULL, username text NOT NULL,
        stored_at timestamptz NOT NULL DEFAULT now())""",
    """CREATE TABLE IF NOT EXISTS attest.records (
        run_id text NOT NULL, name text NOT NULL, body jsonb NOT NULL, host text NOT NULL, username text NOT NULL,
        git_commit text, saved_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (run_id, name))""",
    """CREATE TABLE IF NOT EXISTS attest.runs (
        run_id text PRIMARY KEY, task text NOT NULL, created double precision NOT NULL, summary jsonb NOT NULL,
        host text NOT NULL, username text NOT NULL, git_commit text, done integer,
        heartbeat timestamptz NOT NULL DEFAULT now())""",
    "CREATE INDEX IF NOT EXISTS runs_by_time ON attest.runs (created DESC, run_id DESC)",
    """CREATE TABLE IF NOT EXISTS attest.jobs (
        job text PRIMARY KEY, run_id text NOT NULL, holders text[] NOT NULL,
        started timestamptz NOT NULL DEFAULT now())""",
    """CREATE TABLE IF NOT EXISTS attest.claims (
        key text PRIMARY KEY, holder text NOT NULL, role text NOT NULL,
        claimed_at timestamptz NOT NULL DEFAULT now())""",
)


class StoreError(CacheError):
    """The shared store cannot be used."""


class StoreReadOnly(StoreError, WritesRefused):
    """The store's role may read but not write."""


def who() -> tuple[str, str]:
    """(host, user) of this process, as the store records who generated an answer or made a run."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        user = str(os.getuid())
    return socket.gethostname(), user


def describe(url: str) -> str:
    """`database "d" on host h:5432 as user u`: where the store is, without its password."""
    try:
        info = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the store given by --store or ATTEST_STORE (not a valid PostgreSQL URL)"
    if info.get("service") and not info.get("host"):
        return f'libpq service "{info["service"]}"'
    host = str(info.get("host") or os.environ.get("PGHOST") or "localhost")
    port = str(info.get("port") or os.environ.get("PGPORT") or "5432")
    db = str(info.get("dbname") or os.environ.get("PGDATABASE") or info.get("user") or "")
    user = str(info.get("user") or os.environ.get("PGUSER") or "")
    return f'database "{db}" on host {host}:{port}' + (f" as user {user}" if user else "")


def _reason(exc: BaseException, url: str) -> str:
    """The driver's first line, with the URL's password blanked out should the driver ever echo it."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = text.removeprefix("connection failed: ")
    try:
        password = str(conninfo.conninfo_to_dict(url).get("password") or "")
    except psycopg.ProgrammingError:
        password = ""
    return text.replace(password, "***")[:300] if password else text[:300]


def failure(exc: BaseException, doing: str, url: str) -> StoreError:
    """One line for a failure while `doing` in the store at `url`: what failed, where, what to do."""
    where, text = describe(url), _reason(exc, url)
    state = getattr(exc, "sqlstate", None)
    if doing == "connect" and isinstance(exc, psycopg.ProgrammingError):  # the driver may echo the bad string
        return StoreError(f"{STORE_SETTING} is not a PostgreSQL URL or connection string: {STORE_VALID}")
    if state == "42501" or isinstance(
        exc, psycopg.errors.InsufficientPrivilege | psycopg.errors.ReadOnlySqlTransaction
    ):
        return StoreReadOnly(
            f"the store's role may only read {where}: cannot {doing} ({text}); reads work, to write "
            "use a role granted INSERT and UPDATE on schema attest (and DELETE for runs prune and gc)"
        )
    if "definition of service" in text and "not found" in text:
        return StoreError(
            f"{where} is not defined: add it to ~/.pg_service.conf (or the file PGSERVICEFILE names), "
            "or give a URL in ATTEST_STORE or --store-file"
        )
    if "password authentication failed" in text or "no password supplied" in text:
        return StoreError(
            f"wrong or missing password for {where}: fix the URL in --store or ATTEST_STORE (or ~/.pgpass)"
        )
    if "does not exist" in text and "database" in text and state in (None, "3D000"):
        return StoreError(f"{where} does not exist: create it (createdb) or fix the database name in --store")
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        if doing == "connect":
            return StoreError(f"cannot reach {where} ({text}): is the server up, and are host and port right?")
        return StoreError(
            f"lost the connection to {where} while trying to {doing} ({text}): the server restarted or the "
            "network failed; rerun when it is back: every answer stored so far is kept and will not be asked again"
        )
    return StoreError(f"cannot {doing} in {where} ({text})")


@contextmanager
def guard(doing: str, url: str) -> Iterator[None]:
    """Turn any driver error while `doing` into one StoreError line."""
    try:
        yield
    except psycopg.Error as exc:
        raise failure(exc, doing, url) from None


def connect_kwargs(url: str, application_name: str = "attest") -> dict[str, Any]:
    """What `connect` passes beside `url`: the client options, and the server options after the URL's own."""
    info = conninfo.conninfo_to_dict(url)
    options = " ".join(x for x in (str(info.get("options") or ""), _SERVER_OPTIONS) if x)
    return {**_CLIENT_OPTIONS, "options": options, "application_name": application_name}


def connect(url: str, *, application_name: str = "attest") -> psycopg.Connection[Any]:
    """An autocommit connection to the store, with keepalives both ways (see the module's options)."""
    with guard("connect", url):
        return psycopg.connect(url, autocommit=True, **connect_kwargs(url, application_name))


class Link:
    """A connection to the store that comes back: a statement that fails because the connection was lost
    is sent again on a new one, with backoff, for at most `retry_s` seconds (said once per outage)."""

    def __init__(
        self,
        url: str,
        *,
        application_name: str = "attest",
        retry_s: float = DEFAULT_RETRY_S,
        notify: Callable[[str], None] = lambda line: None,
        conn: psycopg.Connection[Any] | None = None,
    ) -> None:
        self.url, self.application_name, self.retry_s, self.notify = url, application_name, retry_s, notify
        self.conn = conn or connect(url, application_name=application_name)
        self._lock = threading.Lock()

    def run(self, doing: str, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`fn(connection)`, sent again on a new connection while the store is away (up to `retry_s`)."""
        deadline: float | None = None
        while True:
            conn = self.conn
            try:
                return fn(conn)
            except psycopg.Error as exc:
                if not (conn.broken or conn.closed) or self.retry_s <= 0:
                    raise failure(exc, doing, self.url) from None
                if deadline is None:
                    deadline = time.monotonic() + self.retry_s
                    self.notify(
                        f"lost the connection to {describe(self.url)} ({_reason(exc, self.url)[:120]}); "
                        f"reconnecting for up to {self.retry_s:g} s (--store-retry)"
                    )
                self._reconnect(conn, exc, doing, deadline)

    def _reconnect(self, lost: psycopg.Connection[Any], exc: psycopg.Error, doing: str, deadline: float) -> None:
        with self._lock:
            if self.conn is not lost:  # another thread has reconnected meanwhile
                return
            pause = 0.25
            while time.monotonic() < deadline:
                time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
                pause = min(pause * 2, _MAX_BACKOFF_S)
                with suppress(StoreError):
                    self.conn = connect(self.url, application_name=self.application_name)
                    with suppress(psycopg.Error):
                        lost.close()
                    return
        raise failure(exc, doing, self.url) from None

    def fetch(self, doing: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
        """The rows of one statement, sent again while the store is away."""
        return self.run(doing, lambda conn: conn.execute(query, params).fetchall())

    def count(self, doing: str, query: str, params: Any = None) -> int:
        """How many rows one statement wrote, sent again while the store is away."""
        return self.run(doing, lambda conn: max(conn.execute(query, params).rowcount, 0))

    def close(self) -> None:
        with suppress(psycopg.Error):
            self.conn.close()


def _version(conn: psycopg.Connection[Any]) -> int:
    if conn.execute("SELECT to_regclass('attest.meta')").fetchone() in (None, (None,)):
        return 0
    row = conn.execute("SELECT value FROM attest.meta WHERE name = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def _refuse_newer(found: int, url: str) -> None:
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"{describe(url)} holds attest store schema version {found}, newer than this attest's "
            f"{SCHEMA_VERSION}: upgrade attest to use it (nothing was changed)"
        )


def ensure_schema(conn: psycopg.Connection[Any], url: str) -> None:
    """Create or check attest's schema; safe when many workers start at once on an empty database."""
    with guard("read the store's schema version", url):
        found = _version(conn)
    _refuse_newer(found, url)
    if found == SCHEMA_VERSION:
        return
    with guard("create attest's schema", url), conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        found = _version(conn)  # another worker may have created it while this one waited on the lock
        _refuse_newer(found, url)
        if found < SCHEMA_VERSION:
            for statement in _DDL:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO attest.meta (name, value) VALUES ('schema_version', %s) "
                "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                (str(SCHEMA_VERSION),),
            )
