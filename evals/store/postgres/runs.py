"""Run records in a team's PostgreSQL store (`attest.records`): one row per (run id, record name).

The body is the record's JSON (jsonb), checked against its strict model on every read,
as `DirStore` checks its files; each row also says which host and user saved it and,
for a manifest, its git commit, so `runs list --store URL` shows who made each run.
"""

from __future__ import annotations

from typing import Any, TypeVar

import psycopg

from evals.store.models import Manifest, Record, RecordError, RunAuthor, decode
from evals.store.postgres.connection import describe, guard, who
from evals.store.records import RunError, RunStore
from evals.store.validation import VALIDATION_PREFIX

__all__ = ["PgRuns"]

M = TypeVar("M", bound=Record)


class PgRuns(RunStore):
    """The run records of the store at `url`, over a connection the answers share."""

    def __init__(self, conn: psycopg.Connection[Any], url: str) -> None:
        self._conn = conn
        self._url = url
        self.where = describe(url)
        self._host, self._user = who()

    def _check(self, run_id: str) -> None:
        self.check_id(run_id)

    def run_ids(self) -> list[str]:
        with guard("list the runs", self._url):
            return [
                r[0]
                for r in self._conn.execute(
                    "SELECT DISTINCT run_id FROM attest.records WHERE run_id NOT LIKE %s ORDER BY 1",
                    (VALIDATION_PREFIX + "%",),
                )
            ]

    def save(self, run_id: str, name: str, record: Record) -> None:
        self._check(run_id)
        commit = record.provenance.git_commit if isinstance(record, Manifest) else None
        with guard(f"save the {name} of run {run_id}", self._url):
            self._conn.execute(
                "INSERT INTO attest.records (run_id, name, body, host, username, git_commit) "
                "VALUES (%s, %s, %s::jsonb, %s, %s, %s) ON CONFLICT (run_id, name) DO UPDATE SET "
                "body = EXCLUDED.body, host = EXCLUDED.host, username = EXCLUDED.username, "
                "git_commit = EXCLUDED.git_commit, saved_at = now()",
                (run_id, name, record.to_json(), self._host, self._user, commit),
            )

    def load(self, run_id: str, name: str, model: type[M]) -> M:
        self._check(run_id)
        with guard(f"read the {name} of run {run_id}", self._url):
            row = self._conn.execute(
                "SELECT body::text FROM attest.records WHERE run_id = %s AND name = %s", (run_id, name)
            ).fetchone()
        if row is None:
            raise RunError(f"no run {run_id!r} in {self.where} (no {name}): list them with `runs list --store URL`")
        try:
            return decode(row[0], model)
        except RecordError as exc:
            raise RunError(
                f"the {name} of run {run_id} in {self.where} is not valid ({exc}); "
                "it was written by another version of attest"
            ) from None

    def exists(self, run_id: str, name: str) -> bool:
        self._check(run_id)
        with guard(f"read run {run_id}", self._url):
            row = self._conn.execute(
                "SELECT 1 FROM attest.records WHERE run_id = %s AND name = %s", (run_id, name)
            ).fetchone()
        return row is not None

    def authors(self) -> dict[str, RunAuthor]:
        """Who saved each run's manifest: host, user, git commit."""
        with guard("list the runs", self._url):
            rows = self._conn.execute(
                "SELECT run_id, host, username, git_commit FROM attest.records WHERE name = 'manifest'"
            ).fetchall()
        return {r[0]: RunAuthor(host=r[1], user=r[2], git_commit=r[3]) for r in rows}
