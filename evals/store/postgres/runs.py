"""Run records in a team's PostgreSQL store (`attest.records`): one row per (run id, record name).

The body is the record's JSON (jsonb), checked against its strict model on every read,
as `DirStore` checks its files; each row also says which host and user saved it and,
for a manifest, its git commit, so `runs list --store URL` shows who made each run.

Beside them, `attest.runs` keeps one summary row per run (what `runs list` shows: task,
status, score, n, who, commit, created), written in the same statement as the manifest,
report or progress it follows from, so listing is one statement with LIMIT/OFFSET, and
`TASK@latest` one more. A run being generated keeps a heartbeat there (every
`HEARTBEAT_S`, from its own connection); one whose heartbeat is older than `STALE_S`
lists as `interrupted` on every machine.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from evals.store.local.run_index import Summary
from evals.store.models import Manifest, Record, RecordError, Report, RunAuthor, RunProgress, decode
from evals.store.postgres.connection import Link, StoreError, describe, who
from evals.store.records import RunError, RunStore, StoredSummary, check_owner, record_cap
from evals.store.validation import VALIDATION_PREFIX

__all__ = ["PgRuns"]

M = TypeVar("M", bound=Record)
_LOAD = (
    "SELECT size, CASE WHEN size <= %s THEN body END FROM (SELECT octet_length(body::text) AS size, "
    "body::text AS body FROM attest.records WHERE run_id = %s AND name = %s) AS r"
)
HEARTBEAT_S, STALE_S = 10.0, 60.0
_SUMMARY_ROW = (
    "INSERT INTO attest.runs AS r (run_id, task, created, summary, host, username, git_commit) "
    "VALUES (%(run_id)s, %(task)s, %(created)s, %(summary)s::jsonb, %(host)s, %(user)s, %(commit)s) "
    "ON CONFLICT (run_id) DO UPDATE SET task = EXCLUDED.task, created = EXCLUDED.created, "
    "summary = jsonb_set(EXCLUDED.summary, '{score}', COALESCE(r.summary->'score', 'null'::jsonb)), "
    "host = EXCLUDED.host, username = EXCLUDED.username, git_commit = EXCLUDED.git_commit, heartbeat = now()"
)
_RECORD = (
    "INSERT INTO attest.records (run_id, name, body, host, username, git_commit) "
    "VALUES (%(run_id)s, %(name)s, %(body)s::jsonb, %(host)s, %(user)s, %(commit)s) "
    "ON CONFLICT (run_id, name) DO UPDATE SET body = EXCLUDED.body, host = EXCLUDED.host, "
    "username = EXCLUDED.username, git_commit = EXCLUDED.git_commit, saved_at = now()"
)
# Each record and what it changes in the run's summary row: one statement.
_SAVES = {
    "manifest": f"WITH saved AS ({_RECORD}) {_SUMMARY_ROW}",
    "report": f"WITH saved AS ({_RECORD}) UPDATE attest.runs SET summary = jsonb_set(summary, '{{score}}', "
    "to_jsonb(%(score)s::float8)) WHERE run_id = %(run_id)s",
    "progress": f"WITH saved AS ({_RECORD}) UPDATE attest.runs SET done = %(done)s, heartbeat = now() "
    "WHERE run_id = %(run_id)s",
}
_LIST = (
    "(SELECT run_id, CASE WHEN octet_length(summary::text) <= 65536 THEN summary::text END, "
    "summary->>'status' = 'generating' AND heartbeat < now() - make_interval(secs => %(stale)s), done, "
    "host, username, git_commit FROM attest.runs WHERE %(task)s::text IS NULL OR task = %(task)s "
    "ORDER BY created DESC, run_id DESC LIMIT %(limit)s OFFSET %(offset)s) "
    "UNION ALL (SELECT DISTINCT run_id, NULL::text, false, NULL::integer, host, username, git_commit "
    "FROM attest.records d WHERE name = 'manifest' "
    "AND NOT EXISTS (SELECT 1 FROM attest.runs r WHERE r.run_id = d.run_id))"
)
# One run per job: workers of one job (same samples, same scorer) join the run its first live worker
# started; a job row lists its workers as "token|role", live while a session with that name and role is.
_LIVE_HOLDER = "SELECT 1 FROM pg_stat_activity s WHERE s.application_name || '|' || s.usename = h"
_JOIN = (
    "INSERT INTO attest.jobs AS j (job, run_id, holders) VALUES (%(job)s, %(run_id)s, ARRAY[%(me)s]) "
    "ON CONFLICT (job) DO UPDATE SET "
    f"run_id = CASE WHEN EXISTS (SELECT 1 FROM unnest(j.holders) AS h WHERE EXISTS ({_LIVE_HOLDER})) "
    "THEN j.run_id ELSE EXCLUDED.run_id END, "
    f"holders = CASE WHEN EXISTS (SELECT 1 FROM unnest(j.holders) AS h WHERE EXISTS ({_LIVE_HOLDER})) "
    "THEN array_append(array_remove(j.holders, %(me)s), %(me)s) ELSE EXCLUDED.holders END RETURNING run_id"
)
_LEAVE = (
    "UPDATE attest.jobs AS j SET holders = array_remove(holders, %(me)s) WHERE job = %(job)s "
    f"RETURNING NOT EXISTS (SELECT 1 FROM unnest(j.holders) AS h WHERE EXISTS ({_LIVE_HOLDER}))"
)
_LOAD_RUNS = (
    "SELECT run_id, name, size, CASE WHEN size <= (%(caps)s::jsonb->>name)::bigint THEN body END FROM "
    "(SELECT run_id, name, octet_length(body::text) AS size, body::text AS body FROM attest.records "
    "WHERE run_id = ANY(%(ids)s::text[]) AND name = ANY(%(names)s::text[])) AS r"
)
_FRESH = "summary->>'status' = 'generating' AND heartbeat >= now() - make_interval(secs => %(stale)s)"
_BUSY = f"SELECT EXISTS (SELECT 1 FROM attest.runs WHERE run_id = %(run_id)s AND {_FRESH})"
_REMOVE = (
    f"WITH live AS (SELECT 1 FROM attest.runs WHERE run_id = %(run_id)s AND {_FRESH}), "
    "gone AS (DELETE FROM attest.runs WHERE run_id = %(run_id)s AND NOT EXISTS (SELECT 1 FROM live)), "
    "records AS (DELETE FROM attest.records WHERE run_id = %(run_id)s AND NOT EXISTS (SELECT 1 FROM live)) "
    "SELECT NOT EXISTS (SELECT 1 FROM live)"
)
_BEAT = "UPDATE attest.runs SET heartbeat = now() WHERE run_id = %s"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # as DirStore's


class PgRuns(RunStore):
    """The run records of the store at `url`, over a connection the answers share."""

    paths_local = False  # a run's recorded corpus path is another machine's: never opened here

    def __init__(self, link: Link) -> None:
        self._link = link
        self.where = describe(link.url)
        self._authors: dict[str, RunAuthor] | None = None
        self._user_role: str | None = None
        self._host, self._user = who()

    def _check(self, run_id: str) -> None:
        self.check_id(run_id)

    def run_ids(self) -> list[str]:
        query = "SELECT DISTINCT run_id FROM attest.records WHERE run_id NOT LIKE %s ORDER BY 1"
        rows = self._link.fetch("list the runs", query, (VALIDATION_PREFIX + "%",))
        return [r[0] for r in rows]

    def save(self, run_id: str, name: str, record: Record) -> None:
        self._check(run_id)
        commit = record.provenance.git_commit if isinstance(record, Manifest) else None
        values: dict[str, Any] = {
            "run_id": run_id,
            "name": name,
            "body": record.to_json(),
            "host": self._host,
            "user": self._user,
            "commit": commit,
        }
        if isinstance(record, Manifest):
            summary = Summary.of(record, None)
            values.update(task=record.task, created=record.created, summary=summary.to_json())
        elif isinstance(record, Report):
            values.update(score=record.overall)
        elif isinstance(record, RunProgress):
            values.update(done=record.done)
        self._link.count(f"save the {name} of run {run_id}", _SAVES.get(name, _RECORD), values)

    def load(self, run_id: str, name: str, model: type[M]) -> M:
        self._check(run_id)
        cap = record_cap(name)
        row = self._link.run(
            f"read the {name} of run {run_id}", lambda c: c.execute(_LOAD, (cap, run_id, name)).fetchone()
        )
        if row is None:
            raise RunError(f"no run {run_id!r} in {self.where} (no {name}): list them with `runs list --store URL`")
        return self._decoded(run_id, name, model, row[0], row[1], cap)

    def _decoded(self, run_id: str, name: str, model: type[M], size: int, body: str | None, cap: int) -> M:
        """A record row read as untrusted: its size, its JSON as its model, its run id against the key."""
        if body is None:
            raise RunError(
                f"the {name} of run {run_id} in {self.where} is unreadable: {size} bytes, over the {cap}-byte cap"
            )
        try:
            record = decode(body, model)
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

    def load_runs(
        self, run_ids: list[str], models: Mapping[str, type[Record]]
    ) -> dict[str, list[tuple[str, Record]] | RunError]:
        """Each run's records in one statement (each sized in SQL against its cap before it is sent)."""
        caps = {name: record_cap(name) for name in models}
        found: dict[str, list[tuple[str, Record]] | RunError] = {}
        for run_id in run_ids:
            found[run_id] = [] if _RUN_ID.fullmatch(run_id) else RunError(f"{run_id!r} is not a run id")
        ids = [run_id for run_id, held in found.items() if not isinstance(held, RunError)]
        params = {"ids": ids, "names": list(models), "caps": json.dumps(caps)}
        rows = self._link.fetch("read runs", _LOAD_RUNS, params)
        for run_id, name, size, body in sorted(rows, key=lambda r: list(models).index(r[1])):
            held = found[run_id]
            if isinstance(held, RunError):
                continue
            try:
                held.append((name, self._decoded(run_id, name, models[name], size, body, caps[name])))
            except RunError as exc:
                found[run_id] = exc
        return found

    def summaries(self, task: str | None, limit: int | None, offset: int) -> list[StoredSummary]:
        """One statement: the summary rows, newest first (and runs saved by an older attest, to be read)."""
        params = {"task": task, "limit": limit, "offset": offset, "stale": STALE_S}
        rows = self._link.fetch("list the runs", _LIST, params)
        self._authors = {r[0]: RunAuthor(host=r[4], user=r[5], git_commit=r[6]) for r in rows}
        return [StoredSummary(r[0], r[1], bool(r[2]), r[3]) for r in rows]

    @contextlib.contextmanager
    def writing(self, run_id: str) -> Iterator[None]:
        """A heartbeat for the run while it is written, from a thread and a connection of its own."""
        stop = threading.Event()
        beat = threading.Thread(target=self._beat, args=(run_id, stop), daemon=True, name=f"heartbeat {run_id}")
        beat.start()
        try:
            yield
        finally:
            stop.set()
            beat.join(timeout=5)

    def _beat(self, run_id: str, stop: threading.Event) -> None:
        link: Link | None = None
        try:
            while not stop.wait(HEARTBEAT_S):  # a short write (a push) ends before the first beat: no connection
                with contextlib.suppress(StoreError):
                    link = link or Link(self._link.url, retry_s=0)
                    link.count(f"keep run {run_id} alive", _BEAT, (run_id,))
        finally:
            if link is not None:
                link.close()

    def busy(self, run_id: str) -> bool:
        """Whether a live worker is generating the run (its heartbeat is fresh)."""
        rows = self._link.fetch("read run " + run_id, _BUSY, {"run_id": run_id, "stale": STALE_S})
        return bool(rows and rows[0][0])

    def remove(self, run_id: str) -> bool:
        """Delete the run's records and summary in one statement, unless a live worker is generating it (then
        False). Needs DELETE on schema attest: a role without it is refused in one line."""
        self._check(run_id)
        rows = self._link.fetch(f"remove run {run_id}", _REMOVE, {"run_id": run_id, "stale": STALE_S})
        return bool(rows and rows[0][0])

    def join_job(self, job: str, run_id: str) -> str:
        """The run of `job` its live workers are generating, joined; else `run_id`, started here."""
        me = f"{self._link.application_name}|{self._role()}"
        [(found,)] = self._link.fetch("join the job's run", _JOIN, {"job": job, "run_id": run_id, "me": me})
        return str(found)

    def leave_job(self, job: str) -> bool:
        """This worker is done generating `job`: whether it is the last live one (and so scores the run)."""
        me = f"{self._link.application_name}|{self._role()}"
        rows = self._link.fetch("leave the job's run", _LEAVE, {"job": job, "me": me})
        return bool(rows[0][0]) if rows else True

    def _role(self) -> str:
        if self._user_role is None:
            [(self._user_role,)] = self._link.fetch("read the store's role", "SELECT current_user")
        return str(self._user_role)

    def authors(self) -> dict[str, RunAuthor]:
        """Who saved each run's manifest: host, user, git commit (as the last listing read them, if any)."""
        if self._authors is not None:
            return self._authors
        query = "SELECT run_id, host, username, git_commit FROM attest.records WHERE name = 'manifest'"
        rows = self._link.run("list the runs", lambda c: c.execute(query).fetchall())
        return {r[0]: RunAuthor(host=r[1], user=r[2], git_commit=r[3]) for r in rows}
