"""Run records in a team's PostgreSQL store (`attest.records`): one row per (run id, record name).

The body is the record's JSON (jsonb), checked against its strict model on every read,
as `DirStore` checks its files; each row also says which host and user saved it and,
for a manifest, its git commit, so `runs list --store URL` shows who made each run.
"""

from __future__ import annotations

import re
from typing import TypeVar

from evals.store.models import Manifest, Record, RecordError, decode
from evals.store.postgres.connection import Link, describe, who
from evals.store.records import RunError, RunStore, check_owner, record_cap

__all__ = ["PgRuns", "RunAuthor"]

M = TypeVar("M", bound=Record)
_SAVE = (
    "INSERT INTO attest.records (run_id, name, body, host, username, git_commit) "
    "VALUES (%s, %s, %s::jsonb, %s, %s, %s) ON CONFLICT (run_id, name) DO UPDATE SET "
    "body = EXCLUDED.body, host = EXCLUDED.host, username = EXCLUDED.username, "
    "git_commit = EXCLUDED.git_commit, saved_at = now()"
)
_LOAD = (
    "SELECT size, CASE WHEN size <= %s THEN body END FROM (SELECT octet_length(body::text) AS size, "
    "body::text AS body FROM attest.records WHERE run_id = %s AND name = %s) AS r"
)
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # as DirStore's


class RunAuthor(Record, frozen=True, kw_only=True):
    """Who saved a run's manifest."""

    host: str
    user: str
    git_commit: str | None


class PgRuns(RunStore):
    """The run records of the store at `url`, over a connection the answers share."""

    paths_local = False  # a run's recorded corpus path is another machine's: never opened here

    def __init__(self, link: Link) -> None:
        self._link = link
        self.where = describe(link.url)
        self._host, self._user = who()

    def _check(self, run_id: str) -> None:
        if not _RUN_ID.fullmatch(run_id):
            raise RunError(f"{run_id!r} is not a run id (letters, digits, '.', '_', '-'): list them with `runs list`")

    def run_ids(self) -> list[str]:
        rows = self._link.run(
            "list the runs", lambda c: c.execute("SELECT DISTINCT run_id FROM attest.records ORDER BY 1").fetchall()
        )
        return [r[0] for r in rows]

    def save(self, run_id: str, name: str, record: Record) -> None:
        self._check(run_id)
        commit = record.provenance.git_commit if isinstance(record, Manifest) else None
        values = (run_id, name, record.to_json(), self._host, self._user, commit)
        self._link.run(f"save the {name} of run {run_id}", lambda c: c.execute(_SAVE, values))

    def load(self, run_id: str, name: str, model: type[M]) -> M:
        self._check(run_id)
        cap = record_cap(name)
        row = self._link.run(
            f"read the {name} of run {run_id}", lambda c: c.execute(_LOAD, (cap, run_id, name)).fetchone()
        )
        if row is None:
            raise RunError(f"no run {run_id!r} in {self.where} (no {name}): list them with `runs list --store URL`")
        if row[1] is None:
            raise RunError(
                f"the {name} of run {run_id} in {self.where} is unreadable: {row[0]} bytes, over the {cap}-byte cap"
            )
        try:
            record = decode(row[1], model)
        except RecordError as exc:
            raise RunError(
                f"the {name} of run {run_id} in {self.where} is unreadable ({exc}); "
                "it was written by another version of attest or by hand"
            ) from None
        check_owner(run_id, name, record, where=self.where)
        return record

    def exists(self, run_id: str, name: str) -> bool:
        self._check(run_id)
        query = "SELECT 1 FROM attest.records WHERE run_id = %s AND name = %s"
        return self._link.run(f"read run {run_id}", lambda c: c.execute(query, (run_id, name)).fetchone()) is not None

    def authors(self) -> dict[str, RunAuthor]:
        """Who saved each run's manifest: host, user, git commit."""
        query = "SELECT run_id, host, username, git_commit FROM attest.records WHERE name = 'manifest'"
        rows = self._link.run("list the runs", lambda c: c.execute(query).fetchall())
        return {r[0]: RunAuthor(host=r[1], user=r[2], git_commit=r[3]) for r in rows}
