"""Against a real store: `TASK@latest` in one statement, a stale run after pull, batched answer writes, and a
thread connecting while the store restarts."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from evals.store.open import open_store
from tests.store.conftest import Pg
from tests.store.test_pg_store import _five_runs

pytestmark = pytest.mark.postgres


def _sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What each statement sent through the store's Link was doing, from now on."""
    from evals.store.postgres import connection

    sent: list[str] = []
    real_run = connection.Link.run
    monkeypatch.setattr(connection.Link, "run", lambda self, doing, fn: sent.append(doing) or real_run(self, doing, fn))
    return sent


def test_task_at_latest_and_previous_are_one_statement_each(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evals.store.refs import resolve

    _five_runs(pg_url, tmp_path)
    store = open_store(pg_url, tmp_path)
    try:
        newest = store.runs.manifest("r4")
        task = newest.task
        store.runs.save("g9", "manifest", newest.replace(run_id="g9", created=newest.created + 9, status="generating"))
        sent = _sent(monkeypatch)
        latest = resolve(store.runs, f"{task}@latest")
        assert (latest.run_id, len(sent)) == ("r4", 1), sent  # g9, newer but not complete, passed over
        assert latest.skipped and latest.skipped[0].startswith("g9 ")
        sent.clear()
        assert resolve(store.runs, f"{task}@previous,subset=any").run_id == "r3"
        assert len(sent) == 1, sent
    finally:
        store.close()


def test_a_run_whose_heartbeat_went_stale_lists_as_interrupted_after_pull(pg_url: str, tmp_path: Path) -> None:
    from evals import runs
    from evals.store.refs import list_runs

    _five_runs(pg_url, tmp_path)
    store = open_store(pg_url, tmp_path)
    try:
        first = store.runs.manifest("r4")
        live = first.replace(run_id="g1", created=first.created + 9, status="generating")
        with store.runs.writing("g1"):  # its writer, then gone silent: no beat for an hour
            store.runs.save("g1", "manifest", live)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE attest.runs SET heartbeat = now() - interval '1 hour' WHERE run_id = 'g1'")
        [shared] = list_runs(store.runs, limit=1)
        assert shared.summary is not None and (shared.run_id, shared.summary.status) == ("g1", "interrupted")
    finally:
        store.close()
    mine = tmp_path / "mine"
    assert runs.main(["--store", pg_url, "--cache-dir", str(mine), "pull"]) == 0
    local = open_store(None, mine)
    try:
        rows = {row.run_id: row.summary.status for row in list_runs(local.runs) if row.summary}
    finally:
        local.close()
    assert rows == {"g1": "interrupted", **{f"r{i}": "complete" for i in range(5)}}


def test_a_cold_sample_costs_well_under_one_statement_answers_written_in_batches(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evals.engine.chat import CachedChat, unsampled
    from evals.engine.pipeline import generate, plan
    from evals.reaction_eval import TASK, load_cases
    from evals.store.keys import Identity
    from tests.fakes import RecordingChat

    cases = load_cases()[:30]
    answer = {"verdict": True, "confidence": 3, "reasoning": "fits"}
    store = open_store(pg_url, tmp_path)
    try:
        chat = CachedChat(unsampled(RecordingChat(lambda m, s: answer)), store.answers, Identity("fake", "m", "d", {}))
        planned = plan(TASK, cases, chat.identity, 2)
        sent = _sent(monkeypatch)
        stats = generate(TASK, planned, chat, concurrency=4)
        assert (stats.misses, chat.calls) == (60, 60)
        writes = sent.count("store an answer")
        assert 1 <= writes <= 60 // 8, sent  # one statement per batch of answers, never one per answer
        assert len(sent) / 60 < 0.5, sent  # claims, writes and the reads around them, per cold sample
        assert sent.count("give a claim back") == 0
    finally:
        store.close()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM attest.answers").fetchone() == (60,)


def test_a_threads_first_statement_while_the_store_restarts_waits_for_it(
    pg: Pg, pg_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import threading
    import time

    store = open_store(pg.url(pg_db), tmp_path)
    found: list[object] = []
    try:
        pg.stop()  # the answer writer's (or a request thread's) connection is opened during the outage
        thread = threading.Thread(target=lambda: found.append(store.answers.get_many(["a" * 64])))
        thread.start()
        time.sleep(1.0)
        pg.start()
        thread.join(timeout=60)
        said = [line for line in capsys.readouterr().err.splitlines() if line]
        assert found == [{"a" * 64: None}], said
        assert len(said) == 1 and "reconnecting for up to 60 s" in said[0] and pg_db in said[0], said
    finally:
        store.close()
