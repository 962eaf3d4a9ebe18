"""`open_store`: the one place that picks where answers and run records live.

Unset (`--store` and `ATTEST_STORE` both empty): the local cache, `ResponseCache` in
`<cache-dir>/responses/` and `DirStore` in `<cache-dir>/runs/`, exactly as for a single
user. A PostgreSQL URL (`postgresql://user:pass@host:port/db`, or libpq's other forms
such as `postgresql:///db?host=/socket/dir` or `host=h dbname=d`): `PgAnswers` and
`PgRuns` over one connection (evals.store.postgres.connection*; needs the `store` extra).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from evals.store.keys import Entry
from evals.store.local.cache import ResponseCache
from evals.store.local.cache_db import CacheError
from evals.store.protocols import Answers, BatchClaims, Runs
from evals.store.records import DirStore
from evals.store.settings import DEFAULT_LEASE_WAIT_S, DEFAULT_RETRY_S

__all__ = ["Opened", "open_store"]


@dataclass(frozen=True)
class Opened:
    """A store's answers and run records; `where` names it (a directory, or host and database, never a password)."""

    answers: Answers
    runs: Runs
    where: str
    shared: bool

    def __iter__(self) -> Iterator[object]:  # `answers, runs = open_store(...)`
        return iter((self.answers, self.runs))

    def close(self) -> None:
        self.answers.close()


def _print_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class _NoAnswers:
    """The answers of a local store opened for its run records only: none, and nothing written."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.warnings: list[str] = []

    def get(self, key: str) -> Entry | None:
        return None

    def get_many(self, keys: Sequence[str]) -> dict[str, Entry | None]:
        return dict.fromkeys(keys)

    def put(self, key: str, entry: Entry) -> None:
        raise CacheError(f"{self.where} was opened for its run records only: no answer can be stored")

    @contextmanager
    def lease(self, key: str, *, wait: bool = True) -> Iterator[bool | None]:
        raise CacheError(f"{self.where} was opened for its run records only: no answer can be generated")
        yield None  # unreachable: a generator, so `lease` is a context manager

    def keys(self) -> Iterator[str]:
        return iter(())

    def unlock(self) -> int:
        return 0

    def collect(self, keep: set[str], *, before: float, dry_run: bool = True) -> tuple[int, int]:
        return 0, 0

    def close(self) -> None:
        pass

    def batch_claims(self) -> BatchClaims | None:
        return None


def open_store(
    url: str | None,
    cache_dir: Path,
    *,
    lease_wait_s: float = DEFAULT_LEASE_WAIT_S,
    answers: bool = True,
    retry_s: float = DEFAULT_RETRY_S,
) -> Opened:
    """The local cache under `cache_dir` when `url` is None, else the PostgreSQL store at `url` (a lost
    connection retried for `retry_s` seconds).

    `answers=False` opens a local store for its run records alone (nothing created, no answer read):
    `runs list`, `runs prune`, and `compare` where no answer was ever cached. A shared store always has both.
    """
    if not url:
        local: Answers = ResponseCache(cache_dir, lease_wait_s=lease_wait_s) if answers else _NoAnswers(str(cache_dir))
        return Opened(local, DirStore(cache_dir / "runs"), str(cache_dir), shared=False)
    try:
        from evals.store.postgres import answers as postgres_answers
        from evals.store.postgres import connection as postgres
        from evals.store.postgres import runs as postgres_runs
    except ImportError as exc:
        raise CacheError(
            f"--store/ATTEST_STORE names a PostgreSQL store, but its client is not installed ({exc.name}): "
            "pip install 'attest[store]'"
        ) from None
    link = postgres.Link(
        url, application_name=f"attest {os.urandom(8).hex()}", retry_s=retry_s, notify=_print_line
    )  # the holder token of this process's claims (evals.store.postgres.answers)
    try:
        postgres.ensure_schema(link.conn, url)
        shared = postgres_answers.PgAnswers(link, lease_wait_s=lease_wait_s, notify=_print_line)
    except BaseException:
        link.close()
        raise
    return Opened(shared, postgres_runs.PgRuns(link), postgres.describe(url), shared=True)
